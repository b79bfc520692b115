// Leaves whose limits hold one to three packets, or one to two frames of bytes, under every
// parent kind (strict, drr, the per-job drr of conf/default.yaml, shaped parents), fq and fifo
// leaves, CoDel and RED/ECN on and off, limits lowered at runtime (`class set ... limit_packets
// 1`), every other live change in place (weights, shapers on and off, AQM retuned, a larger max
// frame, a cap moved as the SLO controller does, PFC holds) and flows moved between leaves. A full
// fq leaf of one packet makes room by pushing out its only packet: the leaf empties and refills in
// one arrival, which once linked it into its drr parent's ring twice (SIGSEGV in pick()). Checked
// after every operation: every packet accounted for once (offered = delivered + dropped + queued),
// per-leaf counters balance, the pool adds up; at the end the tree drains completely.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "sched/scheduler.h"
#include "sched_test_util.h"

namespace twinlane::sched {
namespace {

using testing::build_or_fail;
using testing::id_of;
using testing::make_ipv4_header;
using testing::make_leaf;
using testing::make_node;
using testing::make_packet;

enum class Parent { strict, drr, per_job, shaped };

const char* name_of(Parent parent) {
    switch (parent) {
        case Parent::strict:
            return "strict";
        case Parent::drr:
            return "drr";
        case Parent::per_job:
            return "per_job";
        case Parent::shaped:
            return "shaped";
    }
    return "?";
}

class TinyTree {
  public:
    TinyTree(Parent parent, uint32_t seed) : parent_(parent), random_(seed) {}

    TreeSpec make() {
        TreeSpec spec;
        spec.max_packet_bytes = chance(2) ? 1518 : 9216;
        spec.random_seed = random_() | 1;
        switch (parent_) {
            case Parent::strict:
                spec.nodes.push_back(make_node("port", NodeKind::strict));
                for (uint32_t i = 0; i < 3; ++i)
                    add_leaf(spec, "q" + std::to_string(i), "port", i);
                break;
            case Parent::drr:
                spec.nodes.push_back(make_node("port", NodeKind::drr));
                for (uint32_t i = 0; i < 3; ++i)
                    add_leaf(spec, "q" + std::to_string(i), "port", i);
                break;
            case Parent::per_job:
                // conf/default.yaml's shape: strict root, inference first, bulk drr of a per-job
                // drr (one leaf per training job) and a fifo for the rest.
                spec.nodes.push_back(make_node("root", NodeKind::strict));
                spec.nodes.back().shaper = {10'000'000'000, 65536};
                add_leaf(spec, "inference", "root", 0);
                spec.nodes.push_back(make_node("bulk", NodeKind::drr, "root"));
                spec.nodes.back().priority = 1;
                spec.nodes.push_back(make_node("training", NodeKind::drr, "bulk"));
                spec.nodes.back().weight = 4;
                for (uint32_t j = 0; j < 4; ++j)
                    add_leaf(spec, "job" + std::to_string(j), "training", j);
                add_leaf(spec, "other", "bulk", 1);
                break;
            case Parent::shaped:
                // Shapers that block: a capped strict lane and a shaped drr node.
                spec.nodes.push_back(make_node("port", NodeKind::strict));
                spec.nodes.back().shaper = {uint64_t{uniform(1, 40)} * 1'000'000'000,
                                            uniform(1518, 30'000)};
                add_leaf(spec, "capped", "port", 0);
                spec.nodes.back().shaper = {uint64_t{uniform(1, 20)} * 100'000'000,
                                            uniform(64, 20'000)};
                spec.nodes.push_back(make_node("bulk", NodeKind::drr, "port"));
                spec.nodes.back().priority = 1;
                spec.nodes.back().shaper = {uint64_t{uniform(1, 50)} * 100'000'000,
                                            uniform(1518, 20'000)};
                for (uint32_t i = 0; i < 2; ++i)
                    add_leaf(spec, "b" + std::to_string(i), "bulk", i);
                break;
        }
        return spec;
    }

    // The same tree with new tiny limits, as `class set NAME limit_packets|limit_bytes` makes.
    TreeSpec relimit(TreeSpec spec) {
        for (NodeSpec& node : spec.nodes) {
            if (node.kind == NodeKind::fifo || node.kind == NodeKind::fq) set_limits(node, spec);
        }
        return spec;
    }

    // The same tree with any parameter a live change may touch (`class set` of weight, rate,
    // burst, codel, ecn; a policy reload that keeps the topology): weights, shapers on or off
    // on any node, CoDel and RED on, off or retuned, a larger max frame.
    TreeSpec retune(TreeSpec spec) {
        const uint32_t frame_before = spec.max_packet_bytes;
        if (chance(8)) spec.max_packet_bytes = 9216;
        for (NodeSpec& node : spec.nodes) {
            // Byte limits must hold a frame of the new size.
            if (spec.max_packet_bytes != frame_before && node.kind != NodeKind::strict &&
                node.kind != NodeKind::drr)
                set_limits(node, spec);
            if (chance(2)) continue;
            node.weight = chance(4) ? uniform(1, 1000) : uniform(1, 8);
            if (chance(3)) {
                node.shaper = chance(3) ? ShaperSpec{}
                                        : ShaperSpec{uint64_t{uniform(1, 400)} * 100'000'000,
                                                     uniform(64, 40'000)};
            }
            if (node.kind != NodeKind::fifo && node.kind != NodeKind::fq) continue;
            if (chance(3)) set_limits(node, spec);
            if (chance(3)) {
                node.codel = {chance(2), uniform(1, 50) * 1000ull, uniform(50, 400) * 1000ull,
                              chance(2)};
            }
            if (chance(3)) {
                const uint32_t kmin = uniform(100, 5000);
                node.red = {chance(2), kmin, kmin + uniform(100, 10'000), 0.05 * uniform(1, 20),
                            chance(2)};
            }
        }
        return spec;
    }

    bool chance(uint32_t one_in) { return random_() % one_in == 0; }
    uint32_t uniform(uint32_t lo, uint32_t hi) { return lo + random_() % (hi - lo + 1); }

  private:
    void set_limits(NodeSpec& node, const TreeSpec& spec) {
        const uint32_t frame = spec.max_packet_bytes;
        // Tiny packet limits, byte limits around one or two frames, or both.
        const uint32_t which = uniform(0, 2);
        node.limit_packets = which == 1 ? 1000 : uniform(1, 3);
        static constexpr uint32_t kBytesAbove[] = {0, 1, 64, 1500};
        node.limit_bytes =
            which == 0 ? 1u << 24 : uint64_t{frame} * uniform(1, 2) + kBytesAbove[uniform(0, 3)];
    }

    void add_leaf(TreeSpec& spec, const std::string& name, const std::string& parent,
                  uint32_t position) {
        NodeSpec node = make_leaf(name, chance(3) ? NodeKind::fifo : NodeKind::fq, parent);
        node.priority = position;
        node.weight = uniform(1, 4);
        node.fq_buckets = 1u << uniform(0, 4);
        node.fq_sparse_first = !chance(3);
        node.fq_by_job = chance(2);
        set_limits(node, spec);
        if (chance(2))
            node.codel = {true, uniform(1, 50) * 1000ull, uniform(50, 400) * 1000ull, chance(2)};
        if (chance(2)) {
            const uint32_t kmin = uniform(100, 5000);
            node.red = {true, kmin, kmin + uniform(100, 10'000), 0.05 * uniform(1, 20), chance(2)};
        }
        spec.nodes.push_back(node);
    }

    Parent parent_;
    std::mt19937 random_;
};

// Everything queued leaves, and the leaf counters balance: in = out + dropped after admission
// (CoDel, fq overflow) + moved away + queued.
void expect_balanced(Scheduler& scheduler, const std::string& where) {
    uint64_t depth = 0;
    for (uint16_t leaf = 0; leaf < scheduler.leaf_count(); ++leaf) {
        const QueueCounters c = scheduler.leaf_counters(leaf);
        ASSERT_EQ(c.packets_in, c.packets_out + c.drops(DropReason::codel) +
                                    c.drops(DropReason::fq_overflow) + c.migrated_out_packets +
                                    c.depth_packets)
            << where << " leaf " << scheduler.leaf_name(leaf);
        depth += c.depth_packets;
    }
    ASSERT_EQ(depth, scheduler.queued_packets()) << where;
    ASSERT_EQ(scheduler.pool_free() + scheduler.queued_packets(), scheduler.pool_capacity())
        << where;
    const uint64_t wake = scheduler.next_eligible_ns(0);
    ASSERT_EQ(wake == Scheduler::kNever, scheduler.queued_packets() == 0) << where;
}

// What the runs of one parent kind exercised, summed over seeds (the test means something
// only if tiny limits overflowed, fq leaves pushed out and AQM acted).
struct Exercised {
    QueueCounters total;
    uint64_t relimits = 0;
    uint64_t retunes = 0;
    uint64_t holds = 0;
    uint64_t moved = 0;
    uint64_t moved_and_dropped = 0;  // past the target's limits
};

void run_one(Parent parent, uint32_t seed, Exercised& exercised) {
    TinyTree generator(parent, seed);
    const TreeSpec spec = generator.make();
    const std::string tree = std::string(name_of(parent)) + " seed " + std::to_string(seed);
    auto scheduler = build_or_fail(spec);
    ASSERT_TRUE(scheduler) << tree;
    std::mt19937 random(seed * 31 + static_cast<uint32_t>(parent));
    auto uniform = [&](uint32_t lo, uint32_t hi) { return lo + random() % (hi - lo + 1); };
    std::mt19937 move_random(seed);  // how a flow moves: apart, so the rest draws as before
    std::mt19937 retune_random(seed * 7 + 1);  // which live change: apart, likewise
    const uint32_t frame = spec.max_packet_bytes;
    const std::array<uint32_t, 7> lengths = {64, 200, 1500, frame / 2, frame - 1, frame, frame + 1};
    const uint32_t leaves = scheduler->leaf_count();
    // By packet id; growing the outer vector moves the inner ones, whose bytes (l3) stay put.
    std::vector<std::vector<uint8_t>> headers(1);
    std::vector<uint8_t> seen(1);  // by packet id: delivered or dropped once
    uint64_t offered = 0, delivered = 0, dropped = 0;
    uint64_t now = 1'000'000;
    std::array<Packet, 64> out;
    std::array<DroppedPacket, 64> drops;
    auto account = [&](const Packet& packet, const std::string& where) {
        ASSERT_LT(id_of(packet), seen.size()) << where;
        ASSERT_EQ(seen[id_of(packet)]++, 0) << where << ": packet " << id_of(packet) << " twice";
    };

    for (uint32_t step = 0; step < 1500; ++step) {
        const std::string where = tree + " step " + std::to_string(step);
        if (random() % 3 == 0) now += uniform(1, 100'000);
        const uint32_t op = uniform(0, 19);
        if (op < 10) {
            const uint32_t n = uniform(1, 32);
            std::vector<Packet> packets(n);
            for (Packet& packet : packets) {
                const uint64_t id = seen.size();
                seen.push_back(0);
                headers.emplace_back();
                packet = make_packet(
                    static_cast<uint16_t>(random() % 40 == 0 ? leaves : random() % leaves),
                    lengths[random() % (random() % 20 == 0 ? 7 : 6)], random() % 6, id);
                packet.job = static_cast<uint8_t>(random() % 3);
                if (random() % 2 == 0) {  // ECT(0): RED and CoDel may mark instead of drop
                    headers[id] = make_ipv4_header(0x02);
                    packet.l3 = headers[id].data();
                }
            }
            std::vector<DroppedPacket> refused(n);
            const uint32_t accepted = scheduler->enqueue(packets.data(), n, now, refused.data());
            offered += n;
            for (uint32_t i = 0; i < n - accepted; ++i)
                account(refused[i].packet, where);
            dropped += n - accepted;
        } else if (op < 18) {
            const uint32_t max_packets = uniform(1, 64);
            const uint64_t budget =
                random() % 2 == 0 ? Scheduler::kUnlimitedBytes : uniform(0, 40'000);
            const WireCost cost = random() % 2 == 0 ? WireCost{} : WireCost{60, 24};
            const uint32_t drop_capacity = random() % 4 == 0 ? uniform(0, 2) : 64;
            const DequeueResult r = scheduler->dequeue_burst(out.data(), max_packets, budget, now,
                                                             drops.data(), drop_capacity, cost);
            for (uint32_t i = 0; i < r.packets; ++i)
                account(out[i], where);
            for (uint32_t i = 0; i < r.dropped; ++i)
                account(drops[i].packet, where);
            delivered += r.packets;
            dropped += r.dropped;
        } else if (op == 18) {
            // A live change in place (same topology): new tiny limits, as `class set ...
            // limit_packets` makes, any parameter, a cap the SLO controller moves, or a PFC
            // pause of a subtree (held, released early, or let expire).
            const uint32_t node = uniform(0, static_cast<uint32_t>(spec.nodes.size()) - 1);
            switch (retune_random() % 4) {
                case 0: {
                    const auto error = scheduler->apply(generator.relimit(scheduler->spec()), now);
                    ASSERT_FALSE(error) << where << ": " << error->to_string();
                    ++exercised.relimits;
                    break;
                }
                case 1: {
                    const auto error = scheduler->apply(generator.retune(scheduler->spec()), now);
                    ASSERT_FALSE(error) << where << ": " << error->to_string();
                    ++exercised.retunes;
                    break;
                }
                case 2:
                    scheduler->set_shaper_rate(node, uint64_t{uniform(1, 400)} * 100'000'000, now);
                    break;
                default:
                    scheduler->hold(node,
                                    retune_random() % 3 == 0 ? 0 : now + uniform(1, 2'000'000));
                    ++exercised.holds;
                    break;
            }
        } else {
            const auto from = static_cast<uint16_t>(random() % leaves);
            const auto to = static_cast<uint16_t>(random() % leaves);
            const auto flow = static_cast<uint32_t>(random() % 6);
            if (move_random() % 2) {
                exercised.moved += scheduler->move_flow(from, to, flow);
            } else {
                // As an SLO downgrade moves: the target's limits hold, up to the drop room.
                const uint32_t room = move_random() % 2 ? move_random() % 3 : 64;
                const MoveResult r =
                    scheduler->move_flow(from, to, flow, {0x40, 0x40}, drops.data(), room);
                ASSERT_LE(r.dropped, room) << where;
                for (uint32_t k = 0; k < r.dropped; ++k)
                    account(drops[k].packet, where);
                dropped += r.dropped;
                exercised.moved += r.packets;
                exercised.moved_and_dropped += r.dropped;
            }
        }
        if (::testing::Test::HasFatalFailure()) return;
        ASSERT_EQ(offered, delivered + dropped + scheduler->queued_packets()) << where;
        expect_balanced(*scheduler, where);
        if (::testing::Test::HasFatalFailure()) return;
    }
    // Drain: shapers release everything in time, so the tree must empty.
    for (int i = 0; i < 100000 && scheduler->queued_packets() != 0; ++i) {
        const DequeueResult r = scheduler->dequeue(out.data(), 64, now, drops.data(), 64);
        for (uint32_t k = 0; k < r.packets; ++k)
            account(out[k], tree + " drain");
        for (uint32_t k = 0; k < r.dropped; ++k)
            account(drops[k].packet, tree + " drain");
        delivered += r.packets;
        dropped += r.dropped;
        if (::testing::Test::HasFatalFailure()) return;
        now = std::max(scheduler->next_eligible_ns(now), now + 1);
    }
    ASSERT_EQ(scheduler->queued_packets(), 0u) << tree << ": packets stuck in the tree";
    ASSERT_EQ(offered, delivered + dropped) << tree;
    EXPECT_TRUE(std::all_of(seen.begin() + 1, seen.end(), [](uint8_t s) { return s == 1; }))
        << tree;
    expect_balanced(*scheduler, tree + " drained");
    exercised.total.add(scheduler->node_counters(*scheduler->node_id(spec.nodes.front().name)));
}

class TinyLimits : public ::testing::TestWithParam<Parent> {};

TEST_P(TinyLimits, EveryPacketAccountedForAndTheTreeDrains) {
    Exercised exercised;
    for (uint32_t seed = 1; seed <= 100; ++seed) {
        run_one(GetParam(), seed, exercised);
        if (HasFatalFailure()) return;
    }
    const QueueCounters& c = exercised.total;
    EXPECT_GT(c.drops(DropReason::fq_overflow), 1000u);
    EXPECT_GT(c.drops(DropReason::queue_full_packets), 1000u);
    EXPECT_GT(c.drops(DropReason::queue_full_bytes), 1000u);
    EXPECT_GT(c.drops(DropReason::oversize), 0u);
    EXPECT_GT(c.drops(DropReason::red_early), 0u);
    EXPECT_GT(c.ecn_marked_red, 0u);
    EXPECT_GT(c.drops(DropReason::codel) + c.ecn_marked_codel, 0u);
    EXPECT_GT(c.packets_out, 100'000u);
    EXPECT_GT(exercised.relimits, 250u);
    EXPECT_GT(exercised.retunes, 250u);
    EXPECT_GT(exercised.holds, 250u);
    EXPECT_GT(exercised.moved, 0u);
    EXPECT_GT(exercised.moved_and_dropped, 0u);
    std::printf("moved %llu, dropped at the target %llu\n",
                static_cast<unsigned long long>(exercised.moved),
                static_cast<unsigned long long>(exercised.moved_and_dropped));
}

INSTANTIATE_TEST_SUITE_P(AllParents, TinyLimits,
                         ::testing::Values(Parent::strict, Parent::drr, Parent::per_job,
                                           Parent::shaped),
                         [](const ::testing::TestParamInfo<Parent>& info) {
                             return std::string(name_of(info.param));
                         });

// The audit's case reduced: a one-packet fq leaf under a drr parent. An arrival of a thinner
// flow pushes out the only queued packet (fq_overflow) and takes its place: the leaf emptied
// and refilled within one enqueue, and was linked into the drr ring a second time. Once both
// drr children had drained, the ring was empty while the drr node still counted a member, so
// its strict parent kept it backlogged and the next pick() followed the empty ring (SIGSEGV).
TEST(TinyLimitsTest, OnePacketFqLeafUnderDrrPushesOutItsOnlyPacket) {
    TreeSpec spec;
    spec.nodes.push_back(make_node("port", NodeKind::strict));
    spec.nodes.push_back(make_node("bulk", NodeKind::drr, "port"));
    spec.nodes.push_back(make_leaf("job", NodeKind::fq, "bulk", 1));
    spec.nodes.back().fq_buckets = 16;
    spec.nodes.push_back(make_leaf("other", NodeKind::fifo, "bulk", 8));
    spec.nodes.push_back(make_leaf("late", NodeKind::fifo, "port", 8));
    spec.nodes.back().priority = 1;
    auto scheduler = build_or_fail(spec);
    ASSERT_TRUE(scheduler);
    std::array<Packet, 8> out;
    std::array<DroppedPacket, 8> drops;
    for (uint64_t round = 0; round < 3; ++round) {
        const uint64_t id = 10 * round;
        const std::vector<Packet> packets = {make_packet(0, 9000, 1, id + 1),
                                             make_packet(0, 64, 2, id + 2),
                                             make_packet(1, 1500, 0, id + 3)};
        std::array<DroppedPacket, 3> refused;
        ASSERT_EQ(scheduler->enqueue(packets.data(), 3, round, refused.data()), 2u);
        EXPECT_EQ(id_of(refused[0].packet), id + 1);
        EXPECT_EQ(refused[0].reason, DropReason::fq_overflow);
        DequeueResult r = scheduler->dequeue(out.data(), 8, round, drops.data(), 8);
        ASSERT_EQ(r.packets, 2u) << "round " << round;
        EXPECT_EQ(id_of(out[0]), id + 2);
        EXPECT_EQ(id_of(out[1]), id + 3);
        // The drr subtree is idle now: a packet of the lower strict lane goes out alone.
        const Packet late = make_packet(2, 100, 0, id + 4);
        ASSERT_EQ(scheduler->enqueue(&late, 1, round, refused.data()), 1u);
        r = scheduler->dequeue(out.data(), 8, round, drops.data(), 8);
        ASSERT_EQ(r.packets, 1u) << "round " << round;
        EXPECT_EQ(id_of(out[0]), id + 4);
        ASSERT_EQ(scheduler->queued_packets(), 0u);
        EXPECT_EQ(scheduler->next_eligible_ns(round), Scheduler::kNever);
    }
}

}  // namespace
}  // namespace twinlane::sched
