// The admission step's input: one classified RX burst, bucketed by lane once, with its
// reclassifications noted, and admit(), which hands it to an admitter lane by lane or, when a
// flow changed class in the burst, in arrival order.
//
// Why arrival order then: a reclassified flow's earlier packets are in its old lane (or old
// leaf); they must all be in the scheduler before the packet that names the change, which
// moves them to the new leaf (Scheduler::move_flow) and is queued behind them. Lane by lane,
// an earlier packet in a later-admitted lane would arrive after it. Reclassifications are rare
// (a flow turning elephant, or returning), so the common burst takes the by-lane path.
//
// Packets are named by their position in the burst (an index into the caller's packets and
// classifier results). Admitter (the local scheduler: scheduler_admission.h; the lane rings:
// dataplane/pipeline.cc):
//   void admit(uint8_t lane, const uint8_t* positions, uint32_t n)
//       n > 0 packets of `lane`, in arrival order
//   void reclassified(uint8_t lane, uint8_t position)
//       that packet's flow changed class with it; called just before the run it starts
//
// Header-only and EAL-free, a value on the stack of one lcore; nothing allocates.
#pragma once

#include <array>
#include <cstdint>

#include "admission/lanes.h"
#include "classifier/result.h"

namespace twinlane::admission {

template <uint32_t kBurst>
class ClassifiedBurst {
    static_assert(kBurst <= 64, "the reclassified mask is 64 bits");

  public:
    // Only the lanes in use are zeroed (all 16 were 1.6% of a 64 B run).
    explicit ClassifiedBurst(uint32_t lane_count) : lane_count_(lane_count) {
        for (uint32_t l = 0; l < lane_count; ++l)
            count_[l] = packets_[l] = bytes_[l] = dropped_[l] = 0;
    }

    // Buckets `n` classified packets. A packet the classifier drops (malformed) is counted in
    // its lane, handed to `discard(position)` and left out; `stamp(position, result, lane)` runs
    // for every other one (the caller writes its per-packet metadata, DSCP remark, ...).
    template <typename Stamp, typename Discard>
    void bucket(const classifier::Result* results, const uint32_t* wire_bytes, uint32_t n,
                Stamp&& stamp, Discard&& discard) {
        n_ = n;
        for (uint32_t i = 0; i < n; ++i) {
            const classifier::Result& r = results[i];
            const uint8_t lane = lane_of(r.class_id, lane_count_);
            packets_[lane] += 1;
            bytes_[lane] += wire_bytes[i];
            const auto position = static_cast<uint8_t>(i);
            if (r.drop) [[unlikely]] {
                dropped_[lane] += 1;
                lane_at_[i] = kDropped;
                discard(position);
                continue;
            }
            stamp(position, r, lane);
            lane_at_[i] = lane;
            if (r.previous_class != classifier::kNoPreviousClass) [[unlikely]]
                reclassified_ |= uint64_t{1} << i;
            position_[lane][count_[lane]++] = position;
        }
    }

    // Hands the bucketed packets to `admitter`; returns how many it was given.
    template <typename Admitter>
    uint32_t admit(Admitter& admitter) const {
        if (reclassified_ != 0) [[unlikely]]
            return admit_in_arrival_order(admitter);
        uint32_t given = 0;
        for (uint32_t lane = 0; lane < lane_count_; ++lane) {
            if (count_[lane] == 0) continue;
            admitter.admit(static_cast<uint8_t>(lane), position_[lane].data(), count_[lane]);
            given += count_[lane];
        }
        return given;
    }

    uint32_t lane_count() const { return lane_count_; }
    bool reclassified() const { return reclassified_ != 0; }
    // Per lane: packets and wire bytes received (dropped ones included), and dropped here.
    uint64_t packets(uint32_t lane) const { return packets_[lane]; }
    uint64_t bytes(uint32_t lane) const { return bytes_[lane]; }
    uint64_t dropped(uint32_t lane) const { return dropped_[lane]; }

  private:
    static constexpr uint8_t kDropped = 0xFF;

    // Runs of consecutive packets of one lane, each reclassified packet starting a new run.
    template <typename Admitter>
    uint32_t admit_in_arrival_order(Admitter& admitter) const {
        uint8_t run[kBurst];
        uint32_t run_length = 0;
        uint8_t run_lane = 0;
        uint32_t given = 0;
        for (uint32_t i = 0; i < n_; ++i) {
            const uint8_t lane = lane_at_[i];
            if (lane == kDropped) continue;
            const bool moves = (reclassified_ >> i) & 1;
            if (run_length != 0 && (lane != run_lane || moves)) {
                admitter.admit(run_lane, run, run_length);
                given += run_length;
                run_length = 0;
            }
            if (moves) admitter.reclassified(lane, static_cast<uint8_t>(i));
            run_lane = lane;
            run[run_length++] = static_cast<uint8_t>(i);
        }
        if (run_length != 0) {
            admitter.admit(run_lane, run, run_length);
            given += run_length;
        }
        return given;
    }

    const uint32_t lane_count_;
    uint32_t n_ = 0;
    uint64_t reclassified_ = 0;  // bit i: packet i names its flow's class change
    std::array<uint8_t, kBurst> lane_at_;
    std::array<uint16_t, kMaxLanes> count_;
    std::array<std::array<uint8_t, kBurst>, kMaxLanes> position_;
    std::array<uint64_t, kMaxLanes> packets_;
    std::array<uint64_t, kMaxLanes> bytes_;
    std::array<uint64_t, kMaxLanes> dropped_;
};

}  // namespace twinlane::admission
