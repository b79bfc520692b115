// The SLO controller of one class: a pure function from measurements to actions. It keeps only
// its own small state (the cap it set, how many windows in a row met the target), so a test
// drives it with a sequence of measurements and checks the decisions; realtime (TSC time) and
// replay (virtual time) feed it the same way through slo/governor.h.
//
// Two inputs:
//   on_window(m)   a window closed: its percentile met the target or not, what the class sent
//                  and received, its backlog, its heaviest flows and the downgraded ones.
//   on_pressure(p) within a window, a packet of the class is about to wait (predicted: queued
//                  bytes over the class's service rate), or has waited (a departure), longer
//                  than guard_ns(). A window is 1-10 ms; a surge at 2x the cap builds a 50 us
//                  queue in tens of microseconds, so waiting for the window to close would miss
//                  the first surge windows whatever the controller then does.
//
// The cap (adapt_cap) moves by multiplicative increase and additive decrease: up at once when
// the target is at risk, down by small steps when it is comfortably met. Seen from the bulk
// classes below, whose guaranteed capacity is the link minus the cap, that is AIMD: their
// guarantee shrinks fast in a surge and grows back slowly. Constants, and why:
//   kIncreaseFactor 2       a missed window where the cap binds doubles the cap (at least to
//                           the rate that arrived, over kDowngradeUtilisation), bounded by max:
//                           each missed window costs attainment, and doubling reaches any cap
//                           within log2(max/min) windows;
//   kGuardFraction 1/2      pressure at half the target takes the cap straight to its max: a
//                           queue already building within the window leaves no time for steps,
//                           and a higher cap costs the SLO nothing (only bulk capacity);
//   kDecreaseSteps 8        a comfortably met window lowers the cap by (max - min) / 8, so max
//                           -> min takes 8 windows (within the 10-window settling goal) and a
//                           burst right after a surge still finds a high cap; only if the
//                           class's last-window throughput, plus what its downgraded flows still
//                           send (their load could come back), stays under kDecreaseUtilisation
//                           of the lower cap (it would not bind: no oscillation on a constant
//                           load);
//   kComfortFraction 1/2    "comfortably met": the percentile at most half the target;
//   kFloorWindows 64        a cap that pressure raised although the class's load fitted it
//                           (arrivals, downgraded ones included, within kDecreaseUtilisation
//                           of it in the raise's window and the next: bursts pressed, not the
//                           mean) becomes a floor: the cap steps down to one step above it, no
//                           lower, and the floor drops a step every 64 windows, so the cap
//                           tries a value that proved too low at most that often. Without it a
//                           bursty class whose mean fits the min cap cycles min -> max -> 8
//                           steps down -> pressed again, and every change is logged. A raise
//                           where the load did not fit (a surge) leaves no floor: afterwards
//                           the cap goes back to its min in 8 steps.
// Downgrade (Aequitas's idea: send the excess of a latency class to a lower class), only with
// the cap at its max (or without adapt_cap):
//   pressure (a packet at more than kGuardFraction of the target) downgrades the pressing
//                           packet's flow if it is at least as heavy as the mean flow of the
//                           window so far, and only while the queue is past the target or
//                           still growing (what stays in the class arrives faster than
//                           kPressureUtilisation of its service rate, over the last tick and a
//                           half, a tick being twice the target): a queue that built up in a
//                           burst but no longer grows is left to drain. Past the target itself
//                           a flow half as heavy as the mean goes, and while the queue still
//                           grows there, any flow: a surge over thousands of clients is all
//                           light flows, each new one lighter than the mean, and with half
//                           the mean as the bar such a surge (100x over 1000 clients at 10G)
//                           held the queue at 1.1-1.3 ms for four windows (now: one window
//                           missed, at 51 us);
//   kPressureUtilisation 0.85  "growing" above 85% of the service rate, not 95%: bursty RPC
//                           responses at line rate need the headroom. Measured in replay (25x
//                           surge, 4 / 32 / 1000 clients; 0.75, 0.85 and 0.95 tried): the worst
//                           window's p99 38.9 us instead of 49.2 us with 1000 clients (2%
//                           below the target at 0.95), the same bytes downgraded (1.12x the
//                           excess), 1.28x instead of 1.30x with 32 clients; 0.75 downgraded
//                           more with 32 clients (1.32x);
//   kMissCut 1/4            a missed window downgrades its heaviest flows until what stays
//                           arrives at kDowngradeUtilisation of the cap, and at least a quarter
//                           of what stayed: a class that misses below its cap cannot carry that
//                           load within its target (its bursts, not its mean, made it late), so
//                           what stays shrinks multiplicatively per missed window (the MD of
//                           Aequitas's AIMD on admitted load; returns are the additive part).
//                           The quarter goes only if the class's own backlog pressed in the
//                           window or the percentile exceeds the target by more than
//                           blocking_ns: a miss made by frames of other classes on the wire
//                           (a 9 KB frame is 72 us at 1G) is not the class's load, and moving
//                           its flows would only make them later. Pressure from departures
//                           likewise counts their latency beyond blocking_ns.
// Flows return once the target has been met for quiet_windows in a row, lightest first, while
// what stays, plus the load of flows whose return is already decided, plus what returns fits
// kReturnUtilisation of the cap. A flow's load is what the governor measured it sending per
// window while down (at least its bytes in the last window), 0 once it has stopped: silent for
// the quiet period and for twice its mean gap between windows it sent in (a sparse flow, an RPC
// every few windows, is silent in many quiet periods without having stopped; counting those
// as "nothing comes back" returned ~7 Gbit/s as 91 KB over 1000 surge clients). A flow with
// packets still queued in the lower class returns when the last of them has left (the
// governor keeps placing its packets there until then, so nothing is reordered): the return
// is one decision, its load counts as the class's from then on. A return never lifts what
// stays above 90% of the cap and a downgrade leaves at most 95%: a constant load settles in
// that band.
// Hysteresis on returns (kMaxReturnBackoff): a return undone within the quiet period (a flow
// downgraded again, by pressure or a missed window, fewer than quiet_windows windows after
// flows returned) doubles the quiet period that flows that still send need before returning,
// up to 2^kMaxReturnBackoff times; it resets once no flow is downgraded. Measured in replay (a
// 25x surge over 32 clients): without it, flows returned every 2-4 windows of the surge and
// were downgraded again within a window or two. A flow that has stopped returns after the
// plain quiet period: it brings no load back. And when everything downgraded fits, with what
// stays, under kDecreaseUtilisation of the cap, every flow returns after the plain quiet
// period: no return can then be undone by returning load, and the backoff has nothing to
// protect (after a surge over 1000 clients, returns trickled on for 80 windows without it).
// The cap steps down while downgraded flows still send only if what they sent, added to what
// the class sent, stays under kDecreaseUtilisation of the lower cap: their load could come back
// without the lower cap binding (one variable moves at a time, as before, in effect). Measured:
// with 1000 surge clients a few downgraded base flows kept sending after the surge and held the
// cap above its min for 70 windows (now: 8, max -> min).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>

#include "slo/flow_meter.h"

namespace twinlane::slo {

inline constexpr uint32_t kIncreaseFactor = 2;
inline constexpr uint32_t kDecreaseSteps = 8;
inline constexpr double kComfortFraction = 0.5;
inline constexpr double kGuardFraction = 0.5;
inline constexpr double kDowngradeUtilisation = 0.95;
inline constexpr double kReturnUtilisation = 0.90;
inline constexpr double kDecreaseUtilisation = 0.80;
inline constexpr double kMissCut = 0.25;
inline constexpr double kPressureUtilisation = 0.85;
// A cap binds when the class sent at least this share of it in the window (or stayed queued).
inline constexpr double kBindingUtilisation = 0.90;
inline constexpr uint32_t kMaxFlowsPerDecision = 512;
// Returns wait at most quiet_windows << kMaxReturnBackoff (2 ms quiet: 32 windows).
inline constexpr uint32_t kMaxReturnBackoff = 4;
inline constexpr uint32_t kFloorWindows = 64;

struct ControllerSpec {
    uint64_t window_ns = 0;
    uint64_t target_ns = 0;  // 0: no latency objective: the controller never acts
    bool adapt_cap = false;
    uint64_t cap_min_bps = 0;
    uint64_t cap_max_bps = 0;
    bool downgrade = false;
    uint32_t quiet_windows = 1;
    uint32_t max_frame_bytes = 1518;
    // One largest frame at the link rate: what a packet may wait behind a frame of another
    // class already on the wire (the link is not preemptive). No action on the class removes
    // it, so a departure's latency counts for pressure, and a missed window for kMissCut, only
    // beyond it.
    uint64_t blocking_ns = 0;
};

struct WindowMeasurement {
    bool idle = true;  // no packet of the class left in the window
    bool met = true;   // the percentile was within the target (idle windows are met)
    uint64_t percentile_ns = 0;
    uint64_t bytes_out = 0;                // bytes of the class that left in the window
    uint64_t bytes_in = 0;                 // bytes that arrived and stayed in the class
    uint64_t backlog_bytes = 0;            // queued in the class when the window closed
    uint64_t service_bps = 0;              // the rate the class is served at (its cap, or the link)
    std::span<const FlowLoad> heaviest;    // flows in the class, heaviest first
    std::span<const FlowLoad> downgraded;  // downgraded flows not yet returning, with their
                                           // load per window over the quiet period (0: they
                                           // sent nothing in it)
    uint32_t downgraded_count = 0;         // every downgraded flow
    uint32_t downgraded_active = 0;        // downgraded flows that sent in this window
    uint64_t downgraded_bytes = 0;         // what the downgraded flows sent in this window
    uint64_t downgraded_load = 0;          // the load of every flow `downgraded` could list
    uint64_t returning_load = 0;           // the load of flows returning once drained below
                                           // (still sending there): the class's already
    bool queue_pressed = false;  // the class's own backlog, at an arrival, predicted a delay
                                 // past the guard in this window
};

struct Pressure {
    uint64_t delay_ns = 0;  // predicted or measured queueing delay
    bool measured = false;  // a departure's latency (blocking included), not the class's
                            // backlog over its service rate
    FlowLoad flow;          // the packet's flow, bytes so far this window
    uint64_t mean_flow_bytes = 0;
    uint64_t arrival_bps = 0;  // what stays in the class arrives at this rate, recently
    uint64_t service_bps = 0;  // the rate the class is served at
    bool flow_downgraded = false;
    bool room = true;  // the downgrade table has room for one more flow
};

enum class Reason : uint8_t {
    none,
    missed_cap_binding,  // window missed, the cap bound: cap up
    pressure,            // within a window, delay over kGuardFraction of the target
    missed_at_max,       // window missed with the cap at max: heaviest flows down
    met_quiet,           // met for the quiet period: flows back
    comfortable,         // comfortably met: cap down a step
};
const char* to_string(Reason reason);

struct FlowList {
    std::array<FlowLoad, kMaxFlowsPerDecision> flows{};
    uint32_t count = 0;
    std::span<const FlowLoad> view() const { return {flows.data(), count}; }
    bool push(const FlowLoad& f) {
        if (count == flows.size()) return false;
        flows[count++] = f;
        return true;
    }
};

struct Decision {
    std::optional<uint64_t> cap_bps;  // the new cap, when it changes
    Reason cap_reason = Reason::none;
    FlowList downgrade;  // flows to move to the lower class
    FlowList restore;    // flows to bring back
    Reason flows_reason = Reason::none;

    bool empty() const { return !cap_bps && downgrade.count == 0 && restore.count == 0; }
};

class Controller {
  public:
    // `cap_bps`: the cap the tree runs now (clamped into [min, max] when adapt_cap).
    Controller(const ControllerSpec& spec, uint64_t cap_bps);

    Decision on_window(const WindowMeasurement& m);
    Decision on_pressure(const Pressure& p);

    uint64_t cap_bps() const { return cap_bps_; }
    uint32_t met_streak() const { return met_streak_; }
    // Returns of flows that sent wait quiet_windows << return_backoff() met windows.
    uint32_t return_backoff() const { return return_backoff_; }
    const ControllerSpec& spec() const { return spec_; }
    // A cap pressure proved too low for the class's bursts (0: none); see kFloorWindows.
    uint64_t cap_floor_bps() const { return floor_bps_; }
    // The tree's cap was set from outside (a policy change): adopt it.
    void reset_cap(uint64_t cap_bps);

    // The delay above which pressure acts (UINT64_MAX without a target), and the measured
    // latency of a departure above which it does (blocking_ns more).
    uint64_t guard_ns() const { return guard_ns_; }
    uint64_t departure_guard_ns() const {
        return guard_ns_ == UINT64_MAX ? UINT64_MAX : guard_ns_ + spec_.blocking_ns;
    }
    // The part of a pressure's delay the class's own queue is to blame for.
    uint64_t own_delay_ns(const Pressure& p) const {
        if (!p.measured) return p.delay_ns;
        return p.delay_ns > spec_.blocking_ns ? p.delay_ns - spec_.blocking_ns : 0;
    }

  private:
    uint64_t bytes_per_window(uint64_t bps, double utilisation) const;
    void set_cap(Decision& d, uint64_t cap, Reason reason);
    // A raise from the cap below: a floor if the load of the raise's window and the next fitted it.
    void raise_cap(Decision& d, uint64_t cap, Reason reason);
    // At a window's close: confirm a pending floor, or age the floor a window.
    void update_floor(const WindowMeasurement& m);
    uint64_t step_bps() const;
    // A downgrade decided: a return undone within the quiet period backs returns off.
    void downgraded();

    ControllerSpec spec_;
    uint64_t cap_bps_ = 0;
    uint64_t guard_ns_ = UINT64_MAX;
    uint32_t met_streak_ = 0;
    uint32_t return_backoff_ = 0;
    uint32_t windows_since_return_ = UINT32_MAX;
    uint64_t raised_from_bps_ = 0;  // the cap before a raise, until it is judged a floor
    uint32_t raised_windows_ = 0;   // windows closed since, whose load fitted it
    uint64_t floor_bps_ = 0;
    uint32_t floor_age_ = 0;  // windows since the floor was set or last dropped
};

}  // namespace twinlane::slo
