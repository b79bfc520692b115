// admission::JobLeaves (through LeafMap::place, as admission calls it): jobs whose homes
// collide get leaves of their own, sharing only when more jobs are active than leaves, and no
// job ever enters a leaf other than the one its queued packets are in (the property that keeps
// flows in order), over random arrivals, departures, bursts and a full table.
#include "admission/job_leaves.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "admission/leaf_map.h"
#include "job_tree.h"

namespace twinlane::admission {
namespace {

std::unique_ptr<sched::Scheduler> job_tree(uint16_t count, uint32_t limit_packets = 4096) {
    auto tree = admission::job_tree(count, sched::NodeKind::fifo, limit_packets);
    EXPECT_TRUE(tree);
    return tree;
}

LeafMap job_map(uint16_t count) {
    LeafMap map;
    EXPECT_FALSE(LeafMap::build({{JobSplit::modulo, 0, count, {}}}, map));
    return map;
}

// Places one packet of `job` in its own burst and enqueues it; the leaf it entered.
uint16_t arrive(LeafMap& map, sched::Scheduler& tree, uint32_t job, uint64_t now = 0) {
    map.next_burst(now);
    sched::Packet p;
    p.length_bytes = 1000;
    p.leaf = map.place(0, job, tree);
    p.job = sched::job_tag(job);
    p.handle = reinterpret_cast<void*>(uintptr_t{job});
    sched::DroppedPacket drop;
    EXPECT_EQ(tree.enqueue(&p, 1, now, &drop), 1u);
    return p.leaf;
}

void drain(sched::Scheduler& tree) {
    sched::Packet out[64];
    sched::DroppedPacket drops[8];
    while (tree.queued_packets() != 0)
        tree.dequeue(out, 64, 0, drops, 8);
}

TEST(JobLeaves, JobsWhoseHomesCollideEachGetALeaf) {
    auto tree = job_tree(8);
    LeafMap map = job_map(8);
    // 0, 8, 16 and 200 all have home 0 (job % 8); 198.18.200.0/24 as job_by_source gives it.
    const uint32_t jobs[] = {0, 8, 16, 200, (198u << 16) | (18u << 8) | 200u};
    std::set<uint16_t> leaves;
    for (uint32_t job : jobs)
        leaves.insert(arrive(map, *tree, job));
    EXPECT_EQ(leaves.size(), 5u);
    EXPECT_EQ(map.where(0, 0), 0);           // the first takes its home
    for (int round = 0; round < 3; ++round)  // and each keeps its own
        for (uint32_t job : jobs)
            EXPECT_EQ(arrive(map, *tree, job), map.where(0, job));
    EXPECT_EQ(map.job_leaves(0)->jobs_with_leaves(), 5u);
}

TEST(JobLeaves, AJobTakesItsHomeWhenFree) {
    auto tree = job_tree(8);
    LeafMap map = job_map(8);
    for (uint32_t job = 0; job < 8; ++job)
        EXPECT_EQ(arrive(map, *tree, 7 - job + 16), (7 - job + 16) % 8);
}

TEST(JobLeaves, MoreJobsThanLeavesShareAndPartOnceTheirLeafIsEmpty) {
    auto tree = job_tree(2);
    LeafMap map = job_map(2);
    const uint16_t a = arrive(map, *tree, 10);
    const uint16_t b = arrive(map, *tree, 11);
    ASSERT_NE(a, b);
    const uint16_t c = arrive(map, *tree, 12);  // no leaf free: shares one
    EXPECT_TRUE(c == a || c == b);
    const uint32_t partner = c == a ? 10 : 11, other = c == a ? 11 : 10;
    EXPECT_EQ(arrive(map, *tree, 12), c);  // and stays while it holds packets
    // The other job stops; the leaves empty. Until it has been quiet for kQuietNs its leaf is
    // its own, so the two that share keep sharing.
    drain(*tree);
    uint64_t now = 1000;
    EXPECT_EQ(arrive(map, *tree, 12, now), c);
    EXPECT_EQ(arrive(map, *tree, partner, now), c);
    drain(*tree);
    // Past it, the two part: one takes the quiet job's leaf.
    now += JobLeaves::kQuietNs;
    std::set<uint16_t> leaves;
    for (int round = 0; round < 3; ++round, now += 1000) {
        leaves.insert(arrive(map, *tree, 12, now));
        leaves.insert(arrive(map, *tree, partner, now));
        drain(*tree);
    }
    EXPECT_EQ(leaves.size(), 2u);
    EXPECT_NE(map.where(0, 12), map.where(0, partner));
    EXPECT_FALSE(map.job_leaves(0)->has_leaf(other));
}

TEST(JobLeaves, ANewJobSharesAnEmptyLeafBeforeABusyOne) {
    auto tree = job_tree(2);
    LeafMap map = job_map(2);
    arrive(map, *tree, 10);  // leaf 0, queued
    arrive(map, *tree, 11);  // leaf 1
    sched::Packet out[4];
    sched::DroppedPacket drops[4];
    ASSERT_EQ(tree->dequeue(out, 1, 0, drops, 4).packets, 1u);  // one leaf empty again
    const uint16_t empty = tree->leaf_queued_bytes(0) == 0 ? 0 : 1;
    EXPECT_EQ(arrive(map, *tree, 12, 10), empty);  // both jobs active: it shares the empty one
}

// A fq_by_job leaf counts jobs by their 8-bit tag: two jobs of one tag in a leaf would take one
// job's share. Between leaves holding as many jobs, a job goes where no packets of its tag are.
TEST(JobLeaves, AJobSharesALeafWithoutItsTagWhenItCan) {
    // Whether the tag's job has packets queued or only its entry (its leaf drained): a leaf
    // it places into counts a second job of its tag as the same job either way.
    for (const bool drained : {false, true}) {
        for (uint16_t busy_leaf = 0; busy_leaf < 4; ++busy_leaf) {
            auto tree = admission::job_tree(4, sched::NodeKind::fq);
            ASSERT_TRUE(tree);
            LeafMap map = job_map(4);
            // Jobs 0..3 take the four leaves (each its home); a fifth job of job (busy_leaf)'s
            // tag would share leaf busy_leaf first (its home) were tags not looked at.
            for (uint32_t job = 0; job < 4; ++job)
                ASSERT_EQ(arrive(map, *tree, job), job);
            if (drained) drain(*tree);
            uint32_t twin = busy_leaf + 4;
            while (sched::job_tag(twin) != sched::job_tag(busy_leaf) || twin % 4 != busy_leaf)
                ++twin;
            const uint16_t shared = arrive(map, *tree, twin);
            EXPECT_NE(shared, busy_leaf) << "job " << twin << " shares a leaf with its tag's job "
                                         << busy_leaf << (drained ? " (drained)" : "");
            EXPECT_EQ(tree->leaf_queued_bytes(shared), drained ? 1000u : 2000u);
        }
    }
}

// A new job's leaf, when every leaf is taken: tag first, then an empty leaf, then the fewest
// jobs. A leaf with one job more but none of the new job's tag beats the emptiest with it.
TEST(JobLeaves, AJobAvoidsItsTagBeforeItBalancesLeaves) {
    auto tree = admission::job_tree(2, sched::NodeKind::fq);
    ASSERT_TRUE(tree);
    LeafMap map = job_map(2);
    ASSERT_EQ(arrive(map, *tree, 0), 0u);
    ASSERT_EQ(arrive(map, *tree, 1), 1u);
    uint32_t other = 2;  // shares leaf 1: leaf 1 then holds two jobs, leaf 0 one
    while (other % 2 != 1 || sched::job_tag(other) == sched::job_tag(0))
        ++other;
    ASSERT_EQ(arrive(map, *tree, other), 1u);
    uint32_t twin = other + 1;  // job 0's tag, home leaf 0
    while (sched::job_tag(twin) != sched::job_tag(0) || twin % 2 != 0)
        ++twin;
    EXPECT_EQ(arrive(map, *tree, twin), 1u) << "job " << twin << " joins job 0, its tag";
}

// The property that keeps flows in order, under random load: a job's packet enters the leaf
// that holds its queued packets (including those placed earlier in the same burst, enqueued
// only after the whole burst is placed). And a job without a leaf that arrives while some
// leaf holds no packets gets such a leaf, unless the table is full.
// `alone_checked`: how many arrivals the second property was checked on.
void check_placement(uint16_t count, uint32_t jobs, uint32_t seed, uint64_t& alone_checked) {
    auto tree = job_tree(count, 1u << 16);
    LeafMap map = job_map(count);
    std::mt19937 rng(seed);
    std::vector<uint32_t> queued(jobs, 0);
    std::vector<uint16_t> queued_in(jobs, 0);
    std::vector<uint32_t> job_ids(jobs);
    for (uint32_t j = 0; j < jobs; ++j)  // half of them at home 0
        job_ids[j] = j * count + (rng() % 2 == 0 ? 0 : rng() % count);
    std::map<uint32_t, uint32_t> index_of;
    for (uint32_t j = 0; j < jobs; ++j)
        index_of[job_ids[j]] = j;
    ASSERT_EQ(index_of.size(), jobs);
    alone_checked = 0;
    uint64_t now = 0;
    for (int round = 0; round < 4000; ++round) {
        // Jobs active in this phase: a random subset, so jobs come and go.
        const uint32_t active = 1 + (round / 200 * 7 + seed) % jobs;
        now += rng() % 4 == 0 ? JobLeaves::kQuietNs / 4 : 1000;
        map.next_burst(now);
        std::vector<sched::Packet> burst(1 + rng() % 32);
        for (sched::Packet& p : burst) {
            const uint32_t j = rng() % active;
            std::set<uint16_t> busy;  // leaves with packets queued or placed
            for (uint32_t k = 0; k < jobs; ++k)
                if (queued[k] != 0) busy.insert(queued_in[k]);
            const JobLeaves& placement = *map.job_leaves(0);
            uint32_t overflowing = 0;
            placement.for_each_overflow([&](uint16_t) { ++overflowing; });
            // A leaf holds none of it: one of those (free, or the emptiest shared).
            const bool fresh = !placement.has_leaf(job_ids[j]) && busy.size() < count &&
                               placement.jobs_with_leaves() < placement.capacity() &&
                               overflowing == 0;
            p.length_bytes = 1000;
            p.leaf = map.place(0, job_ids[j], *tree);
            p.handle = reinterpret_cast<void*>(uintptr_t{j});
            if (queued[j] != 0) {
                ASSERT_EQ(p.leaf, queued_in[j]) << "job " << j << " round " << round;
            } else if (fresh) {
                EXPECT_EQ(busy.count(p.leaf), 0u) << "job " << j << " round " << round;
                ++alone_checked;
            }
            queued_in[j] = p.leaf;
            ++queued[j];
        }
        std::vector<sched::DroppedPacket> drops(burst.size());
        ASSERT_EQ(tree->enqueue(burst.data(), static_cast<uint32_t>(burst.size()), 0, drops.data()),
                  burst.size());
        sched::Packet out[64];
        sched::DroppedPacket codel[8];
        const sched::DequeueResult r = tree->dequeue(out, 1 + rng() % 40, 0, codel, 8);
        for (uint32_t i = 0; i < r.packets; ++i) {
            const auto j = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(out[i].handle));
            ASSERT_EQ(out[i].leaf, queued_in[j]);
            --queued[j];
        }
        if (rng() % 16 == 0) {  // every leaf empty: jobs may take other leaves from here
            drain(*tree);
            std::fill(queued.begin(), queued.end(), 0);
        }
    }
}

TEST(JobLeaves, NoJobEverEntersALeafOtherThanItsQueuedPackets) {
    for (auto [count, jobs, seed] :
         {std::tuple{8, 6, 1}, {8, 12, 2}, {4, 40, 3}, {3, 200, 4}, {1, 5, 5}}) {
        uint64_t checked = 0;
        check_placement(static_cast<uint16_t>(count), static_cast<uint32_t>(jobs),
                        static_cast<uint32_t>(seed), checked);
        if (count > 1) {
            EXPECT_GT(checked, 0u);
        }
        std::printf("%d leaves, %d jobs: %llu arrivals without a leaf checked\n", count, jobs,
                    static_cast<unsigned long long>(checked));
    }
}

TEST(JobLeaves, AReloadKeepsEachJobWhereItsPacketsMoved) {
    auto old_tree = job_tree(4);
    LeafMap old_map = job_map(4);
    const uint32_t jobs[] = {1, 5, 9, 13};  // all home 1
    std::map<uint32_t, uint16_t> before;
    for (uint32_t job : jobs)
        before[job] = arrive(old_map, *old_tree, job);
    auto new_tree = job_tree(4);
    ASSERT_FALSE(new_tree->migrate_from(*old_tree, 0));
    LeafMap new_map = job_map(4);
    new_map.adopt(old_map, *old_tree, *new_tree);
    for (uint32_t job : jobs) {
        EXPECT_EQ(new_map.where(0, job), before[job]);
        EXPECT_EQ(arrive(new_map, *new_tree, job), before[job]);
    }
}

}  // namespace
}  // namespace twinlane::admission
