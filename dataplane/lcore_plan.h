// Lcore roles: which lcore polls which RX queues and which lcore schedules which egress ports.
//
// Three layouts, from the policy's `lcores` section:
//  - run_to_completion: one lcore runs every stage (every RX queue and every egress port);
//  - explicit_roles: the policy lists rx lcores (port queues) and scheduler lcores (ports);
//  - automatic: with one lcore, run-to-completion; otherwise scheduler lcores take
//    min(egress ports, lcores / 2) lcores from the end of the list (egress ports round robin),
//    RX lcores the rest (RX queues round robin, so RSS queues spread over RX lcores).
// Every RX queue of every ingress port gets exactly one lcore, every egress port exactly one
// scheduler lcore (its single writer). Pure planning over plain data, no EAL: the caller passes
// the lcores the EAL enabled (main lcore first). Not thread-safe; runs once at start.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "conf/policy.h"

namespace twinlane::dataplane {

struct RxQueueAssignment {
    size_t port = 0;  // index into Policy::ports
    uint16_t queue = 0;
};

struct LcoreRole {
    uint32_t lcore = 0;
    std::vector<RxQueueAssignment> rx;  // RX queues this lcore polls
    std::vector<size_t> egress;         // egress ports (Policy::ports index) it schedules
};

struct LcorePlan {
    std::vector<LcoreRole> lcores;  // only lcores with work, in the order given
    std::string error;              // non-empty: no plan (names the offending lcore/port)

    bool ok() const { return error.empty(); }
};

// `ingress[i]` = (port index, RX queue count) for every port that forwards somewhere;
// `egress` = port indexes that are forwarding destinations; `available` = enabled lcore ids.
LcorePlan plan_lcores(const conf::LcorePolicy& policy,
                      const std::vector<std::pair<size_t, uint16_t>>& ingress,
                      const std::vector<size_t>& egress, const std::vector<uint32_t>& available);

}  // namespace twinlane::dataplane
