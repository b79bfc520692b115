// Runtime parameter changes and whole-tree replacement: nothing lost, nothing reordered.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "sched/scheduler.h"
#include "sched_test_util.h"

namespace twinlane::sched {
namespace {

using testing::build_or_fail;
using testing::id_of;
using testing::make_leaf;
using testing::make_node;
using testing::make_packet;

TreeSpec two_lane_tree() {
    TreeSpec spec;
    spec.nodes.push_back(make_node("port", NodeKind::drr));
    spec.nodes.push_back(make_leaf("a", NodeKind::fifo, "port", 5000));
    spec.nodes.push_back(make_leaf("b", NodeKind::fq, "port", 5000));
    spec.nodes.back().fq_buckets = 16;
    return spec;
}

// Tracks ids: each must come out once, and in increasing order within its (leaf name, flow).
struct OrderChecker {
    std::map<std::pair<std::string, uint32_t>, uint64_t> next_min;
    std::vector<uint8_t> seen;
    void expect_out(const Scheduler& scheduler, const Packet& packet) {
        const uint64_t id = id_of(packet);
        ASSERT_LT(id, seen.size());
        ASSERT_EQ(seen[id]++, 0) << "duplicate " << id;
        uint64_t& minimum = next_min[{scheduler.leaf_name(packet.leaf), packet.flow_hash}];
        ASSERT_GE(id, minimum) << "reordered " << id;
        minimum = id + 1;
    }
};

uint64_t offer_random(Scheduler& scheduler, std::mt19937& random, uint64_t& next_id, int count,
                      OrderChecker& checker) {
    std::vector<Packet> arrivals;
    for (int i = 0; i < count; ++i) {
        const auto leaf = static_cast<uint16_t>(random() % scheduler.leaf_count());
        arrivals.push_back(make_packet(leaf, 64 + random() % 1500, random() % 8, next_id++));
        checker.seen.push_back(0);
    }
    std::vector<DroppedPacket> drops(arrivals.size());
    const uint32_t accepted = scheduler.enqueue(arrivals.data(), count, 0, drops.data());
    EXPECT_EQ(accepted, static_cast<uint32_t>(count));
    return accepted;
}

uint64_t drain_all(Scheduler& scheduler, OrderChecker& checker, uint32_t max = 1u << 30) {
    std::vector<Packet> out(64);
    std::vector<DroppedPacket> drops(64);
    uint64_t total = 0;
    while (total < max) {
        const DequeueResult result = scheduler.dequeue(
            out.data(), std::min<uint32_t>(64, max - static_cast<uint32_t>(total)), 0, drops.data(),
            64);
        EXPECT_EQ(result.dropped, 0u);
        if (result.packets == 0) break;
        for (uint32_t i = 0; i < result.packets; ++i)
            checker.expect_out(scheduler, out[i]);
        total += result.packets;
    }
    return total;
}

TEST(RuntimeTest, WeightChangeBetweenBurstsLosesAndReordersNothing) {
    TreeSpec spec = two_lane_tree();
    auto scheduler = build_or_fail(spec);
    std::mt19937 random(5);
    OrderChecker checker;
    uint64_t next_id = 0, in = 0, out = 0;
    for (int round = 0; round < 50; ++round) {
        in += offer_random(*scheduler, random, next_id, 64, checker);
        out += drain_all(*scheduler, checker, 40);
        TreeSpec changed = scheduler->spec();
        changed.nodes[1].weight = 1 + random() % 8;
        changed.nodes[2].weight = 1 + random() % 8;
        changed.nodes[1].limit_packets = 4000 + random() % 1000;  // (below depth: see next test)
        changed.nodes[2].shaper = ShaperSpec{0, 0};
        ASSERT_FALSE(scheduler->apply(changed, 0).has_value());
        ASSERT_EQ(scheduler->queued_packets(), in - out);
    }
    TreeSpec unlimited = scheduler->spec();
    unlimited.nodes[1].limit_packets = 5000;
    ASSERT_FALSE(scheduler->apply(unlimited, 0));
    out += drain_all(*scheduler, checker);
    EXPECT_EQ(in, out);
    EXPECT_EQ(scheduler->node_counters(0).dropped_packets(), 0u);
}

TEST(RuntimeTest, WeightChangeTakesEffect) {
    TreeSpec spec = two_lane_tree();
    auto scheduler = build_or_fail(spec);
    std::vector<Packet> arrivals;
    for (uint64_t i = 0; i < 8000; ++i)
        arrivals.push_back(make_packet(i % 2, 1000, 0, i));
    std::vector<DroppedPacket> drops(8000);
    ASSERT_EQ(scheduler->enqueue(arrivals.data(), 8000, 0, drops.data()), 8000u);
    TreeSpec changed = spec;
    changed.nodes[2].weight = 3;
    ASSERT_FALSE(scheduler->apply(changed, 0));
    std::vector<Packet> out(2000);
    ASSERT_EQ(scheduler->dequeue(out.data(), 2000, 0, drops.data(), 1).packets, 2000u);
    uint64_t b_packets = 0;
    for (const Packet& packet : out)
        b_packets += packet.leaf == 1;
    EXPECT_NEAR(static_cast<double>(b_packets) / 2000.0, 0.75, 0.01);
}

TEST(RuntimeTest, LoweredLimitRefusesArrivalsButKeepsQueue) {
    TreeSpec spec = two_lane_tree();
    auto scheduler = build_or_fail(spec);
    std::vector<Packet> arrivals(100, make_packet(0, 100));
    std::vector<DroppedPacket> drops(100);
    ASSERT_EQ(scheduler->enqueue(arrivals.data(), 100, 0, drops.data()), 100u);
    TreeSpec changed = spec;
    changed.nodes[1].limit_packets = 10;
    ASSERT_FALSE(scheduler->apply(changed, 0));
    EXPECT_EQ(scheduler->leaf_counters(0).depth_packets, 100u);
    EXPECT_EQ(scheduler->enqueue(arrivals.data(), 1, 0, drops.data()), 0u);
    std::vector<Packet> out(100);
    EXPECT_EQ(scheduler->dequeue(out.data(), 100, 0, drops.data(), 1).packets, 100u);
}

TEST(RuntimeTest, RateChangeTakesEffect) {
    TreeSpec spec;
    spec.nodes.push_back(make_leaf("q", NodeKind::fifo, ""));
    spec.nodes.back().shaper = ShaperSpec{8'000'000'000, 1000};  // 1 byte/ns
    auto scheduler = build_or_fail(spec);
    std::vector<Packet> arrivals(10, make_packet(0, 1000));
    std::vector<DroppedPacket> drops(10);
    scheduler->enqueue(arrivals.data(), 10, 0, drops.data());
    std::vector<Packet> out(10);
    EXPECT_EQ(scheduler->dequeue(out.data(), 10, 0, drops.data(), 1).packets, 2u);  // burst + 1
    EXPECT_EQ(scheduler->next_eligible_ns(0), 1000u);
    spec.nodes[0].shaper = ShaperSpec{16'000'000'000, 1000};  // twice as fast: debt repaid sooner
    ASSERT_FALSE(scheduler->apply(spec, 0));
    EXPECT_EQ(scheduler->next_eligible_ns(0), 500u);
}

TEST(RuntimeTest, ApplyRejectsTopologyChanges) {
    TreeSpec spec = two_lane_tree();
    auto scheduler = build_or_fail(spec);
    TreeSpec changed = spec;
    changed.nodes[2].fq_buckets = 32;
    auto problem = scheduler->apply(changed, 0);
    ASSERT_TRUE(problem);
    EXPECT_EQ(problem->field, "fq_buckets");
    changed = spec;
    changed.nodes.push_back(make_leaf("c", NodeKind::fifo, "port"));
    EXPECT_TRUE(scheduler->apply(changed, 0));
    changed = spec;
    changed.nodes[1].weight = 0;  // invalid values are rejected before anything changes
    problem = scheduler->apply(changed, 0);
    ASSERT_TRUE(problem);
    EXPECT_EQ(problem->node, "a");
    EXPECT_EQ(scheduler->spec().nodes[1].weight, 1u);
}

TEST(RuntimeTest, ReplaceTreeMigratesByNameWithoutLossOrReordering) {
    TreeSpec old_spec;
    old_spec.nodes.push_back(make_node("port", NodeKind::strict));
    old_spec.nodes.push_back(make_leaf("infer", NodeKind::fifo, "port"));
    old_spec.nodes.push_back(make_leaf("train", NodeKind::fq, "port"));
    old_spec.nodes.back().priority = 1;
    old_spec.nodes.push_back(make_leaf("legacy", NodeKind::fifo, "port"));
    old_spec.nodes.back().priority = 2;
    auto old_tree = build_or_fail(old_spec);

    std::mt19937 random(9);
    OrderChecker checker;
    uint64_t next_id = 0;
    const uint64_t in = offer_random(*old_tree, random, next_id, 3000, checker);
    uint64_t out = drain_all(*old_tree, checker, 500);

    TreeSpec new_spec;  // different shape: drr root, infer becomes fq, legacy disappears
    new_spec.nodes.push_back(make_node("root", NodeKind::drr));
    new_spec.nodes.push_back(make_leaf("train", NodeKind::fifo, "root"));
    new_spec.nodes.push_back(make_leaf("infer", NodeKind::fq, "root"));
    new_spec.nodes.back().fq_buckets = 4;
    new_spec.nodes.push_back(make_leaf("default", NodeKind::fifo, "root"));
    new_spec.default_leaf = "default";
    auto new_tree = build_or_fail(new_spec);
    const uint64_t legacy_queued = old_tree->leaf_counters(2).depth_packets;
    ASSERT_GT(legacy_queued, 0u);
    const uint64_t queued = old_tree->queued_packets();
    ASSERT_FALSE(new_tree->migrate_from(*old_tree, 0).has_value());
    EXPECT_EQ(old_tree->queued_packets(), 0u);
    EXPECT_EQ(old_tree->pool_free(), old_tree->pool_capacity());
    EXPECT_EQ(new_tree->queued_packets(), queued);
    EXPECT_EQ(new_tree->leaf_counters(2).depth_packets, legacy_queued);
    EXPECT_EQ(old_tree->node_counters(0).migrated_out_packets, queued);

    // Migrated packets carry their new leaf id; "legacy" packets now drain from "default".
    for (auto& [key, minimum] : checker.next_min) {
        if (key.first == "legacy") checker.next_min[{"default", key.second}] = minimum;
    }
    std::vector<Packet> buffer(64);
    std::vector<DroppedPacket> drops(64);
    for (;;) {
        const DequeueResult result = new_tree->dequeue(buffer.data(), 64, 0, drops.data(), 64);
        if (result.packets == 0) break;
        for (uint32_t i = 0; i < result.packets; ++i)
            checker.expect_out(*new_tree, buffer[i]);
        out += result.packets;
    }
    EXPECT_EQ(in, out);
}

TEST(RuntimeTest, MigrationIsAllOrNothing) {
    TreeSpec old_spec = two_lane_tree();
    auto old_tree = build_or_fail(old_spec);
    std::vector<Packet> arrivals;
    for (uint64_t i = 0; i < 100; ++i)
        arrivals.push_back(make_packet(i % 2, 100, 0, i));
    std::vector<DroppedPacket> drops(100);
    ASSERT_EQ(old_tree->enqueue(arrivals.data(), 100, 0, drops.data()), 100u);

    TreeSpec no_default;  // "b" vanishes and nothing catches it
    no_default.nodes.push_back(make_node("port", NodeKind::drr));
    no_default.nodes.push_back(make_leaf("a", NodeKind::fifo, "port"));
    auto target = build_or_fail(no_default);
    auto problem = target->migrate_from(*old_tree, 0);
    ASSERT_TRUE(problem);
    EXPECT_EQ(problem->node, "b");
    EXPECT_EQ(old_tree->queued_packets(), 100u);
    EXPECT_EQ(target->queued_packets(), 0u);

    TreeSpec small = old_spec;  // same leaves, pool too small for what is queued
    small.pool_packets = 50;
    auto small_tree = build_or_fail(small);
    problem = small_tree->migrate_from(*old_tree, 0);
    ASSERT_TRUE(problem);
    EXPECT_EQ(problem->field, "pool_packets");
    EXPECT_EQ(old_tree->queued_packets(), 100u);
}

}  // namespace
}  // namespace twinlane::sched

namespace twinlane::sched {
namespace {

// A PFC pause of one class: its node is held, every other node keeps being served, the held
// one resumes at the end of the hold (or at once when released), and nothing is lost.
TEST(RuntimeTest, HeldNodeIsSkippedUntilItsTime) {
    TreeSpec spec;
    spec.nodes.push_back(make_node("root", NodeKind::strict));
    spec.nodes.push_back(make_leaf("inference", NodeKind::fifo, "root", 1000));
    spec.nodes.back().priority = 1;
    spec.nodes.push_back(make_node("training", NodeKind::drr, "root"));
    spec.nodes.back().priority = 0;  // served first when not held
    spec.nodes.push_back(make_leaf("job0", NodeKind::fq, "training", 1000));
    spec.nodes.push_back(make_leaf("job1", NodeKind::fifo, "training", 1000));
    auto s = build_or_fail(spec);
    const uint32_t training = *s->node_id("training");
    std::vector<Packet> in;
    for (uint64_t i = 0; i < 30; ++i)
        in.push_back(make_packet(static_cast<uint16_t>(i % 3), 1000, static_cast<uint32_t>(i), i));
    std::vector<DroppedPacket> drops(in.size());
    ASSERT_EQ(s->enqueue(in.data(), 30, 0, drops.data()), 30u);
    s->hold(training, 5000);
    Packet out[64];
    DroppedPacket dropped[8];
    DequeueResult r = s->dequeue(out, 64, 100, dropped, 8);
    ASSERT_EQ(r.packets, 10u);  // inference only
    for (uint32_t i = 0; i < r.packets; ++i)
        EXPECT_EQ(out[i].leaf, 0);
    EXPECT_EQ(s->next_eligible_ns(200), 5000u);  // the hold's end, for a virtual link
    EXPECT_EQ(s->dequeue(out, 64, 4999, dropped, 8).packets, 0u);
    r = s->dequeue(out, 64, 5000, dropped, 8);
    EXPECT_EQ(r.packets, 20u);
    EXPECT_EQ(s->held_until_ns(training), 0u);  // cleared once it expired
    // Released before its time: served at once.
    ASSERT_EQ(s->enqueue(in.data() + 1, 1, 6000, drops.data()), 1u);
    s->hold(training, 1'000'000);
    EXPECT_EQ(s->dequeue(out, 64, 6001, dropped, 8).packets, 0u);
    s->hold(training, 0);
    EXPECT_EQ(s->dequeue(out, 64, 6002, dropped, 8).packets, 1u);
    EXPECT_EQ(s->node_counters(0).dropped_packets(), 0u);
}

}  // namespace
}  // namespace twinlane::sched
