// The SLO governor on a real scheduler built from conf/inference-slo.yaml: a flow downgraded by
// pressure, then either taken out of the class by the classifier (forgotten, no return) or
// returned while packets of it are still queued below (one decision; it keeps going below,
// behind them, and is back when the last of them has left: never reordered). While down, the
// flow is held (classifier/held_flows.h: no elephant verdict), and released in every case. A
// surge of more flows than the meter holds is pressed out all the same.
#include "slo/governor.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "admission/lanes.h"
#include "conf/compile.h"
#include "conf/load_policy.h"
#include "sched/scheduler.h"

namespace twinlane::slo {
namespace {

constexpr uint64_t kMs = 1'000'000;
constexpr uint32_t kFlow = 0xA5A5'0001;
constexpr uint32_t kFrame = 1500;

class Rig {
  public:
    // `held`: where downgraded flows are held (default: the rig's own set).
    explicit Rig(classifier::HeldFlows* held = nullptr)
        : held_(held != nullptr ? held : &own_held_) {
        const conf::PolicyResult loaded =
            conf::load_policy(std::string(TWINLANE_CONF_DIR) + "/inference-slo.yaml");
        EXPECT_TRUE(loaded.ok());
        compiled_ = conf::compile_policy(*loaded.policy);
        EXPECT_TRUE(compiled_.ok());
        conf::CompiledEgress& egress = compiled_.egress.at(0);
        scheduler_ = sched::Scheduler::build(egress.tree).scheduler;
        lanes_ = static_cast<uint32_t>(egress.leaves.class_count());
        governor_ =
            std::make_unique<SloGovernor>(egress.slo, lanes_, GovernorOptions{.keep_events = true});
        governor_->set_held_flows(held_);
        const auto error = governor_->bind(scheduler_.get(), &egress.leaves);
        EXPECT_FALSE(error) << *error;
    }

    uint8_t lane(uint8_t class_id) const { return admission::lane_of(class_id, lanes_); }
    uint16_t leaf(uint8_t class_id) const {
        return compiled_.egress[0].leaves.leaf(lane(class_id), 0);
    }
    SloGovernor& governor() { return *governor_; }
    const classifier::HeldFlows& held() const { return *held_; }
    sched::Scheduler& scheduler() { return *scheduler_; }
    SloClassStats inference() const { return governor_->stats(0); }

    // `count` frames of `flow` arriving in class `class_id` at `now_ns`; the leaf each got.
    // Every one is enqueued unless `dropped` counts those the scheduler refused.
    std::vector<uint16_t> arrive(uint8_t class_id, uint32_t flow, uint32_t count, uint64_t now_ns,
                                 uint32_t* dropped = nullptr) {
        governor_->tick(now_ns);
        std::vector<sched::Packet> packets(count);
        for (sched::Packet& p : packets) {
            p.length_bytes = kFrame;
            p.flow_hash = flow;
            p.leaf = leaf(class_id);
            p.user = admission::pack_user(lane(class_id), 0);
        }
        governor_->admit(
            lane(class_id), packets.data(), count, [](uint32_t) { return 0u; }, now_ns);
        std::vector<uint16_t> leaves;
        for (const sched::Packet& p : packets)
            leaves.push_back(p.leaf);
        std::vector<sched::DroppedPacket> drops(count);
        const uint32_t accepted = scheduler_->enqueue(packets.data(), count, now_ns, drops.data());
        governor_->dropped(drops.data(), count - accepted);  // as the pipeline tells it
        if (dropped != nullptr)
            *dropped += count - accepted;
        else
            EXPECT_EQ(accepted, count);
        return leaves;
    }

    // Sends everything queued, from `now_ns` on, telling the governor of each departure.
    uint32_t drain(uint64_t now_ns) {
        uint32_t sent = 0;
        sched::Packet out;
        std::array<sched::DroppedPacket, 8> drops{};
        for (uint64_t t = now_ns; scheduler_->queued_packets() != 0; t += 2'000) {
            while (scheduler_->dequeue(&out, 1, t, drops.data(), drops.size()).packets == 1) {
                governor_->depart(out.user, t - out.arrival_ns, out.length_bytes, out.flow_hash, t);
                ++sent;
            }
        }
        return sent;
    }

    size_t events(EventKind kind) const {
        size_t n = 0;
        for (const SloEvent& e : governor_->kept_events())
            n += e.kind == kind ? 1 : 0;
        return n;
    }
    const SloEvent* last(EventKind kind) const {
        const SloEvent* found = nullptr;
        for (const SloEvent& e : governor_->kept_events())
            if (e.kind == kind) found = &e;
        return found;
    }

  private:
    classifier::HeldFlows own_held_;  // before governor_, which releases into it
    classifier::HeldFlows* held_;
    conf::CompiledPolicy compiled_;
    std::unique_ptr<sched::Scheduler> scheduler_;
    std::unique_ptr<SloGovernor> governor_;
    uint32_t lanes_ = 0;
};

constexpr uint8_t kInference = 0, kTraining = 1, kOther = 2;

// 60 KB of one flow at once: past half the target (the cap goes to its max), then past the
// target itself at 9 Gbit/s: the flow is downgraded, all of the run placed in `other`.
void downgrade_by_pressure(Rig& rig, uint64_t now_ns) {
    const std::vector<uint16_t> leaves = rig.arrive(kInference, kFlow, 40, now_ns);
    ASSERT_EQ(rig.inference().downgraded_flows, 1u);
    for (uint16_t leaf : leaves)
        EXPECT_EQ(leaf, rig.leaf(kOther));
    EXPECT_EQ(rig.scheduler().leaf_queued_bytes(rig.leaf(kOther)), 40u * kFrame);
    EXPECT_EQ(rig.scheduler().leaf_queued_bytes(rig.leaf(kInference)), 0u);
    EXPECT_TRUE(rig.held().held(kFlow));
}

TEST(SloGovernor, AFlowTheClassifierTakesOutOfTheClassIsForgottenNotReturned) {
    Rig rig;
    downgrade_by_pressure(rig, 1 * kMs + 100'000);
    // The elephant heuristic moves it to training: its packets follow it from `other`.
    rig.governor().follow_reclassification(rig.lane(kInference), 0, rig.lane(kTraining), 0, kFlow);
    EXPECT_EQ(rig.scheduler().leaf_queued_bytes(rig.leaf(kOther)), 0u);
    EXPECT_EQ(rig.scheduler().leaf_queued_bytes(rig.leaf(kTraining)), 40u * kFrame);
    EXPECT_EQ(rig.inference().downgraded_flows, 0u);
    EXPECT_EQ(rig.inference().returns, 0u);
    EXPECT_FALSE(rig.held().held(kFlow));
    // No return is decided for it later either.
    for (uint64_t t = 2 * kMs; t <= 12 * kMs; t += kMs)
        rig.governor().tick(t);
    EXPECT_EQ(rig.events(EventKind::restore), 0u);
    // Back in inference one day (the elephant went quiet), it is a flow like any other.
    EXPECT_EQ(rig.arrive(kInference, kFlow, 1, 13 * kMs)[0], rig.leaf(kInference));
}

TEST(SloGovernor, AReturnDecidedWithPacketsStillBelowTakesEffectWhenTheyHaveLeft) {
    Rig rig;
    downgrade_by_pressure(rig, 1 * kMs + 100'000);
    // Nothing is sent (no dequeue): its 40 packets stay in `other`. The windows are met (idle);
    // after the quiet period (2 windows) its return is decided.
    uint64_t t = 2 * kMs;
    for (; t <= 12 * kMs && rig.events(EventKind::restore) == 0; t += kMs)
        rig.governor().tick(t);
    ASSERT_EQ(rig.events(EventKind::restore), 1u);
    EXPECT_EQ(t, 4 * kMs);  // decided when the window [2 ms, 3 ms) closed
    const SloEvent& decided = *rig.last(EventKind::restore);
    EXPECT_EQ(decided.flows, 1u);
    EXPECT_EQ(decided.deferred, 1u);
    EXPECT_EQ(decided.reason, Reason::met_quiet);
    // Its load: what it sent per window while down, 60 KB over the 2 windows closed since (not
    // 0 after one silent window: not yet silent for the quiet period); with nothing else
    // down, everything fits and it returns at once, whatever the backoff.
    EXPECT_EQ(decided.bytes, 40u * kFrame / 2);
    // Decided, not yet back: its packets are still below.
    EXPECT_EQ(rig.inference().downgraded_flows, 1u);
    EXPECT_EQ(rig.inference().returns, 0u);
    EXPECT_TRUE(rig.held().held(kFlow));
    // It sends again meanwhile: behind its packets in `other`, not ahead of them.
    EXPECT_EQ(rig.arrive(kInference, kFlow, 2, t)[0], rig.leaf(kOther));
    // The last of them leaves: it is back, with no further decision.
    EXPECT_EQ(rig.drain(t), 42u);
    EXPECT_EQ(rig.inference().downgraded_flows, 0u);
    EXPECT_EQ(rig.inference().returns, 1u);
    EXPECT_FALSE(rig.held().held(kFlow));
    EXPECT_EQ(rig.events(EventKind::restore), 1u);
    EXPECT_EQ(rig.arrive(kInference, kFlow, 1, t + kMs / 2)[0], rig.leaf(kInference));
}

// A governor that goes away (the pipeline stops) releases the flows it still holds.
// A surge over more clients than the flow meter has room for, one packet each, at once: past
// the target every packet's flow goes below, those the meter does not track too, so the
// class's queue stays within the target (plus the run that crossed it) instead of filling its
// 2 MiB limit.
TEST(SloGovernor, PastTheTargetEvenFlowsTheMeterCannotHoldArePressedOut) {
    Rig rig;
    const uint64_t start = 1 * kMs + 100'000;
    downgrade_by_pressure(rig, start);              // the cap at its max, 9 Gbit/s
    const uint32_t flows = 12 * FlowMeter::kSlots;  // 12288: more than 4096, the old table
    uint32_t below = 0, dropped = 0;  // `other` holds 1 MiB: most of what goes below is dropped
    for (uint32_t i = 0; i < flows; ++i) {
        const uint32_t flow = 0x1000'0000u + i;  // distinct, spread over the slots
        const uint16_t leaf = rig.arrive(kInference, flow, 1, start + 10 + i, &dropped)[0];
        below += leaf == rig.leaf(kOther) ? 1 : 0;
        ASSERT_LE(rig.scheduler().leaf_queued_bytes(rig.leaf(kInference)),
                  9'000'000'000ull / 8 * 50'000 / 1'000'000'000 + kFrame)
            << "flow " << i;
    }
    // All but the ~37 frames that fit the target went below, most of them untracked.
    EXPECT_GT(below, flows - 64);
    EXPECT_EQ(rig.inference().downgraded_flows, below + 1);
    EXPECT_EQ(rig.drain(start + 1'000'000), flows + 40 - dropped);
    // Silent once drained, every flow returns, the table empties and holds nothing.
    for (uint64_t t = start + 20 * kMs; t <= start + 80 * kMs; t += kMs)
        rig.governor().tick(t);
    EXPECT_EQ(rig.inference().downgraded_flows, 0u);
    EXPECT_GE(rig.inference().downgrades, below + 1);  // the rest by the missed window
    EXPECT_EQ(rig.inference().returns, rig.inference().downgrades);
    for (uint32_t i = 0; i < flows; i += 97)
        ASSERT_FALSE(rig.held().held(0x1000'0000u + i)) << "flow " << i;
    EXPECT_EQ(rig.arrive(kInference, 0x1000'0000u + 5, 1, start + 81 * kMs)[0],
              rig.leaf(kInference));
}

TEST(SloGovernor, ReleasesWhatItHoldsWhenDestroyed) {
    classifier::HeldFlows held;
    {
        Rig rig(&held);
        downgrade_by_pressure(rig, 1 * kMs + 100'000);
        EXPECT_TRUE(held.held(kFlow));
    }
    EXPECT_FALSE(held.held(kFlow));
}

}  // namespace
}  // namespace twinlane::slo
