// ClassifierConfig: everything the classifier is told, as plain data (the policy file maps YAML
// onto it). validate() checks it once, before construction, and names the offending field.
// Defaults below are those of ClassifierConfig::defaults(). Times are nanoseconds, sizes bytes.
// Plain value type; no thread-safety concerns.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "classifier/flow_table.h"
#include "classifier/rule.h"

namespace twinlane::classifier {

enum class MalformedPolicy : uint8_t {
    default_class,  // classify malformed packets into default_class (counted)
    drop,           // Result::drop = true (counted); the dataplane frees the packet
};

struct DscpMapping {
    uint8_t dscp = 0;  // 0..63
    uint8_t class_id = 0;
};

inline constexpr size_t kMaxClasses = 64;

struct ClassifierConfig {
    // Class (lane) names; a class id is the index. 1..64 entries, unique, non-empty.
    // defaults(): {"inference", "training", "other"}.
    std::vector<std::string> class_names;
    uint8_t default_class = 0;  // class of unmatched traffic. defaults(): "other"
    MalformedPolicy malformed_policy = MalformedPolicy::default_class;

    // Explicit rules; first match by (priority, position). Take precedence over heuristics.
    std::vector<Rule> rules;

    // Heuristics, tried in this order when no rule matches:
    bool roce_detection = true;         // RoCEv2 (UDP 4791) → roce_class
    uint8_t roce_class = 0;             // defaults(): "training"
    std::vector<DscpMapping> dscp_map;  // DSCP → class. defaults(): 26 and 24 → training
                                        // (NCCL_IB_TC=106 / common RoCE CS3), 46 (EF) → inference
    std::vector<uint16_t> model_serving_ports;  // src or dst TCP/UDP port → inference_class.
                                                // defaults(): 8000, 8001 (Triton, vLLM), 8080
                                                // (KServe, TorchServe), 7070 (TorchServe gRPC),
                                                // 8500, 8501 (TF Serving), 50051 (gRPC)
    uint8_t inference_class = 0;                // defaults(): "inference"

    // Jobs for the flows no rule gave one (job 0), from the source address's first
    // job_prefix_ipv4 / job_prefix_ipv6 bits: the network number (IPv6: folded to 32 bits), a
    // job per subnet, which a per_job node's `count` leaves give a leaf of its own while one is
    // free (admission/job_leaves.h). 0: off (such flows stay job 0). Training jobs the policy does
    // not list share by job, not all in job 0's queue.
    uint8_t job_prefix_ipv4 = 0;  // 0 or 1..32
    uint8_t job_prefix_ipv6 = 0;  // 0 or 1..128

    // Elephant detection: a flow not decided by an explicit rule that sends more than
    // elephant_threshold_bytes within one elephant_window_ns window moves to bulk_class; it
    // returns to its own class once idle for elephant_quiet_ns. 0 threshold disables. Flows
    // an SLO governor holds downgraded are left alone (Classifier::set_held_flows).
    uint64_t elephant_threshold_bytes = 0;  // defaults(): 32 MiB
    uint64_t elephant_window_ns = 0;        // defaults(): 1 s
    uint64_t elephant_quiet_ns = 0;         // defaults(): 200 ms (must be >= reclass_gap_ns)
    uint8_t bulk_class = 0;                 // defaults(): "training"

    // 0 (defaults()): a flow's class changes with its next packet, and that packet's Result
    // names the previous class and job, so that the scheduler moves the flow's queued packets
    // along (sched::Scheduler::move_flow) before enqueueing it: no reordering, whatever the
    // lanes' priorities and depths, and flows that never pause (a continuous elephant) move too.
    // > 0: for consumers that cannot move queued packets, the change waits for a gap of at
    // least this long between two of the flow's packets (it must then exceed the lanes' worst
    // queueing delay; a flow that never pauses that long never changes class).
    uint64_t reclass_gap_ns = 0;

    // Flow table: maximum flows cached (0 = no flow table: every packet takes the rule path
    // and elephant detection must be off), slots per flow (a power of two, 2..16: memory
    // against lookup speed, see flow_table.h), idle timeout, and how many entries one ageing
    // step may visit. defaults(): 65536 flows, 4 slots, 30 s, 64 entries per burst.
    uint32_t flow_table_capacity = 0;
    uint32_t flow_slots_per_flow = kDefaultSlotsPerFlow;
    uint64_t flow_idle_timeout_ns = 0;
    uint32_t aging_scan_per_burst = 0;

    // First-fragment decisions remembered for later fragments: entries (rounded up to a power
    // of two, 0 = off) and lifetime. defaults(): 4096 entries, 1 s.
    uint32_t fragment_cache_capacity = 0;
    uint64_t fragment_timeout_ns = 0;

    // Parser.
    bool vxlan_inner = false;  // classify VXLAN (UDP vxlan_port) on the inner packet
    uint16_t vxlan_port = 4789;
    uint16_t roce_port = 4791;
    uint8_t max_vlan_depth = 2;  // 1..8 stacked 802.1Q/802.1ad tags

    static ClassifierConfig defaults();

    // Empty when valid; otherwise one message per problem, each starting with the field path
    // (e.g. "rules[3].dst_ports: first 90 > last 80").
    std::vector<std::string> validate() const;
};

}  // namespace twinlane::classifier
