#include "conf/units.h"

#include <array>
#include <cctype>
#include <cstdio>
#include <numeric>

namespace twinlane::conf {
namespace {

std::string quoted(std::string_view text) {
    return "'" + std::string(text) + "'";
}

std::string_view trim(std::string_view text) {
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
        text.remove_prefix(1);
    }
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
        text.remove_suffix(1);
    }
    return text;
}

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

// "1.25" is kept as numerator 125 and 2 fraction digits, so that scaling stays exact.
struct Decimal {
    uint64_t numerator = 0;
    unsigned fraction_digits = 0;
};

struct SplitNumber {
    Decimal number;
    std::string_view unit;
};

constexpr unsigned kMaxFractionDigits = 18;

ParseResult<SplitNumber> split_number(std::string_view original) {
    std::string_view text = trim(original);
    if (text.empty()) return ParseResult<SplitNumber>::fail("empty value");
    if (text.front() == '-') {
        return ParseResult<SplitNumber>::fail(quoted(original) + " is negative");
    }
    if (!is_digit(text.front())) {
        return ParseResult<SplitNumber>::fail(quoted(original) + " does not start with a number");
    }
    SplitNumber out;
    bool in_fraction = false;
    size_t i = 0;
    for (; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '.' && !in_fraction) {
            if (i + 1 >= text.size() || !is_digit(text[i + 1])) {
                return ParseResult<SplitNumber>::fail(quoted(original) +
                                                      ": expected digits after '.'");
            }
            in_fraction = true;
            continue;
        }
        if (!is_digit(c)) break;
        if (in_fraction && ++out.number.fraction_digits > kMaxFractionDigits) {
            return ParseResult<SplitNumber>::fail(quoted(original) + " has too many decimals");
        }
        const auto digit = static_cast<uint64_t>(c - '0');
        if (__builtin_mul_overflow(out.number.numerator, 10U, &out.number.numerator) ||
            __builtin_add_overflow(out.number.numerator, digit, &out.number.numerator)) {
            return ParseResult<SplitNumber>::fail(quoted(original) + " is too large");
        }
    }
    std::string_view unit = text.substr(i);
    if (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);  // "10 G" is fine too
    out.unit = unit;
    return ParseResult<SplitNumber>::ok(out);
}

uint64_t pow10(unsigned exponent) {
    uint64_t value = 1;
    for (unsigned i = 0; i < exponent; ++i)
        value *= 10;
    return value;
}

// numerator / 10^fraction_digits * multiplier, exactly, or the reason it is not an integer.
ParseResult<uint64_t> scale(std::string_view original, Decimal number, uint64_t multiplier,
                            std::string_view whole_what) {
    uint64_t divisor = pow10(number.fraction_digits);
    const uint64_t common = std::gcd(divisor, multiplier);
    divisor /= common;
    multiplier /= common;
    // divisor and multiplier are now coprime: the product is whole iff numerator is divisible.
    if (number.numerator % divisor != 0) {
        return ParseResult<uint64_t>::fail(quoted(original) + " is not a whole number of " +
                                           std::string(whole_what));
    }
    uint64_t value = 0;
    if (__builtin_mul_overflow(number.numerator / divisor, multiplier, &value)) {
        return ParseResult<uint64_t>::fail(quoted(original) + " is too large");
    }
    return ParseResult<uint64_t>::ok(value);
}

std::string lower(std::string_view text) {
    std::string out(text);
    for (char& c : out)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

// Decimal prefixes shared by rates and sizes: k, M, G, T (either case).
bool decimal_prefix(char c, uint64_t& multiplier) {
    switch (std::tolower(static_cast<unsigned char>(c))) {
        case 'k':
            multiplier = 1'000ULL;
            return true;
        case 'm':
            multiplier = 1'000'000ULL;
            return true;
        case 'g':
            multiplier = 1'000'000'000ULL;
            return true;
        case 't':
            multiplier = 1'000'000'000'000ULL;
            return true;
        default:
            return false;
    }
}

ParseResult<uint64_t> percent_of_million(std::string_view original, const SplitNumber& split) {
    if (split.unit != "%") {
        return ParseResult<uint64_t>::fail(quoted(original) +
                                           ": expected a percentage such as 20%");
    }
    // 1% = 10'000 ppm, so percentages keep four decimals exactly.
    auto ppm = scale(original, split.number, 10'000, "parts per million (max 4 decimals)");
    if (!ppm) return ppm;
    if (*ppm > kPartsPerMillion) {
        return ParseResult<uint64_t>::fail(quoted(original) + " is more than 100%");
    }
    return ppm;
}

}  // namespace

uint64_t RateSpec::resolve(uint64_t parent_bits_per_sec) const {
    if (!is_share) return bits_per_sec;
    // parent <= 2^64 and ppm <= 10^6: split to avoid overflowing the product.
    const uint64_t whole = parent_bits_per_sec / kPartsPerMillion * share_ppm;
    const uint64_t rest = parent_bits_per_sec % kPartsPerMillion * share_ppm / kPartsPerMillion;
    return whole + rest;
}

uint64_t ByteBudget::resolve(uint64_t rate_bits_per_sec) const {
    if (!is_duration) return bytes;
    // bytes = rate * ns / 8e9, computed in two steps so that 400G * 10s does not overflow.
    constexpr uint64_t kBitNsPerByteSec = 8'000'000'000ULL;
    const uint64_t whole_seconds = ns / 1'000'000'000ULL;
    const uint64_t rest_ns = ns % 1'000'000'000ULL;
    uint64_t from_whole = 0;
    if (__builtin_mul_overflow(rate_bits_per_sec / 8, whole_seconds, &from_whole)) {
        return UINT64_MAX;  // saturate: callers compare against limits, a wrap would pass them
    }
    // rest_ns < 1e9: whole milliseconds, then the sub-millisecond rest. The last product stays
    // below 2^64 for rates up to 18 Tb/s (policies allow 10 Tb/s).
    const uint64_t from_ms = rate_bits_per_sec / 8'000 * (rest_ns / 1'000'000);
    const uint64_t from_sub_ms = rate_bits_per_sec * (rest_ns % 1'000'000) / kBitNsPerByteSec;
    uint64_t total = 0;
    if (__builtin_add_overflow(from_whole, from_ms + from_sub_ms, &total)) return UINT64_MAX;
    return total;
}

ParseResult<uint64_t> parse_rate_bits_per_sec(std::string_view text) {
    auto split = split_number(text);
    if (!split) return ParseResult<uint64_t>::fail(split.error());
    std::string_view unit = split->unit;
    if (unit.find('%') != std::string_view::npos) {
        return ParseResult<uint64_t>::fail(quoted(text) +
                                           ": a percentage is not allowed here, give a rate");
    }
    uint64_t multiplier = 1;
    if (!unit.empty() && decimal_prefix(unit.front(), multiplier)) unit.remove_prefix(1);
    // The tail names the base unit: nothing, bps, bit, bit/s or b/s. A capital B means bytes.
    if (unit.find('B') != std::string_view::npos) {
        return ParseResult<uint64_t>::fail(quoted(text) +
                                           " is a byte rate; rates are bits per second "
                                           "(write e.g. 10G or 10Gbps)");
    }
    const std::string tail = lower(unit);
    if (!(tail.empty() || tail == "bps" || tail == "bit" || tail == "bit/s" || tail == "b/s")) {
        return ParseResult<uint64_t>::fail(quoted(text) +
                                           ": unknown rate unit (use bps, K, M, G, T or "
                                           "Kbps, Mbps, Gbps, Tbps)");
    }
    return scale(text, split->number, multiplier, "bits per second");
}

ParseResult<RateSpec> parse_rate(std::string_view text) {
    const std::string_view trimmed = trim(text);
    if (!trimmed.empty() && trimmed.back() == '%') {
        auto split = split_number(text);
        if (!split) return ParseResult<RateSpec>::fail(split.error());
        auto ppm = percent_of_million(text, *split);
        if (!ppm) return ParseResult<RateSpec>::fail(ppm.error());
        if (*ppm == 0) return ParseResult<RateSpec>::fail(quoted(text) + " is a zero rate");
        return ParseResult<RateSpec>::ok(RateSpec{
            .bits_per_sec = 0, .share_ppm = static_cast<uint32_t>(*ppm), .is_share = true});
    }
    auto bits = parse_rate_bits_per_sec(text);
    if (!bits) return ParseResult<RateSpec>::fail(bits.error());
    return ParseResult<RateSpec>::ok(
        RateSpec{.bits_per_sec = *bits, .share_ppm = 0, .is_share = false});
}

ParseResult<uint64_t> parse_size_bytes(std::string_view text) {
    auto split = split_number(text);
    if (!split) return ParseResult<uint64_t>::fail(split.error());
    std::string_view unit = split->unit;
    uint64_t multiplier = 1;
    if (!unit.empty() && decimal_prefix(unit.front(), multiplier)) {
        unit.remove_prefix(1);
        if (!unit.empty() && unit.front() == 'i') {  // KiB, MiB, GiB, TiB: powers of 1024
            unit.remove_prefix(1);
            const uint64_t decimal = multiplier;
            multiplier = 1024;
            for (uint64_t m = 1000; m < decimal; m *= 1000)
                multiplier *= 1024;
            if (unit != "B") {
                return ParseResult<uint64_t>::fail(quoted(text) +
                                                   ": binary sizes end in B (KiB, MiB, GiB)");
            }
        }
    }
    if (unit == "b" || unit == "bit" || unit == "bits" || unit == "bps") {
        return ParseResult<uint64_t>::fail(quoted(text) +
                                           " is in bits; sizes are bytes (write B, KB or KiB)");
    }
    if (!(unit.empty() || unit == "B")) {
        return ParseResult<uint64_t>::fail(quoted(text) +
                                           ": unknown size unit (use B, KB, MB, GB, KiB, MiB, "
                                           "GiB)");
    }
    return scale(text, split->number, multiplier, "bytes");
}

ParseResult<uint64_t> parse_duration_ns(std::string_view text) {
    auto split = split_number(text);
    if (!split) return ParseResult<uint64_t>::fail(split.error());
    struct Unit {
        std::string_view name;
        uint64_t ns;
    };
    static constexpr std::array<Unit, 7> kUnits{{{"ns", 1},
                                                 {"us", 1'000},
                                                 {"\xC2\xB5s", 1'000},  // µs
                                                 {"ms", 1'000'000},
                                                 {"s", 1'000'000'000},
                                                 {"min", 60'000'000'000},
                                                 {"h", 3'600'000'000'000}}};
    if (split->unit.empty()) {
        return ParseResult<uint64_t>::fail(quoted(text) +
                                           ": a duration needs a unit (ns, us, ms, s)");
    }
    for (const Unit& unit : kUnits) {
        if (split->unit == unit.name) return scale(text, split->number, unit.ns, "nanoseconds");
    }
    return ParseResult<uint64_t>::fail(quoted(text) +
                                       ": unknown duration unit (use ns, us, ms, s, min, h)");
}

ParseResult<uint64_t> parse_option_duration_ns(std::string_view text, uint64_t bare_unit_ns) {
    auto split = split_number(text);
    if (!split) return ParseResult<uint64_t>::fail(split.error());
    if (split->unit.empty()) return scale(text, split->number, bare_unit_ns, "nanoseconds");
    return parse_duration_ns(text);
}

ParseResult<uint32_t> parse_percent_ppm(std::string_view text) {
    auto split = split_number(text);
    if (!split) return ParseResult<uint32_t>::fail(split.error());
    auto ppm = percent_of_million(text, *split);
    if (!ppm) return ParseResult<uint32_t>::fail(ppm.error());
    return ParseResult<uint32_t>::ok(static_cast<uint32_t>(*ppm));
}

ParseResult<ByteBudget> parse_byte_budget(std::string_view text) {
    auto split = split_number(text);
    if (!split) return ParseResult<ByteBudget>::fail(split.error());
    const std::string_view unit = split->unit;
    const bool looks_like_time =
        !unit.empty() && (unit.back() == 's' || unit == "min" || unit == "h");
    if (looks_like_time) {
        auto ns = parse_duration_ns(text);
        if (!ns) return ParseResult<ByteBudget>::fail(ns.error());
        return ParseResult<ByteBudget>::ok(ByteBudget{.bytes = 0, .ns = *ns, .is_duration = true});
    }
    auto bytes = parse_size_bytes(text);
    if (!bytes) {
        return ParseResult<ByteBudget>::fail(bytes.error() + "; or give link time such as 20us");
    }
    return ParseResult<ByteBudget>::ok(ByteBudget{.bytes = *bytes, .ns = 0, .is_duration = false});
}

ParseResult<uint64_t> parse_unsigned(std::string_view text, uint64_t max) {
    auto split = split_number(text);
    if (!split) return ParseResult<uint64_t>::fail(split.error());
    if (split->number.fraction_digits != 0 || !split->unit.empty()) {
        return ParseResult<uint64_t>::fail(quoted(text) + " is not a whole number");
    }
    if (split->number.numerator > max) {
        return ParseResult<uint64_t>::fail(quoted(text) + " is more than the maximum " +
                                           std::to_string(max));
    }
    return ParseResult<uint64_t>::ok(split->number.numerator);
}

std::string rate_text(uint64_t bits_per_sec) {
    struct Step {
        uint64_t unit;
        const char* suffix;
    };
    for (Step step : {Step{1'000'000'000'000ULL, "T"}, Step{1'000'000'000ULL, "G"},
                      Step{1'000'000ULL, "M"}, Step{1'000ULL, "K"}}) {
        if (bits_per_sec >= step.unit && bits_per_sec % step.unit == 0) {
            return std::to_string(bits_per_sec / step.unit) + step.suffix + "bps";
        }
    }
    return std::to_string(bits_per_sec) + "bps";
}

std::string duration_text(uint64_t ns) {
    struct Step {
        uint64_t unit;
        const char* suffix;
    };
    for (Step step :
         {Step{1'000'000'000ULL, "s"}, Step{1'000'000ULL, "ms"}, Step{1'000ULL, "us"}}) {
        if (ns >= step.unit && ns % step.unit == 0) {
            return std::to_string(ns / step.unit) + step.suffix;
        }
    }
    return std::to_string(ns) + "ns";
}

std::string percent_text(uint32_t ppm) {
    std::string text = std::to_string(ppm / 10'000);
    if (const uint32_t fraction = ppm % 10'000; fraction != 0) {
        std::array<char, 8> digits{};
        std::snprintf(digits.data(), digits.size(), "%04u", fraction);
        std::string tail(digits.data());
        while (tail.back() == '0')
            tail.pop_back();
        text += "." + tail;
    }
    return text + "%";
}

}  // namespace twinlane::conf
