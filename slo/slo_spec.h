// What the policy asks of one class's latency on one egress tree, compiled (conf/compile.h):
// a queueing-latency target at a percentile over a window, an optional throughput floor, and
// the action the gateway takes when the target is missed. Plain data; units in the names.
//
// Actions (any combination; none is "alert": measure and export, change nothing):
//   adapt_cap  the shaper on `cap_node` (the node where the class enters the tree) moves
//              between cap_min_bps and cap_max_bps (slo/controller.h)
//   downgrade  the class's heaviest flows go to `downgrade_class` while the target is missed
//              with the cap at its max, and come back once it has been met for `quiet_ns`
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace twinlane::slo {

enum class Percentile : uint8_t { p50, p90, p99, p999 };
inline constexpr uint32_t kPercentileCount = 4;

constexpr const char* to_string(Percentile p) {
    switch (p) {
        case Percentile::p50:
            return "p50";
        case Percentile::p90:
            return "p90";
        case Percentile::p99:
            return "p99";
        case Percentile::p999:
            return "p999";
    }
    return "p99";
}
constexpr uint32_t quantile_ppm(Percentile p) {
    switch (p) {
        case Percentile::p50:
            return 500'000;
        case Percentile::p90:
            return 900'000;
        case Percentile::p99:
            return 990'000;
        case Percentile::p999:
            return 999'000;
    }
    return 990'000;
}

// Bounds the policy language enforces (conf/load_slo.cc names them).
inline constexpr uint64_t kMinWindowNs = 100'000;        // 100 us
inline constexpr uint64_t kMaxWindowNs = 1'000'000'000;  // 1 s: per-window counts stay 32-bit
inline constexpr uint64_t kMinTargetNs = 1'000;          // 1 us

struct SloClassSpec {
    uint8_t class_id = 0;
    std::string class_name;
    uint64_t window_ns = 10'000'000;

    bool has_latency = false;  // a percentile target is set
    Percentile percentile = Percentile::p99;
    uint64_t target_ns = 0;
    uint32_t min_share_ppm = 0;  // 0: no throughput floor; else share of the port rate

    bool adapt_cap = false;
    std::string cap_node;  // the class's entry node, which carries the shaper
    uint64_t cap_min_bps = 0;
    uint64_t cap_max_bps = 0;

    bool downgrade = false;
    uint8_t downgrade_class = 0;
    std::string downgrade_class_name;
    uint64_t quiet_ns = 0;  // met this long before downgraded flows return

    bool acts() const { return adapt_cap || downgrade; }
    bool operator==(const SloClassSpec&) const = default;
};

// Every SLO of one egress tree.
struct SloTreeSpec {
    uint64_t link_bps = 0;         // the port rate (min_share is a share of it)
    uint32_t max_frame_bytes = 0;  // the port's largest frame
    std::vector<SloClassSpec> classes;

    bool empty() const { return classes.empty(); }
    bool operator==(const SloTreeSpec&) const = default;

    // One largest frame at the link rate: what a packet may wait behind a frame of another
    // class already on the wire (the link is not preemptive).
    uint64_t blocking_ns() const {
        return link_bps == 0 ? 0
                             : static_cast<uint64_t>(static_cast<double>(max_frame_bytes) * 8e9 /
                                                     static_cast<double>(link_bps));
    }
};

}  // namespace twinlane::slo
