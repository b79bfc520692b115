// The SLO controller as a pure function of window measurements and pressure: step responses of
// the cap, its bounds, the comfort and return bands (hysteresis), downgrade and return of
// flows, a constant load driving a simple plant to a fixed point without oscillation, and the
// invariants under random measurements and specs.
#include "slo/controller.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <set>
#include <vector>

namespace twinlane::slo {
namespace {

constexpr uint64_t kWindowNs = 1'000'000;  // 1 ms
constexpr uint64_t kTargetNs = 50'000;     // 50 us
constexpr uint64_t kG = 1'000'000'000;

ControllerSpec spec(bool adapt = true, bool downgrade = true) {
    ControllerSpec s;
    s.window_ns = kWindowNs;
    s.target_ns = kTargetNs;
    s.adapt_cap = adapt;
    s.cap_min_bps = 3 * kG;
    s.cap_max_bps = 9 * kG;
    s.downgrade = downgrade;
    s.quiet_windows = 2;
    return s;
}

// Bytes a rate moves in one window.
uint64_t bytes_at(uint64_t bps) {
    return bps * kWindowNs / 8'000'000'000ULL;
}

WindowMeasurement missed(uint64_t in_bps, uint64_t out_bps, uint64_t backlog = 100'000) {
    WindowMeasurement m;
    m.idle = false;
    m.met = false;
    m.percentile_ns = 400'000;
    m.bytes_in = bytes_at(in_bps);
    m.bytes_out = bytes_at(out_bps);
    m.backlog_bytes = backlog;
    return m;
}

WindowMeasurement met(uint64_t percentile_ns, uint64_t in_bps) {
    WindowMeasurement m;
    m.idle = false;
    m.met = true;
    m.percentile_ns = percentile_ns;
    m.bytes_in = m.bytes_out = bytes_at(in_bps);
    return m;
}

// A window at risk (queueing delay at twice the target) pressed by a heavy flow (hash 10, 50 KB
// this window, 5x the mean) while the class arrives above its 9G service rate.
Pressure heavy_pressure() {
    Pressure p;
    p.delay_ns = 2 * kTargetNs;
    p.flow = {10, 0, 50'000};
    p.mean_flow_bytes = 10'000;
    p.arrival_bps = 10 * kG;
    p.service_bps = 9 * kG;
    return p;
}

TEST(SloController, MissedWithTheCapBindingDoublesTheCapUpToItsMax) {
    Controller c(spec(), 3 * kG);
    // Arrivals at 4G on a 3G cap: doubling (6G) covers 4G / 0.95.
    Decision d = c.on_window(missed(4 * kG, 3 * kG));
    ASSERT_TRUE(d.cap_bps);
    EXPECT_EQ(*d.cap_bps, 6 * kG);
    EXPECT_EQ(d.cap_reason, Reason::missed_cap_binding);
    EXPECT_EQ(d.downgrade.count, 0u);
    // Still missed and binding: bounded by the max.
    d = c.on_window(missed(12 * kG, 6 * kG));
    ASSERT_TRUE(d.cap_bps);
    EXPECT_EQ(*d.cap_bps, 9 * kG);
    EXPECT_EQ(c.cap_bps(), 9 * kG);
    // At the max a miss downgrades instead; the cap never exceeds the max.
    d = c.on_window(missed(12 * kG, 9 * kG));
    EXPECT_FALSE(d.cap_bps);
    EXPECT_EQ(c.cap_bps(), 9 * kG);
}

TEST(SloController, AMissedWindowJumpsToTheArrivalRateWhenDoublingIsNotEnough) {
    Controller c(spec(), 3 * kG);
    const Decision d = c.on_window(missed(8 * kG, 3 * kG));
    ASSERT_TRUE(d.cap_bps);
    // 8G / 0.95 = 8.42G > 2 x 3G.
    EXPECT_NEAR(static_cast<double>(*d.cap_bps), 8e9 / kDowngradeUtilisation, 1e3);
}

TEST(SloController, AMissWhereTheCapDoesNotBindLeavesTheCap) {
    Controller c(spec(), 3 * kG);
    // Sent 1G of a 3G cap and nothing queued: something else made it late.
    const Decision d = c.on_window(missed(1 * kG, 1 * kG, 0));
    EXPECT_TRUE(d.empty());
}

TEST(SloController, ComfortablyMetStepsTheCapDownToItsMinInEightWindows) {
    Controller c(spec(), 9 * kG);
    std::vector<uint64_t> caps;
    for (int w = 0; w < 12; ++w) {
        const Decision d = c.on_window(met(10'000, 1 * kG));
        if (d.cap_bps) {
            EXPECT_EQ(d.cap_reason, Reason::comfortable);
            caps.push_back(*d.cap_bps);
        }
    }
    ASSERT_EQ(caps.size(), kDecreaseSteps);
    for (size_t i = 0; i < caps.size(); ++i)
        EXPECT_EQ(caps[i], 9 * kG - (i + 1) * (6 * kG / kDecreaseSteps));
    EXPECT_EQ(c.cap_bps(), 3 * kG);  // and never below
}

TEST(SloController, MetButNotComfortablyHoldsTheCap) {
    Controller c(spec(), 9 * kG);
    // Between half the target and the target: the hysteresis band.
    for (int w = 0; w < 20; ++w)
        EXPECT_TRUE(c.on_window(met(30'000, 1 * kG)).empty());
    EXPECT_EQ(c.cap_bps(), 9 * kG);
}

TEST(SloController, TheCapDoesNotStepBelowWhatTheClassUses) {
    Controller c(spec(), 9 * kG);
    // 6G used: a step to 8.25G leaves 6G <= 0.8 x 8.25G; 7.5G does not (6 > 6.0 is false: 6 =
    // 0.8 x 7.5 passes); 6.75G would bind.
    for (int w = 0; w < 20; ++w)
        c.on_window(met(10'000, 6 * kG));
    EXPECT_GE(static_cast<double>(c.cap_bps()) * kDecreaseUtilisation, 6e9 - 1e3);
    EXPECT_GT(c.cap_bps(), 6 * kG);
}

// Pressure within a window at twice the target, on a class whose flows are light: it can only
// raise the cap.
Pressure burst_pressure() {
    Pressure p = heavy_pressure();
    p.flow = {1, 0, 2'000};
    p.arrival_bps = 1 * kG;
    p.service_bps = 3 * kG;
    return p;
}

TEST(SloController, ABurstyClassWhoseMeanFitsStopsCyclingItsCap) {
    // 1G on average (within the 3G min cap), in bursts that press any cap below 6G.
    Controller c(spec(), 3 * kG);
    int changes = 0, changes_late = 0, pressed_late = 0;
    for (int w = 0; w < 320; ++w) {
        if (c.cap_bps() < 6 * kG) {
            if (w >= 64) ++pressed_late;
            if (c.on_pressure(burst_pressure()).cap_bps) {
                ++changes;
                if (w >= 64) ++changes_late;
            }
        }
        if (c.on_window(met(10'000, 1 * kG)).cap_bps) {
            ++changes;
            if (w >= 64) ++changes_late;
        }
        EXPECT_GE(c.cap_bps(), 3 * kG);
    }
    // Each press lifts the floor a step (3G, 3.75G, 4.5G, 5.25G) until the cap rests at 6G;
    // then once per kFloorWindows the cap tries a step lower, is pressed, goes to the max and
    // steps back: at most 2 + (max - floor) / step changes per try. Without the floor the cap
    // went min -> max -> 8 steps every few windows (384 changes here).
    EXPECT_LE(changes, 40) << "cap changes over 320 windows";
    const int tries = (320 - 64) / static_cast<int>(kFloorWindows) + 1;
    EXPECT_LE(pressed_late, tries);
    EXPECT_LE(changes_late, tries * (2 + 4));
    EXPECT_GE(c.cap_floor_bps(), 4 * kG);
}

TEST(SloController, TheFloorDropsAStepEveryFloorWindowsOnceBurstsStop) {
    Controller c(spec(), 3 * kG);
    ASSERT_TRUE(c.on_pressure(burst_pressure()).cap_bps);  // 3G -> 9G
    const uint64_t step = 6 * kG / kDecreaseSteps;
    std::vector<std::pair<int, uint64_t>> caps;
    for (int w = 0; w < 80; ++w) {
        const Decision d = c.on_window(met(10'000, 1 * kG));
        if (d.cap_bps) caps.emplace_back(w, *d.cap_bps);
    }
    // Judged a floor after two windows whose load fitted 3G: the cap stops a step above it.
    ASSERT_EQ(caps.size(), kDecreaseSteps);
    EXPECT_EQ(caps[kDecreaseSteps - 2].second, 3 * kG + step);
    // The floor (3G, the min) lapses kFloorWindows windows after it was set: the last step.
    EXPECT_EQ(caps.back().second, 3 * kG);
    EXPECT_EQ(caps.back().first, static_cast<int>(kFloorWindows) + 1);
    EXPECT_EQ(c.cap_floor_bps(), 0u);
}

TEST(SloController, ARaiseUnderASurgeLeavesNoFloor) {
    // The load above the cap it was raised from, in the raise's window or the next one (a
    // surge that began late in the first): the cap goes back to its min in 8 steps after it.
    for (const bool late : {false, true}) {
        SCOPED_TRACE(late);
        Controller c(spec(), 3 * kG);
        ASSERT_TRUE(c.on_pressure(burst_pressure()).cap_bps);
        if (late) c.on_window(met(30'000, 1 * kG));
        c.on_window(missed(12 * kG, 9 * kG));
        EXPECT_EQ(c.cap_floor_bps(), 0u);
        int steps = 0;
        for (int w = 0; w < 12; ++w)
            if (c.on_window(met(10'000, 1 * kG)).cap_bps) ++steps;
        EXPECT_EQ(steps, static_cast<int>(kDecreaseSteps));
        EXPECT_EQ(c.cap_bps(), 3 * kG);
    }
}

TEST(SloController, PressureGoesStraightToTheMaxThenDowngradesTheHeavyFlow) {
    Controller c(spec(), 3 * kG);
    EXPECT_EQ(c.guard_ns(), kTargetNs / 2);
    Pressure p;
    p.delay_ns = kTargetNs / 2;  // at the guard: nothing
    p.flow = {7, 0, 40'000};
    p.mean_flow_bytes = 10'000;
    p.service_bps = 9 * kG;
    p.arrival_bps = 12 * kG;  // the queue grows
    EXPECT_TRUE(c.on_pressure(p).empty());
    p.delay_ns = kTargetNs / 2 + 1;
    Decision d = c.on_pressure(p);
    ASSERT_TRUE(d.cap_bps);
    EXPECT_EQ(*d.cap_bps, 9 * kG);
    EXPECT_EQ(d.cap_reason, Reason::pressure);
    EXPECT_EQ(d.downgrade.count, 0u);  // one step at a time
    // At the max: the heavy flow of a growing queue goes.
    d = c.on_pressure(p);
    EXPECT_FALSE(d.cap_bps);
    ASSERT_EQ(d.downgrade.count, 1u);
    EXPECT_EQ(d.downgrade.flows[0].flow_hash, 7u);
    EXPECT_EQ(d.flows_reason, Reason::pressure);
    // Arrivals at 8G on 9G: above kPressureUtilisation (85%, 7.65G) of the service, the queue
    // still counts as growing (bursts need the headroom).
    p.arrival_bps = 8 * kG;
    EXPECT_EQ(c.on_pressure(p).downgrade.count, 1u);
    // A queue that no longer grows (arrivals under 85% of the service) and is within the
    // target drains by itself.
    p.arrival_bps = 7 * kG;
    EXPECT_TRUE(c.on_pressure(p).empty());
    // Short of the target, a flow lighter than the mean stays, even in a growing queue.
    p.arrival_bps = 12 * kG;
    p.flow.bytes = 9'999;
    EXPECT_TRUE(c.on_pressure(p).empty());
    // Past the target it does not wait for growth, and takes flows half as heavy as the mean.
    p.arrival_bps = 7 * kG;
    p.delay_ns = kTargetNs + 1;
    p.flow.bytes = 5'000;
    EXPECT_EQ(c.on_pressure(p).downgrade.count, 1u);
    p.flow.bytes = 4'999;
    EXPECT_TRUE(c.on_pressure(p).empty());
    // Past the target with the queue still growing, any flow goes, however light (one packet
    // of a flow just seen: a surge of many light clients).
    p.arrival_bps = 12 * kG;
    p.flow.bytes = 1'500;
    EXPECT_EQ(c.on_pressure(p).downgrade.count, 1u);
    // An already downgraded flow, or a full table: kept.
    p.flow.bytes = 40'000;
    p.flow_downgraded = true;
    EXPECT_TRUE(c.on_pressure(p).empty());
    p.flow_downgraded = false;
    p.room = false;
    EXPECT_TRUE(c.on_pressure(p).empty());
}

TEST(SloController, AMissBelowTheCapStillCutsAQuarterOfWhatStays) {
    Controller c(spec(), 9 * kG);
    // 4G arrived on a 9G cap and it was late all the same (bursts): a quarter goes.
    std::vector<FlowLoad> heaviest;
    for (uint32_t f = 0; f < 20; ++f)
        heaviest.push_back({f + 1, 0, bytes_at(4 * kG) / 20});
    WindowMeasurement m = missed(4 * kG, 4 * kG, 0);
    m.service_bps = 9 * kG;
    m.heaviest = heaviest;
    const Decision d = c.on_window(m);
    uint64_t moved = 0;
    for (const FlowLoad& f : d.downgrade.view())
        moved += f.bytes;
    EXPECT_EQ(d.downgrade.count, 5u);
    EXPECT_GE(static_cast<double>(moved), static_cast<double>(m.bytes_in) * kMissCut);
}

// A 9 KB frame of another class on a 1G wire (72 us) delays whatever arrives behind it: the
// class's own actions cannot remove that, so it is not theirs to answer.
constexpr uint64_t kBlockingNs = 72'000;

TEST(SloController, ADeparturesLatencyCountsForPressureOnlyBeyondOneFrameOnTheWire) {
    ControllerSpec s = spec();
    s.blocking_ns = kBlockingNs;
    Controller c(s, 9 * kG);
    EXPECT_EQ(c.departure_guard_ns(), kTargetNs / 2 + kBlockingNs);
    Pressure p = heavy_pressure();
    p.measured = true;
    p.delay_ns = kBlockingNs + kTargetNs / 2;  // its own part at the guard: nothing
    EXPECT_TRUE(c.on_pressure(p).empty());
    EXPECT_EQ(c.own_delay_ns(p), kTargetNs / 2);
    p.delay_ns = kBlockingNs + kTargetNs;  // its own part at twice the guard: acts
    EXPECT_EQ(c.on_pressure(p).downgrade.count, 1u);
    // The same delay predicted from the class's own backlog is all the class's.
    Controller fresh(s, 9 * kG);
    Pressure predicted = heavy_pressure();
    predicted.delay_ns = kTargetNs / 2 + 1;
    EXPECT_EQ(fresh.on_pressure(predicted).downgrade.count, 1u);
}

TEST(SloController, AMissBelowTheCapMadeByFramesOnTheWireMovesNoFlow) {
    ControllerSpec s = spec();
    s.blocking_ns = kBlockingNs;
    std::vector<FlowLoad> heaviest;
    for (uint32_t f = 0; f < 20; ++f)
        heaviest.push_back({f + 1, 0, bytes_at(1 * kG) / 20});
    WindowMeasurement m = missed(1 * kG, 1 * kG, 0);
    m.service_bps = 9 * kG;
    m.heaviest = heaviest;
    m.percentile_ns = kTargetNs + kBlockingNs;  // late by at most one frame on the wire
    Controller c(s, 9 * kG);
    EXPECT_EQ(c.on_window(m).downgrade.count, 0u);
    // Its own backlog pressed in the window: the quarter goes.
    m.queue_pressed = true;
    EXPECT_EQ(c.on_window(m).downgrade.count, 5u);
    // Later than one frame can explain: the quarter goes too.
    m.queue_pressed = false;
    m.percentile_ns = kTargetNs + kBlockingNs + 1;
    EXPECT_EQ(Controller(s, 9 * kG).on_window(m).downgrade.count, 5u);
}

TEST(SloController, AMissAtTheMaxDowngradesTheHeaviestFlowsUntilTheExcessIsCovered) {
    Controller c(spec(), 9 * kG);
    // 12G arrived on a 9G cap, 50 KB queued: what stays must fit 0.95 x 9G per window.
    const std::vector<FlowLoad> heaviest = {
        {1, 0, 200'000}, {2, 0, 150'000}, {3, 0, 100'000}, {4, 0, 100'000}, {5, 0, 50'000}};
    WindowMeasurement m = missed(12 * kG, 9 * kG, 50'000);
    m.service_bps = 9 * kG;
    m.heaviest = heaviest;
    const Decision d = c.on_window(m);
    EXPECT_FALSE(d.cap_bps);
    const uint64_t excess = m.bytes_in + m.backlog_bytes -
                            static_cast<uint64_t>(bytes_at(9 * kG) * kDowngradeUtilisation);
    uint64_t moved = 0;
    for (uint32_t i = 0; i < d.downgrade.count; ++i) {
        EXPECT_EQ(d.downgrade.flows[i].flow_hash, i + 1);  // heaviest first
        moved += d.downgrade.flows[i].bytes;
    }
    EXPECT_GE(moved, excess);
    // Not one flow more than needed.
    EXPECT_LT(moved - d.downgrade.flows[d.downgrade.count - 1].bytes, excess);
    EXPECT_EQ(d.flows_reason, Reason::missed_at_max);
}

TEST(SloController, FlowsReturnAfterTheQuietPeriodLightestFirstWithinTheRoom) {
    Controller c(spec(), 9 * kG);
    // 9G x 0.8 = 900 KB per window of room, 600 KB used: 300 KB for returns.
    const std::vector<FlowLoad> down = {
        {10, 0, 250'000}, {11, 0, 0}, {12, 0, 100'000}, {13, 0, 150'000}};
    WindowMeasurement m = met(10'000, 0);
    m.bytes_in = m.bytes_out = 600'000;
    m.service_bps = 9 * kG;
    m.downgraded = down;
    m.downgraded_count = 4;
    m.downgraded_active = 3;  // flow 11 sent nothing
    m.downgraded_bytes = 500'000;
    // First met window: not yet quiet long enough (quiet_windows = 2), and the cap holds while
    // downgraded flows still send more than a lower cap would leave room for.
    EXPECT_TRUE(c.on_window(m).empty());
    const Decision d = c.on_window(m);
    EXPECT_FALSE(d.cap_bps);
    ASSERT_EQ(d.restore.count, 3u);
    EXPECT_EQ(d.restore.flows[0].flow_hash, 11u);  // sent nothing
    EXPECT_EQ(d.restore.flows[1].flow_hash, 12u);
    EXPECT_EQ(d.restore.flows[2].flow_hash, 13u);  // 100 + 150 KB fit 300 KB; 250 more does not
    EXPECT_EQ(d.flows_reason, Reason::met_quiet);
}

TEST(SloController, PressureRestartsTheQuietPeriod) {
    Controller c(spec(), 9 * kG);
    const std::vector<FlowLoad> down = {{10, 0, 0}};
    WindowMeasurement m = met(30'000, 1 * kG);  // met, not comfortably: the cap holds
    m.downgraded = down;
    m.downgraded_count = 1;
    EXPECT_TRUE(c.on_window(m).empty());
    Pressure p;
    p.delay_ns = 2 * kTargetNs;  // late, the queue not growing
    p.flow = {1, 0, 1};
    p.mean_flow_bytes = 100;  // light: no action, but the window was at risk
    EXPECT_TRUE(c.on_pressure(p).empty());
    EXPECT_EQ(c.met_streak(), 0u);
    EXPECT_TRUE(c.on_window(m).empty());
    EXPECT_EQ(c.on_window(m).restore.count, 1u);
}

TEST(SloController, TheCapStepsDownWhileQuietDowngradedFlowsWaitToReturn) {
    Controller c(spec(), 9 * kG);
    // After a surge: the downgraded flows sent nothing, but still have packets queued below
    // (the governor offers none for return); the cap comes down all the same.
    WindowMeasurement m = met(10'000, 1 * kG);
    m.downgraded_count = 30;
    m.downgraded_active = 0;
    const Decision d = c.on_window(m);
    ASSERT_TRUE(d.cap_bps);
    EXPECT_EQ(d.cap_reason, Reason::comfortable);
    // One of them sends again, more than the next lower cap leaves room for: the cap holds.
    m.downgraded_active = 1;
    m.downgraded_bytes = bytes_at(6 * kG);
    EXPECT_TRUE(c.on_window(m).empty());
    // It sends a little: its load would fit the lower cap if it came back, the cap steps.
    m.downgraded_bytes = bytes_at(1 * kG);
    const Decision lower = c.on_window(m);
    ASSERT_TRUE(lower.cap_bps);
    EXPECT_LT(*lower.cap_bps, *d.cap_bps);
}

TEST(SloController, AReturnUndoneWithinTheQuietPeriodBacksReturnsOff) {
    Controller c(spec(), 9 * kG);
    const std::vector<FlowLoad> down = {{10, 0, 50'000}};
    WindowMeasurement m = met(30'000, 1 * kG);  // met, not comfortably: the cap holds
    m.service_bps = 9 * kG;
    m.downgraded = down;
    m.downgraded_count = 1;
    m.downgraded_active = 1;
    m.downgraded_bytes = 50'000;
    // Other downgraded flows (not offered here) send 7G: not everything would fit, the
    // backoff holds.
    m.downgraded_load = bytes_at(7 * kG);
    EXPECT_TRUE(c.on_window(m).empty());
    EXPECT_EQ(c.on_window(m).restore.count, 1u);  // quiet for 2 windows: back
    // At once pressure downgrades it again: the return was undone, returns back off.
    const Pressure p = heavy_pressure();
    EXPECT_EQ(c.on_pressure(p).downgrade.count, 1u);
    EXPECT_EQ(c.return_backoff(), 1u);
    // Now it needs 4 quiet windows.
    for (int w = 0; w < 3; ++w)
        EXPECT_TRUE(c.on_window(m).empty()) << w;
    EXPECT_EQ(c.on_window(m).restore.count, 1u);
    // Undone again: 8 windows; and so on up to 2^kMaxReturnBackoff times the quiet period.
    for (uint32_t undo = 2; undo <= kMaxReturnBackoff + 2; ++undo) {
        c.on_pressure(p);
        EXPECT_EQ(c.return_backoff(), std::min(undo, kMaxReturnBackoff));
        const uint32_t wait = 2u << c.return_backoff();
        for (uint32_t w = 0; w + 1 < wait; ++w)
            EXPECT_TRUE(c.on_window(m).empty()) << undo << " " << w;
        EXPECT_EQ(c.on_window(m).restore.count, 1u) << undo;
    }
    // Once no flow is downgraded the backoff is forgotten.
    for (int w = 0; w < 4; ++w)
        c.on_window(met(30'000, 1 * kG));
    EXPECT_EQ(c.return_backoff(), 0u);
}

TEST(SloController, EverythingDowngradedFittingReturnsDespiteTheBackoff) {
    Controller c(spec(), 9 * kG);
    const Pressure p = heavy_pressure();
    const std::vector<FlowLoad> down = {{10, 0, 50'000}, {11, 0, 60'000}};
    WindowMeasurement m = met(30'000, 1 * kG);
    m.service_bps = 9 * kG;
    m.downgraded = down;
    m.downgraded_count = 2;
    m.downgraded_active = 2;
    m.downgraded_bytes = 110'000;
    m.downgraded_load = bytes_at(7 * kG);  // many more down, sending: not all would fit
    c.on_window(m);
    ASSERT_EQ(c.on_window(m).restore.count, 2u);
    c.on_pressure(p);  // undone: backed off, 4 windows
    ASSERT_EQ(c.return_backoff(), 1u);
    EXPECT_TRUE(c.on_window(m).empty());
    // The surge is over: what is down sends 110 KB a window, with the class's 125 KB under
    // 80% of the cap (900 KB). Nothing can be undone by it: all of it returns after the plain
    // quiet period.
    m.downgraded_load = 110'000;
    const Decision d = c.on_window(m);
    EXPECT_EQ(d.restore.count, 2u);
    EXPECT_EQ(d.flows_reason, Reason::met_quiet);
    // Not with 1 byte more than 80% of the cap: the backoff waits.
    Controller b(spec(), 9 * kG);
    b.on_window(m);
    b.on_window(m);
    b.on_pressure(p);
    ASSERT_EQ(b.return_backoff(), 1u);
    m.downgraded_load = bytes_at(9 * kG) * 8 / 10 - m.bytes_in + 1;
    EXPECT_TRUE(b.on_window(m).empty());
    EXPECT_TRUE(b.on_window(m).empty());
}

TEST(SloController, FlowsReturningOnceDrainedBelowTakeTheirRoom) {
    Controller c(spec(), 9 * kG);
    // 9G x 0.9 = 1012.5 KB per window; the class took 600 KB and flows whose return was
    // decided (still sending below, their packets draining there) 300 KB: 112.5 KB left.
    const std::vector<FlowLoad> down = {{12, 0, 100'000}, {13, 0, 150'000}};
    WindowMeasurement m = met(30'000, 0);
    m.bytes_in = m.bytes_out = 600'000;
    m.service_bps = 9 * kG;
    m.downgraded = down;
    m.downgraded_count = 4;
    m.downgraded_active = 4;
    m.downgraded_bytes = 550'000;
    m.downgraded_load = 250'000;
    m.returning_load = 300'000;
    c.on_window(m);
    const Decision d = c.on_window(m);
    ASSERT_EQ(d.restore.count, 1u);
    EXPECT_EQ(d.restore.flows[0].flow_hash, 12u);
}

TEST(SloController, FlowsThatSentNothingReturnAfterThePlainQuietPeriod) {
    Controller c(spec(), 9 * kG);
    const Pressure p = heavy_pressure();
    const std::vector<FlowLoad> down = {{10, 0, 50'000}};
    WindowMeasurement m = met(30'000, 1 * kG);
    m.service_bps = 9 * kG;
    m.downgraded = down;
    m.downgraded_count = 1;
    c.on_window(m);
    c.on_window(m);    // returned
    c.on_pressure(p);  // and downgraded again: backed off
    ASSERT_EQ(c.return_backoff(), 1u);
    // Silent now: nothing comes back with it, it returns after 2 windows all the same.
    const std::vector<FlowLoad> silent = {{10, 0, 0}};
    m.downgraded = silent;
    EXPECT_TRUE(c.on_window(m).empty());
    EXPECT_EQ(c.on_window(m).restore.count, 1u);
}

TEST(SloController, AlertOnlyAndFloorOnlyNeverAct) {
    Controller alert(spec(false, false), 5 * kG);
    ControllerSpec floor_only = spec();
    floor_only.target_ns = 0;  // a min_share without a latency target
    Controller floor(floor_only, 5 * kG);
    Pressure p;
    p.delay_ns = 10 * kTargetNs;
    p.flow = {1, 0, 1'000'000};
    for (Controller* c : {&alert, &floor}) {
        for (int w = 0; w < 5; ++w) {
            EXPECT_TRUE(c->on_window(missed(20 * kG, 5 * kG)).empty());
            EXPECT_TRUE(c->on_window(met(1'000, 1 * kG)).empty());
            EXPECT_TRUE(c->on_pressure(p).empty());
        }
    }
}

TEST(SloController, TheCapStartsClampedIntoItsBounds) {
    EXPECT_EQ(Controller(spec(), 1 * kG).cap_bps(), 3 * kG);
    EXPECT_EQ(Controller(spec(), 20 * kG).cap_bps(), 9 * kG);
    EXPECT_EQ(Controller(spec(false, true), 20 * kG).cap_bps(), 20 * kG);  // no adapt_cap
}

// A class whose flows offer a constant rate, on a capped lane: met while what stays is under
// 95% of the cap (queueing stays short), missed above; sent = min(arrivals, cap).
struct Plant {
    std::vector<FlowLoad> flows;  // per-window bytes of each flow
    std::vector<bool> down;

    WindowMeasurement measure(const Controller& c, std::vector<FlowLoad>& heaviest,
                              std::vector<FlowLoad>& downgraded) const {
        uint64_t stay = 0;
        heaviest.clear();
        downgraded.clear();
        for (size_t i = 0; i < flows.size(); ++i) {
            if (down[i]) {
                downgraded.push_back(flows[i]);
            } else {
                stay += flows[i].bytes;
                heaviest.push_back(flows[i]);
            }
        }
        std::sort(heaviest.begin(), heaviest.end(),
                  [](const FlowLoad& a, const FlowLoad& b) { return a.bytes > b.bytes; });
        const uint64_t cap_bytes = bytes_at(c.cap_bps());
        WindowMeasurement m;
        m.idle = stay == 0;
        m.met = stay <= cap_bytes * 95 / 100;
        m.percentile_ns = m.met ? (stay < cap_bytes / 2 ? 10'000 : 30'000) : 500'000;
        m.bytes_in = stay;
        m.bytes_out = std::min(stay, cap_bytes);
        m.backlog_bytes = stay > cap_bytes ? stay - cap_bytes : 0;
        m.service_bps = c.cap_bps();
        m.heaviest = heaviest;
        m.downgraded = downgraded;
        m.downgraded_count = static_cast<uint32_t>(downgraded.size());
        m.downgraded_active = m.downgraded_count;  // constant load: every flow sends
        return m;
    }
    void act(const Decision& d) {
        for (size_t i = 0; i < flows.size(); ++i) {
            for (const FlowLoad& f : d.downgrade.view())
                if (f.flow_hash == flows[i].flow_hash) down[i] = true;
            for (const FlowLoad& f : d.restore.view())
                if (f.flow_hash == flows[i].flow_hash) down[i] = false;
        }
    }
};

TEST(SloController, AConstantLoadSettlesAndThenNothingMoves) {
    // Offered rates from below the min cap to twice the max, in 40 equal flows.
    for (uint64_t offered_bps : {1 * kG, 4 * kG, 7 * kG, 9 * kG, 12 * kG, 18 * kG}) {
        Plant plant;
        for (uint32_t f = 0; f < 40; ++f)
            plant.flows.push_back({f + 1, 0, bytes_at(offered_bps) / 40});
        plant.down.assign(plant.flows.size(), false);
        Controller c(spec(), 3 * kG);
        std::vector<FlowLoad> heaviest, downgraded;
        int last_change = -1;
        int missed_after_settling = 0;
        for (int w = 0; w < 200; ++w) {
            const WindowMeasurement m = plant.measure(c, heaviest, downgraded);
            if (w > 20 && !m.met) ++missed_after_settling;
            const Decision d = c.on_window(m);
            if (!d.empty()) last_change = w;
            plant.act(d);
        }
        SCOPED_TRACE(offered_bps);
        EXPECT_LT(last_change, 20) << "still changing at window " << last_change;
        EXPECT_EQ(missed_after_settling, 0);
        EXPECT_GE(c.cap_bps(), 3 * kG);
        EXPECT_LE(c.cap_bps(), 9 * kG);
        uint64_t down_bytes = 0;
        for (size_t i = 0; i < plant.flows.size(); ++i)
            if (plant.down[i]) down_bytes += plant.flows[i].bytes;
        if (offered_bps <= 8 * kG) {
            EXPECT_EQ(down_bytes, 0u);  // the cap alone covers it
        } else {
            // What stays settles between the return and the downgrade thresholds (one flow of
            // slack): no more downgraded than needed to bring it under 90% of the max cap.
            const auto cap_bytes = static_cast<double>(bytes_at(9 * kG));
            const double stays = static_cast<double>(bytes_at(offered_bps) - down_bytes);
            EXPECT_LE(stays, cap_bytes * kDowngradeUtilisation);
            EXPECT_GE(stays + static_cast<double>(plant.flows[0].bytes),
                      cap_bytes * kReturnUtilisation);
            EXPECT_EQ(c.cap_bps(), 9 * kG);
        }
    }
}

// Random specs (bounds from 1 Mbit/s to 800 Gbit/s, min = max, targets from 1 us to 100 ms,
// every action set) driven by random windows and pressures, the downgraded set kept as the
// governor keeps it. Whatever comes in: the cap stays in its bounds and moves only with
// adapt_cap, a floor lies in them, flows go down only with downgrade and with the cap at its
// max, a flow goes down only if it is not down and comes back only if it is, never twice in one
// decision, and a class without a target never acts.
TEST(SloController, RandomMeasurementsKeepEveryInvariant) {
    std::mt19937_64 rng(20261205);
    const auto below = [&](uint64_t n) { return n == 0 ? 0 : rng() % n; };
    const auto rate = [&] { return uint64_t{1'000'000} << below(20); };  // 1M .. 524G
    uint64_t cap_changes = 0, floors = 0, downgrades = 0, restores = 0;
    for (int run = 0; run < 300; ++run) {
        ControllerSpec sp;
        sp.window_ns = 1'000'000 * (1 + below(10));
        sp.target_ns = below(8) == 0 ? 0 : 1'000 << below(17);  // 0, 1 us .. 65 ms
        sp.adapt_cap = below(2) == 0;
        sp.cap_min_bps = rate();
        sp.cap_max_bps = below(4) == 0 ? sp.cap_min_bps : sp.cap_min_bps + rate();
        sp.downgrade = below(2) == 0;
        sp.quiet_windows = static_cast<uint32_t>(1 + below(8));
        sp.max_frame_bytes = static_cast<uint32_t>(64 + below(9000));
        sp.blocking_ns = below(100'000);
        Controller c(sp, rate());
        SCOPED_TRACE(::testing::Message()
                     << "run " << run << ": window " << sp.window_ns << " target " << sp.target_ns
                     << " adapt " << sp.adapt_cap << " [" << sp.cap_min_bps << ", "
                     << sp.cap_max_bps << "] downgrade " << sp.downgrade);
        std::set<uint32_t> down;
        std::vector<FlowLoad> heaviest, downgraded;
        for (int step = 0; step < 400; ++step) {
            const uint64_t cap_before = c.cap_bps();
            const uint64_t window_bytes = c.cap_bps() / 8 * sp.window_ns / 1'000'000'000;
            const auto load = [&] { return below(2 * window_bytes / 8 + 2); };
            Decision d;
            if (below(3) != 0) {
                heaviest.clear();
                downgraded.clear();
                for (uint32_t f = 1; f <= 64; ++f) {
                    if (down.count(f) != 0) {
                        if (downgraded.size() < kMaxFlowsPerDecision)
                            downgraded.push_back({f, 0, below(3) == 0 ? 0 : load()});
                    } else if (below(2) == 0) {
                        heaviest.push_back({f, 0, load()});
                    }
                }
                std::sort(heaviest.begin(), heaviest.end(),
                          [](const FlowLoad& a, const FlowLoad& b) { return a.bytes > b.bytes; });
                WindowMeasurement m;
                m.idle = heaviest.empty();
                m.met = m.idle || below(2) == 0;
                m.percentile_ns = m.idle ? 0 : below(4 * sp.target_ns + 2);
                for (const FlowLoad& f : heaviest)
                    m.bytes_in += f.bytes;
                m.bytes_out = std::min(m.bytes_in, window_bytes);
                m.backlog_bytes = below(2) == 0 ? 0 : below(window_bytes + 1);
                m.service_bps = c.cap_bps();
                m.heaviest = heaviest;
                m.downgraded = downgraded;
                m.downgraded_count = static_cast<uint32_t>(down.size());
                m.downgraded_active = static_cast<uint32_t>(below(down.size() + 1));
                for (const FlowLoad& f : downgraded)
                    m.downgraded_load += f.bytes;
                m.downgraded_bytes = below(m.downgraded_load + 1);
                m.returning_load = below(window_bytes / 4 + 1);
                m.queue_pressed = below(2) == 0;
                d = c.on_window(m);
            } else {
                Pressure p;
                p.delay_ns = below(4 * sp.target_ns + 2);
                p.measured = below(2) == 0;
                const uint32_t flow = static_cast<uint32_t>(1 + below(64));
                p.flow = {flow, 0, load()};
                p.mean_flow_bytes = load();
                p.arrival_bps = below(2 * c.cap_bps() + 1);
                p.service_bps = c.cap_bps();
                p.flow_downgraded = down.count(flow) != 0;
                p.room = below(8) != 0;
                d = c.on_pressure(p);
            }

            if (sp.target_ns == 0) {
                ASSERT_TRUE(d.empty()) << "step " << step;
            }
            if (sp.adapt_cap) {
                ASSERT_GE(c.cap_bps(), sp.cap_min_bps) << "step " << step;
                ASSERT_LE(c.cap_bps(), sp.cap_max_bps) << "step " << step;
                if (d.cap_bps) {
                    ASSERT_EQ(*d.cap_bps, c.cap_bps()) << "step " << step;
                    ASSERT_NE(*d.cap_bps, cap_before) << "step " << step;
                }
                if (c.cap_floor_bps() != 0) {
                    ASSERT_GE(c.cap_floor_bps(), sp.cap_min_bps) << "step " << step;
                    ASSERT_LE(c.cap_floor_bps(), sp.cap_max_bps) << "step " << step;
                }
            } else {
                ASSERT_FALSE(d.cap_bps) << "step " << step;
                ASSERT_EQ(c.cap_bps(), cap_before) << "step " << step;
            }
            if (d.downgrade.count != 0) {
                ASSERT_TRUE(sp.downgrade) << "step " << step;
                if (sp.adapt_cap) {
                    ASSERT_EQ(c.cap_bps(), sp.cap_max_bps) << "step " << step;
                }
            }
            std::set<uint32_t> moved;
            for (const FlowLoad& f : d.downgrade.view()) {
                ASSERT_EQ(down.count(f.flow_hash), 0u)
                    << "step " << step << " flow " << f.flow_hash;
                ASSERT_TRUE(moved.insert(f.flow_hash).second) << "step " << step;
            }
            for (const FlowLoad& f : d.restore.view()) {
                ASSERT_EQ(down.count(f.flow_hash), 1u)
                    << "step " << step << " flow " << f.flow_hash;
                ASSERT_TRUE(moved.insert(f.flow_hash).second) << "step " << step;
            }
            for (const FlowLoad& f : d.downgrade.view())
                down.insert(f.flow_hash);
            for (const FlowLoad& f : d.restore.view())
                down.erase(f.flow_hash);
            cap_changes += d.cap_bps.has_value();
            floors += c.cap_floor_bps() != 0;
            downgrades += d.downgrade.count;
            restores += d.restore.count;
        }
    }
    // Every kind of action was taken, so the checks above judged something.
    EXPECT_GT(cap_changes, 100u);
    EXPECT_GT(floors, 100u);
    EXPECT_GT(downgrades, 100u);
    EXPECT_GT(restores, 100u);
    std::printf("cap changes %lu, windows with a floor %lu, downgrades %lu, restores %lu\n",
                static_cast<unsigned long>(cap_changes), static_cast<unsigned long>(floors),
                static_cast<unsigned long>(downgrades), static_cast<unsigned long>(restores));
}

}  // namespace
}  // namespace twinlane::slo
