// What an SLO measured and did so far, as a plain value (SloGovernor::stats reads it from the
// owner's relaxed counters): windows met, missed and idle, the last and the worst window, the
// floor, the cap and the downgrades. For stats, metrics and reports; no dependencies.
#pragma once

#include <cstdint>

namespace twinlane::slo {

struct SloClassStats {
    uint64_t windows_met = 0, windows_missed = 0, windows_idle = 0;
    uint64_t last_window_start_ns = 0, last_percentile_ns = 0, last_packets = 0;
    bool last_met = true;
    uint64_t worst_window_start_ns = 0, worst_percentile_ns = 0;
    uint64_t share_windows_met = 0, share_windows_missed = 0;
    uint64_t cap_bps = 0, cap_changes = 0;
    uint64_t cap_floor_bps = 0;  // the controller's floor under the cap (0: none)
    uint64_t downgraded_flows = 0, downgrades = 0, returns = 0;
    uint64_t downgraded_packets = 0, downgraded_bytes = 0;
    uint64_t returned_packets = 0, returned_bytes = 0;
    uint64_t pressure_events = 0;

    // Met windows over judged (met + missed) ones; 1 when none was judged.
    double attainment() const {
        const uint64_t judged = windows_met + windows_missed;
        return judged == 0 ? 1.0 : static_cast<double>(windows_met) / static_cast<double>(judged);
    }
};

}  // namespace twinlane::slo
