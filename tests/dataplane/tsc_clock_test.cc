#include "dataplane/tsc_clock.h"

#include <gtest/gtest.h>

namespace twinlane::dataplane {
namespace {

TEST(TscClock, ConvertsFromStart) {
    const TscClock clock(1'000, 2'500'000'000);  // 2.5 GHz
    EXPECT_EQ(clock.ns(1'000), 0u);
    EXPECT_EQ(clock.ns(500), 0u);  // before start: clamped, never wraps
    EXPECT_EQ(clock.ns(1'000 + 2'500), 1'000u);
    EXPECT_EQ(clock.ns(1'000 + 2'500'000'000ULL), 1'000'000'000u);
    EXPECT_EQ(clock.tsc_for_ns(1'000), 2'500u);
}

TEST(TscClock, ExactToTheNanosecondAfterADay) {
    const TscClock clock(0, 3'000'000'000);
    const uint64_t day_ns = 86'400ULL * 1'000'000'000ULL;
    EXPECT_EQ(clock.ns(day_ns * 3), day_ns);
}

}  // namespace
}  // namespace twinlane::dataplane
