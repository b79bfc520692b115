// ClassifiedBurst + SchedulerAdmission (admission/): bursts bucketed by lane are admitted lane
// by lane, and in arrival order when a flow changed class; through a real sched::Scheduler,
// flows that keep changing class leave in their arrival order and nothing is lost.
#include "admission/classified_burst.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

#include "admission/scheduler_admission.h"
#include "sched/scheduler.h"

namespace twinlane::admission {
namespace {

constexpr uint32_t kBurst = 32;
constexpr uint8_t kNone = classifier::kNoPreviousClass;

classifier::Result result(uint8_t class_id, uint32_t flow, uint32_t job = 0,
                          uint8_t previous = kNone, uint32_t previous_job = 0) {
    classifier::Result r;
    r.class_id = class_id;
    r.flow_hash = flow;
    r.job_id = job;
    r.previous_class = previous;
    r.previous_job = previous_job;
    return r;
}

// Records what an admitter is given.
struct Recorder {
    std::vector<std::pair<uint8_t, std::vector<int>>> admitted;  // lane, positions
    std::vector<int> moved;
    void admit(uint8_t lane, const uint8_t* positions, uint32_t n) {
        admitted.emplace_back(lane, std::vector<int>(positions, positions + n));
    }
    void reclassified(uint8_t, uint8_t position) { moved.push_back(position); }
};

TEST(ClassifiedBurst, ByLaneWithoutReclassification) {
    const std::vector<classifier::Result> results = {result(1, 1), result(0, 2), result(1, 3),
                                                     result(2, 4), result(0, 5)};
    std::vector<classifier::Result> with_drop = results;
    with_drop[3].drop = true;
    const std::vector<uint32_t> bytes = {100, 200, 300, 400, 500};
    ClassifiedBurst<kBurst> burst(3);
    int stamped = 0;
    std::vector<int> discarded;
    burst.bucket(
        with_drop.data(), bytes.data(), 5,
        [&](uint8_t, const classifier::Result&, uint8_t) { ++stamped; },
        [&](uint8_t position) { discarded.push_back(position); });
    EXPECT_EQ(stamped, 4);
    EXPECT_EQ(discarded, std::vector<int>{3});
    EXPECT_FALSE(burst.reclassified());
    Recorder rec;
    EXPECT_EQ(burst.admit(rec), 4u);
    ASSERT_EQ(rec.admitted.size(), 2u);
    EXPECT_EQ(rec.admitted[0], (std::pair<uint8_t, std::vector<int>>{0, {1, 4}}));
    EXPECT_EQ(rec.admitted[1], (std::pair<uint8_t, std::vector<int>>{1, {0, 2}}));
    EXPECT_EQ(burst.packets(2), 1u);
    EXPECT_EQ(burst.dropped(2), 1u);
    EXPECT_EQ(burst.bytes(1), 400u);
}

TEST(ClassifiedBurst, ArrivalOrderFromAReclassification) {
    // Packet 2's flow moved from lane 0 to lane 1: runs in arrival order, reclassified() just
    // before the run that starts with it.
    const std::vector<classifier::Result> results = {result(0, 1), result(0, 7), result(1, 7, 0, 0),
                                                     result(1, 2), result(0, 3)};
    const std::vector<uint32_t> bytes(5, 64);
    ClassifiedBurst<kBurst> burst(2);
    burst.bucket(
        results.data(), bytes.data(), 5, [](uint8_t, const classifier::Result&, uint8_t) {},
        [](uint8_t) {});
    EXPECT_TRUE(burst.reclassified());
    Recorder rec;
    EXPECT_EQ(burst.admit(rec), 5u);
    ASSERT_EQ(rec.admitted.size(), 3u);
    EXPECT_EQ(rec.admitted[0], (std::pair<uint8_t, std::vector<int>>{0, {0, 1}}));
    EXPECT_EQ(rec.admitted[1], (std::pair<uint8_t, std::vector<int>>{1, {2, 3}}));
    EXPECT_EQ(rec.admitted[2], (std::pair<uint8_t, std::vector<int>>{0, {4}}));
    EXPECT_EQ(rec.moved, std::vector<int>{2});
}

// Packets as the scheduler source sees them: burst positions into a table of (result, sequence).
struct TestPacket {
    classifier::Result r;
    uint32_t seq = 0;
};
struct TableSource {
    using Item = uint8_t;
    std::vector<TestPacket>& table;
    size_t burst_start = 0;  // table index of the current burst's position 0
    uint64_t dropped_count = 0;
    const classifier::Result& classified(Item position) const {
        return table[burst_start + position].r;
    }
    uint32_t previous_job(Item position) const { return classified(position).previous_job; }
    void describe(sched::Packet& p, Item position) const {
        p.handle = reinterpret_cast<void*>(static_cast<uintptr_t>(burst_start + position));
        p.length_bytes = 1000;
        p.l3 = nullptr;
        p.user_ns = 0;
    }
    void dropped(const sched::DroppedPacket*, uint32_t n) { dropped_count += n; }
    uint8_t pfc_tag(Item) const { return 0; }
};

TEST(SchedulerAdmission, FlowsChangingClassLeaveInOrder) {
    // strict root: lane 0 fq (served first, shaped slow), lane 1 per-job modulo leaves, lane 2.
    sched::TreeSpec spec;
    auto node = [](std::string name, sched::NodeKind kind, std::string parent) {
        sched::NodeSpec n;
        n.name = std::move(name);
        n.kind = kind;
        n.parent = std::move(parent);
        n.limit_packets = 1u << 16;
        n.limit_bytes = 1ull << 32;
        return n;
    };
    spec.nodes.push_back(node("root", sched::NodeKind::strict, ""));
    spec.nodes.push_back(node("fast", sched::NodeKind::fq, "root"));
    spec.nodes.back().priority = 0;
    spec.nodes.back().shaper = {100'000'000, 20'000};
    spec.nodes.push_back(node("jobs", sched::NodeKind::drr, "root"));
    spec.nodes.back().priority = 1;
    spec.nodes.push_back(node("job0", sched::NodeKind::fq, "jobs"));
    spec.nodes.push_back(node("job1", sched::NodeKind::fifo, "jobs"));
    spec.nodes.push_back(node("slow", sched::NodeKind::fifo, "root"));
    spec.nodes.back().priority = 2;
    auto built = sched::Scheduler::build(spec);
    ASSERT_TRUE(built.scheduler) << built.error->to_string();
    sched::Scheduler& scheduler = *built.scheduler;
    LeafMap leaves;
    ASSERT_FALSE(LeafMap::build(
        {{JobSplit::none, 0, 1, {}}, {JobSplit::modulo, 1, 2, {}}, {JobSplit::none, 3, 1, {}}},
        leaves));

    std::mt19937 rng(11);
    constexpr uint32_t kFlows = 12;
    std::vector<uint8_t> flow_class(kFlows, 2);
    std::vector<uint32_t> flow_job(kFlows, 0), next_seq(kFlows, 0), expect_seq(kFlows, 0);
    std::vector<TestPacket> table;
    TableSource source{table, 0, 0};
    std::array<sched::Packet, kBurst> scratch;
    std::array<sched::DroppedPacket, kBurst> drops;
    uint64_t now = 0, sent = 0;
    for (int round = 0; round < 3000; ++round) {
        const uint32_t n = 1 + rng() % kBurst;
        source.burst_start = table.size();
        std::vector<classifier::Result> results;
        for (uint32_t i = 0; i < n; ++i) {
            const uint32_t flow = rng() % kFlows;
            classifier::Result r = result(flow_class[flow], flow, flow_job[flow]);
            if (rng() % 16 == 0) {  // the flow changes class (or job) with this packet
                r.previous_class = flow_class[flow];
                r.previous_job = flow_job[flow];
                flow_class[flow] = static_cast<uint8_t>(rng() % 3);
                flow_job[flow] = rng() % 5;
                r.class_id = flow_class[flow];
                r.job_id = flow_job[flow];
            }
            table.push_back({r, next_seq[flow]++});
            results.push_back(r);
        }
        const std::vector<uint32_t> bytes(n, 1000);
        ClassifiedBurst<kBurst> burst(3);
        burst.bucket(
            results.data(), bytes.data(), n, [](uint8_t, const classifier::Result&, uint8_t) {},
            [](uint8_t) {});
        SchedulerAdmission<TableSource> admission(scheduler, leaves, 3, source, scratch, drops,
                                                  now);
        burst.admit(admission);
        now += 20'000;
        sched::Packet out[8];
        sched::DroppedPacket codel[8];
        const sched::DequeueResult r = scheduler.dequeue(out, 8, now, codel, 8);
        for (uint32_t i = 0; i < r.packets; ++i) {
            const TestPacket& t = table[reinterpret_cast<uintptr_t>(out[i].handle)];
            ASSERT_EQ(t.seq, expect_seq[t.r.flow_hash]++) << "flow " << t.r.flow_hash;
            ++sent;
        }
    }
    while (scheduler.queued_packets() != 0) {
        now = std::max(now + 1, scheduler.next_eligible_ns(now));
        sched::Packet out[32];
        sched::DroppedPacket codel[8];
        const sched::DequeueResult r = scheduler.dequeue(out, 32, now, codel, 8);
        for (uint32_t i = 0; i < r.packets; ++i) {
            const TestPacket& t = table[reinterpret_cast<uintptr_t>(out[i].handle)];
            ASSERT_EQ(t.seq, expect_seq[t.r.flow_hash]++) << "flow " << t.r.flow_hash;
            ++sent;
        }
    }
    EXPECT_EQ(source.dropped_count, 0u);
    EXPECT_EQ(sent, table.size());
}

}  // namespace
}  // namespace twinlane::admission
