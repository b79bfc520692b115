// twinlane's own hierarchical scheduler (sched::Scheduler) as a replay discipline. Packets enter
// it through the realtime pipeline's own admission (admission::SchedulerAdmission: the class
// and job pick the leaf through the compiled LeafMap, a reclassified flow's queued packets move
// to its new leaf first), one packet per arrival; one dequeue per free link slot. With the
// policy's SLOs (a governor, slo/governor.h) it measures them and acts on the tree exactly as
// the realtime scheduler lcore does, in virtual time.
// Single-threaded.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>

#include "admission/leaf_map.h"
#include "admission/scheduler_admission.h"
#include "replay/discipline.h"
#include "sched/scheduler.h"

namespace twinlane::replay {

class SchedulerDiscipline final : public Discipline, private slo::DropHandler {
  public:
    SchedulerDiscipline(std::unique_ptr<sched::Scheduler> scheduler, admission::LeafMap leaves)
        : scheduler_(std::move(scheduler)), leaves_(std::move(leaves)) {}

    struct Built {
        std::unique_ptr<SchedulerDiscipline> discipline;
        std::string error;  // when `discipline` is null
    };
    // One egress tree as `twinlane replay` runs it: its scheduler built from `tree`, `leaves`
    // admitting into it, `slo` governed. Null, with the reason, when the tree does not build or
    // the SLOs do not bind to it.
    static Built build(const sched::TreeSpec& tree, admission::LeafMap leaves,
                       const slo::SloTreeSpec& slo) {
        auto built = sched::Scheduler::build(tree);
        if (!built.scheduler) return {nullptr, "scheduling tree: " + built.error->to_string()};
        auto discipline =
            std::make_unique<SchedulerDiscipline>(std::move(built.scheduler), std::move(leaves));
        if (auto problem = discipline->govern(slo)) return {nullptr, "slo: " + *problem};
        return {std::move(discipline), {}};
    }
    const slo::SloGovernor* governor() const { return governor_.get(); }
    const classifier::HeldFlows* held_flows() const override { return &held_flows_; }

    std::string_view name() const override { return "twinlane"; }
    void enqueue(sched::Packet& packet, uint8_t class_id, uint32_t job_id, uint64_t now_ns,
                 std::vector<ReplayDrop>& drops) override {
        const Arrival arrival{class_id, job_id, packet.flow_hash, classifier::kNoPreviousClass, 0};
        Source source{&drops};
        Admission(*scheduler_, leaves_, lane_count(), source, {}, refused_, now_ns, governor_.get())
            .admit_one(lane(class_id), packet, arrival, admission::user_pfc_tag(packet.user));
    }
    void reclassified(uint32_t flow_hash, uint8_t previous_class, uint32_t previous_job,
                      uint8_t class_id, uint32_t job_id) override {
        const Arrival arrival{class_id, job_id, flow_hash, previous_class, previous_job};
        Source source{nullptr};  // moving queued packets drops nothing
        Admission(*scheduler_, leaves_, lane_count(), source, {}, refused_, 0, governor_.get())
            .reclassified(lane(class_id), &arrival);
    }
    bool dequeue(uint64_t now_ns, sched::Packet& out, std::vector<ReplayDrop>& drops) override {
        const sched::DequeueResult r =
            scheduler_->dequeue(&out, 1, now_ns, dropped_.data(), dropped_.size());
        if (governor_ && r.dropped != 0) governor_->dropped(dropped_.data(), r.dropped);
        for (uint32_t i = 0; i < r.dropped; ++i)
            drops.push_back({dropped_[i].packet, sched::to_string(dropped_[i].reason)});
        return r.packets == 1;
    }
    void hold(uint32_t node, uint64_t until_ns) override { scheduler_->hold(node, until_ns); }
    uint64_t next_eligible_ns(uint64_t now_ns) override {
        const uint64_t t = scheduler_->next_eligible_ns(now_ns);
        return t == sched::Scheduler::kNever ? UINT64_MAX : t;
    }
    uint64_t queued_packets() const override { return scheduler_->queued_packets(); }
    void departed(const sched::Packet& packet, uint64_t latency_ns, uint64_t now_ns) override {
        if (governor_)
            governor_->depart(packet.user, latency_ns, packet.length_bytes, packet.flow_hash,
                              now_ns);
    }
    void advance(uint64_t now_ns) override {
        if (governor_) governor_->tick(now_ns);
    }
    void finished(uint64_t end_ns) override {
        if (governor_) governor_->finish(end_ns);
    }
    std::vector<slo::ClassMove>* class_moves() override { return governor_ ? &moves_ : nullptr; }
    std::vector<ReplayDrop>* other_drops() override {
        return governor_ ? &governor_drops_ : nullptr;
    }
    const sched::Scheduler& scheduler() const { return *scheduler_; }

  private:
    // Measures and enforces `slo` (empty: nothing). An error when the tree lacks what the SLOs
    // name (a compile bug).
    std::optional<std::string> govern(const slo::SloTreeSpec& slo) {
        if (slo.empty()) return std::nullopt;
        governor_ = std::make_unique<slo::SloGovernor>(
            slo, lane_count(), slo::GovernorOptions{.keep_windows = true, .keep_events = true});
        governor_->set_move_sink(&moves_);
        governor_->set_held_flows(&held_flows_);
        governor_->set_drop_handler(this);
        return governor_->bind(scheduler_.get(), &leaves_);
    }
    // An arrival's classification, as the engine offers it (its descriptor, filled by the
    // engine, is admitted as it is: admit_one).
    struct Arrival {
        uint8_t class_id;
        uint32_t job_id;
        uint32_t flow_hash;
        uint8_t previous_class;
        uint32_t previous_job;
    };
    struct Source {
        using Item = const Arrival*;
        std::vector<ReplayDrop>* drops;
        const Arrival& classified(Item a) const { return *a; }
        uint32_t previous_job(Item a) const { return a->previous_job; }
        void describe(sched::Packet&, Item) const {}  // admit_one only
        uint8_t pfc_tag(Item) const { return 0; }
        void dropped(const sched::DroppedPacket* d, uint32_t n) {
            for (uint32_t i = 0; i < n; ++i)
                drops->push_back({d[i].packet, sched::to_string(d[i].reason)});
        }
    };
    using Admission = admission::SchedulerAdmission<Source>;

    uint32_t lane_count() const { return static_cast<uint32_t>(leaves_.class_count()); }
    uint8_t lane(uint8_t class_id) const { return admission::lane_of(class_id, lane_count()); }

    std::unique_ptr<sched::Scheduler> scheduler_;
    admission::LeafMap leaves_;
    void dropped(const sched::DroppedPacket* d, uint32_t n) override {
        for (uint32_t i = 0; i < n; ++i)
            governor_drops_.push_back({d[i].packet, sched::to_string(d[i].reason)});
    }

    classifier::HeldFlows held_flows_;  // before governor_, which releases into it
    std::unique_ptr<slo::SloGovernor> governor_;
    std::vector<slo::ClassMove> moves_;
    std::vector<ReplayDrop> governor_drops_;
    std::array<sched::DroppedPacket, 1 + admission::kPushOutRoom> refused_;
    // Room for CoDel drops of one dequeue; a member so it is not re-initialised per packet.
    std::array<sched::DroppedPacket, 64> dropped_;
};

}  // namespace twinlane::replay
