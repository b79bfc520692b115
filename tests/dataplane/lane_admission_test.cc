// LaneAdmission (dataplane/lane_admission.h) on simulated lane rings, without DPDK: lanes are
// admitted by priority, and from a reclassified packet on in arrival order, so that no flow's
// packets are admitted out of order or left in its old lane when it moves. The checking sink
// models the scheduler's leaves as one queue per lane and Scheduler::move_flow as moving the
// flow's queued packets to the new lane.
#include "dataplane/lane_admission.h"

#include <gtest/gtest.h>

#include <array>
#include <deque>
#include <functional>
#include <map>
#include <random>
#include <vector>

namespace twinlane::dataplane {
namespace {

constexpr uint32_t kLanes = 3;
constexpr uint32_t kBurstSize = 4;  // small bursts: more rounds, more interleavings
constexpr uint8_t kNone = classifier::kNoPreviousClass;

struct SimPacket {
    PacketMeta meta;
    uint32_t flow = 0;
    uint32_t seq = 0;  // the flow's arrival order
};

// Lane rings as deques of packet indices. `before_count`, if set, runs before every count()
// read: the RX lcore enqueuing concurrently.
struct SimLanes {
    explicit SimLanes(std::vector<SimPacket>& all) : packets(all) {}
    std::vector<SimPacket>& packets;
    std::array<std::deque<uint32_t>, kLanes> rings{};
    std::function<void()> before_count;

    uint32_t count(uint8_t lane) const {
        if (before_count) before_count();
        return static_cast<uint32_t>(rings[lane].size());
    }
    uint32_t dequeue(uint8_t lane, uint32_t* out, uint32_t n) {
        uint32_t taken = 0;
        for (; taken < n && !rings[lane].empty(); ++taken) {
            out[taken] = rings[lane].front();
            rings[lane].pop_front();
        }
        return taken;
    }
    const PacketMeta& meta(uint32_t item) const { return packets[item].meta; }
};

// Checks every admission: a flow's packets are admitted in arrival order, and when one is
// admitted into a lane, all of the flow's packets admitted before are in that lane (moved
// there by reclassified()). Either failing means the flow could leave out of order.
struct CheckingSink {
    explicit CheckingSink(std::vector<SimPacket>& all) : packets(all) {}
    std::vector<SimPacket>& packets;
    std::array<std::vector<uint32_t>, kLanes> queued{};  // admitted packets, per lane (leaf)
    std::map<uint32_t, uint32_t> next_seq;               // per flow
    std::map<uint32_t, uint32_t> lane_of_flow;           // lane holding the flow's packets
    uint32_t admitted = 0;
    uint32_t moves = 0;

    void admit(uint8_t lane, const uint32_t* items, uint32_t n) {
        ASSERT_LE(n, kBurstSize);
        for (uint32_t i = 0; i < n; ++i) {
            const SimPacket& p = packets[items[i]];
            EXPECT_EQ(p.meta.class_id, lane);
            EXPECT_EQ(p.seq, next_seq[p.flow]) << "flow " << p.flow << " admitted out of order";
            next_seq[p.flow] = p.seq + 1;
            const auto where = lane_of_flow.find(p.flow);
            if (where != lane_of_flow.end() && where->second != lane) {
                // Only allowed when nothing of the flow is queued any more (never, here).
                for (uint32_t q : queued[where->second])
                    EXPECT_NE(packets[q].flow, p.flow)
                        << "flow " << p.flow << " left behind in lane " << where->second;
            }
            lane_of_flow[p.flow] = lane;
            queued[lane].push_back(items[i]);
            ++admitted;
        }
    }
    void reclassified(uint8_t lane, uint32_t item) {
        const SimPacket& p = packets[item];
        const uint8_t from = p.meta.previous_class;
        ASSERT_LT(from, kLanes);
        ++moves;
        std::vector<uint32_t> stay;
        for (uint32_t q : queued[from]) {
            if (packets[q].flow == p.flow) {
                queued[lane].push_back(q);
            } else {
                stay.push_back(q);
            }
        }
        queued[from] = stay;
        lane_of_flow[p.flow] = lane;
    }
};

using Admission = LaneAdmission<uint32_t, kBurstSize, SimLanes, CheckingSink>;
const std::array<uint8_t, kLanes> kOrder = {0, 1, 2};  // lane 0 highest priority

struct Rig {
    std::vector<SimPacket> packets;
    SimLanes lanes{packets};
    CheckingSink sink{packets};
    ArrivalOrderScratch<uint32_t> scratch;

    Rig() { scratch.reserve(4096); }
    // A packet of `flow` arriving at `t` (index `index` in its RX burst) into `lane`.
    void add(uint32_t flow, uint32_t seq, uint64_t t, uint8_t index, uint8_t lane,
             uint8_t previous = kNone) {
        SimPacket p;
        p.flow = flow;
        p.seq = seq;
        p.meta.arrival_ns = t;
        p.meta.burst_index = index;
        p.meta.class_id = lane;
        p.meta.previous_class = previous;
        packets.push_back(p);
        lanes.rings[lane].push_back(uint32_t(packets.size() - 1));
    }
    void drain() {
        Admission admission(lanes, sink, kOrder, kLanes, scratch);
        for (int round = 0; round < 1000; ++round)
            admission.round();
        for (const auto& ring : lanes.rings)
            EXPECT_TRUE(ring.empty());
        EXPECT_EQ(sink.admitted, packets.size());
    }
};

TEST(LaneAdmission, WithoutReclassificationLanesGoByPriorityOneBurstEach) {
    Rig rig;
    for (uint32_t i = 0; i < 6; ++i)
        rig.add(10, i, 100 + i, 0, 2);
    for (uint32_t i = 0; i < 6; ++i)
        rig.add(20, i, 200 + i, 0, 0);
    Admission admission(rig.lanes, rig.sink, kOrder, kLanes, rig.scratch);
    EXPECT_EQ(admission.round(), 2 * kBurstSize);
    // Lane 0 first although it arrived later, one burst from each lane.
    ASSERT_EQ(rig.sink.queued[0].size(), kBurstSize);
    ASSERT_EQ(rig.sink.queued[2].size(), kBurstSize);
    rig.drain();
    EXPECT_EQ(rig.sink.moves, 0u);
}

// Two flows swap lanes: B's earlier packet waits in lane 2 while its reclassified packet is
// first in lane 0, and A's earlier packet sits in lane 0 behind it while A's reclassified
// packet is in lane 2. Admitting by ring order (B0, A1 before A0) put A out of order.
TEST(LaneAdmission, TwoFlowsSwappingLanesStayInOrder) {
    Rig rig;
    rig.add(/*B*/ 2, 0, 10, 0, 2);
    rig.add(/*B*/ 2, 1, 20, 0, 0, 2);
    rig.add(/*A*/ 1, 0, 30, 0, 0);
    rig.add(/*A*/ 1, 1, 40, 0, 2, 0);
    rig.drain();
    EXPECT_EQ(rig.sink.moves, 2u);
}

// Two RX lcores share a lane ring: a later packet of another lcore (t=100) can be ahead of the
// reclassified flow's earlier packet (t=90) in the ring. Arrival order still puts that packet
// before the reclassified one (t=95).
TEST(LaneAdmission, EarlierPacketBehindAnotherLcoresLaterOne) {
    Rig rig;
    rig.add(/*other lcore*/ 7, 0, 100, 0, 2);
    rig.add(/*F*/ 3, 0, 90, 0, 2);
    rig.add(/*F*/ 3, 1, 95, 1, 0, 2);
    rig.drain();
    EXPECT_EQ(rig.sink.moves, 1u);
}

// The RX lcore enqueues while the lanes are counted: flow G's earlier packet into lane 0 just
// after lane 0 was counted, then G's reclassified packet into lane 1 before lane 1 is. A cut
// from one pass of counts would hold the reclassified packet without the earlier one.
TEST(LaneAdmission, LanesCountedAsAConsistentCut) {
    Rig rig;
    rig.add(/*F*/ 3, 0, 10, 0, 2);
    rig.add(/*F*/ 3, 1, 20, 0, 0, 2);  // the round switches to arrival order here
    int counts = 0;
    rig.lanes.before_count = [&] {
        if (++counts != 2) return;  // after lane 0's first count, before lane 1's
        rig.add(/*G*/ 4, 0, 30, 0, 0);
        rig.add(/*G*/ 4, 1, 30, 1, 1, 0);
    };
    Admission admission(rig.lanes, rig.sink, kOrder, kLanes, rig.scratch);
    admission.round();
    rig.lanes.before_count = nullptr;
    rig.drain();
    EXPECT_EQ(rig.sink.moves, 2u);
}

// Random traffic from two RX lcores whose clocks and enqueues interleave, flows changing class
// at random, rounds and ring enqueues (one ring operation at a time, as the RX lcore's are)
// interleaved at random, also between the counts of one cut. Every flow stays in order.
TEST(LaneAdmission, RandomReclassificationsAcrossTwoRxLcores) {
    for (uint32_t seed = 1; seed <= 40; ++seed) {
        SCOPED_TRACE(seed);
        std::mt19937 rng(seed);
        Rig rig;
        // Pending ring operations per RX lcore: (lane, packets) in the order it performs them.
        struct Op {
            uint8_t lane;
            std::vector<SimPacket> burst;
        };
        std::array<std::deque<Op>, 2> ops;
        std::array<uint64_t, 2> clock = {1000, 1000 + rng() % 500};
        std::map<uint32_t, uint8_t> class_of;
        std::map<uint32_t, uint32_t> seq_of;
        auto make_burst = [&](uint32_t lcore) {
            clock[lcore] += 1 + rng() % 300;
            const uint32_t n = 1 + rng() % 12;
            std::vector<SimPacket> burst;
            bool reclassified = false;
            for (uint32_t i = 0; i < n; ++i) {
                const uint32_t flow = lcore * 100 + rng() % 6;  // a flow is one lcore's
                SimPacket p;
                p.flow = flow;
                p.seq = seq_of[flow]++;
                p.meta.arrival_ns = clock[lcore];
                p.meta.burst_index = uint8_t(i);
                auto [it, fresh] = class_of.try_emplace(flow, uint8_t(rng() % kLanes));
                p.meta.previous_class = kNone;
                if (!fresh && rng() % 5 == 0) {
                    const uint8_t next = uint8_t((it->second + 1 + rng() % (kLanes - 1)) % kLanes);
                    p.meta.previous_class = it->second;
                    it->second = next;
                    reclassified = true;
                }
                p.meta.class_id = it->second;
                burst.push_back(p);
            }
            // As rx_stage: by lane, unless the burst holds a reclassification (then runs of
            // one lane in arrival order, admission::ClassifiedBurst).
            if (!reclassified) {
                for (uint8_t lane = 0; lane < kLanes; ++lane) {
                    Op op{lane, {}};
                    for (const SimPacket& p : burst)
                        if (p.meta.class_id == lane) op.burst.push_back(p);
                    if (!op.burst.empty()) ops[lcore].push_back(op);
                }
            } else {
                for (const SimPacket& p : burst) {
                    if (ops[lcore].empty() || ops[lcore].back().lane != p.meta.class_id ||
                        ops[lcore].back().burst.empty()) {
                        ops[lcore].push_back({p.meta.class_id, {}});
                    }
                    ops[lcore].back().burst.push_back(p);
                }
            }
        };
        // One ring operation of one RX lcore; a new burst when it has none pending.
        uint32_t made = 0;
        auto rx_step = [&] {
            const uint32_t lcore = rng() % 2;
            if (ops[lcore].empty()) {
                if (made >= 300) return;
                make_burst(lcore);
                ++made;
            }
            Op op = ops[lcore].front();
            ops[lcore].pop_front();
            for (const SimPacket& p : op.burst) {
                rig.packets.push_back(p);
                rig.lanes.rings[op.lane].push_back(uint32_t(rig.packets.size() - 1));
            }
        };
        rig.lanes.before_count = [&] {
            if (rng() % 3 == 0) rx_step();
        };
        Admission admission(rig.lanes, rig.sink, kOrder, kLanes, rig.scratch);
        for (int step = 0; step < 5000; ++step) {
            if (rng() % 2 == 0) {
                rx_step();
            } else {
                admission.round();
            }
        }
        rig.lanes.before_count = nullptr;
        while (!ops[0].empty() || !ops[1].empty() || made < 300)
            rx_step();
        rig.drain();
        EXPECT_GT(rig.sink.moves, 20u);
    }
}

}  // namespace
}  // namespace twinlane::dataplane
