// The queueing discipline a replay drives: twinlane's scheduler, a FIFO, or DPDK's rte_sched.
// The replay engine owns the packets; a discipline holds sched::Packet descriptors whose
// `handle` is the engine's slot number, and hands every descriptor back (from dequeue or as a
// drop) as it was given, with `arrival_ns` the enqueue time (the engine relies on this: it
// reads class, length and arrival time from the descriptor, not from its slot). Drops are handed
// back with a reason name (a string with static storage) so that the report can break them down per
// discipline. Not on a realtime path: one virtual call per packet is fine here. Single-threaded.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "classifier/held_flows.h"
#include "sched/packet.h"
#include "slo/governor.h"

namespace twinlane::replay {

struct ReplayDrop {
    sched::Packet packet;
    const char* reason;
};

class Discipline {
  public:
    virtual ~Discipline() = default;
    virtual std::string_view name() const = 0;
    // Offers one packet of class `class_id` and job `job_id` arriving at `now_ns`; a refused
    // packet is appended to `drops`.
    // The descriptor is taken by reference so that it is built once; the discipline may fill
    // its own fields (the leaf) in it.
    virtual void enqueue(sched::Packet& packet, uint8_t class_id, uint32_t job_id, uint64_t now_ns,
                         std::vector<ReplayDrop>& drops) = 0;
    // Takes the next packet to transmit at `now_ns`, if any is eligible. Packets discarded on
    // the way (AQM) are appended to `drops`.
    virtual bool dequeue(uint64_t now_ns, sched::Packet& out, std::vector<ReplayDrop>& drops) = 0;
    // The flow `flow_hash` changed from (previous_class, previous_job) to (class_id, job_id)
    // (classifier::Result::previous_class), before its first packet of the new class is
    // offered. A discipline with one queue per class moves the flow's queued packets so it
    // stays in order; FIFO needs nothing; rte_sched cannot move packets (its queues are
    // internal), so a flow may be reordered there once per change.
    virtual void reclassified(uint32_t /*flow_hash*/, uint8_t /*previous_class*/,
                              uint32_t /*previous_job*/, uint8_t /*class_id*/,
                              uint32_t /*job_id*/) {}
    // SLO hooks (slo/governor.h), for a discipline that measures and enforces per-class SLOs;
    // no-ops otherwise. `departed`: a packet it handed out left the link `latency_ns` after
    // it arrived; `advance`: virtual time reached `now_ns` (windows close, controllers act);
    // `finished`: the run ended at `end_ns`. Packets that change class meanwhile (a
    // downgrade) are listed in class_moves() for the report; the engine empties it.
    virtual void departed(const sched::Packet& /*packet*/, uint64_t /*latency_ns*/,
                          uint64_t /*now_ns*/) {}
    virtual void advance(uint64_t /*now_ns*/) {}
    virtual void finished(uint64_t /*end_ns*/) {}
    virtual std::vector<slo::ClassMove>* class_moves() { return nullptr; }
    // Flows it holds in another class for now (SLO downgrades), which the classifier makes no
    // elephants of (classifier/held_flows.h); nullptr: none.
    virtual const classifier::HeldFlows* held_flows() const { return nullptr; }
    // Packets the discipline dropped outside enqueue/dequeue (an SLO downgrade into a full
    // lower class), reported after class_moves(); the engine empties it. nullptr: none.
    virtual std::vector<ReplayDrop>* other_drops() { return nullptr; }
    // A PFC pause from the egress peer: `node` of the egress tree (a lossless class's entry) may
    // not send before `until_ns` (0: at once). Only a discipline with a queue per class can
    // hold one class (twinlane's scheduler); FIFO and rte_sched keep sending.
    virtual void hold(uint32_t /*node*/, uint64_t /*until_ns*/) {}
    // Earliest time >= now_ns at which dequeue may return a packet; UINT64_MAX when empty.
    virtual uint64_t next_eligible_ns(uint64_t now_ns) = 0;
    virtual uint64_t queued_packets() const = 0;
};

}  // namespace twinlane::replay
