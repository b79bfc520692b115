// The JSON shapes of DaemonApi's statistics (see control/daemon_api.h), built from the policy's
// topology plus counters the caller supplies. The realtime daemon passes functions that read
// its schedulers and classifiers; PolicyStore (offline) passes zeros. One shape, one place.
//
// Node counters are looked up by (egress tree index, node name): the names of
// Policy::egress_trees[i] are those of CompiledPolicy::egress[i].tree, so a caller can use
// sched::Scheduler::node_id(name) + node_counters(). Pure functions; thread-safety is that of
// the supplied readers (called on the caller's thread, torn reads tolerated).
#pragma once

#include <array>
#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "classifier/classifier.h"
#include "classifier/flow_table.h"
#include "conf/policy.h"
#include "sched/counters.h"
#include "slo/slo_spec.h"
#include "slo/slo_stats.h"

namespace twinlane::control {

using NodeCountersReader =
    std::function<sched::QueueCounters(size_t egress_index, const std::string& node_name)>;
using ClassifiedCountersReader = std::function<classifier::ClassCounters(size_t class_index)>;

// One SLO of a class on one egress tree, as measured so far.
struct SloStatsEntry {
    std::string port;
    slo::SloClassSpec spec;
    slo::SloClassStats stats;
};
// Every SLO of a class (one per egress tree it enters with an slo), empty when it has none.
using SloReader = std::function<std::vector<SloStatsEntry>(size_t class_index)>;

// {"port", "objective": {"percentile", "target_ns", "window_ns", "min_share", "actions":
//  ["adapt_cap" | "downgrade" | "alert"], "cap_min_bits_per_sec", "cap_max_bits_per_sec",
//  "downgrade_to"}, "windows_met", "windows_missed", "windows_idle", "attainment",
//  "last_window": {"start_ns", "percentile_ns", "packets", "met"}, "worst_window": {"start_ns",
//  "percentile_ns"}, "share_windows_met", "share_windows_missed", "cap_bits_per_sec",
//  "cap_floor_bits_per_sec" (0: none), "cap_changes", "downgraded_flows", "downgrades", "returns",
//  "downgraded_packets", "downgraded_bytes", "returned_packets", "returned_bytes",
//  "pressure_events"}
nlohmann::json slo_stats_to_json(const SloStatsEntry& entry);
// A class's latency through the realtime pipeline (RX burst -> accepted by tx_burst, summed
// over its lcores and egress ports; percentiles from dataplane/pipeline_counters.h's buckets).
struct ClassLatency {
    uint64_t packets = 0, mean_ns = 0, p50_ns = 0, p99_ns = 0, p999_ns = 0, max_ns = 0;
    uint64_t sum_ns = 0;
    // In the scheduler's log2 layout (sched/counters.h), where the reader keeps a histogram.
    std::optional<std::array<uint64_t, sched::kSojournHistogramBuckets>> log2_histogram;
};
using ClassLatencyReader = std::function<ClassLatency(size_t class_index)>;

// {"packets_in", "bytes_in", "packets_out", "bytes_out", "drops": {REASON: packets},
//  "drop_bytes": {REASON: bytes}, "dropped_packets", "ecn_marked_red", "ecn_marked_codel",
//  "depth_packets", "depth_bytes", "migrated_out_packets", "sojourn_last_ns",
//  "sojourn_max_ns", "sojourn_sum_ns", "sojourn_log2_histogram": [40 counts]}
// REASON is sched::to_string(DropReason); histogram bucket i counts sojourns in
// [2^(i-1), 2^i) ns, bucket 0 counts 0 ns.
nlohmann::json queue_counters_to_json(const sched::QueueCounters& counters);

// status()'s "classifier": the RX lcores' classifiers summed (classifier::accumulate):
// {"malformed": {REASON: packets}, "malformed_packets", "flows_inserted",
//  "flow_table_overflows", "flows_expired", "fragments_followed", "fragments_unmatched",
//  "elephants_detected", "elephant_demotions", "elephant_returns", "reclassifications",
//  "reclass_deferred"}. REASON is classifier::to_string(MalformedReason), every reason but
// none; a malformed packet is counted whatever the policy then did (`malformed: drop` or
// default class).
nlohmann::json classifier_counters_to_json(const classifier::ClassifierCounters& counters);

// stats(queues): every node of every egress tree, pre-order.
nlohmann::json queue_stats_json(const conf::Policy& policy, const NodeCountersReader& read_node);
// stats(classes): per class, classifier counters plus its entry nodes' counters summed over
// the egress ports, its pipeline latency {"packets", "mean_ns", "p50_ns", "p99_ns", "p999_ns",
// "max_ns"} (zeros without `read_latency`; with its histogram also "sum_ns" and
// "log2_histogram": [40 counts] as the sojourn's), and for a class with an slo "slo":
// [slo_stats_to_json per egress port].
nlohmann::json class_stats_json(const conf::Policy& policy, const NodeCountersReader& read_node,
                                const ClassifiedCountersReader& read_classified,
                                const SloReader& read_slo = {},
                                const ClassLatencyReader& read_latency = {});
// flows_top(n): the `count` largest flows by bytes over the given tables.
nlohmann::json flows_top_json(const conf::Policy& policy,
                              std::span<const classifier::FlowTable* const> tables, size_t count);

}  // namespace twinlane::control
