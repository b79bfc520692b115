// Token bucket, ECN marking and RED signal: the scheduler's building blocks on their own.
#include <gtest/gtest.h>

#include <random>

#include "sched/ecn.h"
#include "sched/red.h"
#include "sched/token_bucket.h"
#include "sched_test_util.h"

namespace twinlane::sched {
namespace {

TEST(TokenBucketTest, StartsFullAndGoesIntoDebt) {
    TokenBucket bucket;
    bucket.configure(8'000'000'000, 3000);  // 1 byte per ns
    EXPECT_TRUE(bucket.conforms(0));
    bucket.consume(9000);  // 6000 bytes of debt
    EXPECT_FALSE(bucket.conforms(0));
    EXPECT_EQ(bucket.conform_time_ns(0), 6000u);
    EXPECT_FALSE(bucket.conforms(5999));
    EXPECT_TRUE(bucket.conforms(6000));
}

TEST(TokenBucketTest, RefillIsClampedToBurst) {
    TokenBucket bucket;
    bucket.configure(8'000'000'000, 3000);
    bucket.consume(3000);
    EXPECT_TRUE(bucket.conforms(1'000'000'000));  // long idle: only one burst accumulates
    bucket.consume(3000);
    bucket.consume(1);
    EXPECT_FALSE(bucket.conforms(1'000'000'000));
}

TEST(TokenBucketTest, NoDriftOverOneSecondOfOddSteps) {
    // 1 Gb/s = 125e6 bytes/s; consume as much as allowed at 333 ns steps for one second.
    TokenBucket bucket;
    const uint32_t burst = 1500;
    bucket.configure(1'000'000'000, burst);
    uint64_t sent = 0;
    for (uint64_t now = 0; now <= 1'000'000'000; now += 333) {
        while (bucket.conforms(now)) {
            bucket.consume(100);
            sent += 100;
        }
    }
    const uint64_t expected = 125'000'000 + burst;
    EXPECT_LE(sent, expected + 100);
    EXPECT_GE(sent + 100 * 1000, expected);  // debt rounding at the last step only
    EXPECT_NEAR(static_cast<double>(sent), static_cast<double>(expected), 200.0);
}

TEST(TokenBucketTest, ReconfigureKeepsDebtAndDisables) {
    TokenBucket bucket;
    bucket.configure(8'000'000'000, 1000);
    bucket.consume(5000);
    bucket.configure(16'000'000'000, 1000);  // faster: debt of 4000 bytes repaid in 2000 ns
    EXPECT_EQ(bucket.conform_time_ns(0), 2000u);
    bucket.configure(0, 0);
    EXPECT_FALSE(bucket.enabled());
    EXPECT_TRUE(bucket.conforms(0));
}

TEST(TokenBucketTest, TakeOverKeepsDebtAndClampsTokensToTheNewDepth) {
    TokenBucket old_bucket;
    old_bucket.configure(8'000'000'000, 1000);  // 1 byte/ns
    old_bucket.consume(5000);                   // 4000 bytes of debt at 0
    TokenBucket replacement;
    replacement.configure(16'000'000'000, 500);
    replacement.take_over(old_bucket, 1000);  // 3000 bytes of debt at 1000, repaid at 2 bytes/ns
    EXPECT_EQ(replacement.conform_time_ns(1000), 2500u);
    TokenBucket full;
    full.configure(8'000'000'000, 1000);  // full: 1000 bytes
    TokenBucket shallower;
    shallower.configure(8'000'000'000, 100);
    shallower.take_over(full, 50);
    EXPECT_EQ(shallower.tokens_units(), 100 * TokenBucket::kUnitsPerByte);
}

TEST(EcnTest, ReadsIpv4AndIpv6Codepoints) {
    auto v4 = testing::make_ipv4_header(0xb8 | 0x02);  // DSCP EF, ECT(0)
    Packet packet;
    packet.l3 = v4.data();
    EXPECT_EQ(read_ecn(packet), EcnCodepoint::ect0);
    auto v6 = testing::make_ipv6_header(0x28 | 0x01);  // ECT(1)
    packet.l3 = v6.data();
    EXPECT_EQ(read_ecn(packet), EcnCodepoint::ect1);
    packet.l3 = nullptr;
    EXPECT_EQ(read_ecn(packet), EcnCodepoint::not_ect);
}

TEST(EcnTest, MarksIpv4AndKeepsChecksumValid) {
    std::mt19937 random(7);
    for (int i = 0; i < 10000; ++i) {
        const auto tos = static_cast<uint8_t>((random() & 0xfc) | (1 + random() % 2));
        auto header = testing::make_ipv4_header(tos, static_cast<uint16_t>(random()));
        header[8] = static_cast<uint8_t>(random());  // TTL varies the checksum
        const uint16_t fixed = ipv4_header_checksum(header.data(), 20);
        header[10] = static_cast<uint8_t>(fixed >> 8);
        header[11] = static_cast<uint8_t>(fixed);
        Packet packet;
        packet.l3 = header.data();
        ASSERT_TRUE(mark_ce(packet));
        EXPECT_EQ(header[1], tos | 0x03);
        const uint16_t stored = static_cast<uint16_t>((header[10] << 8) | header[11]);
        ASSERT_EQ(stored, ipv4_header_checksum(header.data(), 20)) << "tos " << int(tos);
    }
}

TEST(EcnTest, NotEctIsNotMarkedAndCeStaysCe) {
    auto header = testing::make_ipv4_header(0xb8);
    const auto before = header;
    Packet packet;
    packet.l3 = header.data();
    EXPECT_FALSE(mark_ce(packet));
    EXPECT_EQ(header, before);
    auto ce = testing::make_ipv4_header(0xb8 | 0x03);
    const auto ce_before = ce;
    packet.l3 = ce.data();
    EXPECT_TRUE(mark_ce(packet));
    EXPECT_EQ(ce, ce_before);
}

TEST(EcnTest, MarksIpv6TrafficClassOnly) {
    auto header = testing::make_ipv6_header(0x68 | 0x02);
    Packet packet;
    packet.l3 = header.data();
    ASSERT_TRUE(mark_ce(packet));
    EXPECT_EQ(testing::ipv6_traffic_class(header.data()), 0x68 | 0x03);
    EXPECT_EQ(header[0] >> 4, 6);       // version intact
    EXPECT_EQ(header[1] & 0x0f, 0x0a);  // flow label intact
    EXPECT_EQ(header[2], 0xbc);
}

TEST(RedTest, ProbabilityFollowsTheLinearRamp) {
    RedParams params{true, 10000, 20000, uint64_t{1} << 31, true};  // pmax 0.5
    DeterministicRng rng(42);
    EXPECT_FALSE(red_signal(params, 9999, rng));
    EXPECT_TRUE(red_signal(params, 20000, rng));
    for (const auto& [queue, expected] :
         {std::pair{12500u, 0.125}, {15000u, 0.25}, {19000u, 0.45}}) {
        int signals = 0;
        const int trials = 200000;
        for (int i = 0; i < trials; ++i)
            signals += red_signal(params, queue, rng) ? 1 : 0;
        EXPECT_NEAR(static_cast<double>(signals) / trials, expected, 0.005) << queue;
    }
}

TEST(RedTest, SameSeedSameSequence) {
    DeterministicRng a(5), b(5), c(6);
    bool differs = false;
    for (int i = 0; i < 100; ++i) {
        const uint32_t va = a.next_u32();
        EXPECT_EQ(va, b.next_u32());
        differs |= va != c.next_u32();
    }
    EXPECT_TRUE(differs);
}

}  // namespace
}  // namespace twinlane::sched
