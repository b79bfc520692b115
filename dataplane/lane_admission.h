// The scheduler lcore's admission of its egress port's lane rings into the scheduler, generic
// over the rings and the scheduler side so that it is tested without DPDK
// (tests/dataplane/lane_admission_test.cc); pipeline.cc instantiates it on rte_ring and mbufs.
//
// A round admits the lanes highest priority first, one burst each, so inference never waits
// behind bulk in a ring. Order across lanes does not matter, except for a flow that changed
// class (PacketMeta::previous_class): its earlier packets went to the old lane, and every one
// of them must be in the scheduler before the packet that names the change moves them to the
// new leaf (Scheduler::move_flow), or they would leave after it. The RX side puts the earlier
// packets in their ring before that packet in its own (admission::ClassifiedBurst admits a
// burst in arrival order then), so all of them
// are in the rings by the time it is seen. From that packet on, the round therefore admits
// everything the lanes hold at that moment (a consistent cut, see admit_in_arrival_order) in
// arrival order: by RX burst time, then position in the burst (PacketMeta::burst_index), then
// ring order. A flow's packets all come from one RX queue, so that order is the flow's own,
// whatever other reclassified flows the rings hold (two flows swapping lanes, several RX lcores
// interleaving in one ring); packets of different flows may change places, which the scheduler
// does anyway. Ring order alone could not give this: an earlier packet of the flow can sit
// behind a later packet of another RX lcore.
//
// Rare (a class change while its lanes hold packets) and bounded by the rings' capacity; the
// entries are preallocated (ArrivalOrderScratch), the sort allocates nothing.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "classifier/result.h"
#include "dataplane/packet_meta.h"
#include "dataplane/pipeline_counters.h"

namespace twinlane::dataplane {

// One packet taken from a lane for admission in arrival order: its sort key, copied out of
// the metadata so that the sort does not chase mbuf pointers.
template <typename Item>
struct ArrivalEntry {
    uint64_t arrival_ns = 0;
    uint64_t order = 0;  // burst_index << 32 | position taken (ring order within a lane)
    Item item{};
};

template <typename Item>
using ArrivalOrderScratch = std::vector<ArrivalEntry<Item>>;

// Lanes: unsigned count(uint8_t lane) const; unsigned dequeue(uint8_t lane, Item*, unsigned n);
//        const PacketMeta& meta(Item) const, whose class_id is the lane the item is in.
// Sink:  void admit(uint8_t lane, Item* items, uint32_t n) (into the scheduler, in order);
//        void reclassified(uint8_t lane, Item item) (move the flow's queued packets to the leaf
//        `item` goes to; called just before `item` is admitted).
// `scratch` must hold every lane's capacity plus `burst` entries (capacity() is not grown here).
template <typename Item, uint32_t kBurstSize, typename Lanes, typename Sink>
class LaneAdmission {
  public:
    LaneAdmission(Lanes& lanes, Sink& sink, std::span<const uint8_t> lane_order,
                  uint32_t lane_count, ArrivalOrderScratch<Item>& scratch)
        : lanes_(lanes),
          sink_(sink),
          lane_order_(lane_order),
          lane_count_(lane_count),
          scratch_(scratch) {}

    // One round; returns the packets admitted.
    uint32_t round() {
        uint32_t admitted = 0;
        for (const uint8_t lane : lane_order_) {
            Item burst[kBurstSize];
            const uint32_t n = lanes_.dequeue(lane, burst, kBurstSize);
            for (uint32_t i = 0; i < n; ++i) {
                if (lanes_.meta(burst[i]).previous_class == classifier::kNoPreviousClass)
                    [[likely]] {
                    continue;
                }
                sink_.admit(lane, burst, i);
                return admitted + i + admit_in_arrival_order(burst + i, n - i);
            }
            if (n != 0) sink_.admit(lane, burst, n);
            admitted += n;
        }
        return admitted;
    }

  private:
    // `pending` (the rest of a burst, starting at a reclassified packet) and what every lane
    // holds now, in arrival order.
    uint32_t admit_in_arrival_order(const Item* pending, uint32_t count) {
        scratch_.clear();
        auto take = [&](Item item) {
            const PacketMeta& m = lanes_.meta(item);
            const uint64_t position = scratch_.size();
            scratch_.push_back({m.arrival_ns, uint64_t{m.burst_index} << 32 | position, item});
        };
        for (uint32_t i = 0; i < count; ++i)
            take(pending[i]);
        // What the lanes hold, as a consistent cut: if it holds a packet, it holds every packet
        // enqueued before it (a reclassified packet's earlier ones above all). Counts read lane
        // after lane are not one: the RX lcore may enqueue into a lane already read and then
        // into one not yet read. Two passes that read the same counts are: nothing was enqueued
        // into lane l between its two reads, and every first read precedes every second one.
        // Rings change every few microseconds at most, so a few tries suffice; past
        // kCutAttempts the last counts are taken (a reclassification met later is handled then).
        uint32_t counts[kMaxLanes];
        for (uint8_t lane = 0; lane < lane_count_; ++lane)
            counts[lane] = lanes_.count(lane);
        for (uint32_t attempt = 1; attempt < kCutAttempts; ++attempt) {
            bool stable = true;
            for (uint8_t lane = 0; lane < lane_count_; ++lane) {
                const uint32_t now = lanes_.count(lane);
                stable = stable && now == counts[lane];
                counts[lane] = now;
            }
            if (stable) break;
        }
        for (uint8_t lane = 0; lane < lane_count_; ++lane) {
            for (uint32_t left = counts[lane]; left != 0;) {
                Item burst[kBurstSize];
                const uint32_t n = lanes_.dequeue(lane, burst, std::min(left, kBurstSize));
                if (n == 0) break;
                for (uint32_t i = 0; i < n; ++i)
                    take(burst[i]);
                left -= n;
            }
        }
        std::sort(scratch_.begin(), scratch_.end(), [](const auto& a, const auto& b) {
            return a.arrival_ns != b.arrival_ns ? a.arrival_ns < b.arrival_ns : a.order < b.order;
        });
        // Runs of consecutive packets of one lane go to the sink together.
        Item run[kBurstSize];
        uint32_t run_length = 0;
        uint8_t run_lane = 0;
        for (const ArrivalEntry<Item>& e : scratch_) {
            const PacketMeta& m = lanes_.meta(e.item);
            const bool moves = m.previous_class != classifier::kNoPreviousClass;
            if (run_length != 0 && (m.class_id != run_lane || moves || run_length == kBurstSize)) {
                sink_.admit(run_lane, run, run_length);
                run_length = 0;
            }
            if (moves) sink_.reclassified(m.class_id, e.item);
            run_lane = m.class_id;
            run[run_length++] = e.item;
        }
        if (run_length != 0) sink_.admit(run_lane, run, run_length);
        return static_cast<uint32_t>(scratch_.size());
    }

    static constexpr uint32_t kCutAttempts = 16;

    Lanes& lanes_;
    Sink& sink_;
    std::span<const uint8_t> lane_order_;
    uint32_t lane_count_;
    ArrivalOrderScratch<Item>& scratch_;
};

}  // namespace twinlane::dataplane
