// What a new policy version means for a running pipeline, decided off the hot path before
// anything is handed to an lcore (pure functions; DaemonControl uses them, tests call them).
//
//  - restart_only_changes(): differences a running pipeline cannot take (ports, forwarding,
//    lcores, the class list, classifier settings other than rules). Any of them refuses the
//    change; the running policy stays.
//  - plan_egress_change(): per egress tree, nothing / Scheduler::apply (same topology and the
//    same class -> leaf map) / a new tree that queued packets migrate into. A new tree is
//    refused when a class would enter differently named leaves: Scheduler::migrate_from moves
//    queued packets by leaf name, so a flow's queued packets and its next ones would sit in
//    different leaves and could be reordered.
//  - plan_update(): all of the above for one candidate version: the trees that change, each
//    new tree already built with a pool at least its predecessor's (so migration cannot run
//    out of room), and whether the rules change; or why the change is refused. Nothing has
//    been handed to an lcore yet: the daemon applies the steps, and rolls them back if an
//    lcore fails one (daemon_control.h).
//  - retire_counters(): the counters of a tree taken out of service, in the form that keeps
//    "retired + live" equal to the node's totals since start.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "classifier/config.h"
#include "conf/compile.h"
#include "conf/policy.h"
#include "sched/counters.h"
#include "sched/scheduler.h"

namespace twinlane::dataplane {

// One line per difference, e.g. "ports[out].rate: 100000000 -> 200000000"; empty if none.
std::vector<std::string> restart_only_changes(const conf::Policy& running,
                                              const conf::Policy& candidate,
                                              const classifier::ClassifierConfig& running_rules,
                                              const classifier::ClassifierConfig& candidate_rules);

// Whether the two policies' classifier rule lists are the same (as policy documents).
bool same_rules(const conf::Policy& a, const conf::Policy& b);

enum class EgressChange { none, apply, rebuild };

struct EgressPlan {
    EgressChange change = EgressChange::none;
    std::string refusal;  // non-empty: the change cannot be made hitlessly (and why)
};

// `class_names` name the classes in refusals. pool_packets is ignored (the daemon sizes pools).
EgressPlan plan_egress_change(const conf::CompiledEgress& running,
                              const conf::CompiledEgress& candidate,
                              const std::vector<std::string>& class_names);

// One egress tree's part of a live change.
struct UpdateStep {
    size_t egress = 0;                           // index into the running egress trees
    EgressChange change = EgressChange::apply;   // apply or rebuild
    conf::CompiledEgress compiled;               // what the egress runs afterwards
    std::unique_ptr<sched::Scheduler> new_tree;  // rebuild: built, not yet in service
};

struct UpdatePlan {
    std::vector<UpdateStep> steps;  // only the trees that change
    bool rules_change = false;
    std::string refusal;  // non-empty: refused, with `details`; nothing to apply
    std::vector<std::string> details;

    bool refused() const { return !refusal.empty(); }
};

// `running` is what each egress tree runs now, with the pool it was built with.
UpdatePlan plan_update(const conf::Policy& running_policy,
                       const classifier::ClassifierConfig& running_classifier,
                       const std::vector<conf::CompiledEgress>& running,
                       const conf::Policy& candidate_policy, const conf::CompiledPolicy& candidate);

// A new tree's pool: its leaves' limits, but never smaller than the running tree's, so that
// Scheduler::migrate_from always finds room for whatever is queued.
uint32_t pool_for(const sched::TreeSpec& tree, uint32_t running_pool);

// Same node list, kinds, parents, priorities and fq bucket counts: Scheduler::apply can take it.
bool same_topology(const sched::TreeSpec& a, const sched::TreeSpec& b);

// A node's counters after its tree left service (migrate_from moved its queue out): packets
// and bytes that migrated are taken out of *_in (the new tree counts them in), depth is 0.
sched::QueueCounters retire_counters(sched::QueueCounters counters);

}  // namespace twinlane::dataplane
