// What placing jobs over a per_job node's leaves (LeafMap::place, job_leaves.h) costs next to
// the fixed job % count (LeafMap::leaf), side by side: bursts of 32 packets of random jobs
// enqueued into a drr node over 8 fq leaves and dequeued again, per packet; arguments: jobs,
// and the packets kept queued (0: every leaf empties after each burst, the case where jobs
// sharing leaves part and meet again). BM_JobLeafBuckets: what a job leaf's flow queues
// (`buckets`) cost when 48 jobs of 16 flows share the 8 leaves.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "admission/leaf_map.h"
#include "classifier/packet_key.h"
#include "job_tree.h"

namespace twinlane::admission {
namespace {

constexpr uint16_t kLeaves = 8;
constexpr uint32_t kBurst = 32;

template <bool kPlaced, bool kByJob>
void admit_jobs(benchmark::State& state, uint32_t jobs, uint32_t flows_per_job,
                int64_t queued_before, uint32_t buckets, bool hash_flows) {
    auto scheduler = job_tree(kLeaves, sched::NodeKind::fq, 4096, kByJob, buckets);
    LeafMap map;
    if (LeafMap::build({{JobSplit::modulo, 0, kLeaves, {}}}, map)) {
        state.SkipWithError("leaf map");
        return;
    }
    // Jobs as job_by_source numbers them (198.18.x.0/24), flows_per_job flows each; flow hashes
    // consecutive or spread as the classifier's hash spreads them.
    std::mt19937 rng(1);
    std::vector<uint32_t> job_of(4096), flow_of(4096);
    for (size_t i = 0; i < job_of.size(); ++i) {
        job_of[i] = (198u << 16) | (18u << 8) | (rng() % jobs * 7 % 256);
        flow_of[i] = job_of[i] * flows_per_job + rng() % flows_per_job;
        if (hash_flows)  // as the classifier hashes a flow's key
            flow_of[i] = classifier::hash_key(classifier::PacketKey{{flow_of[i]}});
    }
    sched::Packet burst[kBurst], out[kBurst];
    sched::DroppedPacket drops[kBurst];
    size_t next = 0;
    const auto place = [&](sched::Packet& p) {
        p = sched::Packet{};
        p.length_bytes = 1500;
        p.flow_hash = flow_of[next];
        p.leaf = kPlaced ? map.place(0, job_of[next], *scheduler) : map.leaf(0, job_of[next]);
        p.job = sched::job_tag(job_of[next]);
        next = (next + 1) & 4095;
    };
    for (int64_t queued = 0; queued < queued_before; ++queued) {
        map.next_burst(0);
        place(burst[0]);
        scheduler->enqueue(burst, 1, 0, drops);
    }
    for (auto _ : state) {
        map.next_burst(0);
        for (sched::Packet& p : burst)
            place(p);
        scheduler->enqueue(burst, kBurst, 0, drops);
        const sched::DequeueResult r = scheduler->dequeue(out, kBurst, 0, drops, kBurst);
        benchmark::DoNotOptimize(r);
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kBurst);
}

// Arguments: jobs, packets kept queued.
template <bool kPlaced, bool kByJob>
void BM_AdmitJobs(benchmark::State& state) {
    admit_jobs<kPlaced, kByJob>(state, static_cast<uint32_t>(state.range(0)), 4, state.range(1),
                                256, false);
}

// Arguments: buckets per leaf, packets kept queued.
void BM_JobLeafBuckets(benchmark::State& state) {
    admit_jobs<true, true>(state, 48, 16, state.range(1), static_cast<uint32_t>(state.range(0)),
                           true);
}

// Fixed: job % count into leaves fair by flow (before placement); Placed: as the policy compiles
// per_job (placement, leaves fair by job); PlacedByFlow: placement alone.
BENCHMARK(BM_AdmitJobs<false, false>)
    ->Name("BM_AdmitJobs_Fixed")
    ->ArgsProduct({{4, 8, 16}, {0, 512}});
BENCHMARK(BM_AdmitJobs<true, false>)
    ->Name("BM_AdmitJobs_PlacedByFlow")
    ->ArgsProduct({{4, 8, 16}, {0, 512}});
BENCHMARK(BM_AdmitJobs<true, true>)
    ->Name("BM_AdmitJobs_Placed")
    ->ArgsProduct({{4, 8, 16}, {0, 512}});
BENCHMARK(BM_JobLeafBuckets)->ArgsProduct({{256, 4096}, {0, 512}});

}  // namespace
}  // namespace twinlane::admission

BENCHMARK_MAIN();
