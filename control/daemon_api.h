// DaemonApi: what the control server, the metrics exporter and DPDK telemetry ask of a running
// twinlane (the realtime daemon, or an offline/in-process implementation such as PolicyStore).
//
// Every method returns an ApiResult: a JSON value on success, or a message (plus, for policy
// problems, one "file:line:col: key.path: reason" line per error) on failure. Implementations
// never let an exception cross this interface; the control server additionally catches
// anything that escapes, but that is a bug.
//
// Thread-safety: every method may be called from the control server's thread, the metrics
// server's thread(s) and the DPDK telemetry thread, concurrently. Implementations serialise
// changes themselves and marshal them to the owning lcores, which apply them between bursts
// (never block an lcore on the caller). Reads may return counters torn per 64-bit value.
//
// Result schemas (field names are the protocol; see control/README.md for examples). Counters
// are totals since start (monotonic); rates are bits/s averaged over the implementation's
// sampling interval.
//   status():  {"version": "0.1.0", "uptime_ns": N, "policy_source": "conf/x.yaml",
//               "policy_epoch": N, "log_level": "info",
//               "policy_changes": {"load"|"rules_add"|"rules_delete"|"class_set":
//                                  {"applied": N, "refused": N}},  (requests since start)
//               "policy_last_load_ok": bool (false after a refused policy_load, until one
//                                  succeeds),
//               "ports": [{"name", "port_id", "device", "link_up", "speed_mbps",
//                          "rate_bits_per_sec"}],
//               "lcores": [{"lcore": N, "role": "rx|scheduler|run_to_completion|control",
//                           "ports": ["west", ...],
//                           (daemon, forwarding lcores) "busy_passes", "pass_p50_ns",
//                           "pass_p99_ns", "pass_max_ns", "pass_sum_ns",
//                           "pass_log2_histogram": [40 counts, the sojourn's layout],
//                           "poll_gap_max_ns" (the longest between two passes' starts,
//                           idle passes included),
//                           (where /proc says) "run_ns", "runqueue_wait_ns",
//                           "involuntary_switches"}],
//               "classifier": (daemon only) control/stats_json.h's
//                             classifier_counters_to_json}
//   stats(ports):   [{"name", "port_id", "rx_packets", "rx_bytes", "tx_packets", "tx_bytes",
//                     "rx_dropped", "tx_dropped", "rx_bits_per_sec", "tx_bits_per_sec",
//                     "tx_link_bound_ns" (time the port's rate held back queued packets),
//                     "pfc" (daemon only)}]
//   stats(classes): [{"name", "class_id", "classified_packets", "classified_bytes",
//                     "malformed_drops", "queue": QUEUE_COUNTERS, "latency": {"packets",
//                     "mean_ns", "p50_ns", "p99_ns", "p999_ns", "max_ns", (daemon) "sum_ns",
//                     "log2_histogram"}]  (queue: summed over the class's leaves on every
//                     egress port; latency: RX -> accepted by tx_burst through the realtime
//                     pipeline, control/stats_json.h)
//   stats(queues):  [{"port", "node", "parent", "kind", "leaf": bool, "class" (leaves and
//                     per_job nodes, else null), "counters": QUEUE_COUNTERS}]  (pre-order)
//     QUEUE_COUNTERS = control/stats_json.h's queue_counters_to_json(sched::QueueCounters).
//   flows_top(n):   [{"src", "dst", "proto", "src_port", "dst_port", "ingress_port", "class",
//                     "job", "packets", "bytes", "last_seen_ns"}]  by bytes, largest first
//   rules_list():   [RULE] in the policy file's schema (conf/policy_document.h)
//   rules_add/rules_delete/class_set/policy_load: {"policy_epoch": N, "policy_source": ...}
//   policy_show(): {"policy_source", "policy_epoch", "document": the policy document as JSON}
//                  (conf/policy_document.h; twinlanectl renders it as YAML)
//   log_level()/set_log_level(): {"log_level": "info"}
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace twinlane::control {

// A JSON result or an error; no exceptions. `details` carries one line per policy error.
class ApiResult {
  public:
    static ApiResult success(nlohmann::json value) {
        ApiResult result;
        result.ok_ = true;
        result.value_ = std::move(value);
        return result;
    }
    static ApiResult failure(std::string message, std::vector<std::string> details = {}) {
        ApiResult result;
        result.error_ = std::move(message);
        result.details_ = std::move(details);
        return result;
    }

    bool ok() const { return ok_; }
    const nlohmann::json& value() const { return value_; }
    const std::string& error() const { return error_; }
    const std::vector<std::string>& details() const { return details_; }

  private:
    ApiResult() = default;
    bool ok_ = false;
    nlohmann::json value_;
    std::string error_;
    std::vector<std::string> details_;
};

enum class StatsScope { ports, classes, queues };

class DaemonApi {
  public:
    virtual ~DaemonApi() = default;

    virtual ApiResult status() = 0;
    virtual ApiResult stats(StatsScope scope) = 0;
    // The `count` largest cached flows by bytes, over every RX lcore's flow table.
    virtual ApiResult flows_top(size_t count) = 0;

    virtual ApiResult rules_list() = 0;
    // `rule_text` is one rule in the policy file's YAML/JSON syntax, e.g.
    // "{name: x, priority: 5, match: {dst_port: 9000}, action: {class: inference}}".
    // Builds a new policy (validate + compile) and swaps it in; on error nothing changes.
    virtual ApiResult rules_add(std::string_view rule_text) = 0;
    virtual ApiResult rules_delete(std::string_view rule_name) = 0;

    // Sets one parameter of the scheduler node(s) where class `class_name` enters, on every
    // egress port. Keys and value units as in the policy file: weight, rate, burst,
    // limit_packets, limit_bytes, ecn (on/off), ecn_kmin, ecn_kmax, ecn_pmax,
    // ecn_drop_non_ect, codel (on/off), codel_target, codel_interval, codel_ecn.
    // Applied in place (sched::Scheduler::apply): nothing queued is lost.
    virtual ApiResult class_set(std::string_view class_name, std::string_view key,
                                std::string_view value) = 0;

    // Loads and compiles `path`; swaps it in only if it is valid (errors in `details`).
    virtual ApiResult policy_load(const std::string& path) = 0;
    virtual ApiResult policy_show() = 0;

    virtual ApiResult log_level() = 0;
    virtual ApiResult set_log_level(std::string_view level) = 0;
};

}  // namespace twinlane::control
