// dequeue_burst against repeated single-packet dequeues: 150 random trees (strict, drr, fq, fifo,
// shapers, limits, CoDel, RED), random enqueue/dequeue mixes in virtual time, random packet
// counts, byte budgets and wire costs. Two schedulers built from the same spec get the same
// operations; one dequeues in bursts, the other one packet at a time, as many packets as the
// burst returned. Sequences, drops, counters and next_eligible_ns must be identical, and a
// burst that stopped early must have stopped exactly before the packet that would exceed
// its budget.
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

using testing::id_of;
using testing::make_ipv4_header;

class RandomTree {
  public:
    explicit RandomTree(uint32_t seed) : random_(seed) {}

    TreeSpec make() {
        TreeSpec spec;
        spec.random_seed = random_() | 1;
        add(spec, "n0", "", NodeKind::strict, 0, 0);
        uint64_t limits = 0;
        for (const NodeSpec& node : spec.nodes) {
            if (node.kind == NodeKind::fifo || node.kind == NodeKind::fq)
                limits += node.limit_packets;
        }
        // Sometimes a pool smaller than the limits, so pool_exhausted happens too.
        if (chance(4)) spec.pool_packets = static_cast<uint32_t>(std::max<uint64_t>(8, limits / 2));
        return spec;
    }

  private:
    bool chance(uint32_t one_in) { return random_() % one_in == 0; }
    uint32_t uniform(uint32_t lo, uint32_t hi) { return lo + random_() % (hi - lo + 1); }

    void add(TreeSpec& spec, const std::string& name, const std::string& parent,
             NodeKind parent_kind, uint32_t position, uint32_t depth) {
        NodeSpec node;
        node.name = name;
        node.parent = parent;
        const bool leaf = depth >= 3 || (depth > 0 && chance(2));
        if (depth == 0) {
            node.kind = chance(2) ? NodeKind::strict : NodeKind::drr;
            if (chance(4)) node.kind = chance(2) ? NodeKind::fq : NodeKind::fifo;  // root leaf
        } else if (leaf) {
            node.kind = chance(2) ? NodeKind::fq : NodeKind::fifo;
        } else {
            node.kind = chance(2) ? NodeKind::strict : NodeKind::drr;
        }
        if (parent_kind == NodeKind::drr) node.weight = uniform(1, 4);
        node.priority = position;
        if (chance(3)) {
            // Rates from 100 Mb/s to 20 Gb/s, bursts from one small to a few jumbo frames.
            node.shaper = {uint64_t{uniform(1, 200)} * 100'000'000ull, uniform(1500, 40'000)};
        }
        const bool is_leaf = node.kind == NodeKind::fq || node.kind == NodeKind::fifo;
        if (is_leaf) {
            node.limit_packets = uniform(4, 200);
            node.limit_bytes = uniform(20'000, 600'000);
            node.fq_buckets = 1u << uniform(0, 4);
            node.fq_sparse_first = chance(2);
            node.fq_by_job = chance(2);
            if (chance(3))
                node.codel = {true, uniform(1, 50) * 1000ull, uniform(50, 400) * 1000ull,
                              chance(2)};
            if (chance(3)) {
                const uint32_t kmin = uniform(1000, 50'000);
                node.red = {true, kmin, kmin + uniform(1000, 100'000), 0.05 * uniform(1, 20),
                            chance(2)};
            }
        }
        spec.nodes.push_back(node);
        if (is_leaf) return;
        const uint32_t children = uniform(1, 4);
        for (uint32_t c = 0; c < children; ++c)
            add(spec, name + "." + std::to_string(c), name, node.kind, c, depth + 1);
    }

    std::mt19937 random_;
};

// One side of the comparison: a scheduler with its own copy of every packet's IP header, so
// that CE marks on one side cannot leak into the other.
struct Side {
    std::unique_ptr<Scheduler> scheduler;
    std::vector<std::vector<uint8_t>> headers;  // by packet id
};

void expect_same_counters(const Scheduler& a, const Scheduler& b, const std::string& where) {
    ASSERT_EQ(a.queued_packets(), b.queued_packets()) << where;
    ASSERT_EQ(a.pool_free(), b.pool_free()) << where;
    for (uint16_t leaf = 0; leaf < a.leaf_count(); ++leaf) {
        const QueueCounters x = a.leaf_counters(leaf);
        const QueueCounters y = b.leaf_counters(leaf);
        ASSERT_EQ(x.packets_in, y.packets_in) << where << " leaf " << leaf;
        ASSERT_EQ(x.packets_out, y.packets_out) << where << " leaf " << leaf;
        ASSERT_EQ(x.bytes_out, y.bytes_out) << where << " leaf " << leaf;
        ASSERT_EQ(x.drop_packets, y.drop_packets) << where << " leaf " << leaf;
        ASSERT_EQ(x.drop_bytes, y.drop_bytes) << where << " leaf " << leaf;
        ASSERT_EQ(x.ecn_marked_red, y.ecn_marked_red) << where << " leaf " << leaf;
        ASSERT_EQ(x.ecn_marked_codel, y.ecn_marked_codel) << where << " leaf " << leaf;
        ASSERT_EQ(x.depth_packets, y.depth_packets) << where << " leaf " << leaf;
        ASSERT_EQ(x.depth_bytes, y.depth_bytes) << where << " leaf " << leaf;
        ASSERT_EQ(x.sojourn_last_ns, y.sojourn_last_ns) << where << " leaf " << leaf;
        ASSERT_EQ(x.sojourn_max_ns, y.sojourn_max_ns) << where << " leaf " << leaf;
        ASSERT_EQ(x.sojourn_sum_ns, y.sojourn_sum_ns) << where << " leaf " << leaf;
        ASSERT_EQ(x.sojourn_log2_histogram, y.sojourn_log2_histogram) << where << " leaf " << leaf;
    }
}

uint64_t wire(const Packet& packet, WireCost cost) {
    return std::max(packet.length_bytes, cost.min_frame_bytes) + uint64_t{cost.overhead_bytes};
}

struct Stats {
    uint64_t bursts = 0, packets = 0, budget_stops = 0, codel_drops = 0, blocked_stops = 0;
};

void run_one(uint32_t seed, Stats& stats) {
    RandomTree generator(seed);
    const TreeSpec spec = generator.make();
    ASSERT_FALSE(validate(spec).has_value())
        << "seed " << seed << ": " << validate(spec)->to_string();
    Side burst{Scheduler::build(spec).scheduler, {}};
    Side single{Scheduler::build(spec).scheduler, {}};
    ASSERT_TRUE(burst.scheduler && single.scheduler);
    std::mt19937 random(seed * 7919 + 1);
    auto uniform = [&](uint32_t lo, uint32_t hi) { return lo + random() % (hi - lo + 1); };
    static constexpr uint32_t kLengths[] = {64, 100, 576, 1500, 4000, 9000, 9216};
    const uint32_t leaves = burst.scheduler->leaf_count();
    uint64_t now = 1'000'000;
    uint64_t next_id = 1;
    std::array<DroppedPacket, 64> drops_a, drops_b;
    std::array<Packet, 64> out_a, out_b;

    for (uint32_t step = 0; step < 600; ++step) {
        const std::string where = "seed " + std::to_string(seed) + " step " + std::to_string(step);
        // Time sometimes stands still (several dequeues at one now), sometimes jumps.
        const uint32_t advance = random() % 4;
        if (advance == 1) now += uniform(1, 2000);
        if (advance == 2) now += uniform(2000, 200'000);
        if (random() % 3 != 0) {
            const uint32_t n = uniform(1, 32);
            std::vector<Packet> packets_a(n), packets_b(n);
            for (uint32_t i = 0; i < n; ++i) {
                Packet p;
                const uint64_t id = next_id++;
                p.handle = reinterpret_cast<void*>(static_cast<uintptr_t>(id));
                p.leaf = static_cast<uint16_t>(random() % 50 == 0 ? leaves : random() % leaves);
                p.length_bytes = random() % 40 == 0 ? 0 : kLengths[random() % 7];
                p.flow_hash = random() % 8;
                p.job = static_cast<uint8_t>(random() % 3);
                packets_a[i] = packets_b[i] = p;
                if (random() % 2 == 0) {  // ECT(0) IPv4 packet: RED and CoDel may mark it
                    burst.headers.resize(id + 1);
                    single.headers.resize(id + 1);
                    burst.headers[id] = single.headers[id] = make_ipv4_header(0x02);
                    packets_a[i].l3 = burst.headers[id].data();
                    packets_b[i].l3 = single.headers[id].data();
                }
            }
            std::vector<DroppedPacket> refused_a(n), refused_b(n);
            const uint32_t accepted_a =
                burst.scheduler->enqueue(packets_a.data(), n, now, refused_a.data());
            const uint32_t accepted_b =
                single.scheduler->enqueue(packets_b.data(), n, now, refused_b.data());
            ASSERT_EQ(accepted_a, accepted_b) << where;
            for (uint32_t i = 0; i < n - accepted_a; ++i) {
                ASSERT_EQ(id_of(refused_a[i].packet), id_of(refused_b[i].packet)) << where;
                ASSERT_EQ(refused_a[i].reason, refused_b[i].reason) << where;
            }
        } else {
            const uint32_t max_packets = uniform(1, 64);
            const uint64_t max_bytes =
                random() % 3 == 0 ? Scheduler::kUnlimitedBytes : uniform(0, 60'000);
            const WireCost cost = random() % 2 == 0 ? WireCost{} : WireCost{60, 24};
            const uint32_t drop_capacity = random() % 4 == 0 ? uniform(0, 2) : 64;
            const DequeueResult a = burst.scheduler->dequeue_burst(
                out_a.data(), max_packets, max_bytes, now, drops_a.data(), drop_capacity, cost);
            ASSERT_LE(a.packets, max_packets) << where;
            ASSERT_LE(a.budget_bytes, max_bytes) << where;
            uint64_t charged = 0;
            for (uint32_t i = 0; i < a.packets; ++i)
                charged += wire(out_a[i], cost);
            ASSERT_EQ(a.budget_bytes, charged) << where;
            // The same number of single dequeues, sharing one drop array of the same capacity.
            uint32_t dropped_b = 0;
            for (uint32_t i = 0; i < a.packets; ++i) {
                const DequeueResult b = single.scheduler->dequeue(
                    &out_b[i], 1, now, drops_b.data() + dropped_b, drop_capacity - dropped_b);
                ASSERT_EQ(b.packets, 1u) << where << " packet " << i;
                dropped_b += b.dropped;
            }
            for (uint32_t i = 0; i < a.packets; ++i) {
                ASSERT_EQ(id_of(out_a[i]), id_of(out_b[i]))
                    << where << " packet " << i << " of " << a.packets;
                ASSERT_EQ(out_a[i].arrival_ns, out_b[i].arrival_ns) << where;
                if (out_a[i].l3 != nullptr) {
                    ASSERT_EQ(out_a[i].l3[1], out_b[i].l3[1]) << where;  // CE marks alike
                }
            }
            ASSERT_EQ(a.dropped, dropped_b) << where;
            for (uint32_t i = 0; i < a.dropped; ++i)
                ASSERT_EQ(id_of(drops_a[i].packet), id_of(drops_b[i].packet)) << where;
            // Why did the burst stop? If neither the count nor an empty tree, the next single
            // dequeue (on a copy, with copied headers) must find nothing or a packet that does
            // not fit the budget.
            ++stats.bursts;
            stats.packets += a.packets;
            stats.codel_drops += a.dropped;
            if (a.packets < max_packets && single.scheduler->queued_packets() != 0) {
                // The probe's CoDel may mark headers the single side still queues: restore.
                const std::vector<std::vector<uint8_t>> saved = single.headers;
                Scheduler probe = *single.scheduler;
                Packet next;
                std::array<DroppedPacket, 64> probe_drops;
                const DequeueResult c =
                    probe.dequeue(&next, 1, now, probe_drops.data(), drop_capacity - dropped_b);
                for (size_t i = 0; i < saved.size(); ++i)
                    std::copy(saved[i].begin(), saved[i].end(), single.headers[i].begin());
                if (c.packets == 1) {
                    ++stats.budget_stops;
                    ASSERT_GT(wire(next, cost), max_bytes - a.budget_bytes) << where;
                } else {
                    // Blocked by shapers: the remaining single dequeues of the same count find
                    // nothing either, and their (failed) walks are part of the state to match.
                    ++stats.blocked_stops;
                    for (uint32_t i = a.packets; i < max_packets; ++i) {
                        const DequeueResult b = single.scheduler->dequeue(
                            &next, 1, now, drops_b.data() + dropped_b, drop_capacity - dropped_b);
                        ASSERT_EQ(b.packets, 0u) << where;
                        ASSERT_EQ(b.dropped, 0u) << where;
                    }
                }
            }
        }
        expect_same_counters(*burst.scheduler, *single.scheduler, where);
        ASSERT_EQ(burst.scheduler->next_eligible_ns(now), single.scheduler->next_eligible_ns(now))
            << where;
        if (::testing::Test::HasFatalFailure()) return;
    }
}

TEST(SchedBurstTest, BudgetStopsBeforeThePacketThatWouldExceedItAndKeepsIt) {
    TreeSpec spec;
    spec.nodes = {testing::make_leaf("q", NodeKind::fifo, "")};
    std::unique_ptr<Scheduler> scheduler = testing::build_or_fail(spec);
    const std::vector<Packet> in = {
        testing::make_packet(0, 1000, 0, 1), testing::make_packet(0, 1500, 0, 2),
        testing::make_packet(0, 40, 0, 3), testing::make_packet(0, 9000, 0, 4)};
    std::array<DroppedPacket, 4> drops;
    ASSERT_EQ(scheduler->enqueue(in.data(), 4, 0, drops.data()), 4u);
    std::array<Packet, 4> out;
    // 2499 bytes: 1000 fits, 1500 would exceed it and stays queued.
    DequeueResult r = scheduler->dequeue_burst(out.data(), 4, 2499, 1, drops.data(), 4);
    ASSERT_EQ(r.packets, 1u);
    EXPECT_EQ(id_of(out[0]), 1u);
    EXPECT_EQ(r.budget_bytes, 1000u);
    EXPECT_EQ(scheduler->queued_packets(), 3u);
    // No budget at all: nothing, nothing changes.
    r = scheduler->dequeue_burst(out.data(), 4, 0, 1, drops.data(), 4);
    EXPECT_EQ(r.packets, 0u);
    // Wire cost {60, 24}: 1500 -> 1524, 40 -> 84; 1608 fits both exactly, 9000 stays.
    r = scheduler->dequeue_burst(out.data(), 4, 1608, 1, drops.data(), 4, WireCost{60, 24});
    ASSERT_EQ(r.packets, 2u);
    EXPECT_EQ(id_of(out[0]), 2u);
    EXPECT_EQ(id_of(out[1]), 3u);
    EXPECT_EQ(r.budget_bytes, 1608u);
    // The packet count binds before an unlimited budget.
    r = scheduler->dequeue_burst(out.data(), 1, Scheduler::kUnlimitedBytes, 1, drops.data(), 4);
    ASSERT_EQ(r.packets, 1u);
    EXPECT_EQ(id_of(out[0]), 4u);
    EXPECT_EQ(scheduler->queued_packets(), 0u);
}

// A run on a lone path crosses quanta without a walk and settles them at its end (the picks'
// quanta in closed form). Sizes in multiples of 250 under a 1000-byte quantum make deficits hit
// exactly 0, where the single dequeues' pick() gives a quantum; a sibling that joins afterwards
// reveals any deficit that differs (who goes first, and for how long).
TEST(SchedBurstTest, LoneRunAcrossQuantaLeavesTheDeficitsOfSingleDequeues) {
    std::mt19937 random(11);
    for (uint32_t trial = 0; trial < 400; ++trial) {
        TreeSpec spec;
        spec.max_packet_bytes = 1000;
        spec.nodes = {testing::make_node("port", NodeKind::drr),
                      testing::make_node("mid", NodeKind::drr, "port"),
                      testing::make_leaf("a", NodeKind::fifo, "mid", 64),
                      testing::make_leaf("b", NodeKind::fifo, "mid", 64),
                      testing::make_leaf("c", NodeKind::fifo, "port", 64)};
        spec.nodes[1].weight = 1 + trial % 3;
        if (trial % 5 == 0) spec.nodes[0].shaper = {8'000'000'000, 3000};  // 3 packets of tokens
        std::unique_ptr<Scheduler> burst = testing::build_or_fail(spec);
        std::unique_ptr<Scheduler> single = testing::build_or_fail(spec);
        ASSERT_TRUE(burst && single);
        uint64_t id = 1;
        auto enqueue_both = [&](uint16_t leaf, uint32_t count, uint64_t now_ns) {
            for (uint32_t k = 0; k < count; ++k) {
                const Packet packet = testing::make_packet(leaf, 250 * (1 + random() % 4), 0, id++);
                DroppedPacket drop;
                ASSERT_EQ(burst->enqueue(&packet, 1, now_ns, &drop), 1u);
                ASSERT_EQ(single->enqueue(&packet, 1, now_ns, &drop), 1u);
            }
        };
        enqueue_both(0, 2 + random() % 30, 1);
        std::array<Packet, 32> out_burst;
        std::array<Packet, 32> out_single;
        std::array<DroppedPacket, 32> drops;
        const uint32_t wanted = 1 + random() % 32;
        const DequeueResult r = burst->dequeue_burst(
            out_burst.data(), wanted, Scheduler::kUnlimitedBytes, 2, drops.data(), 32);
        for (uint32_t k = 0; k < r.packets; ++k) {
            ASSERT_EQ(single->dequeue(&out_single[k], 1, 2, drops.data(), 32).packets, 1u);
            ASSERT_EQ(id_of(out_burst[k]), id_of(out_single[k])) << "trial " << trial;
        }
        // Siblings join; from here on both trees dequeue one packet at a time.
        enqueue_both(1, 1 + random() % 8, 3);
        enqueue_both(2, 1 + random() % 8, 3);
        for (uint64_t now_ns = 4;; now_ns += 1'000'000) {
            Packet a;
            Packet b;
            const uint32_t got = burst->dequeue(&a, 1, now_ns, drops.data(), 32).packets;
            ASSERT_EQ(single->dequeue(&b, 1, now_ns, drops.data(), 32).packets, got);
            if (got == 0 && burst->queued_packets() == 0) break;
            if (got == 1) {
                ASSERT_EQ(id_of(a), id_of(b)) << "trial " << trial;
            }
        }
    }
}

TEST(SchedBurstTest, BurstDequeueEqualsRepeatedSingleDequeueOnRandomTrees) {
    Stats stats;
    for (uint32_t seed = 1; seed <= 150; ++seed) {
        run_one(seed, stats);
        if (HasFatalFailure()) return;
    }
    // The mix must actually exercise the interesting stops.
    EXPECT_GT(stats.budget_stops, 100u);
    EXPECT_GT(stats.blocked_stops, 100u);
    EXPECT_GT(stats.codel_drops, 10u);
    std::printf(
        "bursts %llu, packets %llu, budget stops %llu, blocked stops %llu, codel drops %llu\n",
        static_cast<unsigned long long>(stats.bursts),
        static_cast<unsigned long long>(stats.packets),
        static_cast<unsigned long long>(stats.budget_stops),
        static_cast<unsigned long long>(stats.blocked_stops),
        static_cast<unsigned long long>(stats.codel_drops));
}

// Reclassification on random trees: flows change leaf at random, and before a flow's first
// packet for its new leaf its queued packets are moved there (move_flow), as the dataplane and
// the replay engine do. Whatever the tree (shapers holding one leaf while another is served,
// fq buckets shared by several flows, CoDel and RED drops, small pools), every flow leaves in
// the order it arrived, and every leaf's counters balance.
TEST(SchedBurstTest, MovedFlowsStayInOrderOnRandomTrees) {
    uint64_t moved = 0;
    uint64_t delivered = 0;
    for (uint32_t seed = 1; seed <= 100; ++seed) {
        RandomTree tree(seed);
        const TreeSpec spec = tree.make();
        auto built = Scheduler::build(spec);
        ASSERT_TRUE(built.scheduler) << seed;
        Scheduler& scheduler = *built.scheduler;
        const uint32_t leaves = scheduler.leaf_count();
        std::mt19937 random(seed * 7919);
        constexpr uint32_t kFlows = 12;
        std::array<uint32_t, kFlows> hash{};
        std::array<uint16_t, kFlows> queued_in{};  // leaf its queued packets are in
        std::array<uint16_t, kFlows> wanted{};     // leaf its next packet goes to
        for (uint32_t f = 0; f < kFlows; ++f) {
            hash[f] = f < 4 ? f * 16 + 3 : uint32_t(random());  // 0..3 share a bucket
            queued_in[f] = wanted[f] = static_cast<uint16_t>(random() % leaves);
        }
        std::array<uint64_t, kFlows> last_out{};
        std::array<uint64_t, kFlows> sent{};
        uint64_t id = 1;
        uint64_t now = 0;
        uint64_t enqueued = 0;
        uint64_t left = 0;  // dequeued or dropped
        auto check_out = [&](const Packet& p) {
            const uint32_t f = static_cast<uint32_t>(id_of(p) % 16);
            ASSERT_LT(f, kFlows);
            ASSERT_GT(id_of(p), last_out[f]) << "seed " << seed << " flow " << f;
            last_out[f] = id_of(p);
        };
        std::array<Packet, 16> out;
        std::array<DroppedPacket, 64> drops;
        auto dequeue = [&](uint32_t max) {
            const DequeueResult r =
                scheduler.dequeue(out.data(), max, now, drops.data(), uint32_t(drops.size()));
            for (uint32_t i = 0; i < r.packets; ++i)
                check_out(out[i]);
            left += r.packets + r.dropped;
            delivered += r.packets;
            return r.packets + r.dropped;
        };
        for (uint32_t step = 0; step < 400; ++step) {
            if (random() % 4 == 0) wanted[random() % kFlows] = uint16_t(random() % leaves);
            for (uint32_t k = random() % 8; k != 0; --k) {
                const uint32_t f = random() % kFlows;
                if (wanted[f] != queued_in[f]) {
                    moved += scheduler.move_flow(queued_in[f], wanted[f], hash[f]);
                    queued_in[f] = wanted[f];
                }
                Packet p =
                    testing::make_packet(wanted[f], 64 + random() % 1400, hash[f], (id++) * 16 + f);
                DroppedPacket dropped[1];
                ++enqueued;
                if (scheduler.enqueue(&p, 1, now, dropped) == 0) ++left;
                ++sent[f];
            }
            dequeue(random() % 6);
            if (HasFatalFailure()) return;
            now += random() % 3000;
        }
        for (uint32_t guard = 0; scheduler.queued_packets() != 0 && guard < 100000; ++guard) {
            now = std::max(now + 1000, scheduler.next_eligible_ns(now));
            dequeue(16);
            if (HasFatalFailure()) return;
        }
        EXPECT_EQ(scheduler.queued_packets(), 0u) << seed;
        EXPECT_EQ(enqueued, left) << seed;
        for (uint16_t l = 0; l < leaves; ++l) {
            const QueueCounters c = scheduler.leaf_counters(l);
            // packets_in counts admitted packets; CoDel and fq overflow drops were admitted,
            // tail drops not.
            EXPECT_EQ(c.packets_in, c.packets_out + c.drops(DropReason::codel) +
                                        c.drops(DropReason::fq_overflow) + c.depth_packets +
                                        c.migrated_out_packets)
                << "seed " << seed << " leaf " << l;
        }
    }
    EXPECT_GT(moved, 1000u);
    EXPECT_GT(delivered, 50000u);
    std::printf("packets moved %llu, delivered %llu\n", static_cast<unsigned long long>(moved),
                static_cast<unsigned long long>(delivered));
}

}  // namespace
}  // namespace twinlane::sched
