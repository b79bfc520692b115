// Throughput of twinlane's scheduler against DPDK rte_sched on the same packet sequence.
//
// Both run work-conserving (rates far above what the loop pushes) at equal queue depth: the
// queue is prefilled with `depth` packets, then each iteration enqueues a burst of 32 and
// dequeues until 32 came out. items_per_second counts packets through enqueue + dequeue.
// Hierarchies, as close as rte_sched's fixed one allows:
//   rte_sched: port -> 1 subport -> ceil(flows/4) pipes -> best-effort TC -> 4 WRR queues;
//              flow f goes to pipe f/4, queue f%4 (one queue per flow).
//   twinlane:  port (drr, shaped at 10 Tb/s) -> fq leaf with one bucket per flow, plain DRR
//              across flows (fq_sparse_first off: rte_sched has no sparse-flow priority).
// The EAL is initialised once (no hugepages, no PCI, no shared config); rte_sched gets real
// mbufs from a real mempool.
// Dequeue variants: `twinlane/...` calls dequeue() until 32 came out (as before);
// `twinlane_burst/...` calls dequeue_burst(out, 32, budget) once per iteration with a byte
// budget that never binds (the path the dataplane's TX pacer takes), both next to
// rte_sched_port_dequeue(port, out, 32).
// After the benchmarks, a table of twinlane/rte_sched throughput ratios is printed.
#include <benchmark/benchmark.h>
#include <rte_eal.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_sched.h>

#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "sched/scheduler.h"

namespace {

using twinlane::sched::DequeueResult;
using twinlane::sched::DroppedPacket;
using twinlane::sched::NodeKind;
using twinlane::sched::NodeSpec;
using twinlane::sched::Packet;
using twinlane::sched::Scheduler;
using twinlane::sched::TreeSpec;

constexpr uint32_t kBurst = 32;
constexpr uint32_t kSequenceLength = 1u << 20;

enum class SizeMix { small64, mixed };

struct Workload {
    std::vector<uint32_t> flow;
    std::vector<uint32_t> length;
    uint32_t depth = 0;
};

// Same sequence for both schedulers: uniform random flows, sizes 64 B or an AI-gateway mix.
Workload make_workload(SizeMix mix, uint32_t flows) {
    Workload workload;
    std::mt19937 random(2024);
    static constexpr uint32_t kMixedSizes[] = {64, 128, 576, 1500, 4096, 9000};
    workload.flow.resize(kSequenceLength);
    workload.length.resize(kSequenceLength);
    for (uint32_t i = 0; i < kSequenceLength; ++i) {
        workload.flow[i] = random() % flows;
        workload.length[i] = mix == SizeMix::small64 ? 64 : kMixedSizes[random() % 6];
    }
    // One packet per flow on average for many flows, 1024 in flight at least.
    workload.depth = std::max<uint32_t>(1024, flows);
    return workload;
}

void run_twinlane(benchmark::State& state, SizeMix mix, uint32_t flows, bool burst_api) {
    const Workload workload = make_workload(mix, flows);
    TreeSpec spec;
    NodeSpec root;
    root.name = "port";
    root.kind = NodeKind::drr;
    root.shaper = {10'000'000'000'000ull, 1u << 24};
    spec.nodes.push_back(root);
    NodeSpec leaf;
    leaf.name = "flows";
    leaf.kind = NodeKind::fq;
    leaf.parent = "port";
    leaf.fq_buckets = flows;
    leaf.fq_sparse_first = false;  // rte_sched has no sparse-flow priority: plain DRR per flow
    leaf.limit_packets = workload.depth + 2 * kBurst;
    leaf.limit_bytes = uint64_t{1} << 40;
    spec.nodes.push_back(leaf);
    auto built = Scheduler::build(spec);
    if (!built.scheduler) {
        state.SkipWithError(built.error->to_string().c_str());
        return;
    }
    Scheduler& scheduler = *built.scheduler;
    uint32_t cursor = 0;
    auto next_packet = [&]() {
        Packet packet;
        packet.length_bytes = workload.length[cursor];
        packet.flow_hash = workload.flow[cursor];
        packet.leaf = 0;
        cursor = (cursor + 1) & (kSequenceLength - 1);
        return packet;
    };
    Packet burst[kBurst];
    Packet out[kBurst];
    DroppedPacket drops[kBurst];
    uint64_t now_ns = 0;
    for (uint32_t filled = 0; filled < workload.depth; filled += kBurst) {
        for (Packet& packet : burst)
            packet = next_packet();
        scheduler.enqueue(burst, kBurst, now_ns, drops);
    }
    uint64_t refused = 0;
    for (auto _ : state) {
        now_ns += 1000;  // virtual time: 1 us per burst, far below the 10 Tb/s shaper
        for (Packet& packet : burst)
            packet = next_packet();
        refused += kBurst - scheduler.enqueue(burst, kBurst, now_ns, drops);
        uint32_t received = 0;
        if (burst_api) {
            // 32 jumbo frames of budget: never the limit here, but checked per packet.
            const DequeueResult result = scheduler.dequeue_burst(
                out, kBurst, uint64_t{kBurst} * 9216, now_ns, drops, kBurst, {60, 24});
            received = result.packets;
            benchmark::DoNotOptimize(out[0]);
        }
        while (received < kBurst) {
            const DequeueResult result =
                scheduler.dequeue(out, kBurst - received, now_ns, drops, kBurst);
            received += result.packets;
            benchmark::DoNotOptimize(out[0]);
        }
    }
    if (refused != 0) state.SkipWithError("twinlane refused packets: depth not equal");
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kBurst);
}

void run_rte_sched(benchmark::State& state, SizeMix mix, uint32_t flows) {
    const Workload workload = make_workload(mix, flows);
    const uint32_t pipes = std::max<uint32_t>(1, rte_align32pow2((flows + 3) / 4));
    const uint64_t rate_bytes_per_sec = 100'000'000'000ull;  // 800 Gb/s: never the bottleneck

    rte_sched_subport_profile_params subport_profile{};
    subport_profile.tb_rate = rate_bytes_per_sec;
    subport_profile.tb_size = 1'000'000;
    for (uint64_t& tc_rate : subport_profile.tc_rate)
        tc_rate = rate_bytes_per_sec;
    subport_profile.tc_period = 10;

    rte_sched_port_params port_params{};
    port_params.name = "bench_port";
    port_params.socket = 0;
    port_params.rate = rate_bytes_per_sec;
    port_params.mtu = 9216;
    port_params.frame_overhead = 24;
    port_params.n_subports_per_port = 1;
    port_params.subport_profiles = &subport_profile;
    port_params.n_subport_profiles = 1;
    port_params.n_max_subport_profiles = 1;
    port_params.n_pipes_per_subport = pipes;

    rte_sched_pipe_params pipe_profile{};
    pipe_profile.tb_rate = rate_bytes_per_sec;
    pipe_profile.tb_size = 1'000'000;
    // Only the best-effort class is used; rte_sched requires tc_rate 0 where qsize is 0.
    pipe_profile.tc_rate[RTE_SCHED_TRAFFIC_CLASS_BE] = rate_bytes_per_sec;
    pipe_profile.tc_period = 10;
    pipe_profile.tc_ov_weight = 1;
    for (uint8_t& weight : pipe_profile.wrr_weights)
        weight = 1;

    rte_sched_subport_params subport_params{};
    subport_params.n_pipes_per_subport_enabled = pipes;
    // Per-queue size: room for every packet of the single flow, or 64 when spread over flows.
    subport_params.qsize[RTE_SCHED_TRAFFIC_CLASS_BE] =
        static_cast<uint16_t>(flows == 1 ? rte_align32pow2(workload.depth + 2 * kBurst) : 64);
    subport_params.pipe_profiles = &pipe_profile;
    subport_params.n_pipe_profiles = 1;
    subport_params.n_max_pipe_profiles = 1;

    rte_sched_port* port = rte_sched_port_config(&port_params);
    if (port == nullptr || rte_sched_subport_config(port, 0, &subport_params, 0) != 0) {
        state.SkipWithError("rte_sched configuration failed");
        if (port != nullptr) rte_sched_port_free(port);
        return;
    }
    for (uint32_t pipe = 0; pipe < pipes; ++pipe)
        rte_sched_pipe_config(port, 0, pipe, 0);

    const uint32_t mbuf_count = workload.depth + 4 * kBurst;
    static int pool_serial = 0;
    const std::string pool_name = "bench_pool_" + std::to_string(pool_serial++);
    rte_mempool* pool = rte_pktmbuf_pool_create(pool_name.c_str(), mbuf_count, 0, 0, 256, 0);
    if (pool == nullptr) {
        state.SkipWithError("mempool creation failed");
        rte_sched_port_free(port);
        return;
    }
    std::vector<rte_mbuf*> free_mbufs(mbuf_count);
    if (rte_pktmbuf_alloc_bulk(pool, free_mbufs.data(), mbuf_count) != 0) {
        state.SkipWithError("mbuf allocation failed");
        rte_sched_port_free(port);
        rte_mempool_free(pool);
        return;
    }
    uint32_t free_count = mbuf_count;
    uint32_t cursor = 0;
    auto next_mbuf = [&]() {
        rte_mbuf* mbuf = free_mbufs[--free_count];
        mbuf->pkt_len = workload.length[cursor];
        mbuf->data_len = static_cast<uint16_t>(workload.length[cursor]);
        const uint32_t flow = workload.flow[cursor];
        rte_sched_port_pkt_write(port, mbuf, 0, flow / 4, RTE_SCHED_TRAFFIC_CLASS_BE, flow % 4,
                                 RTE_COLOR_GREEN);
        cursor = (cursor + 1) & (kSequenceLength - 1);
        return mbuf;
    };
    rte_mbuf* burst[kBurst];
    rte_mbuf* out[kBurst];
    for (uint32_t filled = 0; filled < workload.depth; filled += kBurst) {
        for (rte_mbuf*& mbuf : burst)
            mbuf = next_mbuf();
        rte_sched_port_enqueue(port, burst, kBurst);
    }
    uint64_t refused = 0;
    for (auto _ : state) {
        for (rte_mbuf*& mbuf : burst)
            mbuf = next_mbuf();
        refused += kBurst - static_cast<uint32_t>(rte_sched_port_enqueue(port, burst, kBurst));
        uint32_t received = 0;
        while (received < kBurst) {
            const int n = rte_sched_port_dequeue(port, out, kBurst - received);
            for (int i = 0; i < n; ++i)
                free_mbufs[free_count++] = out[i];
            received += static_cast<uint32_t>(n);
        }
    }
    // rte_sched frees what it drops itself, so a refusal shrinks the queue; report it.
    if (refused != 0) state.SkipWithError("rte_sched dropped packets: depth not equal");
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kBurst);
    // Drain, then return every mbuf to the pool.
    for (int n; (n = rte_sched_port_dequeue(port, out, kBurst)) > 0;) {
        for (int i = 0; i < n; ++i)
            free_mbufs[free_count++] = out[i];
    }
    rte_sched_port_free(port);
    for (uint32_t i = 0; i < free_count; ++i)
        rte_pktmbuf_free(free_mbufs[i]);
    rte_mempool_free(pool);
}

// Collects items_per_second per benchmark name while printing as usual.
class CollectingReporter : public benchmark::ConsoleReporter {
  public:
    void ReportRuns(const std::vector<Run>& runs) override {
        for (const Run& run : runs) {
            if (run.run_type != Run::RT_Iteration || run.error_occurred) continue;
            const auto it = run.counters.find("items_per_second");
            if (it != run.counters.end()) rates[run.benchmark_name()] = it->second.value;
        }
        ConsoleReporter::ReportRuns(runs);
    }
    std::map<std::string, double> rates;
};

void print_ratio_table(const std::map<std::string, double>& rates) {
    std::printf("\n%-28s %14s %14s %10s\n", "case", "twinlane ns/p", "rte_sched ns/p", "ratio");
    for (const auto& [name, twinlane_rate] : rates) {
        if (name.rfind("twinlane", 0) != 0) continue;
        const std::string suffix = name.substr(name.find('/') + 1);
        const auto other = rates.find("rte_sched/" + suffix);
        if (other == rates.end()) continue;
        const std::string label =
            name.rfind("twinlane_burst/", 0) == 0 ? "burst " + suffix : suffix;
        std::printf("%-28s %14.1f %14.1f %9.2fx\n", label.c_str(), 1e9 / twinlane_rate,
                    1e9 / other->second, twinlane_rate / other->second);
    }
    std::printf(
        "(ratio = twinlane throughput / rte_sched throughput; > 1 means twinlane faster)\n");
}

}  // namespace

int main(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    // --in-memory is refused together with --no-huge by DPDK 22.11 (it implies legacy memory),
    // so --no-shconf keeps the EAL from writing shared runtime files instead.
    const char* eal_args[] = {"sched_bench", "--no-huge",   "--no-pci",         "-l", "0", "-m",
                              "1024",        "--no-shconf", "--log-level=error"};
    if (rte_eal_init(static_cast<int>(std::size(eal_args)), const_cast<char**>(eal_args)) < 0) {
        std::fprintf(stderr, "rte_eal_init failed\n");
        return 1;
    }
    for (const uint32_t flows : {1u, 1024u, 65536u}) {
        for (const auto& [mix, mix_name] :
             {std::pair{SizeMix::small64, "64B"}, std::pair{SizeMix::mixed, "mixed"}}) {
            const std::string suffix = std::string(mix_name) + "/flows:" + std::to_string(flows);
            const SizeMix size_mix = mix;
            benchmark::RegisterBenchmark(("twinlane/" + suffix).c_str(), [=](benchmark::State& s) {
                run_twinlane(s, size_mix, flows, false);
            });
            benchmark::RegisterBenchmark(
                ("twinlane_burst/" + suffix).c_str(),
                [=](benchmark::State& s) { run_twinlane(s, size_mix, flows, true); });
            benchmark::RegisterBenchmark(("rte_sched/" + suffix).c_str(), [=](benchmark::State& s) {
                run_rte_sched(s, size_mix, flows);
            });
        }
    }
    CollectingReporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    print_ratio_table(reporter.rates);
    benchmark::Shutdown();
    rte_eal_cleanup();
    return 0;
}
