// Maps a policy's scheduling tree onto rte_sched's fixed hierarchy, as closely as it allows.
//
// rte_sched has one pipe of 13 traffic classes: 0..11 strict priority with one queue each, 12
// best effort with 4 WRR queues. The root's children (strict) become traffic classes in
// priority order; a child whose subtree is a DRR with several children (per-job bulk) becomes
// the best-effort class, its first 4 children's weights the WRR weights and the job id (mod 4)
// the queue of a class split per job (queue 0 for other best-effort classes). Queue sizes are the
// subtree's leaf packet limits (per queue for best effort). What rte_sched cannot express (per-flow
// fair queues, caps on a lane, ECN) is left out.
#pragma once

#include "conf/policy.h"
#include "replay/rte_sched_discipline.h"

namespace twinlane::replay {

RteSchedLayout rte_sched_layout_from(const conf::Policy& policy, const conf::EgressTree& tree);

}  // namespace twinlane::replay
