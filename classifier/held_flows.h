// HeldFlows: flows whose class another owner holds for now, named by their flow hash: the SLO
// governor's downgraded flows (slo/governor.h). The elephant heuristic leaves a held flow
// alone: the governor moved it to its class's lower class and brings it back after the quiet
// period, and an elephant verdict meanwhile would take it to the bulk class instead, out of the
// governor's hands (no return) and into the jobs' fair shares. Once released, a flow that is
// still above the elephant threshold is made one at its next packet.
//
// Written by the lcores that own egress trees (hold / release: an atomic add per downgrade or
// return, never per packet), read by the RX lcores' classifiers when a flow crosses the
// elephant threshold (a relaxed load). A count per slot of 2^15 (twice the governor's
// downgraded flows at most): a flow whose hash shares a slot with a held one is not made an
// elephant while that one is held, as colliding flows already share a fate in the governor,
// which names flows by the same 32-bit hash.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "classifier/hash_slot.h"

namespace twinlane::classifier {

class HeldFlows {
  public:
    static constexpr uint32_t kSlotBits = 15;

    void hold(uint32_t flow_hash) { slot(flow_hash).fetch_add(1, std::memory_order_relaxed); }
    void release(uint32_t flow_hash) { slot(flow_hash).fetch_sub(1, std::memory_order_relaxed); }
    bool held(uint32_t flow_hash) const {
        return counts_[index(flow_hash)].load(std::memory_order_relaxed) != 0;
    }

  private:
    static uint32_t index(uint32_t flow_hash) { return hash_slot(flow_hash, kSlotBits); }
    std::atomic<uint32_t>& slot(uint32_t flow_hash) { return counts_[index(flow_hash)]; }

    std::array<std::atomic<uint32_t>, uint32_t{1} << kSlotBits> counts_{};
};

}  // namespace twinlane::classifier
