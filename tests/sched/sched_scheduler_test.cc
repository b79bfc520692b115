// Scheduling behaviour of the tree: DRR shares, strict priority, caps and shapers, fq fairness,
// limits, conservation. All in virtual time.
#include <gtest/gtest.h>

#include <algorithm>
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

constexpr uint32_t kBurst = 32;

struct Output {
    std::vector<Packet> packets;
    std::vector<DroppedPacket> drops;
};

// Dequeues up to `max` packets at `now` and appends them (and any CoDel drops) to `output`.
uint32_t drain(Scheduler& scheduler, uint32_t max, uint64_t now, Output& output) {
    std::vector<Packet> out(max);
    std::vector<DroppedPacket> drops(1024);
    const DequeueResult result =
        scheduler.dequeue(out.data(), max, now, drops.data(), static_cast<uint32_t>(drops.size()));
    output.packets.insert(output.packets.end(), out.begin(), out.begin() + result.packets);
    output.drops.insert(output.drops.end(), drops.begin(), drops.begin() + result.dropped);
    return result.packets;
}

uint32_t offer(Scheduler& scheduler, const std::vector<Packet>& packets, uint64_t now,
               std::vector<DroppedPacket>* drops_out = nullptr) {
    std::vector<DroppedPacket> drops(packets.size());
    const uint32_t accepted =
        scheduler.enqueue(packets.data(), static_cast<uint32_t>(packets.size()), now, drops.data());
    if (drops_out != nullptr) {
        drops_out->insert(drops_out->end(), drops.begin(),
                          drops.begin() + (packets.size() - accepted));
    }
    return accepted;
}

TEST(SchedulerTest, DrrWeightsOneTwoFourGiveByteSharesWithinOnePercent) {
    TreeSpec spec;
    spec.nodes.push_back(make_node("port", NodeKind::drr));
    const uint32_t weights[3] = {1, 2, 4};
    for (int i = 0; i < 3; ++i) {
        spec.nodes.push_back(make_leaf("leaf" + std::to_string(i), NodeKind::fifo, "port", 1024));
        spec.nodes.back().weight = weights[i];
    }
    auto scheduler = build_or_fail(spec);
    ASSERT_TRUE(scheduler);
    std::mt19937 random(1);
    std::uniform_int_distribution<uint32_t> size(64, 9000);
    uint64_t bytes[3] = {};
    uint64_t packets_out = 0;
    std::vector<Packet> out(kBurst);
    std::vector<DroppedPacket> drops(1);
    while (packets_out < 150000) {
        for (uint16_t leaf = 0; leaf < 3; ++leaf) {  // keep every leaf backlogged
            std::vector<Packet> arrivals;
            const uint64_t depth = scheduler->leaf_counters(leaf).depth_packets;
            for (uint64_t d = depth; d < 128; ++d)
                arrivals.push_back(make_packet(leaf, size(random)));
            ASSERT_EQ(offer(*scheduler, arrivals, 0), arrivals.size());
        }
        const DequeueResult result = scheduler->dequeue(out.data(), kBurst, 0, drops.data(), 1);
        ASSERT_EQ(result.packets, kBurst);
        for (uint32_t i = 0; i < result.packets; ++i)
            bytes[out[i].leaf] += out[i].length_bytes;
        packets_out += result.packets;
    }
    const double total = static_cast<double>(bytes[0] + bytes[1] + bytes[2]);
    for (int i = 0; i < 3; ++i) {
        const double expected = weights[i] / 7.0;
        EXPECT_NEAR(bytes[i] / total / expected, 1.0, 0.01) << "leaf " << i;
    }
}

TEST(SchedulerTest, StrictNeverServesLowerWhileHigherBacklogged) {
    TreeSpec spec;
    spec.nodes.push_back(make_node("port", NodeKind::strict));
    for (uint32_t i = 0; i < 4; ++i) {
        spec.nodes.push_back(make_leaf("p" + std::to_string(i), NodeKind::fifo, "port"));
        spec.nodes.back().priority = 3 - i;  // declared out of order on purpose
    }
    auto scheduler = build_or_fail(spec);
    ASSERT_TRUE(scheduler);
    std::mt19937 random(3);
    std::vector<Packet> out(1);
    std::vector<DroppedPacket> drops(1);
    uint64_t served = 0;
    for (int step = 0; step < 50000; ++step) {
        std::vector<Packet> arrivals;
        for (uint32_t n = random() % 3; n > 0; --n) {
            arrivals.push_back(
                make_packet(static_cast<uint16_t>(random() % 4), 64 + random() % 1400));
        }
        offer(*scheduler, arrivals, step);
        uint32_t best_backlogged = 4;  // leaf index with the lowest priority value
        for (uint16_t leaf = 0; leaf < 4; ++leaf) {
            if (scheduler->leaf_counters(leaf).depth_packets == 0) continue;
            if (best_backlogged == 4 ||
                spec.nodes[leaf + 1].priority < spec.nodes[best_backlogged + 1].priority) {
                best_backlogged = leaf;
            }
        }
        const DequeueResult result = scheduler->dequeue(out.data(), 1, step, drops.data(), 1);
        if (best_backlogged == 4) {
            EXPECT_EQ(result.packets, 0u);
            continue;
        }
        ASSERT_EQ(result.packets, 1u);
        ASSERT_EQ(out[0].leaf, best_backlogged) << "step " << step;
        ++served;
    }
    EXPECT_GT(served, 40000u);
}

// Runs a saturated port for one simulated second, jumping time with next_eligible_ns.
// Returns bytes sent per leaf.
std::vector<uint64_t> run_saturated(Scheduler& scheduler, uint32_t packet_bytes, uint64_t end_ns) {
    std::vector<uint64_t> bytes(scheduler.leaf_count(), 0);
    std::vector<Packet> out(kBurst);
    std::vector<DroppedPacket> drops(kBurst);
    uint64_t now = 0;
    while (now <= end_ns) {
        for (uint16_t leaf = 0; leaf < scheduler.leaf_count(); ++leaf) {
            std::vector<Packet> arrivals;
            for (uint64_t d = scheduler.leaf_counters(leaf).depth_packets; d < 64; ++d) {
                arrivals.push_back(make_packet(leaf, packet_bytes, static_cast<uint32_t>(d)));
            }
            offer(scheduler, arrivals, now);
        }
        const DequeueResult result =
            scheduler.dequeue(out.data(), kBurst, now, drops.data(), kBurst);
        for (uint32_t i = 0; i < result.packets; ++i)
            bytes[out[i].leaf] += out[i].length_bytes;
        const uint64_t next = scheduler.next_eligible_ns(now);
        EXPECT_NE(next, Scheduler::kNever);
        EXPECT_GE(next, now);
        now = std::max(next, now + 1);
    }
    return bytes;
}

TEST(SchedulerTest, LeafShaperAccurateWithinOnePercentOverOneSecond) {
    TreeSpec spec;
    spec.nodes.push_back(make_node("port", NodeKind::drr));
    spec.nodes.push_back(make_leaf("shaped", NodeKind::fifo, "port"));
    spec.nodes.back().shaper = ShaperSpec{1'000'000'000, 16000};
    auto scheduler = build_or_fail(spec);
    ASSERT_TRUE(scheduler);
    const std::vector<uint64_t> bytes = run_saturated(*scheduler, 1500, 1'000'000'000);
    const double expected = 125'000'000.0 + 16000.0;
    EXPECT_NEAR(static_cast<double>(bytes[0]) / expected, 1.0, 0.01);
    EXPECT_NEAR(static_cast<double>(bytes[0]) / expected, 1.0, 0.0001);  // actually much tighter
}

// ETS-style guaranteed minimum: a strict parent whose high lane is capped leaves the rest of
// the port rate to the lower lane, which therefore has a guaranteed minimum.
TEST(SchedulerTest, StrictCapGuaranteesLowerLaneMinimumWithinOnePercent) {
    TreeSpec spec;
    spec.nodes.push_back(make_node("port", NodeKind::strict));
    spec.nodes.back().shaper = ShaperSpec{10'000'000'000, 20000};
    spec.nodes.push_back(make_leaf("inference", NodeKind::fifo, "port"));
    spec.nodes.back().priority = 0;
    spec.nodes.back().shaper = ShaperSpec{3'000'000'000, 20000};  // cap: 3 Gb/s
    spec.nodes.push_back(make_leaf("training", NodeKind::fifo, "port"));
    spec.nodes.back().priority = 1;
    auto scheduler = build_or_fail(spec);
    ASSERT_TRUE(scheduler);
    const std::vector<uint64_t> bytes = run_saturated(*scheduler, 4000, 1'000'000'000);
    const double high_bits = bytes[0] * 8.0;
    const double low_bits = bytes[1] * 8.0;
    EXPECT_NEAR(high_bits / 3e9, 1.0, 0.01);
    EXPECT_NEAR(low_bits / 7e9, 1.0, 0.01);
    EXPECT_NEAR((high_bits + low_bits) / 10e9, 1.0, 0.01);
}

TEST(SchedulerTest, StrictHighLaneUnderCapPreemptsLowLane) {
    // Below its cap the high lane gets everything it asks for: it sends 2 Gb/s of a 3 Gb/s cap.
    TreeSpec spec;
    spec.nodes.push_back(make_node("port", NodeKind::strict));
    spec.nodes.back().shaper = ShaperSpec{10'000'000'000, 20000};
    spec.nodes.push_back(make_leaf("high", NodeKind::fifo, "port"));
    spec.nodes.back().shaper = ShaperSpec{3'000'000'000, 20000};
    spec.nodes.push_back(make_leaf("low", NodeKind::fifo, "port"));
    spec.nodes.back().priority = 1;
    auto scheduler = build_or_fail(spec);
    ASSERT_TRUE(scheduler);
    std::vector<Packet> out(1);
    std::vector<DroppedPacket> drops(1);
    uint64_t high_wait_max = 0;
    uint64_t next_high_arrival = 0;
    for (uint64_t now = 0; now < 100'000'000;) {
        std::vector<Packet> arrivals;
        if (now >= next_high_arrival) {  // 2500 B every 10 us = 2 Gb/s
            arrivals.push_back(make_packet(0, 2500));
            next_high_arrival += 10'000;
        }
        while (scheduler->leaf_counters(1).depth_packets + arrivals.size() < 64) {
            arrivals.push_back(make_packet(1, 1500));
        }
        offer(*scheduler, arrivals, now);
        const DequeueResult result = scheduler->dequeue(out.data(), 1, now, drops.data(), 1);
        if (result.packets == 1 && out[0].leaf == 0) {
            high_wait_max = std::max(high_wait_max, now - out[0].arrival_ns);
        }
        now = std::min(std::max(scheduler->next_eligible_ns(now), now + 1), next_high_arrival);
    }
    const QueueCounters high = scheduler->leaf_counters(0);
    EXPECT_EQ(high.depth_packets, 0u);
    EXPECT_EQ(high.packets_out, 10000u);
    // Waits at most one low-lane packet time at 10 Gb/s (1.2 us) plus rounding.
    EXPECT_LE(high_wait_max, 1300u);
}

double jain_index(const std::vector<uint64_t>& values) {
    double sum = 0, sum_squares = 0;
    for (uint64_t v : values) {
        sum += static_cast<double>(v);
        sum_squares += static_cast<double>(v) * static_cast<double>(v);
    }
    return sum * sum / (static_cast<double>(values.size()) * sum_squares);
}

TEST(SchedulerTest, FqJainIndexOverThousandBackloggedFlows) {
    TreeSpec spec;
    spec.max_packet_bytes = 1500;  // fq_codel's usual quantum: one MTU per flow per round
    spec.nodes.push_back(make_leaf("fq", NodeKind::fq, "", 2'000'000));
    spec.nodes.back().fq_buckets = 1024;
    auto scheduler = build_or_fail(spec);
    ASSERT_TRUE(scheduler);
    // Odd flows send 64 B packets (128 kB each), even flows 1500 B (150 kB each): byte
    // fairness needs DRR, packet round robin would give the 1500 B flows 23x more.
    std::vector<Packet> arrivals;
    for (uint32_t round = 0; round < 2000; ++round) {
        for (uint32_t flow = 0; flow < 1000; ++flow) {
            if (flow % 2 == 0 && round >= 100) continue;
            arrivals.push_back(make_packet(0, flow % 2 ? 64 : 1500, flow));
        }
    }
    ASSERT_EQ(offer(*scheduler, arrivals, 0), arrivals.size());
    std::vector<uint64_t> bytes(1000, 0);
    std::vector<Packet> out(kBurst);
    std::vector<DroppedPacket> drops(1);
    // Stop after ~60 rounds (60 * 1000 * 1500 bytes), while every flow is still backlogged.
    uint64_t total = 0;
    while (total < 90'000'000) {
        const DequeueResult result = scheduler->dequeue(out.data(), kBurst, 0, drops.data(), 1);
        ASSERT_GT(result.packets, 0u);
        for (uint32_t i = 0; i < result.packets; ++i) {
            bytes[out[i].flow_hash] += out[i].length_bytes;
            total += out[i].length_bytes;
        }
    }
    EXPECT_GE(jain_index(bytes), 0.99);
    const auto [min_it, max_it] = std::minmax_element(bytes.begin(), bytes.end());
    EXPECT_GT(*min_it, 0u);
    EXPECT_LE(*max_it - *min_it, 2u * 1500u);
}

TEST(SchedulerTest, FqServesNewSparseFlowFirst) {
    TreeSpec spec;
    spec.nodes.push_back(make_leaf("fq", NodeKind::fq, ""));
    auto scheduler = build_or_fail(spec);
    ASSERT_TRUE(scheduler);
    std::vector<Packet> bulk;
    for (uint64_t i = 0; i < 100; ++i)
        bulk.push_back(make_packet(0, 1500, 7, i));
    offer(*scheduler, bulk, 0);
    Output output;
    drain(*scheduler, 10, 0, output);  // bulk flow spends its fresh quantum, becomes old
    offer(*scheduler, {make_packet(0, 100, 9, 1000)}, 0);
    drain(*scheduler, 1, 0, output);
    ASSERT_EQ(output.packets.size(), 11u);
    EXPECT_EQ(id_of(output.packets.back()), 1000u);

    spec.nodes[0].fq_sparse_first = false;
    auto plain = build_or_fail(spec);
    offer(*plain, bulk, 0);
    Output plain_output;
    drain(*plain, 10, 0, plain_output);
    offer(*plain, {make_packet(0, 100, 9, 1000)}, 0);
    drain(*plain, 1, 0, plain_output);
    EXPECT_NE(id_of(plain_output.packets.back()), 1000u);
}

TEST(SchedulerTest, TailDropAtPacketLimit) {
    TreeSpec spec;
    spec.nodes.push_back(make_leaf("q", NodeKind::fifo, "", 10));
    auto scheduler = build_or_fail(spec);
    std::vector<Packet> arrivals;
    for (uint64_t i = 0; i < 15; ++i)
        arrivals.push_back(make_packet(0, 100, 0, i));
    std::vector<DroppedPacket> drops;
    EXPECT_EQ(offer(*scheduler, arrivals, 0, &drops), 10u);
    ASSERT_EQ(drops.size(), 5u);
    for (size_t i = 0; i < drops.size(); ++i) {
        EXPECT_EQ(drops[i].reason, DropReason::queue_full_packets);
        EXPECT_EQ(id_of(drops[i].packet), 10 + i);
    }
    const QueueCounters counters = scheduler->leaf_counters(0);
    EXPECT_EQ(counters.drops(DropReason::queue_full_packets), 5u);
    EXPECT_EQ(counters.drop_bytes[0], 500u);
    EXPECT_EQ(counters.depth_packets, 10u);
    Output output;
    drain(*scheduler, 1, 0, output);
    EXPECT_EQ(offer(*scheduler, {make_packet(0, 100)}, 0), 1u);  // room again
}

TEST(SchedulerTest, TailDropAtByteLimit) {
    TreeSpec spec;
    spec.nodes.push_back(make_leaf("q", NodeKind::fifo, "", 1000, 10000));
    auto scheduler = build_or_fail(spec);
    std::vector<Packet> arrivals(7, make_packet(0, 1500));  // the 7th would need 10500 bytes
    arrivals.push_back(make_packet(0, 1000));               // exactly fills 10000 bytes
    std::vector<DroppedPacket> drops;
    EXPECT_EQ(offer(*scheduler, arrivals, 0, &drops), 7u);
    ASSERT_EQ(drops.size(), 1u);
    EXPECT_EQ(drops[0].reason, DropReason::queue_full_bytes);
    EXPECT_EQ(drops[0].packet.length_bytes, 1500u);
    EXPECT_EQ(scheduler->leaf_counters(0).depth_bytes, 10000u);
    EXPECT_EQ(offer(*scheduler, {make_packet(0, 64)}, 0), 0u);
    EXPECT_EQ(scheduler->leaf_counters(0).drops(DropReason::queue_full_bytes), 2u);
    EXPECT_EQ(scheduler->leaf_counters(0).depth_bytes, 10000u);
}

TEST(SchedulerTest, PoolExhaustionIsCountedAndRecovers) {
    TreeSpec spec;
    spec.nodes.push_back(make_node("port", NodeKind::drr));
    spec.nodes.push_back(make_leaf("a", NodeKind::fifo, "port", 10));
    spec.nodes.push_back(make_leaf("b", NodeKind::fifo, "port", 10));
    spec.pool_packets = 12;  // shared buffer smaller than the sum of limits
    auto scheduler = build_or_fail(spec);
    ASSERT_EQ(scheduler->pool_capacity(), 12u);
    std::vector<Packet> arrivals(10, make_packet(0, 100));
    for (int i = 0; i < 10; ++i)
        arrivals.push_back(make_packet(1, 100));
    std::vector<DroppedPacket> drops;
    EXPECT_EQ(offer(*scheduler, arrivals, 0, &drops), 12u);
    EXPECT_EQ(drops.size(), 8u);
    EXPECT_EQ(scheduler->leaf_counters(1).drops(DropReason::pool_exhausted), 8u);
    EXPECT_EQ(scheduler->pool_free(), 0u);
    Output output;
    drain(*scheduler, 100, 0, output);
    EXPECT_EQ(output.packets.size(), 12u);
    EXPECT_EQ(scheduler->pool_free(), 12u);
    EXPECT_EQ(scheduler->next_eligible_ns(5), Scheduler::kNever);
}

TEST(SchedulerTest, UnknownLeafAndOversizeAreDroppedWithReason) {
    TreeSpec spec;
    spec.nodes.push_back(make_leaf("q", NodeKind::fifo, ""));
    auto scheduler = build_or_fail(spec);
    std::vector<DroppedPacket> drops;
    EXPECT_EQ(
        offer(*scheduler,
              {make_packet(3, 100), make_packet(0, 9217), make_packet(0, 0), make_packet(0, 9216)},
              0, &drops),
        1u);
    ASSERT_EQ(drops.size(), 3u);
    EXPECT_EQ(drops[0].reason, DropReason::unknown_leaf);
    EXPECT_EQ(drops[1].reason, DropReason::oversize);
    EXPECT_EQ(drops[2].reason, DropReason::oversize);
    const QueueCounters port = scheduler->node_counters(0);
    EXPECT_EQ(port.drops(DropReason::unknown_leaf), 1u);
    EXPECT_EQ(port.drops(DropReason::oversize), 2u);
}

// Random workload over a mixed tree: every packet is accounted exactly once, in = out +
// dropped + queued at all times, and order within each (leaf, flow) is preserved.
TEST(SchedulerTest, ConservationAndPerFlowOrderUnderRandomWorkload) {
    TreeSpec spec;
    spec.nodes.push_back(make_node("port", NodeKind::strict));
    spec.nodes.back().shaper = ShaperSpec{40'000'000'000, 30000};
    spec.nodes.push_back(make_leaf("rt", NodeKind::fq, "port", 300, 200000));
    spec.nodes.back().shaper = ShaperSpec{10'000'000'000, 20000};
    spec.nodes.back().codel = CodelSpec{true, 20'000, 200'000, true};
    spec.nodes.back().fq_buckets = 64;
    spec.nodes.push_back(make_node("bulk", NodeKind::drr, "port"));
    spec.nodes.back().priority = 1;
    spec.nodes.push_back(make_leaf("nccl", NodeKind::fq, "bulk", 500, 1'000'000));
    spec.nodes.back().weight = 3;
    spec.nodes.back().red = RedSpec{true, 100000, 400000, 0.2, true};
    spec.nodes.push_back(make_leaf("misc", NodeKind::fifo, "bulk", 200, 300000));
    spec.nodes.back().codel = CodelSpec{true, 50'000, 500'000, false};
    spec.pool_packets = 800;
    spec.random_seed = 99;
    auto scheduler = build_or_fail(spec);
    ASSERT_TRUE(scheduler);

    std::mt19937 random(11);
    std::vector<std::vector<uint8_t>> headers;  // stable storage for ECN-capable packets
    headers.reserve(200000);
    std::map<std::pair<uint16_t, uint32_t>, uint64_t> last_id_per_flow;
    std::vector<uint8_t> seen;
    uint64_t offered = 0, out_total = 0, dropped_total = 0;
    uint64_t now = 0;
    for (int step = 0; step < 20000; ++step) {
        std::vector<Packet> arrivals;
        for (uint32_t n = random() % 40; n > 0; --n) {
            const uint16_t leaf = static_cast<uint16_t>(random() % 4);  // 3 is unknown
            Packet packet = make_packet(leaf, 64 + random() % 9000, random() % 16, offered++);
            seen.push_back(0);
            if (random() % 2 && headers.size() < headers.capacity()) {
                headers.push_back(testing::make_ipv4_header(0x02));
                packet.l3 = headers.back().data();
            }
            arrivals.push_back(packet);
        }
        std::vector<DroppedPacket> drops;
        offer(*scheduler, arrivals, now, &drops);
        for (const DroppedPacket& drop : drops) {
            ASSERT_EQ(seen[id_of(drop.packet)]++, 0);
            ++dropped_total;
        }
        Output output;
        drain(*scheduler, random() % 48, now, output);
        for (const Packet& packet : output.packets) {
            ASSERT_EQ(seen[id_of(packet)]++, 0);
            uint64_t& last = last_id_per_flow[{packet.leaf, packet.flow_hash}];
            ASSERT_GE(id_of(packet) + 1, last + 1);
            last = id_of(packet) + 1;
            ++out_total;
        }
        for (const DroppedPacket& drop : output.drops) {
            ASSERT_EQ(drop.reason, DropReason::codel);
            ASSERT_EQ(seen[id_of(drop.packet)]++, 0);
            ++dropped_total;
        }
        ASSERT_EQ(offered, out_total + dropped_total + scheduler->queued_packets());
        const QueueCounters port = scheduler->node_counters(0);
        // CoDel and fq overflow drop packets that were admitted; the other reasons, arrivals.
        ASSERT_EQ(port.packets_in + port.dropped_packets() - port.drops(DropReason::codel) -
                      port.drops(DropReason::fq_overflow),
                  offered);
        ASSERT_EQ(port.packets_in, port.packets_out + port.drops(DropReason::codel) +
                                       port.drops(DropReason::fq_overflow) + port.depth_packets);
        ASSERT_EQ(port.depth_packets, scheduler->queued_packets());
        ASSERT_EQ(scheduler->pool_free() + scheduler->queued_packets(), 800u);
        now += random() % 20000;
    }
    // Drain everything; afterwards every packet was seen exactly once.
    for (int i = 0; i < 100000 && scheduler->queued_packets() > 0; ++i) {
        Output output;
        drain(*scheduler, 64, now, output);
        for (const Packet& packet : output.packets)
            ASSERT_EQ(seen[id_of(packet)]++, 0);
        for (const DroppedPacket& drop : output.drops)
            ASSERT_EQ(seen[id_of(drop.packet)]++, 0);
        now = std::max(scheduler->next_eligible_ns(now), now + 1);
    }
    EXPECT_EQ(scheduler->queued_packets(), 0u);
    EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](uint8_t s) { return s == 1; }));
    const QueueCounters port = scheduler->node_counters(0);
    EXPECT_GT(port.drops(DropReason::codel) + port.ecn_marked_codel, 0u);
    EXPECT_GT(port.drops(DropReason::unknown_leaf), 0u);
    EXPECT_GT(port.packets_out, 100000u);
}

TEST(SchedulerTest, SojournCountersAndNextEligible) {
    TreeSpec spec;
    spec.nodes.push_back(make_leaf("q", NodeKind::fifo, ""));
    spec.nodes.back().shaper = ShaperSpec{8'000'000'000, 500};  // 1 byte/ns
    auto scheduler = build_or_fail(spec);
    EXPECT_EQ(scheduler->next_eligible_ns(0), Scheduler::kNever);
    offer(*scheduler, {make_packet(0, 1000), make_packet(0, 1000)}, 100);
    EXPECT_EQ(scheduler->next_eligible_ns(100), 100u);
    Output output;
    EXPECT_EQ(drain(*scheduler, 2, 100, output), 1u);   // second waits for tokens
    EXPECT_EQ(scheduler->next_eligible_ns(100), 600u);  // 500 bytes of debt at 1 byte/ns
    EXPECT_EQ(drain(*scheduler, 2, 599, output), 0u);
    EXPECT_EQ(drain(*scheduler, 2, 600, output), 1u);
    const QueueCounters counters = scheduler->leaf_counters(0);
    EXPECT_EQ(counters.sojourn_last_ns, 500u);
    EXPECT_EQ(counters.sojourn_max_ns, 500u);
    EXPECT_EQ(counters.sojourn_sum_ns, 500u);
    EXPECT_EQ(counters.sojourn_log2_histogram[0], 1u);  // 0 ns
    EXPECT_EQ(counters.sojourn_log2_histogram[9], 1u);  // [256, 512)
    EXPECT_EQ(counters.bytes_out, 2000u);
}

// Per-leaf conservation of admitted packets, those moved out by move_flow counted as leaving.
void expect_leaf_conservation(const Scheduler& scheduler, uint16_t leaf) {
    const QueueCounters c = scheduler.leaf_counters(leaf);
    // packets_in counts admitted packets: CoDel drops were admitted, tail drops were not.
    EXPECT_EQ(c.packets_in,
              c.packets_out + c.drops(DropReason::codel) + c.depth_packets + c.migrated_out_packets)
        << scheduler.leaf_name(leaf);
}

// A flow reclassified from a shaped high-priority fq leaf to a low-priority fifo leaf: its
// queued packets move with it, so the packets it sends afterwards (into the fifo leaf) cannot
// overtake them, although the fifo leaf is served while the shaper holds the fq leaf back.
// A flow sharing the fq bucket stays where it is.
TEST(SchedulerTest, MoveFlowKeepsTheFlowInOrderAcrossLeaves) {
    TreeSpec spec;
    spec.nodes.push_back(make_node("root", NodeKind::strict));
    spec.nodes.push_back(make_leaf("hi", NodeKind::fq, "root"));
    spec.nodes.back().priority = 0;
    spec.nodes.back().shaper = {100'000'000, 3000};  // 100 Mbit/s: holds "hi" back
    spec.nodes.push_back(make_leaf("lo", NodeKind::fifo, "root"));
    spec.nodes.back().priority = 1;
    auto scheduler = build_or_fail(spec);
    ASSERT_TRUE(scheduler);
    const uint16_t hi = *scheduler->leaf_id("hi");
    const uint16_t lo = *scheduler->leaf_id("lo");
    constexpr uint32_t kFlow = 7;
    constexpr uint32_t kSameBucket = 7 + 1024;  // shares the fq bucket, different flow
    std::vector<Packet> before;
    for (uint64_t i = 0; i < 40; ++i) {
        before.push_back(make_packet(hi, 1000, kFlow, i));
        if (i % 4 == 0) before.push_back(make_packet(hi, 1000, kSameBucket, 1000 + i));
    }
    ASSERT_EQ(offer(*scheduler, before, 0), before.size());
    Output output;
    drain(*scheduler, 3, 0, output);  // the burst allowance of "hi"
    EXPECT_EQ(scheduler->move_flow(hi, lo, kFlow),
              40u - uint32_t(std::count_if(output.packets.begin(), output.packets.end(),
                                           [](const Packet& p) { return p.flow_hash == kFlow; })));
    EXPECT_EQ(scheduler->move_flow(hi, lo, kFlow), 0u);  // nothing left to move
    EXPECT_EQ(scheduler->move_flow(lo, lo, kFlow), 0u);
    std::vector<Packet> after;
    for (uint64_t i = 40; i < 60; ++i)
        after.push_back(make_packet(lo, 1000, kFlow, i));
    ASSERT_EQ(offer(*scheduler, after, 1), after.size());
    for (uint64_t now = 1; scheduler->queued_packets() != 0; now += 10'000) {
        drain(*scheduler, kBurst, now, output);
        ASSERT_LT(now, 1'000'000'000u);
    }
    std::vector<uint64_t> flow_ids;
    std::vector<uint64_t> other_ids;
    for (const Packet& p : output.packets) {
        (p.flow_hash == kFlow ? flow_ids : other_ids).push_back(id_of(p));
        if (p.flow_hash == kSameBucket) {
            EXPECT_EQ(p.leaf, hi);
        }
    }
    ASSERT_EQ(flow_ids.size(), 60u);
    EXPECT_TRUE(std::is_sorted(flow_ids.begin(), flow_ids.end()));
    EXPECT_EQ(other_ids.size(), 10u);
    EXPECT_TRUE(std::is_sorted(other_ids.begin(), other_ids.end()));
    // The move is what kept the order: without it "lo" (served while "hi" waits for tokens)
    // would have sent packet 40 before most of 3..39.
    EXPECT_GT(scheduler->leaf_counters(hi).migrated_out_packets, 30u);
    expect_leaf_conservation(*scheduler, hi);
    expect_leaf_conservation(*scheduler, lo);
}

// Emptying a leaf from the middle of its drr parent's ring (not the head, which is all that
// dequeue ever empties) leaves the ring intact: every packet leaves exactly once, and the
// emptied leaf is served again when it refills.
TEST(SchedulerTest, MoveFlowEmptyingALeafInTheMiddleOfADrrRing) {
    TreeSpec spec;
    spec.nodes.push_back(make_node("root", NodeKind::drr));
    for (const char* name : {"a", "b", "c", "d"})
        spec.nodes.push_back(make_leaf(name, NodeKind::fifo, "root"));
    auto scheduler = build_or_fail(spec);
    ASSERT_TRUE(scheduler);
    std::vector<Packet> arrivals;
    uint64_t id = 0;
    for (uint16_t leaf = 0; leaf < 4; ++leaf)
        for (int i = 0; i < 5; ++i)
            arrivals.push_back(make_packet(leaf, 500, leaf, id++));
    ASSERT_EQ(offer(*scheduler, arrivals, 0), arrivals.size());
    Output output;
    drain(*scheduler, 1, 0, output);               // "a" at the head, b..d behind it
    EXPECT_EQ(scheduler->move_flow(2, 3, 2), 5u);  // "c" empties in the middle of the ring
    EXPECT_EQ(scheduler->move_flow(1, 0, 1), 5u);  // "b" too
    drain(*scheduler, 1000, 0, output);
    EXPECT_EQ(scheduler->queued_packets(), 0u);
    std::vector<uint64_t> ids;
    for (const Packet& p : output.packets)
        ids.push_back(id_of(p));
    std::sort(ids.begin(), ids.end());
    ASSERT_EQ(ids.size(), 20u);
    for (uint64_t i = 0; i < 20; ++i)
        EXPECT_EQ(ids[i], i);
    ASSERT_EQ(offer(*scheduler, {make_packet(2, 500, 2, 100)}, 1), 1u);
    Output again;
    EXPECT_EQ(drain(*scheduler, 10, 1, again), 1u);
    for (uint16_t leaf = 0; leaf < 4; ++leaf)
        expect_leaf_conservation(*scheduler, leaf);
}

}  // namespace
}  // namespace twinlane::sched
