// DRR's fairness bound on random trees: among siblings that stay backlogged, the bytes each has
// sent, over its weight, never differ by more than one quantum unit plus a largest frame on
// either side (Shreedhar and Varghese's bound for quanta of weight x max_packet_bytes: a round
// gives each child its quantum, a deficit carries less than a frame). Checked after every
// dequeue, at both levels of a two-level DRR (jobs under a class, as the training lanes are),
// with fifo and fq leaves, weights 1-16 and frames of 64 bytes up to the tree's largest; and
// between the flows of an fq leaf.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "sched/scheduler.h"
#include "sched_test_util.h"

namespace twinlane::sched {
namespace {

using testing::make_leaf;
using testing::make_node;
using testing::make_packet;

TEST(DrrBound, BackloggedSiblingsStayWithinOneQuantumAndTwoFramesOfTheirShares) {
    std::mt19937_64 random(1205);
    double worst_fraction = 0;  // of the bound, over all trees
    uint64_t pairs_checked = 0;
    for (int trial = 0; trial < 60; ++trial) {
        TreeSpec spec;
        const uint32_t frame_max = random() % 2 ? 1518 : 9216;
        spec.nodes.push_back(make_node("root", NodeKind::drr));
        // Children of the root: leaves, or DRRs of 2-4 leaves.
        struct Child {
            std::string name;
            uint32_t weight;
            std::vector<std::string> leaves;
            std::vector<uint32_t> leaf_weights;
        };
        std::vector<Child> children(2 + random() % 5);
        for (size_t c = 0; c < children.size(); ++c) {
            Child& child = children[c];
            child.name = "c" + std::to_string(c);
            child.weight = 1 + static_cast<uint32_t>(random() % 16);
            const bool inner = random() % 2;
            const NodeKind kind = random() % 2 ? NodeKind::fq : NodeKind::fifo;
            spec.nodes.push_back(inner ? make_node(child.name, NodeKind::drr, "root")
                                       : make_leaf(child.name, kind, "root", 4096, 64u << 20));
            spec.nodes.back().weight = child.weight;
            if (!inner) {
                child.leaves.push_back(child.name);
                continue;
            }
            for (uint32_t l = 0, n = 2 + random() % 3; l < n; ++l) {
                child.leaves.push_back(child.name + "." + std::to_string(l));
                child.leaf_weights.push_back(1 + static_cast<uint32_t>(random() % 16));
                spec.nodes.push_back(make_leaf(child.leaves.back(),
                                               random() % 2 ? NodeKind::fq : NodeKind::fifo,
                                               child.name, 4096, 64u << 20));
                spec.nodes.back().weight = child.leaf_weights.back();
            }
        }
        auto built = Scheduler::build(spec);
        ASSERT_TRUE(built.scheduler) << built.error->to_string();
        Scheduler& scheduler = *built.scheduler;
        const double quantum_unit = spec.max_packet_bytes;
        const double bound = quantum_unit + 2.0 * frame_max;

        // Sent bytes per root child and per leaf (by leaf id).
        std::vector<uint16_t> child_of_leaf(scheduler.leaf_count());
        std::vector<double> leaf_weight(scheduler.leaf_count(), 0);
        for (size_t c = 0; c < children.size(); ++c) {
            for (size_t l = 0; l < children[c].leaves.size(); ++l) {
                const uint16_t leaf = *scheduler.leaf_id(children[c].leaves[l]);
                child_of_leaf[leaf] = static_cast<uint16_t>(c);
                if (!children[c].leaf_weights.empty())
                    leaf_weight[leaf] = children[c].leaf_weights[l];
            }
        }
        std::vector<double> child_sent(children.size(), 0), leaf_sent(scheduler.leaf_count(), 0);
        // Two backlogged siblings' bytes over their weights, against the bound.
        auto check_pair = [&](double sent_a, double weight_a, double sent_b, double weight_b) {
            const double gap = std::abs(sent_a / weight_a - sent_b / weight_b);
            worst_fraction = std::max(worst_fraction, gap / bound);
            ++pairs_checked;
            return gap <= bound;
        };

        std::vector<Packet> batch;
        std::vector<DroppedPacket> drops(64);
        for (int step = 0; step < 6000; ++step) {
            // Every leaf stays backlogged: at least 8 packets of random sizes and flows.
            batch.clear();
            for (uint16_t leaf = 0; leaf < scheduler.leaf_count(); ++leaf)
                for (uint64_t d = scheduler.leaf_counters(leaf).depth_packets; d < 8; ++d)
                    batch.push_back(
                        make_packet(leaf, static_cast<uint32_t>(64 + random() % (frame_max - 63)),
                                    static_cast<uint32_t>(random() % 8)));
            std::vector<DroppedPacket> refused(batch.size());
            ASSERT_EQ(scheduler.enqueue(batch.data(), static_cast<uint32_t>(batch.size()), 0,
                                        refused.data()),
                      batch.size());
            Packet out;
            ASSERT_EQ(scheduler.dequeue(&out, 1, 0, drops.data(), 64).packets, 1u);
            child_sent[child_of_leaf[out.leaf]] += out.length_bytes;
            leaf_sent[out.leaf] += out.length_bytes;

            // Root level: every pair of children.
            for (size_t i = 0; i < children.size(); ++i) {
                for (size_t j = i + 1; j < children.size(); ++j) {
                    ASSERT_TRUE(check_pair(child_sent[i], children[i].weight, child_sent[j],
                                           children[j].weight))
                        << "trial " << trial << " step " << step << ": " << children[i].name
                        << " and " << children[j].name;
                }
            }
            // Within an inner child: its leaves, pairwise.
            for (uint16_t a = 0; a < scheduler.leaf_count(); ++a) {
                for (uint16_t b = a + 1; b < scheduler.leaf_count(); ++b) {
                    if (leaf_weight[a] == 0 || child_of_leaf[a] != child_of_leaf[b]) continue;
                    ASSERT_TRUE(
                        check_pair(leaf_sent[a], leaf_weight[a], leaf_sent[b], leaf_weight[b]))
                        << "trial " << trial << " step " << step << ": " << scheduler.leaf_name(a)
                        << " and " << scheduler.leaf_name(b);
                }
            }
        }
    }
    // The bound is approached, not loose by orders of magnitude.
    EXPECT_GT(worst_fraction, 0.5);
    EXPECT_GT(pairs_checked, 1'000'000u);
    std::printf("pairs %llu, worst gap %.2f of the bound\n",
                static_cast<unsigned long long>(pairs_checked), worst_fraction);
}

// The same bound between the flows of an fq leaf (DRR across its flow queues, quantum
// max_packet_bytes): flows that stay backlogged, each in a bucket of its own, never differ by
// more than the quantum plus a frame on either side, whether new flows go first or not.
TEST(DrrBound, BackloggedFlowsOfAnFqLeafStayWithinOneQuantumAndTwoFrames) {
    std::mt19937_64 random(1207);
    double worst_fraction = 0;
    uint64_t pairs_checked = 0;
    for (int trial = 0; trial < 60; ++trial) {
        const uint32_t frame_max = random() % 2 ? 1518 : 9216;
        const uint32_t buckets = 1u << (4 + random() % 7);  // 16-1024
        TreeSpec spec;
        spec.nodes.push_back(make_leaf("fq", NodeKind::fq, "", 1u << 16, 1u << 30));
        spec.nodes.back().fq_buckets = buckets;
        spec.nodes.back().fq_sparse_first = random() % 2;
        auto built = Scheduler::build(spec);
        ASSERT_TRUE(built.scheduler) << built.error->to_string();
        Scheduler& scheduler = *built.scheduler;
        const double bound = spec.max_packet_bytes + 2.0 * frame_max;

        // 2-16 flows in distinct buckets; each keeps 2-8 packets queued, so it never empties.
        std::vector<uint32_t> hashes;
        for (uint32_t f = 0, n = 2 + random() % 15; f < n; ++f) {
            uint32_t hash = 0;
            do {
                hash = static_cast<uint32_t>(random());
            } while (std::any_of(hashes.begin(), hashes.end(),
                                 [&](uint32_t h) { return ((h ^ hash) & (buckets - 1)) == 0; }));
            hashes.push_back(hash);
        }
        std::vector<uint32_t> queued(hashes.size(), 0);
        std::vector<double> sent(hashes.size(), 0);
        std::vector<Packet> batch;
        std::vector<DroppedPacket> drops(64);
        for (int step = 0; step < 4000; ++step) {
            batch.clear();
            for (size_t f = 0; f < hashes.size(); ++f) {
                for (uint32_t target = 2 + random() % 7; queued[f] < target; ++queued[f])
                    batch.push_back(make_packet(
                        0, static_cast<uint32_t>(64 + random() % (frame_max - 63)), hashes[f]));
            }
            std::vector<DroppedPacket> refused(batch.size() + 1);
            ASSERT_EQ(scheduler.enqueue(batch.data(), static_cast<uint32_t>(batch.size()), 0,
                                        refused.data()),
                      batch.size());
            Packet out;
            ASSERT_EQ(scheduler.dequeue(&out, 1, 0, drops.data(), 64).packets, 1u);
            const size_t flow = static_cast<size_t>(
                std::find(hashes.begin(), hashes.end(), out.flow_hash) - hashes.begin());
            ASSERT_LT(flow, hashes.size());
            --queued[flow];
            sent[flow] += out.length_bytes;
            for (size_t a = 0; a < hashes.size(); ++a) {
                for (size_t b = a + 1; b < hashes.size(); ++b) {
                    const double gap = std::abs(sent[a] - sent[b]);
                    worst_fraction = std::max(worst_fraction, gap / bound);
                    ++pairs_checked;
                    ASSERT_LE(gap, bound)
                        << "trial " << trial << " step " << step << ": flows " << a << " and " << b;
                }
            }
        }
    }
    EXPECT_GT(worst_fraction, 0.5);
    EXPECT_GT(pairs_checked, 1'000'000u);
    std::printf("pairs %llu, worst gap %.2f of the bound\n",
                static_cast<unsigned long long>(pairs_checked), worst_fraction);
}

}  // namespace
}  // namespace twinlane::sched
