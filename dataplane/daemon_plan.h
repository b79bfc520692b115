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
//  - retire_counters(): the counters of a tree taken out of service, in the form that keeps
//    "retired + live" equal to the node's totals since start.
#pragma once

#include <string>
#include <vector>

#include "classifier/config.h"
#include "control/compile.h"
#include "control/policy.h"
#include "sched/counters.h"

namespace twinlane::dataplane {

// One line per difference, e.g. "ports[out].rate: 100000000 -> 200000000"; empty if none.
std::vector<std::string> restart_only_changes(const control::Policy& running,
                                              const control::Policy& candidate,
                                              const classifier::ClassifierConfig& running_rules,
                                              const classifier::ClassifierConfig& candidate_rules);

// Whether the two policies' classifier rule lists are the same (as policy documents).
bool same_rules(const control::Policy& a, const control::Policy& b);

enum class EgressChange { none, apply, rebuild };

struct EgressPlan {
    EgressChange change = EgressChange::none;
    std::string refusal;  // non-empty: the change cannot be made hitlessly (and why)
};

// `class_names` name the classes in refusals. pool_packets is ignored (the daemon sizes pools).
EgressPlan plan_egress_change(const control::CompiledEgress& running,
                              const control::CompiledEgress& candidate,
                              const std::vector<std::string>& class_names);

// Same node list, kinds, parents, priorities and fq bucket counts: Scheduler::apply can take it.
bool same_topology(const sched::TreeSpec& a, const sched::TreeSpec& b);

// A node's counters after its tree left service (migrate_from moved its queue out): packets
// and bytes that migrated are taken out of *_in (the new tree counts them in), depth is 0.
sched::QueueCounters retire_counters(sched::QueueCounters counters);

}  // namespace twinlane::dataplane
