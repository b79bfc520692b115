// Shapers, pauses and rate changes on random trees, against a model of what the tree spec
// promises. A shaper is a token bucket of `burst_bytes` filled at `rate_bits_per_sec`; a node
// sends while its bucket is not in debt and it is not held (a PFC pause); a strict node serves
// its first child, by priority, that can send. From that model, after every dequeue:
// - every packet that left conformed at every node on its path, and under a strict parent no
//   sibling ahead of its lane could send (shapers and pauses are honoured, priorities too);
// - over any interval, a shaped node sent at most its burst plus what its rate earned in the
//   interval (with the rate changes made meanwhile) plus one frame: the operator's bound;
// - a dequeue that returned fewer packets than asked left nothing that could send (the tree
//   does not idle behind a shaper), and next_eligible_ns() is the model's earliest time, so a
//   TX pacer that sleeps until then neither wakes early for nothing nor late;
// and at the end every packet left. Trees: a strict or DRR root shaped at the link, 2-4
// children that are fifo or fq leaves or strict/DRR nodes of 2-3 leaves; any node below the
// root shaped (5-120% of the link, buckets of 64 bytes to 4 frames) or not; holds, releases,
// rate changes, reloads (`apply`: new rates and bursts) and flows moved between leaves at random
// times; single dequeues and dequeue_burst with byte budgets.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "sched/scheduler.h"
#include "sched/token_bucket.h"
#include "sched_test_util.h"

namespace twinlane::sched {
namespace {

using testing::make_leaf;
using testing::make_node;
using testing::make_packet;

// 1e-9 bit, as the bucket counts (rate x ns, bytes x 8e9), wide enough for any run.
__extension__ typedef __int128 Units;
constexpr Units kUnitsPerByte = TokenBucket::kUnitsPerByte;
constexpr uint64_t kNever = Scheduler::kNever;

// One node of the tree as the spec describes it, with the state that description implies.
struct ModelNode {
    int parent = -1;  // index in Model::nodes
    std::vector<int> children;
    NodeKind kind = NodeKind::fifo;
    uint32_t priority = 0;
    int leaf = -1;  // leaf id, for fifo/fq
    uint64_t rate_bps = 0;
    Units capacity = 0;
    Units largest_capacity = 0;  // over the run: the interval bound's burst
    Units tokens = 0;
    uint64_t refilled_ns = 0;
    uint64_t hold_until_ns = 0;
    uint64_t queued = 0;  // packets in the subtree
    // The operator's bound: what the rate earned since the start (unclamped), what was sent,
    // and the least of sent less earned at any departure (0 at the start).
    Units credit = 0;
    Units sent = 0;
    Units least_sent_less_credit = 0;
};

constexpr uint32_t kFlows = 8;  // flow hashes 0-7 in every leaf

struct Model {
    std::vector<ModelNode> nodes;  // nodes[0] is the root
    std::vector<int> node_of_leaf;
    std::vector<std::array<uint64_t, kFlows>> flow_queued;  // by leaf id and flow hash

    // `count` packets of `flow` join (or, negative, leave) `leaf`'s queue.
    void add(uint16_t leaf, uint32_t flow, int64_t count) {
        flow_queued[leaf][flow] += count;
        for (int n = node_of_leaf[leaf]; n >= 0; n = nodes[n].parent)
            nodes[n].queued += count;
    }

    void refill(ModelNode& n, uint64_t now_ns) {
        if (now_ns <= n.refilled_ns) return;
        const Units earned = static_cast<Units>(n.rate_bps) * (now_ns - n.refilled_ns);
        n.tokens = std::min(n.capacity, n.tokens + earned);
        n.credit += earned;
        n.refilled_ns = now_ns;
    }
    bool conforms(ModelNode& n, uint64_t now_ns) {
        refill(n, now_ns);
        return now_ns >= n.hold_until_ns && (n.rate_bps == 0 || n.tokens >= 0);
    }
    bool can_send(int index, uint64_t now_ns) {
        ModelNode& n = nodes[index];
        if (n.queued == 0 || !conforms(n, now_ns)) return false;
        if (n.leaf >= 0) return true;
        return std::any_of(n.children.begin(), n.children.end(),
                           [&](int child) { return can_send(child, now_ns); });
    }
    // Earliest time >= now at which `index` can send, absent arrivals and departures: its own
    // bucket out of debt and its hold over, and some child able to send by then.
    uint64_t earliest_ns(int index, uint64_t now_ns) {
        ModelNode& n = nodes[index];
        if (n.queued == 0) return kNever;
        refill(n, now_ns);
        uint64_t own = std::max(now_ns, n.hold_until_ns);
        if (n.rate_bps != 0 && n.tokens < 0) {
            const Units wait = (-n.tokens + n.rate_bps - 1) / n.rate_bps;
            own = std::max(own, now_ns + static_cast<uint64_t>(wait));
        }
        if (n.leaf >= 0) return own;
        uint64_t child_earliest = kNever;
        for (int child : n.children)
            child_earliest = std::min(child_earliest, earliest_ns(child, now_ns));
        return std::max(own, child_earliest);
    }
};

struct Trial {
    TreeSpec spec;
    Model model;
    uint64_t link_bps = 0;
    uint32_t frame_max = 0;
    std::vector<int> shaped;  // model indices of nodes below the root with a shaper
};

// 5-120% of the link.
uint64_t random_rate(std::mt19937_64& random, uint64_t link_bps) {
    return link_bps / 20 + random() % (link_bps * 23 / 20);
}

Trial random_trial(std::mt19937_64& random) {
    Trial t;
    const uint64_t links[] = {1'000'000'000, 10'000'000'000, 25'000'000'000, 100'000'000'000};
    const uint64_t link = t.link_bps = links[random() % 4];
    t.frame_max = random() % 2 ? 1518 : 9216;
    auto inner_kind = [&] { return random() % 2 ? NodeKind::strict : NodeKind::drr; };
    auto leaf_kind = [&] { return random() % 2 ? NodeKind::fq : NodeKind::fifo; };
    // Shaped at 5-120% of the link, a bucket of 64 bytes to 4 frames, or not shaped.
    auto maybe_shape = [&](NodeSpec& node) {
        if (random() % 2) return;
        node.shaper.rate_bits_per_sec = random_rate(random, link);
        node.shaper.burst_bytes = 64 + static_cast<uint32_t>(random() % (4 * t.frame_max));
    };
    t.spec.nodes.push_back(make_node("root", inner_kind()));
    t.spec.nodes.back().shaper = {link, t.frame_max * static_cast<uint32_t>(1 + random() % 4)};
    auto add_under = [&](const std::string& name, const std::string& parent, bool leaf,
                         uint32_t index) {
        t.spec.nodes.push_back(leaf ? make_leaf(name, leaf_kind(), parent, 4096, 64u << 20)
                                    : make_node(name, inner_kind(), parent));
        t.spec.nodes.back().priority = index;
        t.spec.nodes.back().weight = 1 + static_cast<uint32_t>(random() % 8);
        maybe_shape(t.spec.nodes.back());
    };
    for (uint32_t c = 0, children = 2 + random() % 3; c < children; ++c) {
        const std::string name = "c" + std::to_string(c);
        const bool leaf = random() % 2;
        add_under(name, "root", leaf, c);
        if (leaf) continue;
        for (uint32_t l = 0, leaves = 2 + random() % 2; l < leaves; ++l)
            add_under(name + "." + std::to_string(l), name, true, l);
    }
    return t;
}

void build_model(Trial& t, const Scheduler& scheduler) {
    Model& m = t.model;
    m.nodes.resize(t.spec.nodes.size());
    m.node_of_leaf.assign(scheduler.leaf_count(), -1);
    m.flow_queued.assign(scheduler.leaf_count(), {});
    for (size_t i = 0; i < t.spec.nodes.size(); ++i) {
        const NodeSpec& spec = t.spec.nodes[i];
        ModelNode& n = m.nodes[i];
        // The model's index is the scheduler's node id (both follow the spec's order).
        EXPECT_EQ(scheduler.node_id(spec.name), i);
        n.kind = spec.kind;
        n.priority = spec.priority;
        n.rate_bps = spec.shaper.rate_bits_per_sec;
        n.capacity = static_cast<Units>(spec.shaper.burst_bytes) * kUnitsPerByte;
        n.largest_capacity = n.capacity;
        n.tokens = n.capacity;
        for (size_t p = 0; p < i; ++p) {
            if (t.spec.nodes[p].name == spec.parent) {
                n.parent = static_cast<int>(p);
                m.nodes[p].children.push_back(static_cast<int>(i));
            }
        }
        if (const auto leaf = scheduler.leaf_id(spec.name)) {
            n.leaf = *leaf;
            m.node_of_leaf[*leaf] = static_cast<int>(i);
        }
        if (i != 0 && n.rate_bps != 0) t.shaped.push_back(static_cast<int>(i));
    }
}

TEST(ShaperBound, DeparturesConformNothingIdlesAndTheWakeUpIsExact) {
    std::mt19937_64 random(1206);
    uint64_t departures = 0, idle_checks = 0, wake_checks = 0, holds = 0, rate_changes = 0,
             reloads = 0, replacements = 0, moved = 0, reload_draws = 0;
    double widest = 0;  // of the interval bound, over shaped nodes below the root
    for (int trial = 0; trial < 150; ++trial) {
        Trial t = random_trial(random);
        auto built = Scheduler::build(t.spec);
        ASSERT_TRUE(built.scheduler) << built.error->to_string();
        std::unique_ptr<Scheduler> scheduler = std::move(built.scheduler);
        build_model(t, *scheduler);
        Model& m = t.model;
        const size_t node_count = m.nodes.size();

        uint64_t now = 0, arrived = 0, left = 0;
        std::vector<Packet> batch, out(32);
        std::vector<DroppedPacket> drops(4096);
        auto arrive = [&] {
            batch.clear();
            for (uint16_t leaf = 0; leaf < scheduler->leaf_count(); ++leaf) {
                if (random() % 3 == 0 || m.nodes[m.node_of_leaf[leaf]].queued > 64) continue;
                for (uint32_t k = 0, n = 1 + random() % 6; k < n; ++k) {
                    batch.push_back(
                        make_packet(leaf, static_cast<uint32_t>(64 + random() % (t.frame_max - 63)),
                                    static_cast<uint32_t>(random() % kFlows)));
                    m.add(leaf, batch.back().flow_hash, 1);
                }
            }
            ASSERT_EQ(scheduler->enqueue(batch.data(), static_cast<uint32_t>(batch.size()), now,
                                         drops.data()),
                      batch.size());
            arrived += batch.size();
        };
        // A departure at `now`: conformance and priority from the state before it, then its cost.
        auto depart = [&](const Packet& packet) {
            const int leaf_node = m.node_of_leaf[packet.leaf];
            for (int n = leaf_node; n >= 0; n = m.nodes[n].parent) {
                ModelNode& node = m.nodes[n];
                ASSERT_TRUE(m.conforms(node, now))
                    << "node " << t.spec.nodes[n].name << " sent while held or in debt at " << now;
                if (node.parent < 0 || m.nodes[node.parent].kind != NodeKind::strict) continue;
                for (int sibling : m.nodes[node.parent].children) {
                    ASSERT_FALSE(m.nodes[sibling].priority < node.priority &&
                                 m.can_send(sibling, now))
                        << t.spec.nodes[n].name << " sent while " << t.spec.nodes[sibling].name
                        << ", ahead of it, could at " << now;
                }
            }
            const Units bytes = static_cast<Units>(packet.length_bytes) * kUnitsPerByte;
            for (int n = leaf_node; n >= 0; n = m.nodes[n].parent) {
                ModelNode& node = m.nodes[n];
                if (node.rate_bps != 0) {
                    node.least_sent_less_credit =
                        std::min(node.least_sent_less_credit, node.sent - node.credit);
                    // Bytes sent since any earlier departure, before this one: within the
                    // burst plus what the rate earned meanwhile.
                    const Units over = node.sent - node.credit - node.least_sent_less_credit;
                    ASSERT_LE(over, node.largest_capacity) << t.spec.nodes[n].name << " at " << now;
                    if (n != 0)
                        widest = std::max(widest, static_cast<double>(over) /
                                                      static_cast<double>(node.largest_capacity));
                    node.tokens -= bytes;
                    node.sent += bytes;
                }
            }
            m.add(packet.leaf, packet.flow_hash, -1);
            ++left;
            ++departures;
        };
        auto dequeue = [&] {
            const uint32_t max = 1 + random() % 32;
            const bool budgeted = random() % 4 == 0;
            const WireCost cost{60, 24};
            const uint64_t budget = budgeted ? random() % (4 * t.frame_max) : 0;
            const DequeueResult r =
                budgeted ? scheduler->dequeue_burst(out.data(), max, budget, now, drops.data(),
                                                    static_cast<uint32_t>(drops.size()), cost)
                         : scheduler->dequeue(out.data(), max, now, drops.data(),
                                              static_cast<uint32_t>(drops.size()));
            ASSERT_EQ(r.dropped, 0u);
            uint64_t charged = 0;
            for (uint32_t i = 0; i < r.packets; ++i) {
                depart(out[i]);
                if (::testing::Test::HasFatalFailure()) return;
                charged +=
                    std::max(out[i].length_bytes, cost.min_frame_bytes) + cost.overhead_bytes;
            }
            if (budgeted) {
                ASSERT_LE(charged, budget);
                ASSERT_EQ(r.budget_bytes, charged);
            } else if (r.packets < max) {
                ++idle_checks;
                ASSERT_FALSE(m.can_send(0, now))
                    << "trial " << trial << ": " << r.packets << " of " << max
                    << " packets while the tree could send at " << now;
            }
            ++wake_checks;
            ASSERT_EQ(scheduler->next_eligible_ns(now), m.earliest_ns(0, now))
                << "trial " << trial << " at " << now;
        };
        // A pause of any node, its early release, a shaped node's new rate, a reload that gives
        // some shaped nodes (the root too) new rates and bursts, or a flow moved to another leaf
        // (a reclassification or an SLO downgrade), which may empty one path and fill another.
        auto change = [&] {
            const uint32_t what = random() % 40;
            if (what == 0) {
                const int n = static_cast<int>(random() % node_count);
                m.nodes[n].hold_until_ns = now + random() % 200'000;
                scheduler->hold(n, m.nodes[n].hold_until_ns);
                ++holds;
            } else if (what == 1) {
                const int n = static_cast<int>(random() % node_count);
                m.nodes[n].hold_until_ns = 0;
                scheduler->hold(n, 0);
            } else if (what == 2 && !t.shaped.empty()) {
                const int n = t.shaped[random() % t.shaped.size()];
                ModelNode& node = m.nodes[n];
                const uint64_t rate = random_rate(random, t.link_bps);
                m.refill(node, now);  // what the old rate earned until now
                node.rate_bps = rate;
                ASSERT_TRUE(scheduler->set_shaper_rate(n, rate, now));
                ++rate_changes;
            } else if (what == 3 || what == 4) {
                TreeSpec reloaded = scheduler->spec();
                for (size_t i = 0; i < node_count; ++i) {
                    ModelNode& node = m.nodes[i];
                    m.refill(node, now);  // what the old rates earned until now
                    if (node.rate_bps == 0 || random() % 2) continue;
                    ShaperSpec& shaper = reloaded.nodes[i].shaper;
                    shaper.rate_bits_per_sec = random_rate(random, t.link_bps);
                    shaper.burst_bytes = 64 + static_cast<uint32_t>(random() % (4 * t.frame_max));
                    node.rate_bps = shaper.rate_bits_per_sec;
                    node.capacity = static_cast<Units>(shaper.burst_bytes) * kUnitsPerByte;
                    node.largest_capacity = std::max(node.largest_capacity, node.capacity);
                    node.tokens = std::min(node.tokens, node.capacity);
                }
                // One in ten of these is a replacement: building a tree costs the
                // AddressSanitizer build milliseconds.
                if (what == 3 || ++reload_draws % 10 != 0) {
                    const auto error = scheduler->apply(reloaded, now);
                    ASSERT_FALSE(error) << error->to_string();
                    ++reloads;
                    return;
                }
                // A replacement tree (a hitless reload): the queues move over, the shapers
                // keep their tokens or debt, the pauses are applied again (as the pipeline
                // does).
                auto replacement = Scheduler::build(reloaded);
                ASSERT_TRUE(replacement.scheduler) << replacement.error->to_string();
                const auto error = replacement.scheduler->migrate_from(*scheduler, now);
                ASSERT_FALSE(error) << error->to_string();
                scheduler = std::move(replacement.scheduler);
                for (uint32_t n = 0; n < node_count; ++n)
                    if (m.nodes[n].hold_until_ns > now)
                        scheduler->hold(n, m.nodes[n].hold_until_ns);
                ++replacements;
            } else if (what < 7) {
                const auto from = static_cast<uint16_t>(random() % scheduler->leaf_count());
                const auto to = static_cast<uint16_t>(random() % scheduler->leaf_count());
                const auto flow = static_cast<uint32_t>(random() % kFlows);
                const uint64_t expected = from == to ? 0 : m.flow_queued[from][flow];
                ASSERT_EQ(scheduler->move_flow(from, to, flow), expected);
                m.add(from, flow, -static_cast<int64_t>(expected));
                m.add(to, flow, static_cast<int64_t>(expected));
                moved += expected;
            }
        };

        for (int step = 0; step < 4000 && !::testing::Test::HasFatalFailure(); ++step) {
            if (random() % 2) arrive();
            change();
            dequeue();
            const uint64_t wake = scheduler->next_eligible_ns(now);
            const uint32_t advance = random() % 5;
            if (advance < 2 && wake != kNever && wake > now)
                now = wake;
            else if (advance < 4)
                now += random() % 2'000;
            else
                now += random() % 50'000;
        }
        // Drain, waking when the tree says: every packet leaves.
        for (int wakes = 0; scheduler->queued_packets() != 0 && wakes < 100'000; ++wakes) {
            if (::testing::Test::HasFatalFailure()) return;
            const uint64_t wake = scheduler->next_eligible_ns(now);
            ASSERT_NE(wake, kNever);
            now = std::max(now, wake);
            dequeue();
        }
        ASSERT_EQ(left, arrived) << "trial " << trial;
        ASSERT_EQ(scheduler->queued_packets(), 0u);
    }
    // The bound is reached, not loose by orders of magnitude; pauses and rate changes happened.
    EXPECT_GT(widest, 0.5);
    EXPECT_GT(departures, 500'000u);
    EXPECT_GT(holds, 10'000u);
    EXPECT_GT(rate_changes, 10'000u);
    EXPECT_GT(reloads, 10'000u);
    EXPECT_GT(replacements, 1'000u);
    EXPECT_GT(moved, 100'000u);
    std::printf(
        "departures %llu, idle checks %llu, wake-ups %llu, holds %llu, rate changes %llu, "
        "reloads %llu, replacements %llu, packets moved %llu, widest interval %.2f of the bound\n",
        static_cast<unsigned long long>(departures), static_cast<unsigned long long>(idle_checks),
        static_cast<unsigned long long>(wake_checks), static_cast<unsigned long long>(holds),
        static_cast<unsigned long long>(rate_changes), static_cast<unsigned long long>(reloads),
        static_cast<unsigned long long>(replacements), static_cast<unsigned long long>(moved),
        widest);
}

}  // namespace
}  // namespace twinlane::sched
