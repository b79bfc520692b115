#include "dataplane/tx_pacer.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace twinlane::dataplane {
namespace {

constexpr uint64_t k10G = 10'000'000'000ULL;

TEST(TxPacer, AllowsUpToTheBudgetAtOnce) {
    TxPacer pacer(k10G, 16'000);
    EXPECT_EQ(pacer.allowance_bytes(0), 16'000u);
    pacer.on_transmit(9000);
    EXPECT_EQ(pacer.backlog_bytes(), 9024u);
    EXPECT_EQ(pacer.allowance_bytes(0), 16'000u - 9024u);
    pacer.on_transmit(9000);
    EXPECT_EQ(pacer.allowance_bytes(0), 0u);
}

TEST(TxPacer, DrainsAtTheLinkRate) {
    TxPacer pacer(k10G, 100'000);
    pacer.on_transmit(1476);  // 1500 wire bytes = 1200 ns at 10G
    EXPECT_EQ(pacer.backlog_bytes(), 1500u);
    pacer.allowance_bytes(600);
    EXPECT_EQ(pacer.backlog_bytes(), 750u);
    pacer.allowance_bytes(1200);
    EXPECT_EQ(pacer.backlog_bytes(), 0u);
}

TEST(TxPacer, NextAllowanceIsWhenBacklogFallsBelowBudget) {
    TxPacer pacer(k10G, 1000);
    pacer.on_transmit(1976);  // 2000 wire bytes
    const uint64_t t = pacer.next_allowance_ns(0);
    EXPECT_GT(pacer.allowance_bytes(t), 0u);
    TxPacer again(k10G, 1000);
    again.on_transmit(1976);
    EXPECT_EQ(again.allowance_bytes(t - 1), 0u);
}

TEST(TxPacer, LongRunRateIsExact) {
    // A greedy sender that hands over frames whenever allowed gets exactly the rate over 1 s.
    const uint64_t rate = 1'000'000'000ULL;  // 1 Gb/s
    TxPacer pacer(rate, 3000);
    uint64_t now = 0;
    uint64_t wire_bytes = 0;
    while (now < 1'000'000'000ULL) {
        while (pacer.allowance_bytes(now) > 0) {
            pacer.on_transmit(1476);
            wire_bytes += 1500;
        }
        now = pacer.next_allowance_ns(now);
    }
    const double achieved = static_cast<double>(wire_bytes - pacer.backlog_bytes()) * 8.0;
    EXPECT_NEAR(achieved / static_cast<double>(rate), 1.0, 0.001);
}

TEST(TxPacer, SlowLoopStillFillsTheLink) {
    // A loop that comes back only every 100 us, with a budget of two 1500-byte frames: a fixed
    // budget would cap it at 3000 B / 100 us = 240 Mb/s; the adaptive one keeps 300 Mb/s.
    const uint64_t rate = 300'000'000ULL;
    TxPacer pacer(rate, 3000);
    uint64_t wire_bytes = 0;
    uint64_t now = 0;
    for (; now < 1'000'000'000ULL; now += 100'000) {
        while (pacer.allowance_bytes(now) >= 1500) {
            pacer.on_transmit(1476);
            wire_bytes += 1500;
        }
    }
    const double achieved = static_cast<double>(wire_bytes - pacer.backlog_bytes()) * 8.0;
    EXPECT_GT(achieved / static_cast<double>(rate), 0.97);
    EXPECT_LT(achieved / static_cast<double>(rate), 1.001);
}

TEST(TxPacer, FastLoopKeepsTheConfiguredBudget) {
    // Called every microsecond, the backlog never exceeds the configured budget.
    TxPacer pacer(10'000'000'000ULL, 4000);
    for (uint64_t now = 0; now < 10'000'000; now += 1000) {
        while (pacer.allowance_bytes(now) >= 1500)
            pacer.on_transmit(1476);
        ASSERT_LE(pacer.backlog_bytes(), 4000u);
    }
}

TEST(TxPacer, MinimumFrameIsCountedAsSixtyBytes) {
    TxPacer pacer(k10G, 1000);
    pacer.on_transmit(10);
    EXPECT_EQ(pacer.backlog_bytes(), 84u);
}

// The scheduler's byte budget (dequeue_burst with kWireCost) and the pacer count a frame alike.
TEST(TxPacer, ChargesWhatTheSchedulersWireCostCharges) {
    for (const uint32_t frame : {1u, 59u, 60u, 61u, 1514u, 9018u}) {
        const uint64_t charged =
            std::max(frame, TxPacer::kWireCost.min_frame_bytes) + TxPacer::kWireCost.overhead_bytes;
        EXPECT_EQ(charged, sched::wire_bytes(frame)) << frame;
    }
    EXPECT_EQ(sched::wire_bytes(1514), 1538u);
}

}  // namespace
}  // namespace twinlane::dataplane
