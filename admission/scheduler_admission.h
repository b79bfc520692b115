// The admitter into a scheduler the caller owns (classified_burst.h's Admitter): a classified
// packet becomes a sched::Packet for the leaf its class and job enter (LeafMap::place), and a flow
// that changed class first has its queued packets moved to that leaf, so it stays in order.
// Realtime uses it on the lcore that owns the egress tree (straight from RX when run to
// completion, from the lane rings otherwise); replay's twinlane discipline uses it per packet.
//
// Source (what differs between those callers: how a packet is named and where its
// classification and bytes are):
//   using Item = ...;                 a burst position, an mbuf, a prepared descriptor
//   C classified(Item) const          C has job_id, flow_hash, previous_class
//   uint32_t previous_job(Item) const
//   void describe(sched::Packet&, Item) const
//       handle, length_bytes, l3 + ip_version (ECN marking), user_ns; the rest is set here
//   uint8_t pfc_tag(Item) const       its PFC account (admission/lanes.h), 0 if none
//   void dropped(const sched::DroppedPacket*, uint32_t count)   what enqueue refused
//
// With an SLO governor (slo/governor.h) for the tree, packets of a governed class are shown to
// it before they are enqueued (it counts their flows, may act on pressure, and places the
// packets of downgraded flows in the lower class), and a reclassified flow moves from where
// the governor has it. Without one (nullptr), nothing of that runs.
//
// Single-threaded (the scheduler's owner); no allocation: the scratch arrays are the caller's.
#pragma once

#include <cstdint>
#include <span>

#include "admission/lanes.h"
#include "admission/leaf_map.h"
#include "classifier/result.h"
#include "sched/scheduler.h"
#include "slo/governor.h"

namespace twinlane::admission {

// Drop room an admission's caller keeps beyond its burst: an fq leaf full by bytes makes room
// for a 9 KB arrival from up to this many smaller packets of its fattest flow even when every
// arrival before it in the burst needed a drop (replay admits one packet at a time).
inline constexpr uint32_t kPushOutRoom = 16;

template <typename Source>
class SchedulerAdmission {
  public:
    using Item = typename Source::Item;

    // `scratch` and `drops` hold at least as many packets as one admit() is given; `drops`
    // room beyond that (kPushOutRoom) lets a full fq leaf push out several smaller packets for
    // one arrival (Scheduler::enqueue_burst).
    SchedulerAdmission(sched::Scheduler& scheduler, LeafMap& leaves, uint32_t lane_count,
                       Source& source, std::span<sched::Packet> scratch,
                       std::span<sched::DroppedPacket> drops, uint64_t now_ns,
                       slo::SloGovernor* governor = nullptr)
        : scheduler_(scheduler),
          leaves_(leaves),
          lane_count_(lane_count),
          source_(source),
          scratch_(scratch),
          drops_(drops),
          now_ns_(now_ns),
          governor_(governor) {}

    void admit(uint8_t lane, const Item* items, uint32_t n) {
        sched::Packet* pkts = scratch_.data();
        leaves_.next_burst(now_ns_);
        for (uint32_t i = 0; i < n; ++i) {
            // Field by field in place: a descriptor built on the stack and copied made the
            // byte stores of `user` feed a wider load of the copy, a failed store forward that
            // was most of the enqueue stage's samples (perf, net_null 64 B).
            source_.describe(pkts[i], items[i]);
            place(pkts[i], lane, source_.classified(items[i]), source_.pfc_tag(items[i]));
        }
        if (governor_ != nullptr && governor_->governs(lane)) [[unlikely]] {
            governor_->admit(
                lane, pkts, n, [&](uint32_t i) { return source_.classified(items[i]).job_id; },
                now_ns_);
        }
        enqueue(pkts, n);
    }

    // One packet whose descriptor the caller has filled as describe() would (replay builds it
    // once per arrival): the same placement and enqueue, without a copy into the scratch.
    template <typename Classified>
    void admit_one(uint8_t lane, sched::Packet& packet, const Classified& c, uint8_t pfc_tag) {
        leaves_.next_burst(now_ns_);
        place(packet, lane, c, pfc_tag);
        if (governor_ != nullptr && governor_->governs(lane)) [[unlikely]]
            governor_->admit(
                lane, &packet, 1, [&](uint32_t) { return c.job_id; }, now_ns_);
        enqueue(&packet, 1);
    }

    void reclassified(uint8_t lane, Item item) {
        const auto& c = source_.classified(item);
        const uint8_t old_lane = lane_of(c.previous_class, lane_count_);
        if (governor_ != nullptr && governor_->bound()) {
            governor_->follow_reclassification(old_lane, source_.previous_job(item), lane, c.job_id,
                                               c.flow_hash);
            return;
        }
        scheduler_.move_flow(leaves_.where(old_lane, source_.previous_job(item)),
                             leaves_.place(lane, c.job_id, scheduler_), c.flow_hash);
    }

  private:
    template <typename Classified>
    void place(sched::Packet& p, uint8_t lane, const Classified& c, uint8_t pfc_tag) {
        p.flow_hash = c.flow_hash;
        p.leaf = leaves_.place(lane, c.job_id, scheduler_);
        p.job = sched::job_tag(c.job_id);
        p.user = pack_user(lane, pfc_tag);
    }
    void enqueue(sched::Packet* pkts, uint32_t n) {
        const uint32_t dropped = scheduler_.enqueue_burst(pkts, n, now_ns_, drops_.data(),
                                                          static_cast<uint32_t>(drops_.size()));
        if (dropped != 0) {
            if (governor_ != nullptr) governor_->dropped(drops_.data(), dropped);
            source_.dropped(drops_.data(), dropped);
        }
    }

    sched::Scheduler& scheduler_;
    LeafMap& leaves_;
    const uint32_t lane_count_;
    Source& source_;
    std::span<sched::Packet> scratch_;
    std::span<sched::DroppedPacket> drops_;
    const uint64_t now_ns_;
    slo::SloGovernor* const governor_;
};

}  // namespace twinlane::admission
