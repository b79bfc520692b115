#include "slo/controller.h"

#include <algorithm>

namespace twinlane::slo {

const char* to_string(Reason reason) {
    switch (reason) {
        case Reason::none:
            return "none";
        case Reason::missed_cap_binding:
            return "missed_cap_binding";
        case Reason::pressure:
            return "pressure";
        case Reason::missed_at_max:
            return "missed_at_max";
        case Reason::met_quiet:
            return "met_quiet";
        case Reason::comfortable:
            return "comfortable";
    }
    return "none";
}

Controller::Controller(const ControllerSpec& spec, uint64_t cap_bps) : spec_(spec) {
    if (spec_.quiet_windows == 0) spec_.quiet_windows = 1;
    if (spec_.target_ns != 0)
        guard_ns_ = static_cast<uint64_t>(static_cast<double>(spec_.target_ns) * kGuardFraction);
    reset_cap(cap_bps);
}

void Controller::reset_cap(uint64_t cap_bps) {
    cap_bps_ =
        spec_.adapt_cap ? std::clamp(cap_bps, spec_.cap_min_bps, spec_.cap_max_bps) : cap_bps;
    raised_from_bps_ = 0;
    floor_bps_ = 0;
}

uint64_t Controller::bytes_per_window(uint64_t bps, double utilisation) const {
    return static_cast<uint64_t>(static_cast<double>(bps) * static_cast<double>(spec_.window_ns) /
                                 8e9 * utilisation);
}

void Controller::set_cap(Decision& d, uint64_t cap, Reason reason) {
    if (cap == cap_bps_) return;
    cap_bps_ = cap;
    d.cap_bps = cap;
    d.cap_reason = reason;
}

void Controller::raise_cap(Decision& d, uint64_t cap, Reason reason) {
    raised_from_bps_ = cap_bps_;
    raised_windows_ = 0;
    set_cap(d, cap, reason);
}

uint64_t Controller::step_bps() const {
    return std::max<uint64_t>(1, (spec_.cap_max_bps - spec_.cap_min_bps) / kDecreaseSteps);
}

void Controller::update_floor(const WindowMeasurement& m) {
    if (raised_from_bps_ != 0) {
        // Two windows, the raise's and the next: a surge that began late in the first shows
        // in the second.
        const uint64_t load = m.bytes_in + m.downgraded_bytes;
        if (load > bytes_per_window(raised_from_bps_, kDecreaseUtilisation)) {
            raised_from_bps_ = 0;
        } else if (++raised_windows_ == 2) {
            if (raised_from_bps_ > floor_bps_) {
                floor_bps_ = raised_from_bps_;
                floor_age_ = 0;
            }
            raised_from_bps_ = 0;
        }
        return;
    }
    if (floor_bps_ == 0 || ++floor_age_ < kFloorWindows) return;
    floor_age_ = 0;
    const uint64_t step = step_bps();
    floor_bps_ = floor_bps_ - spec_.cap_min_bps >= step ? floor_bps_ - step : 0;
}

void Controller::downgraded() {
    if (windows_since_return_ < spec_.quiet_windows && return_backoff_ < kMaxReturnBackoff)
        ++return_backoff_;
    windows_since_return_ = UINT32_MAX;
}

Decision Controller::on_window(const WindowMeasurement& m) {
    Decision d;
    if (spec_.target_ns == 0) return d;
    if (windows_since_return_ != UINT32_MAX) ++windows_since_return_;
    if (spec_.adapt_cap) update_floor(m);
    if (m.downgraded_count == 0 && m.downgraded.empty()) return_backoff_ = 0;
    const uint64_t service = m.service_bps != 0 ? m.service_bps : cap_bps_;
    const bool at_max = !spec_.adapt_cap || cap_bps_ >= spec_.cap_max_bps;
    if (!m.met) {
        met_streak_ = 0;
        const bool binding = m.backlog_bytes > spec_.max_frame_bytes ||
                             m.bytes_out >= bytes_per_window(cap_bps_, kBindingUtilisation);
        if (spec_.adapt_cap && !at_max && binding) {
            // At least the rate that arrived, with the headroom a downgrade would leave.
            const double arrived_bps =
                static_cast<double>(m.bytes_in) * 8e9 / static_cast<double>(spec_.window_ns);
            const auto needed = static_cast<uint64_t>(arrived_bps / kDowngradeUtilisation);
            const uint64_t doubled = cap_bps_ * kIncreaseFactor;
            raise_cap(d, std::min(spec_.cap_max_bps, std::max(doubled, needed)),
                      Reason::missed_cap_binding);
            return d;
        }
        if (spec_.downgrade && at_max) {
            // What stays above kDowngradeUtilisation of the cap goes; and a miss below it
            // still takes kMissCut of what stays (the class cannot carry that much within its
            // target: bursts, not the mean, made it late).
            const uint64_t keep = bytes_per_window(service, kDowngradeUtilisation);
            const uint64_t load = m.bytes_in + m.backlog_bytes;
            const bool own_queue =
                m.queue_pressed || m.percentile_ns > spec_.target_ns + spec_.blocking_ns;
            const auto cut = own_queue
                                 ? static_cast<uint64_t>(static_cast<double>(m.bytes_in) * kMissCut)
                                 : uint64_t{0};
            const uint64_t excess = std::max(load > keep ? load - keep : 0, cut);
            if (excess != 0) {
                uint64_t moved = 0;
                for (const FlowLoad& f : m.heaviest) {
                    if (moved >= excess || !d.downgrade.push(f)) break;
                    moved += f.bytes;
                }
                if (d.downgrade.count != 0) {
                    d.flows_reason = Reason::missed_at_max;
                    downgraded();
                }
            }
        }
        return d;
    }

    if (met_streak_ != UINT32_MAX) ++met_streak_;
    if (m.downgraded_count != 0 || !m.downgraded.empty()) {
        // Flows that sent wait out the backed-off quiet period; silent ones the plain one.
        const uint32_t backed_off = spec_.quiet_windows << return_backoff_;
        // Everything downgraded fits under the cap with the step-down's margin: no return can
        // be undone by returning load, so the backoff has nothing to protect.
        const uint64_t committed = m.bytes_in + m.returning_load;
        const bool all_fit =
            committed + m.downgraded_load <= bytes_per_window(service, kDecreaseUtilisation);
        if (spec_.downgrade && met_streak_ >= spec_.quiet_windows) {
            FlowList lightest;
            for (const FlowLoad& f : m.downgraded)
                if ((f.bytes == 0 || all_fit || met_streak_ >= backed_off) && !lightest.push(f))
                    break;
            std::sort(lightest.flows.begin(), lightest.flows.begin() + lightest.count,
                      [](const FlowLoad& a, const FlowLoad& b) {
                          return a.bytes != b.bytes ? a.bytes < b.bytes : a.flow_hash < b.flow_hash;
                      });
            const uint64_t budget = bytes_per_window(service, kReturnUtilisation);
            uint64_t room = budget > committed ? budget - committed : 0;
            for (const FlowLoad& f : lightest.view()) {
                if (f.bytes > room) break;
                room -= f.bytes;
                d.restore.push(f);
            }
            if (d.restore.count != 0) {
                d.flows_reason = Reason::met_quiet;
                windows_since_return_ = 0;
            }
        }
    }
    const auto comfort =
        static_cast<uint64_t>(static_cast<double>(spec_.target_ns) * kComfortFraction);
    if (spec_.adapt_cap && cap_bps_ > spec_.cap_min_bps && m.percentile_ns <= comfort) {
        const uint64_t step = step_bps();
        uint64_t lower = cap_bps_ - spec_.cap_min_bps > step ? cap_bps_ - step : spec_.cap_min_bps;
        if (floor_bps_ != 0) lower = std::max(lower, std::min(floor_bps_ + step, cap_bps_));
        // Downgraded flows that still send could come back: their load must fit too.
        const uint64_t load = m.bytes_out + (m.downgraded_active != 0 ? m.downgraded_bytes : 0);
        if (lower < cap_bps_ && load <= bytes_per_window(lower, kDecreaseUtilisation))
            set_cap(d, lower, Reason::comfortable);
    }
    return d;
}

Decision Controller::on_pressure(const Pressure& p) {
    Decision d;
    const uint64_t delay_ns = own_delay_ns(p);
    if (spec_.target_ns == 0 || delay_ns <= guard_ns_) return d;
    met_streak_ = 0;  // the window is at risk: nothing returns on its strength
    if (spec_.adapt_cap && cap_bps_ < spec_.cap_max_bps) {
        raise_cap(d, spec_.cap_max_bps, Reason::pressure);
        return d;
    }
    // A queue past the target, or one still growing: what stays arrives faster than
    // kPressureUtilisation of the service rate.
    const bool growing = static_cast<double>(p.arrival_bps) >
                         static_cast<double>(p.service_bps) * kPressureUtilisation;
    // Past the target itself, any flow at least half as heavy as the mean goes; and while
    // the queue is still growing there, any flow however light: a surge over thousands of
    // clients is all light flows, each new one lighter still than the mean.
    const bool late = delay_ns > spec_.target_ns;
    const uint64_t heavy = late && growing ? 0 : late ? p.mean_flow_bytes / 2 : p.mean_flow_bytes;
    if (spec_.downgrade && !p.flow_downgraded && p.room && p.flow.bytes != 0 &&
        p.flow.bytes >= heavy && (growing || late)) {
        d.downgrade.push(p.flow);
        d.flows_reason = Reason::pressure;
        downgraded();
    }
    return d;
}

}  // namespace twinlane::slo
