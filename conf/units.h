// Units as people write them in a policy file, parsed into exact integers.
//
//   rates      "10G", "10Gbps", "400M", "400Mbps", "1.5G", "100000" (bits/s), "25%" (of a parent
//              rate, resolved later with RateSpec::resolve)
//   sizes      "9000", "9000B", "64KB" (64000), "64KiB" (65536), "1MB", "1MiB"  -> bytes
//   durations  "100ns", "50us", "5ms", "1s", "2min"                          -> nanoseconds
//   percents   "20%", "0.5%"                                                  -> parts per million
//
// Every parser returns either the value or a one-line reason meant for the policy author
// ("'10GBps' is a byte rate; rates are bits per second: use Gbps"). Decimal fractions are allowed
// only when the result is a whole number ("1.5KiB" is 1536 bytes, "0.5B" is an error), and every
// multiplication is overflow-checked, so a parsed value is exactly what the author wrote.
// Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace twinlane::conf {

// A parsed value or the reason it could not be parsed.
template <typename T>
class ParseResult {
  public:
    static ParseResult ok(T value) { return ParseResult(std::in_place_index<0>, std::move(value)); }
    static ParseResult fail(std::string reason) {
        return ParseResult(std::in_place_index<1>, std::move(reason));
    }

    bool has_value() const { return state_.index() == 0; }
    explicit operator bool() const { return has_value(); }
    const T& value() const { return std::get<0>(state_); }
    const T& operator*() const { return value(); }
    const T* operator->() const { return &value(); }
    const std::string& error() const { return std::get<1>(state_); }

  private:
    template <std::size_t I, typename V>
    ParseResult(std::in_place_index_t<I> tag, V&& v) : state_(tag, std::forward<V>(v)) {}
    std::variant<T, std::string> state_;
};

inline constexpr uint32_t kPartsPerMillion = 1'000'000;

// A rate as written: absolute bits/s, or a share of the parent's rate (known only once the
// tree is placed on a port).
struct RateSpec {
    uint64_t bits_per_sec = 0;  // when !is_share
    uint32_t share_ppm = 0;     // when is_share: parts per million of the parent rate
    bool is_share = false;

    // Absolute rate in bits/s; a share rounds down (a 33% cap must not exceed its parent).
    uint64_t resolve(uint64_t parent_bits_per_sec) const;
};

// An amount of queued data, written as bytes ("64KiB") or as link time ("20us") so that the
// same policy works on a 10G and a 100G port.
struct ByteBudget {
    uint64_t bytes = 0;  // when !is_duration
    uint64_t ns = 0;     // when is_duration
    bool is_duration = false;

    // Bytes at the given link rate; a duration rounds down (never more than the time asked).
    uint64_t resolve(uint64_t rate_bits_per_sec) const;
};

ParseResult<uint64_t> parse_rate_bits_per_sec(std::string_view text);  // absolute only
ParseResult<RateSpec> parse_rate(std::string_view text);               // absolute or "N%"
ParseResult<uint64_t> parse_size_bytes(std::string_view text);
ParseResult<uint64_t> parse_duration_ns(std::string_view text);
// A command-line duration: "500ms", "2s", or a bare number counted in `bare_unit_ns` (options
// that have always taken plain seconds or milliseconds keep that meaning).
ParseResult<uint64_t> parse_option_duration_ns(std::string_view text, uint64_t bare_unit_ns);
ParseResult<uint32_t> parse_percent_ppm(std::string_view text);  // "0%".."100%"
ParseResult<ByteBudget> parse_byte_budget(std::string_view text);
// A plain non-negative decimal integer (no unit, no sign, no fraction), at most `max`.
ParseResult<uint64_t> parse_unsigned(std::string_view text, uint64_t max);

// The inverse of the parsers above: exact text in the largest unit that divides the value, which
// parses back to the same number ("10Gbps", "250us", "0.5%"). For messages and policy documents.
std::string rate_text(uint64_t bits_per_sec);
std::string duration_text(uint64_t ns);
std::string percent_text(uint32_t ppm);

}  // namespace twinlane::conf
