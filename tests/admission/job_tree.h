// A per_job node as the policy compiles it, alone in its tree: a drr node "training" over
// `count` leaves "training.job0".. (leaf ids 0..count-1), fair by job when fq (`by_job`: the
// benchmark's comparison turns it off), for the job placement's test and benchmark.
#pragma once

#include <memory>
#include <string>

#include "sched/scheduler.h"

namespace twinlane::admission {

inline std::unique_ptr<sched::Scheduler> job_tree(uint16_t count, sched::NodeKind leaf_kind,
                                                  uint32_t limit_packets = 4096, bool by_job = true,
                                                  uint32_t buckets = 256) {
    sched::TreeSpec spec;
    sched::NodeSpec root;
    root.name = "training";
    root.kind = sched::NodeKind::drr;
    spec.nodes.push_back(root);
    for (uint16_t i = 0; i < count; ++i) {
        sched::NodeSpec leaf;
        leaf.name = "training.job" + std::to_string(i);
        leaf.kind = leaf_kind;
        leaf.parent = "training";
        leaf.limit_packets = limit_packets;
        leaf.limit_bytes = 1ull << 30;
        leaf.fq_buckets = buckets;
        leaf.fq_by_job = by_job && leaf_kind == sched::NodeKind::fq;
        spec.nodes.push_back(leaf);
    }
    return sched::Scheduler::build(spec).scheduler;
}

}  // namespace twinlane::admission
