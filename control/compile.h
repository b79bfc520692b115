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
//  - max_packet_bytes is the port's largest frame (mtu + 18); DRR quanta are weight x that.
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

#include "classifier/config.h"
#include "control/policy.h"
#include "sched/tree_spec.h"

namespace twinlane::control {

// Where packets of one class enter an egress tree.
struct ClassEntry {
    JobSplit::Mode mode = JobSplit::Mode::none;
    // none: one leaf. listed: leaves[i] serves jobs[i], the last leaf every other job.
    // modulo: leaves[job % leaves.size()].
    std::vector<uint16_t> leaves;
    std::vector<uint32_t> jobs;

    uint16_t leaf_for_job(uint32_t job) const;
};

struct CompiledEgress {
    size_t port = 0;  // index into Policy::ports
    sched::TreeSpec tree;
    std::vector<ClassEntry> class_entries;  // indexed by class id

    // The sched leaf id for a classified packet (sched::Packet::leaf).
    uint16_t leaf_for(uint8_t class_id, uint32_t job) const {
        return class_entries[class_id].leaf_for_job(job);
    }
};

struct CompiledPolicy {
    std::vector<CompiledEgress> egress;  // same order as Policy::egress_trees
    classifier::ClassifierConfig classifier;
    std::vector<std::string> errors;  // empty on success (see the contract above)

    bool ok() const { return errors.empty(); }
};

// `dpdk_port_ids[i]` is the DPDK port id of Policy::ports[i]; empty means "index = id".
CompiledPolicy compile_policy(const Policy& policy, std::span<const uint16_t> dpdk_port_ids = {});

}  // namespace twinlane::control
