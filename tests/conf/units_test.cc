// Units as people write them: every suffix, exactness, edges, overflow and garbage.
#include "conf/units.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace twinlane::conf {
namespace {

uint64_t rate(const std::string& text) {
    auto parsed = parse_rate_bits_per_sec(text);
    EXPECT_TRUE(parsed.has_value()) << text << ": " << (parsed ? "" : parsed.error());
    return parsed ? *parsed : 0;
}

std::string rate_error(const std::string& text) {
    auto parsed = parse_rate_bits_per_sec(text);
    EXPECT_FALSE(parsed.has_value()) << text << " parsed as " << (parsed ? *parsed : 0);
    return parsed ? "" : parsed.error();
}

uint64_t size(const std::string& text) {
    auto parsed = parse_size_bytes(text);
    EXPECT_TRUE(parsed.has_value()) << text << ": " << (parsed ? "" : parsed.error());
    return parsed ? *parsed : 0;
}

std::string size_error(const std::string& text) {
    auto parsed = parse_size_bytes(text);
    EXPECT_FALSE(parsed.has_value()) << text << " parsed as " << (parsed ? *parsed : 0);
    return parsed ? "" : parsed.error();
}

uint64_t duration(const std::string& text) {
    auto parsed = parse_duration_ns(text);
    EXPECT_TRUE(parsed.has_value()) << text << ": " << (parsed ? "" : parsed.error());
    return parsed ? *parsed : 0;
}

std::string duration_error(const std::string& text) {
    auto parsed = parse_duration_ns(text);
    EXPECT_FALSE(parsed.has_value()) << text << " parsed as " << (parsed ? *parsed : 0);
    return parsed ? "" : parsed.error();
}

TEST(Rate, PlainNumberIsBitsPerSecond) {
    EXPECT_EQ(rate("100000"), 100000u);
    EXPECT_EQ(rate("1"), 1u);
    EXPECT_EQ(rate("100000bps"), 100000u);
}

TEST(Rate, DecimalPrefixesWithAndWithoutBps) {
    EXPECT_EQ(rate("10K"), 10'000u);
    EXPECT_EQ(rate("10k"), 10'000u);
    EXPECT_EQ(rate("10Kbps"), 10'000u);
    EXPECT_EQ(rate("400M"), 400'000'000u);
    EXPECT_EQ(rate("400Mbps"), 400'000'000u);
    EXPECT_EQ(rate("10G"), 10'000'000'000u);
    EXPECT_EQ(rate("10Gbps"), 10'000'000'000u);
    EXPECT_EQ(rate("10gbit"), 10'000'000'000u);
    EXPECT_EQ(rate("10Gbit/s"), 10'000'000'000u);
    EXPECT_EQ(rate("10Gb/s"), 10'000'000'000u);
    EXPECT_EQ(rate("1T"), 1'000'000'000'000u);
    EXPECT_EQ(rate("1Tbps"), 1'000'000'000'000u);
}

TEST(Rate, FractionsAreExact) {
    EXPECT_EQ(rate("1.5G"), 1'500'000'000u);
    EXPECT_EQ(rate("2.5Gbps"), 2'500'000'000u);
    EXPECT_EQ(rate("0.001G"), 1'000'000u);
    EXPECT_EQ(rate("1.000000001G"), 1'000'000'001u);
    EXPECT_NE(rate_error("1.0000000001G").find("not a whole number"), std::string::npos);
    EXPECT_NE(rate_error("1.5").find("not a whole number"), std::string::npos);
}

TEST(Rate, SpacesAroundAndBeforeTheUnit) {
    EXPECT_EQ(rate(" 10G "), 10'000'000'000u);
    EXPECT_EQ(rate("10 Gbps"), 10'000'000'000u);
}

TEST(Rate, ByteRatesAreRejectedWithAHint) {
    EXPECT_NE(rate_error("10GBps").find("byte rate"), std::string::npos);
    EXPECT_NE(rate_error("10GB").find("byte rate"), std::string::npos);
}

TEST(Rate, GarbageAndNegatives) {
    EXPECT_EQ(rate_error(""), "empty value");
    EXPECT_NE(rate_error("fast").find("does not start with a number"), std::string::npos);
    EXPECT_NE(rate_error("-10G").find("negative"), std::string::npos);
    EXPECT_NE(rate_error("10X").find("unknown rate unit"), std::string::npos);
    EXPECT_NE(rate_error("10Gibps").find("unknown rate unit"), std::string::npos);
    EXPECT_NE(rate_error("10G10").find("unknown rate unit"), std::string::npos);
    EXPECT_NE(rate_error("1.G").find("digits after"), std::string::npos);
    EXPECT_NE(rate_error("50%").find("percentage"), std::string::npos);
}

TEST(Rate, OverflowIsAnErrorNotAWrap) {
    EXPECT_EQ(rate("18446744073709551615"), UINT64_MAX);
    EXPECT_NE(rate_error("18446744073709551616").find("too large"), std::string::npos);
    EXPECT_NE(rate_error("18446745T").find("too large"), std::string::npos);
    EXPECT_EQ(rate("18446744T"), 18'446'744'000'000'000'000u);
}

TEST(RateSpec, PercentOfParentResolvesLater) {
    auto parsed = parse_rate("20%");
    ASSERT_TRUE(parsed.has_value()) << parsed.error();
    EXPECT_TRUE(parsed->is_share);
    EXPECT_EQ(parsed->share_ppm, 200'000u);
    EXPECT_EQ(parsed->resolve(10'000'000'000u), 2'000'000'000u);
    // Rounds down: a share must never exceed its parent.
    auto third = parse_rate("33.3333%");
    ASSERT_TRUE(third.has_value());
    EXPECT_EQ(third->resolve(100), 33u);
    EXPECT_EQ(parse_rate("100%")->resolve(UINT64_MAX), UINT64_MAX);
}

TEST(RateSpec, AbsoluteRateIgnoresParent) {
    auto parsed = parse_rate("5G");
    ASSERT_TRUE(parsed.has_value());
    EXPECT_FALSE(parsed->is_share);
    EXPECT_EQ(parsed->resolve(1), 5'000'000'000u);
}

TEST(RateSpec, BadShares) {
    EXPECT_FALSE(parse_rate("0%").has_value());
    EXPECT_FALSE(parse_rate("101%").has_value());
    EXPECT_FALSE(parse_rate("-5%").has_value());
    EXPECT_FALSE(parse_rate("%").has_value());
}

TEST(Size, BytesDecimalAndBinary) {
    EXPECT_EQ(size("9000"), 9000u);
    EXPECT_EQ(size("9000B"), 9000u);
    EXPECT_EQ(size("64KB"), 64'000u);
    EXPECT_EQ(size("64kB"), 64'000u);
    EXPECT_EQ(size("64K"), 64'000u);
    EXPECT_EQ(size("64KiB"), 65'536u);
    EXPECT_EQ(size("1MB"), 1'000'000u);
    EXPECT_EQ(size("1MiB"), 1'048'576u);
    EXPECT_EQ(size("2GiB"), 2'147'483'648u);
    EXPECT_EQ(size("1TiB"), 1'099'511'627'776u);
    EXPECT_EQ(size("1.5KiB"), 1536u);
    EXPECT_EQ(size("0"), 0u);
}

TEST(Size, Errors) {
    EXPECT_NE(size_error("0.5B").find("not a whole number of bytes"), std::string::npos);
    EXPECT_NE(size_error("1.1KiB").find("not a whole number"), std::string::npos);
    EXPECT_NE(size_error("64kb").find("bits"), std::string::npos);
    EXPECT_NE(size_error("64Kib").find("binary sizes end in B"), std::string::npos);
    EXPECT_NE(size_error("64XB").find("unknown size unit"), std::string::npos);
    EXPECT_NE(size_error("-1").find("negative"), std::string::npos);
    EXPECT_NE(size_error("17179869184GiB").find("too large"), std::string::npos);
    EXPECT_EQ(size_error("   "), "empty value");
}

TEST(Duration, EveryUnit) {
    EXPECT_EQ(duration("100ns"), 100u);
    EXPECT_EQ(duration("50us"), 50'000u);
    EXPECT_EQ(duration("50\xC2\xB5s"), 50'000u);
    EXPECT_EQ(duration("5ms"), 5'000'000u);
    EXPECT_EQ(duration("1s"), 1'000'000'000u);
    EXPECT_EQ(duration("2min"), 120'000'000'000u);
    EXPECT_EQ(duration("1h"), 3'600'000'000'000u);
    EXPECT_EQ(duration("1.5ms"), 1'500'000u);
    EXPECT_EQ(duration("0.5us"), 500u);
}

TEST(Duration, Errors) {
    EXPECT_NE(duration_error("100").find("needs a unit"), std::string::npos);
    EXPECT_NE(duration_error("0.5ns").find("not a whole number of nanoseconds"), std::string::npos);
    EXPECT_NE(duration_error("5 sec").find("unknown duration unit"), std::string::npos);
    EXPECT_NE(duration_error("5m").find("unknown duration unit"), std::string::npos);
    EXPECT_NE(duration_error("99999999999h").find("too large"), std::string::npos);
    EXPECT_NE(duration_error("ms").find("does not start with a number"), std::string::npos);
}

// Command-line time options: a unit, or a bare number in the option's own unit.
TEST(OptionDuration, UnitOrTheOptionsBareUnit) {
    constexpr uint64_t kSecond = 1'000'000'000, kMs = 1'000'000;
    EXPECT_EQ(*parse_option_duration_ns("6s", kSecond), 6 * kSecond);
    EXPECT_EQ(*parse_option_duration_ns("6", kSecond), 6 * kSecond);
    EXPECT_EQ(*parse_option_duration_ns("0.25", kSecond), kSecond / 4);
    EXPECT_EQ(*parse_option_duration_ns("500ms", kSecond), 500 * kMs);
    EXPECT_EQ(*parse_option_duration_ns("2min", kMs), 120 * kSecond);
    EXPECT_EQ(*parse_option_duration_ns("100", kMs), 100 * kMs);
    EXPECT_EQ(*parse_option_duration_ns("0", kSecond), 0u);
    EXPECT_NE(parse_option_duration_ns("6x", kSecond).error().find("unknown duration unit"),
              std::string::npos);
    EXPECT_NE(parse_option_duration_ns("-1", kSecond).error().find("negative"), std::string::npos);
    EXPECT_NE(parse_option_duration_ns("99999999999999", kSecond).error().find("too large"),
              std::string::npos);
}

TEST(Percent, PartsPerMillion) {
    EXPECT_EQ(*parse_percent_ppm("20%"), 200'000u);
    EXPECT_EQ(*parse_percent_ppm("0%"), 0u);
    EXPECT_EQ(*parse_percent_ppm("100%"), 1'000'000u);
    EXPECT_EQ(*parse_percent_ppm("0.5%"), 5'000u);
    EXPECT_EQ(*parse_percent_ppm("12.3456%"), 123'456u);
    EXPECT_FALSE(parse_percent_ppm("12.34567%").has_value());
    EXPECT_FALSE(parse_percent_ppm("100.0001%").has_value());
    EXPECT_FALSE(parse_percent_ppm("20").has_value());
    EXPECT_NE(parse_percent_ppm("20").error().find("percentage"), std::string::npos);
    EXPECT_FALSE(parse_percent_ppm("20 %%").has_value());
}

TEST(ByteBudget, BytesOrLinkTime) {
    auto bytes = parse_byte_budget("64KiB");
    ASSERT_TRUE(bytes.has_value());
    EXPECT_FALSE(bytes->is_duration);
    EXPECT_EQ(bytes->resolve(10'000'000'000u), 65'536u);

    auto time = parse_byte_budget("20us");
    ASSERT_TRUE(time.has_value());
    EXPECT_TRUE(time->is_duration);
    EXPECT_EQ(time->ns, 20'000u);
    EXPECT_EQ(time->resolve(10'000'000'000u), 25'000u);      // 10 Gb/s for 20 us
    EXPECT_EQ(time->resolve(400'000'000'000u), 1'000'000u);  // 400 Gb/s
    EXPECT_EQ(parse_byte_budget("10s")->resolve(400'000'000'000u), 500'000'000'000u);
    EXPECT_EQ(parse_byte_budget("1500ms")->resolve(8'000u), 1'500u);
    EXPECT_EQ(parse_byte_budget("1ns")->resolve(7u), 0u);  // rounds down
    EXPECT_EQ(parse_byte_budget("99999h")->resolve(10'000'000'000'000u), UINT64_MAX);  // saturates

    EXPECT_FALSE(parse_byte_budget("20xs").has_value());
    EXPECT_FALSE(parse_byte_budget("20 apples").has_value());
    EXPECT_NE(parse_byte_budget("1Mb").error().find("20us"), std::string::npos);
}

TEST(Unsigned, PlainIntegersOnly) {
    EXPECT_EQ(*parse_unsigned("42", 100), 42u);
    EXPECT_EQ(*parse_unsigned("100", 100), 100u);
    EXPECT_FALSE(parse_unsigned("101", 100).has_value());
    EXPECT_FALSE(parse_unsigned("4.2", 100).has_value());
    EXPECT_FALSE(parse_unsigned("42K", 100000).has_value());
    EXPECT_FALSE(parse_unsigned("-1", 100).has_value());
    EXPECT_FALSE(parse_unsigned("", 100).has_value());
}

TEST(Text, ParsesBackToTheSameValue) {
    EXPECT_EQ(rate_text(10'000'000'000), "10Gbps");
    EXPECT_EQ(rate_text(1'500'000'000), "1500Mbps");
    EXPECT_EQ(rate_text(999), "999bps");
    EXPECT_EQ(duration_text(250'000), "250us");
    EXPECT_EQ(duration_text(1'500), "1500ns");
    EXPECT_EQ(percent_text(5'000), "0.5%");
    EXPECT_EQ(percent_text(1'000'000), "100%");
    uint64_t x = 88172645463325252ull;  // xorshift64: values of every magnitude and unit
    for (int i = 0; i < 2000; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        const uint64_t value = x >> (x % 60);
        const uint64_t rounded = value - value % 1'000'000;  // also hit the unit steps
        for (const uint64_t v : {value, rounded}) {
            EXPECT_EQ(*parse_rate_bits_per_sec(rate_text(v)), v) << rate_text(v);
            EXPECT_EQ(*parse_duration_ns(duration_text(v)), v) << duration_text(v);
        }
        const auto ppm = static_cast<uint32_t>(x % (kPartsPerMillion + 1));
        EXPECT_EQ(*parse_percent_ppm(percent_text(ppm)), ppm) << percent_text(ppm);
    }
}

}  // namespace
}  // namespace twinlane::conf
