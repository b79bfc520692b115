#include "replay/trace_schedule.h"

#include <gtest/gtest.h>

namespace twinlane::replay {
namespace {

constexpr uint64_t kHz = 2'000'000'000;  // 2 ticks per ns

TEST(TraceSchedule, FollowsTheRecordedTimingFromTheFirstFrame) {
    TraceSchedule s(kHz, 1.0, 0);
    EXPECT_EQ(s.next(5'000'000, 1500), 0u);
    EXPECT_EQ(s.next(5'001'000, 1500), 2'000u);
    EXPECT_EQ(s.next(5'010'000, 64), 20'000u);
}

TEST(TraceSchedule, StartsWithItsFirstFrame) {
    TraceSchedule s(kHz, 1.0, 0);
    EXPECT_FALSE(s.started());
    s.next(7'000, 64);
    EXPECT_TRUE(s.started());
    EXPECT_EQ(s.first_timestamp_ns(), 7'000u);
}

TEST(TraceSchedule, SpeedScalesTheGaps) {
    TraceSchedule twice(kHz, 2.0, 0);
    twice.next(0, 100);
    EXPECT_EQ(twice.next(1'000, 100), 1'000u);
    TraceSchedule half(kHz, 0.5, 0);
    half.next(0, 100);
    EXPECT_EQ(half.next(1'000, 100), 4'000u);
}

TEST(TraceSchedule, ALinkSerialisesFramesStampedTogether) {
    // 10G: a 1226-byte frame + 24 bytes of overhead is 1000 ns on the wire.
    TraceSchedule s(kHz, 1.0, 10'000'000'000ULL);
    EXPECT_EQ(s.next(0, 1226), 0u);
    EXPECT_EQ(s.next(0, 1226), 2'000u);
    EXPECT_EQ(s.next(0, 1226), 4'000u);
    // A frame recorded after the link is free again keeps its own time.
    EXPECT_EQ(s.next(10'000, 1226), 20'000u);
}

TEST(TraceSchedule, AFrameStampedBeforeTheFirstIsDueAtOnceInFileOrder) {
    TraceSchedule s(kHz, 1.0, 0);
    EXPECT_EQ(s.next(1'000'000, 100), 0u);
    EXPECT_EQ(s.next(999'000, 100), 0u);
    TraceSchedule linked(kHz, 1.0, 10'000'000'000ULL);
    EXPECT_EQ(linked.next(1'000'000, 1226), 0u);
    EXPECT_EQ(linked.next(999'000, 1226), 2'000u);  // after the frame before it, not earlier
}

// `twinlane run --pace-input` stamps a frame with its arrival: when its last byte is in.
TEST(TraceSchedule, LastEndIsWhenTheLinkHasCarriedTheFrame) {
    TraceSchedule s(kHz, 1.0, 10'000'000'000ULL);
    s.next(0, 1226);
    EXPECT_EQ(s.last_end(), 2'000u);
    s.next(10'000, 1226);
    EXPECT_EQ(s.last_end(), 22'000u);
    TraceSchedule unlimited(kHz, 1.0, 0);  // no link: a frame arrives at its recorded time
    unlimited.next(0, 1226);
    unlimited.next(1'000, 1226);
    EXPECT_EQ(unlimited.last_end(), 2'000u);
}

TEST(TraceSchedule, AJumpLongerThanTheMaxGapIsCutToIt) {
    constexpr uint64_t kHour = 3'600'000'000'000ULL;
    TraceSchedule s(kHz, 1.0, 0, 1'000'000'000);  // at most 1 s
    EXPECT_EQ(s.next(0, 100), 0u);
    EXPECT_EQ(s.next(1'000, 100), 2'000u);
    // A clock step of an hour: due 1 s after the frame before it.
    EXPECT_EQ(s.next(1'000 + kHour, 100), 2'000u + 2'000'000'000u);
    EXPECT_EQ(s.gaps_cut(), 1u);
    EXPECT_EQ(s.cut_ns(), kHour - 1'000'000'000);
    // The frames after it keep their timing relative to it.
    EXPECT_EQ(s.next(2'000 + kHour, 100), 4'000u + 2'000'000'000u);
    // A frame stamped before the jump (the clock stepped back) is due at once, in file order
    // (with the frame before it), and the frame after it still counts from the latest time.
    EXPECT_EQ(s.next(3'000, 100), 4'000u + 2'000'000'000u);
    EXPECT_EQ(s.next(3'000 + kHour, 100), 6'000u + 2'000'000'000u);
    // A gap of exactly the max is kept, and counts nothing.
    EXPECT_EQ(s.next(3'000 + kHour + 1'000'000'000, 100), 6'000u + 4'000'000'000u);
    EXPECT_EQ(s.gaps_cut(), 1u);
}

TEST(TraceSchedule, WithoutAMaxGapEveryGapIsKept) {
    constexpr uint64_t kHour = 3'600'000'000'000ULL;
    TraceSchedule s(kHz, 1.0, 0);
    s.next(0, 100);
    EXPECT_EQ(s.next(kHour, 100), 2 * kHour);
    EXPECT_EQ(s.gaps_cut(), 0u);
}

TEST(TraceSchedule, TheMaxGapAlsoBoundsTheWaitFromASharedStart) {
    // Captures of several links on one clock start at the earliest first frame: one that
    // starts an hour later waits at most the max gap.
    TraceSchedule s(kHz, 1.0, 0, 1'000'000'000);
    s.start_at(0);
    EXPECT_EQ(s.next(3'600'000'000'000ULL, 100), 2'000'000'000u);
    EXPECT_EQ(s.gaps_cut(), 1u);
}

}  // namespace
}  // namespace twinlane::replay
