// fq_by_job leaves (a per_job node's, shared when jobs outnumber them): fair across jobs first,
// then across each job's flows, and under a drr parent the leaf weighs as many jobs as it
// holds. Checked with every job backlogged: jobs with 1 to 32 flows in one leaf, and jobs
// spread unevenly over a drr node's leaves, each within a bound of an equal share; a job that
// joins a busy leaf is served within rounds of one max packet a flow; a leaf with
// one job departs exactly as a plain fq leaf; the weight goes back to one as jobs leave.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "sched/scheduler.h"
#include "sched_test_util.h"

namespace twinlane::sched {
namespace {

using testing::build_or_fail;
using testing::id_of;
using testing::make_leaf;
using testing::make_node;
using testing::make_packet;

constexpr uint32_t kMaxPacket = 9216;

// A drr root over `leaves` fq leaves "l0".., each fq_by_job when `by_job`.
TreeSpec jobs_tree(uint32_t leaves, bool by_job, uint32_t buckets = 1024) {
    TreeSpec spec;
    spec.max_packet_bytes = kMaxPacket;
    spec.nodes.push_back(make_node("root", NodeKind::drr));
    for (uint32_t l = 0; l < leaves; ++l) {
        NodeSpec leaf = make_leaf("l" + std::to_string(l), NodeKind::fq, "root");
        leaf.fq_buckets = buckets;
        leaf.fq_by_job = by_job;
        spec.nodes.push_back(leaf);
    }
    return spec;
}

struct Arrival {
    uint16_t leaf;
    uint8_t job;
    uint32_t flows;    // the job's flows
    uint32_t packets;  // per flow
};

// Enqueues each job's flows round-robin (flow hashes distinct across jobs), `length` bytes each
// when nonzero, else random frame sizes. Returns the job of each packet id.
std::vector<uint8_t> enqueue_jobs(Scheduler& scheduler, const std::vector<Arrival>& jobs,
                                  uint32_t length, std::mt19937& random) {
    static constexpr uint32_t kLengths[] = {64, 576, 1500, 4096, 9000};
    std::vector<uint8_t> job_of(1);
    uint32_t hash_base = 0;
    std::vector<Packet> burst;
    for (const Arrival& a : jobs) {
        for (uint32_t k = 0; k < a.packets; ++k) {
            for (uint32_t f = 0; f < a.flows; ++f) {
                Packet p = make_packet(a.leaf, length != 0 ? length : kLengths[random() % 5],
                                       hash_base + f, job_of.size());
                p.job = a.job;
                job_of.push_back(a.job);
                burst.push_back(p);
            }
        }
        hash_base += a.flows;
    }
    std::vector<DroppedPacket> drops(burst.size());
    EXPECT_EQ(scheduler.enqueue(burst.data(), static_cast<uint32_t>(burst.size()), 0, drops.data()),
              burst.size());
    return job_of;
}

// Dequeues until some job has nothing left; bytes sent per job.
std::map<uint8_t, uint64_t> dequeue_while_all_backlogged(Scheduler& scheduler,
                                                         const std::vector<uint8_t>& job_of,
                                                         std::map<uint8_t, uint64_t> queued) {
    std::map<uint8_t, uint64_t> sent;
    std::array<Packet, 32> out;
    std::array<DroppedPacket, 32> drops;
    for (;;) {
        const DequeueResult r =
            scheduler.dequeue_burst(out.data(), 1, Scheduler::kUnlimitedBytes, 0, drops.data(), 32);
        if (r.packets == 0) return sent;
        const uint8_t job = job_of[id_of(out[0])];
        sent[job] += out[0].length_bytes;
        if (--queued[job] == 0) return sent;
    }
}

TEST(ByJob, JobsInOneLeafGetEqualSharesWhateverTheirFlowCounts) {
    std::mt19937 random(11);
    for (const uint32_t many : {2u, 8u, 32u}) {
        for (const uint32_t length : {1500u, 0u}) {
            auto scheduler = build_or_fail(jobs_tree(1, true));
            const std::vector<Arrival> jobs = {
                {0, 1, 1, 400}, {0, 2, many, 400 / many + 40}, {0, 3, 3, 200}};
            const std::vector<uint8_t> job_of = enqueue_jobs(*scheduler, jobs, length, random);
            EXPECT_EQ(scheduler->leaf_jobs(0), 3u);
            std::map<uint8_t, uint64_t> queued;
            for (const Arrival& a : jobs)
                queued[a.job] = uint64_t{a.flows} * a.packets;
            const std::map<uint8_t, uint64_t> sent =
                dequeue_while_all_backlogged(*scheduler, job_of, queued);
            // A round gives each job the widest job's flows x one max packet; a job is at
            // most a round plus a frame per flow (deficits carried) from another.
            const uint64_t bound = uint64_t{1 + many + 3} * kMaxPacket + (1 + many + 3) * 9000u;
            const auto [low, high] = std::minmax_element(
                sent.begin(), sent.end(), [](auto& a, auto& b) { return a.second < b.second; });
            EXPECT_LE(high->second - low->second, bound)
                << many << " flows, length " << length << ": job " << int(low->first) << " "
                << low->second << " bytes, job " << int(high->first) << " " << high->second;
            EXPECT_GT(low->second, 100'000u);
        }
    }
}

TEST(ByJob, AJobJoiningABusyLeafIsServedWithinARoundOfOneMaxPacketAFlow) {
    // Twelve jobs of 16 flows keep one leaf busy; a thirteenth joins in the middle of a round.
    // With equal flow counts a round is one max packet per flow: the newcomer has its first
    // five packets on every flow within six rounds of all 13 x 16 flows (1,277 packets; it
    // takes 655).
    // Quanta scaled by all the leaf's flows made each round twelve times longer: 2,380.
    constexpr uint32_t kJobs = 12, kFlows = 16, kLength = 9000;
    auto scheduler = build_or_fail(jobs_tree(1, true));
    std::mt19937 random(4);
    std::vector<Arrival> busy;
    for (uint8_t j = 1; j <= kJobs; ++j)
        busy.push_back({0, j, kFlows, 60});
    std::vector<uint8_t> job_of = enqueue_jobs(*scheduler, busy, kLength, random);
    std::array<Packet, 1> out;
    std::array<DroppedPacket, 1> drops;
    for (int i = 0; i < 1000; ++i)
        ASSERT_EQ(
            scheduler->dequeue_burst(out.data(), 1, Scheduler::kUnlimitedBytes, 0, drops.data(), 1)
                .packets,
            1u);
    // The newcomer's flows hash apart from the busy ones; its packet ids follow theirs.
    constexpr uint8_t kNewJob = 99;
    std::vector<Packet> burst;
    for (uint32_t k = 0; k < 20; ++k) {
        for (uint32_t f = 0; f < kFlows; ++f) {
            Packet p = make_packet(0, kLength, kJobs * kFlows + f, job_of.size());
            p.job = kNewJob;
            job_of.push_back(kNewJob);
            burst.push_back(p);
        }
    }
    std::vector<DroppedPacket> refused(burst.size());
    ASSERT_EQ(
        scheduler->enqueue(burst.data(), static_cast<uint32_t>(burst.size()), 0, refused.data()),
        burst.size());
    uint32_t dequeued = 0, newcomer = 0;
    while (newcomer < 5 * kFlows) {
        ASSERT_EQ(
            scheduler->dequeue_burst(out.data(), 1, Scheduler::kUnlimitedBytes, 0, drops.data(), 1)
                .packets,
            1u);
        ++dequeued;
        newcomer += job_of[id_of(out[0])] == kNewJob;
    }
    // A round of one max packet (9216 bytes) per flow carries 1.024 frames of 9000 bytes.
    EXPECT_LE(dequeued, 6 * (kJobs + 1) * kFlows * kMaxPacket / kLength);
    EXPECT_EQ(scheduler->leaf_jobs(0), kJobs + 1);
}

TEST(ByJob, ASharedLeafWeighsAsManyJobsAsItHolds) {
    // Five jobs over three leaves: two, two and one. Each should get a fifth.
    auto scheduler = build_or_fail(jobs_tree(3, true));
    std::mt19937 random(5);
    const std::vector<Arrival> jobs = {
        {0, 10, 1, 2000}, {0, 11, 4, 500}, {1, 12, 2, 1000}, {1, 13, 1, 2000}, {2, 14, 8, 250}};
    const std::vector<uint8_t> job_of = enqueue_jobs(*scheduler, jobs, 1500, random);
    EXPECT_EQ(scheduler->leaf_jobs(0), 2u);
    EXPECT_EQ(scheduler->leaf_jobs(1), 2u);
    EXPECT_EQ(scheduler->leaf_jobs(2), 1u);
    std::map<uint8_t, uint64_t> queued;
    for (const Arrival& a : jobs)
        queued[a.job] = uint64_t{a.flows} * a.packets;
    const std::map<uint8_t, uint64_t> sent =
        dequeue_while_all_backlogged(*scheduler, job_of, queued);
    uint64_t total = 0;
    for (const auto& [job, bytes] : sent)
        total += bytes;
    for (const auto& [job, bytes] : sent) {
        EXPECT_NEAR(static_cast<double>(bytes) / static_cast<double>(total), 0.2, 0.01)
            << "job " << int(job);
    }
}

TEST(ByJob, ALeafOfOneJobDepartsAsAPlainFqLeaf) {
    // Random arrivals and dequeues, every packet of a leaf from one job: the same departures,
    // drops and order as without fq_by_job.
    for (uint32_t seed = 1; seed <= 20; ++seed) {
        auto plain = build_or_fail(jobs_tree(3, false, 16));
        auto by_job = build_or_fail(jobs_tree(3, true, 16));
        std::mt19937 random(seed);
        uint64_t next_id = 1;
        uint64_t now = 0;
        std::array<Packet, 64> out_a, out_b;
        std::array<DroppedPacket, 64> drops_a, drops_b;
        for (int step = 0; step < 400; ++step) {
            now += random() % 5000;
            std::vector<Packet> burst(1 + random() % 24);
            for (Packet& p : burst) {
                const auto leaf = static_cast<uint16_t>(random() % 3);
                p = make_packet(leaf, 64 + random() % 9000, random() % 40, next_id++);
                p.job = static_cast<uint8_t>(leaf * 7 + 1);
            }
            std::vector<DroppedPacket> refused(burst.size());
            const auto n = static_cast<uint32_t>(burst.size());
            ASSERT_EQ(plain->enqueue(burst.data(), n, now, refused.data()),
                      by_job->enqueue(burst.data(), n, now, refused.data()));
            const uint32_t want = random() % 40;
            const DequeueResult a =
                plain->dequeue_burst(out_a.data(), want, 200'000, now, drops_a.data(), 64);
            const DequeueResult b =
                by_job->dequeue_burst(out_b.data(), want, 200'000, now, drops_b.data(), 64);
            ASSERT_EQ(a.packets, b.packets) << "seed " << seed << " step " << step;
            for (uint32_t i = 0; i < a.packets; ++i)
                ASSERT_EQ(id_of(out_a[i]), id_of(out_b[i])) << "seed " << seed << " step " << step;
        }
    }
}

TEST(ByJob, TheWeightFollowsJobsAsTheyLeave) {
    auto scheduler = build_or_fail(jobs_tree(2, true));
    std::mt19937 random(3);
    // Leaf 0: job 1 (a little) and job 2 (much); leaf 1: job 3 (much).
    const std::vector<Arrival> jobs = {{0, 1, 1, 20}, {0, 2, 1, 2000}, {1, 3, 1, 2000}};
    const std::vector<uint8_t> job_of = enqueue_jobs(*scheduler, jobs, 1500, random);
    EXPECT_EQ(scheduler->leaf_jobs(0), 2u);
    std::map<uint8_t, uint64_t> sent;
    std::array<Packet, 16> out;
    std::array<DroppedPacket, 16> drops;
    uint64_t job3_at_1_left = 0;
    while (scheduler->queued_packets() != 0) {
        const DequeueResult r = scheduler->dequeue_burst(out.data(), 16, Scheduler::kUnlimitedBytes,
                                                         0, drops.data(), 16);
        for (uint32_t i = 0; i < r.packets; ++i)
            sent[job_of[id_of(out[i])]] += out[i].length_bytes;
        if (job3_at_1_left == 0 && sent[1] == 20u * 1500) job3_at_1_left = sent[3];
        if (sent[2] >= 1'000'000) break;
    }
    // Once job 1 left, leaves 0 and 1 each hold one job again and split evenly from there.
    EXPECT_EQ(scheduler->leaf_jobs(0), 1u);
    const uint64_t job2_after = sent[2];
    const uint64_t job3_after = sent[3] - job3_at_1_left;
    EXPECT_NEAR(static_cast<double>(job2_after) / static_cast<double>(job3_after), 1.0, 0.05);
    while (scheduler->queued_packets() != 0)
        scheduler->dequeue_burst(out.data(), 16, Scheduler::kUnlimitedBytes, 0, drops.data(), 16);
    std::array<Packet, 1> idle_out;
    scheduler->dequeue_burst(idle_out.data(), 1, Scheduler::kUnlimitedBytes, 0, drops.data(), 16);
    EXPECT_EQ(scheduler->leaf_jobs(0), 0u);
    EXPECT_EQ(scheduler->leaf_jobs(1), 0u);
}

TEST(ByJob, ReplacingTheTreeCarriesJobsAndResetsTheOld) {
    auto old_tree = build_or_fail(jobs_tree(2, true));
    std::mt19937 random(9);
    const std::vector<Arrival> jobs = {{0, 1, 2, 50}, {0, 2, 3, 50}, {1, 3, 1, 50}};
    enqueue_jobs(*old_tree, jobs, 1500, random);
    auto new_tree = build_or_fail(jobs_tree(2, true));
    ASSERT_FALSE(new_tree->migrate_from(*old_tree, 0).has_value());
    EXPECT_EQ(new_tree->leaf_jobs(0), 2u);
    EXPECT_EQ(new_tree->leaf_jobs(1), 1u);
    EXPECT_EQ(old_tree->leaf_jobs(0), 0u);
    EXPECT_EQ(old_tree->leaf_jobs(1), 0u);
    EXPECT_EQ(new_tree->queued_packets(), 2u * 50 + 3u * 50 + 50u);
}

TEST(ByJob, ChangingItInPlaceIsATopologyChange) {
    auto scheduler = build_or_fail(jobs_tree(2, true));
    const auto error = scheduler->apply(jobs_tree(2, false), 0);
    ASSERT_TRUE(error.has_value());
    EXPECT_EQ(error->field, "fq_by_job");
}

}  // namespace
}  // namespace twinlane::sched
