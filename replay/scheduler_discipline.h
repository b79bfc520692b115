// twinlane's own hierarchical scheduler (sched::Scheduler) as a replay discipline. The packet's
// class and job pick its leaf through `leaf_of`, exactly as in the realtime dataplane; one
// dequeue per free link slot. Single-threaded.
#pragma once

#include <array>
#include <functional>
#include <memory>

#include "replay/discipline.h"
#include "sched/scheduler.h"

namespace twinlane::replay {

class SchedulerDiscipline final : public Discipline {
public:
    using LeafOf = std::function<uint16_t(uint8_t class_id, uint32_t job_id)>;

    SchedulerDiscipline(std::unique_ptr<sched::Scheduler> scheduler, LeafOf leaf_of)
        : scheduler_(std::move(scheduler)), leaf_of_(std::move(leaf_of)) {}

    std::string_view name() const override { return "twinlane"; }
    void enqueue(sched::Packet& packet, uint8_t class_id, uint32_t job_id, uint64_t now_ns,
                 std::vector<ReplayDrop>& drops) override {
        packet.leaf = leaf(class_id, job_id);
        sched::DroppedPacket dropped[1];
        if (scheduler_->enqueue(&packet, 1, now_ns, dropped) == 0)
            drops.push_back({dropped[0].packet, sched::to_string(dropped[0].reason)});
    }
    void reclassified(uint32_t flow_hash, uint8_t previous_class, uint32_t previous_job,
                      uint8_t class_id, uint32_t job_id) override {
        scheduler_->move_flow(leaf(previous_class, previous_job), leaf(class_id, job_id),
                              flow_hash);
    }
    bool dequeue(uint64_t now_ns, sched::Packet& out, std::vector<ReplayDrop>& drops) override {
        const sched::DequeueResult r =
            scheduler_->dequeue(&out, 1, now_ns, dropped_.data(), dropped_.size());
        for (uint32_t i = 0; i < r.dropped; ++i)
            drops.push_back({dropped_[i].packet, sched::to_string(dropped_[i].reason)});
        return r.packets == 1;
    }
    uint64_t next_eligible_ns(uint64_t now_ns) override {
        const uint64_t t = scheduler_->next_eligible_ns(now_ns);
        return t == sched::Scheduler::kNever ? UINT64_MAX : t;
    }
    uint64_t queued_packets() const override { return scheduler_->queued_packets(); }
    const sched::Scheduler& scheduler() const { return *scheduler_; }

private:
    // `leaf_of` is a pure function of (class, job) (CompiledEgress::leaf_for): its answers are
    // kept in a small direct-mapped cache instead of calling the std::function per packet.
    // measured (callgrind, replay_bench): enqueue wrapper with the leaf lookup 61 -> 43
    // instructions/packet.
    struct LeafMemo {
        uint32_t job_id = 0;
        uint16_t leaf = 0;
        uint8_t class_id = 0;
        bool valid = false;
    };
    uint16_t leaf(uint8_t class_id, uint32_t job_id) {
        LeafMemo& memo = leaf_memo_[(job_id * 8 + class_id) % leaf_memo_.size()];
        if (!memo.valid || memo.class_id != class_id || memo.job_id != job_id)
            memo = LeafMemo{job_id, leaf_of_(class_id, job_id), class_id, true};
        return memo.leaf;
    }

    std::unique_ptr<sched::Scheduler> scheduler_;
    LeafOf leaf_of_;
    std::array<LeafMemo, 64> leaf_memo_{};
    // Room for CoDel drops of one dequeue; a member so it is not re-initialised per packet.
    std::array<sched::DroppedPacket, 64> dropped_;
};

}  // namespace twinlane::replay
