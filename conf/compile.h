// Compiles a validated Policy into the configurations the dataplane's components are built
// from: one sched::TreeSpec per egress port, plus where each (class, job) enters that tree,
// and one classifier::ClassifierConfig. Build is separate from run: this runs once per policy,
// off the hot path, and its output is immutable.
//
// Mapping decisions (documented in conf/README.md):
//  - Tree nodes are listed in pre-order, so sched leaf ids follow the file's order. Strict
//    children get priority = position (first listed is served first).
//  - The root's shaper is the port rate (or the root's own, lower, shaper) with a bucket of
//    the port's tx_budget: the scheduler never releases more than the TX ring should hold.
//  - max_packet_bytes is the port's largest frame (PortPolicy::max_frame_bytes); DRR quanta
//    are weight x that.
//  - Where each class enters a tree is an admission::LeafMap: O(1) per packet.
//  - A class's `slo` becomes an slo::SloClassSpec of each tree it enters, naming the node it
//    enters at (whose shaper adapt_cap moves), its bounds resolved on that port.
//  - A heuristic absent from the policy is off (the classifier's built-in defaults are not
//    used for anything the policy file can say).
//  - Classifier rules name ports by DPDK port id: the caller passes the id of each policy port
//    (the dataplane knows them after probing); by default policy index = port id.
// compile_policy() re-validates its output with sched::validate() and
// ClassifierConfig::validate(); a non-empty `errors` means a mismatch between this policy
// model and those components, i.e. a bug, reported rather than hidden. Pure function.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "admission/lanes.h"
#include "admission/leaf_map.h"
#include "classifier/config.h"
#include "conf/policy.h"
#include "pfc/pause_generator.h"
#include "pfc/pause_receiver.h"
#include "pfc/priority.h"
#include "sched/tree_spec.h"
#include "slo/slo_spec.h"

namespace twinlane::conf {

// A (PFC ingress port, priority) whose bytes are counted while inside an egress tree.
struct PfcAccount {
    size_t ingress_port = 0;
    uint8_t priority = 0;
    bool operator==(const PfcAccount&) const = default;
};
// Accounts are tagged 1..kMaxPfcAccounts in the top bits of sched::Packet::user (0: none).
inline constexpr size_t kMaxPfcAccounts = 15;

struct CompiledEgress {
    size_t port = 0;  // index into Policy::ports
    sched::TreeSpec tree;
    admission::LeafMap leaves;  // (class, job) -> the sched leaf id (sched::Packet::leaf)
    slo::SloTreeSpec slo;       // the classes' latency objectives on this tree (may be empty)
    // Lossless classes on this tree: the priority each lane's class is bound to (kNoPriority if
    // lossy), the node a pause of priority p holds (the class's entry node; -1: none), and the
    // (ingress, priority) accounts of packets entering it.
    std::array<uint8_t, admission::kMaxLanes> lane_priority;
    std::array<int32_t, pfc::kPriorities> pause_node;
    std::vector<PfcAccount> pfc_accounts;

    CompiledEgress() {
        lane_priority.fill(pfc::kNoPriority);
        pause_node.fill(-1);
    }
    // The tag (1..15) of packets of `lane` with priority `priority` from `ingress_port`, or 0.
    uint8_t pfc_tag(size_t ingress_port, uint8_t lane, uint8_t priority) const;
};

// What each port does for PFC, and what all share.
struct CompiledPortPfc {
    PfcMode mode = PfcMode::off;
    std::array<pfc::PriorityThresholds, pfc::kPriorities> thresholds{};  // as an ingress port
};
struct CompiledPfc {
    pfc::DscpPriorityMap dscp_priority;
    pfc::Watchdog watchdog;
    std::vector<CompiledPortPfc> ports;  // by policy port
    bool any() const {
        for (const CompiledPortPfc& p : ports)
            if (p.mode != PfcMode::off) return true;
        return false;
    }
};

struct CompiledPolicy {
    std::vector<CompiledEgress> egress;  // same order as Policy::egress_trees
    classifier::ClassifierConfig classifier;
    CompiledPfc pfc;
    std::vector<std::string> errors;  // empty on success (see the contract above)

    bool ok() const { return errors.empty(); }
};

// `dpdk_port_ids[i]` is the DPDK port id of Policy::ports[i]; empty means "index = id".
CompiledPolicy compile_policy(const Policy& policy, std::span<const uint16_t> dpdk_port_ids = {});

}  // namespace twinlane::conf
