#include "dataplane/burst_sizer.h"

#include <gtest/gtest.h>

namespace twinlane::dataplane {
namespace {

// A driver whose call costs overhead + per_packet x packets and hands over what is asked, up to
// `available` waiting packets. Returns the sizer after `calls` calls.
BurstSizer drive(BurstSizer sizer, double overhead, double per_packet, int calls,
                 uint16_t available = 32) {
    for (int i = 0; i < calls; ++i) {
        const uint16_t n = std::min(sizer.size(), available);
        sizer.record(static_cast<uint64_t>(overhead + per_packet * n), n);
    }
    return sizer;
}

TEST(BurstSizer, DisabledAlwaysGivesTheFullBurst) {
    BurstSizer off;
    EXPECT_FALSE(off.enabled());
    off.record(1'000'000, 32);
    EXPECT_EQ(off.size(), 32);
    BurstSizer zero(0, 32);
    zero.record(1'000'000, 32);
    EXPECT_EQ(zero.size(), 32);
}

TEST(BurstSizer, NicClassDriverKeepsFullBursts) {
    // 32 packets at 40 cycles each plus 200 per call: 1,480 cycles, far below 10,000.
    EXPECT_EQ(drive(BurstSizer(10'000, 32), 200, 40, 200).size(), 32);
}

TEST(BurstSizer, CopyingDriverIsCutToWhatFitsTheBudget) {
    // net_pcap reading jumbo frames: ~6,000 cycles a frame; 10,500 cycles (5 us at 2.1 GHz)
    // fit one, and the first full burst of 32 is enough to see it.
    BurstSizer s(10'500, 32);
    s.record(32 * 6'000, 32);
    EXPECT_EQ(s.size(), 1);
    s = drive(s, 0, 6'000, 100);
    EXPECT_EQ(s.size(), 1);
    // At 1,000 cycles a frame (small frames from the same file) 10 fit, after a few dozen calls.
    s = drive(s, 0, 1'000, 100);
    EXPECT_EQ(s.size(), 10);
}

TEST(BurstSizer, FollowsTheMeanCostNotOneSlowCall) {
    BurstSizer s = drive(BurstSizer(10'000, 32), 0, 500, 100);
    EXPECT_EQ(s.size(), 20);
    s.record(200'000, 20);  // one call 20x slower (an interrupt, a page fault)
    EXPECT_GE(s.size(), 8);
    s = drive(s, 0, 500, 100);
    EXPECT_GE(s.size(), 19);
}

TEST(BurstSizer, GrowsBackWhenTheDriverGetsCheaper) {
    BurstSizer s = drive(BurstSizer(10'000, 32), 0, 5'000, 100);
    EXPECT_EQ(s.size(), 2);
    s = drive(s, 0, 100, 200);
    EXPECT_EQ(s.size(), 32);
}

TEST(BurstSizer, PartialBurstsDoNotShrinkACheapDriver) {
    // Little traffic: RX returns one packet per call, its cost mostly the call's own.
    EXPECT_EQ(drive(BurstSizer(10'000, 32), 250, 40, 300, 1).size(), 32);
}

TEST(BurstSizer, CallsWithoutPacketsAreIgnored) {
    BurstSizer s(10'000, 32);
    s.record(1'000'000, 0);
    EXPECT_EQ(s.size(), 32);
}

TEST(BurstSizer, RespectsASmallerMaximum) {
    EXPECT_EQ(drive(BurstSizer(10'000, 8), 0, 10, 50).size(), 8);
}

}  // namespace
}  // namespace twinlane::dataplane
