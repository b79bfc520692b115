// Instruction-count driver for the scheduler's hot path, for callgrind (reliable on a noisy
// shared machine, unlike wall time). No EAL, no gtest. Usage:
//   valgrind --tool=callgrind --toggle-collect='*measured*' sched_cost CASE [ITERATIONS]
// then instructions/packet = Ir of the collected run / packets (printed by the driver).
// Cases:
//   fq64        drr root (shaped 10 Tb/s) -> fq leaf, 1024 flows, 64 B: sched_bench's tree;
//               enqueue 32 + dequeue(32)
//   fq64_burst  same, enqueue 32 + dequeue_burst(32)
//   gateway1    the shape of conf/default.yaml's tree (strict 10G root, capped fq inference with
//   CoDel,
//               drr bulk -> drr training of 4 fq jobs (fq_by_job) with RED/ECN, fifo other), mixed
//               sizes, enqueue 1 + dequeue 1 per step with virtual time (the replay engine's
//               pattern)
//   gateway32   same tree, enqueue 32 + dequeue 32 (dequeue) per step
//   gateway32_burst  same, dequeue_burst
//   lone_burst  same tree at a 1500-byte MTU (quantum: one frame), only `other` backlogged
//               (a lone bulk class), 1500 B, enqueue 32 + dequeue_burst(32)
//   fqmix       fq64's tree with sched_bench's mixed sizes (64..9000 B), enqueue 32 + dequeue(32)
//   fq64k, fqmix64k  sched_bench's 65536-flow tree (one bucket per flow, 65536 packets deep),
//               64 B / mixed, enqueue 32 + dequeue(32); `_burst` suffix: dequeue_burst(32)
//   fq64_1flow, fqmix_1flow  sched_bench's one-flow tree (one bucket), 1024 packets deep
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "sched/scheduler.h"

using namespace twinlane::sched;

namespace {

constexpr uint32_t kBurst = 32;

NodeSpec node(std::string name, NodeKind kind, std::string parent) {
    NodeSpec n;
    n.name = std::move(name);
    n.kind = kind;
    n.parent = std::move(parent);
    return n;
}

TreeSpec fq_tree(uint32_t flows) {
    TreeSpec spec;
    NodeSpec root = node("port", NodeKind::drr, "");
    root.shaper = {10'000'000'000'000ull, 1u << 24};
    spec.nodes.push_back(root);
    NodeSpec leaf = node("flows", NodeKind::fq, "port");
    leaf.fq_buckets = flows;
    leaf.fq_sparse_first = false;
    leaf.limit_packets = 1u << 20;
    leaf.limit_bytes = uint64_t{1} << 40;
    spec.nodes.push_back(leaf);
    return spec;
}

TreeSpec gateway_tree() {
    TreeSpec spec;
    NodeSpec root = node("root", NodeKind::strict, "");
    root.shaper = {10'000'000'000ull, 65536};
    spec.nodes.push_back(root);
    NodeSpec inference = node("inference", NodeKind::fq, "root");
    inference.priority = 0;
    inference.shaper = {5'000'000'000ull, 62500};
    inference.fq_buckets = 1024;
    inference.codel = {true, 500'000, 10'000'000, true};
    inference.limit_packets = 2048;
    inference.limit_bytes = 2u << 20;
    spec.nodes.push_back(inference);
    NodeSpec bulk = node("bulk", NodeKind::drr, "root");
    bulk.priority = 1;
    spec.nodes.push_back(bulk);
    NodeSpec training = node("training", NodeKind::drr, "bulk");
    training.weight = 4;
    spec.nodes.push_back(training);
    for (int j = 0; j < 4; ++j) {
        NodeSpec job = node("job" + std::to_string(j), NodeKind::fq, "training");
        job.fq_buckets = 256;
        job.red = {true, 20'000, 200'000, 0.2, false};
        job.limit_packets = 4096;
        job.limit_bytes = 8u << 20;
        job.fq_by_job = true;  // as the policy compiles per_job leaves
        spec.nodes.push_back(job);
    }
    NodeSpec other = node("other", NodeKind::fifo, "bulk");
    other.limit_packets = 1024;
    other.limit_bytes = 1u << 20;
    spec.nodes.push_back(other);
    return spec;
}

enum class Traffic { fq64, fqmix, gateway, lone };

// Packets are generated before the measured region and replayed cyclically from memory.
struct Source {
    std::vector<Packet> sequence;
    uint32_t cursor = 0;
    uint32_t flows = 1024;
    Source(Traffic traffic, uint32_t flow_count) : flows(flow_count) {
        sequence.resize(1u << 16);
        for (Packet& p : sequence)
            p = make(traffic);
    }
    Packet next() {
        const Packet p = sequence[cursor];
        cursor = (cursor + 1) & (static_cast<uint32_t>(sequence.size()) - 1);
        return p;
    }
    std::mt19937 random{7};
    Packet make(Traffic traffic) {
        Packet p;
        p.handle = reinterpret_cast<void*>(uintptr_t{1});
        if (traffic == Traffic::lone) {
            p.leaf = 5;  // other
            p.length_bytes = 1500;
            p.flow_hash = random() % 4096;
            return p;
        }
        static constexpr uint32_t kSizes[] = {64, 128, 576, 1500, 4096, 9000};
        if (traffic == Traffic::fq64 || traffic == Traffic::fqmix) {
            p.flow_hash = random() % flows;
            p.length_bytes = traffic == Traffic::fq64 ? 64 : kSizes[random() % 6];
            p.leaf = 0;
            return p;
        }
        const uint32_t r = random();
        const uint32_t kind = r % 100;
        p.flow_hash = (r >> 8) % 4096;
        if (kind < 5) {  // inference: small RPCs
            p.leaf = 0;
            p.length_bytes = kSizes[(r >> 20) % 4];
        } else if (kind < 93) {  // training jobs: mostly jumbo
            p.leaf = static_cast<uint16_t>(1 + (r >> 20) % 4);
            p.job = job_tag(p.leaf);  // a job per leaf
            p.length_bytes = kSizes[2 + (r >> 24) % 4];
        } else {
            p.leaf = 5;
            p.length_bytes = kSizes[(r >> 20) % 6];
        }
        return p;
    }
};

enum class Deq { single, loop, burst };

uint64_t g_sink = 0;

// The measured region (callgrind --toggle-collect='*measured*').
__attribute__((noinline)) uint64_t measured(Scheduler& s, Source& src, uint32_t steps,
                                            uint32_t per_step, Deq deq, uint64_t& now_ns,
                                            uint64_t step_ns) {
    Packet in[kBurst];
    Packet out[kBurst];
    DroppedPacket drops[kBurst];
    uint64_t delivered = 0;
    for (uint32_t i = 0; i < steps; ++i) {
        now_ns += step_ns;
        for (uint32_t k = 0; k < per_step; ++k)
            in[k] = src.next();
        s.enqueue(in, per_step, now_ns, drops);
        uint32_t n = 0;
        if (deq == Deq::burst) {
            n = s.dequeue_burst(out, per_step, Scheduler::kUnlimitedBytes, now_ns, drops, kBurst)
                    .packets;
        } else if (deq == Deq::loop) {
            n = s.dequeue(out, per_step, now_ns, drops, kBurst).packets;
        } else {
            for (uint32_t k = 0; k < per_step; ++k)
                n += s.dequeue(out + n, 1, now_ns, drops, kBurst).packets;
        }
        delivered += n;
        // Order fingerprint, so that variants can be compared for identical output.
        for (uint32_t k = 0; k < n; ++k)
            g_sink = g_sink * 1000003 + out[k].flow_hash * 16 + out[k].leaf + out[k].length_bytes;
    }
    return delivered;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr,
                     "usage: sched_cost fq64|fq64_burst|gateway1|gateway32|gateway32_burst|"
                     "lone_burst|fqmix[_burst]|fq64k[_burst]|fqmix64k[_burst]|fq64_1flow|fqmix_"
                     "1flow [steps]\n");
        return 2;
    }
    const std::string name = argv[1];
    const uint32_t steps = argc > 2 ? static_cast<uint32_t>(std::atoi(argv[2])) : 20000;
    const Traffic traffic = name == "lone_burst"            ? Traffic::lone
                            : name.rfind("gateway", 0) == 0 ? Traffic::gateway
                            : name.rfind("fqmix", 0) == 0   ? Traffic::fqmix
                                                            : Traffic::fq64;
    const bool lone = traffic == Traffic::lone;
    const bool fq = traffic == Traffic::fq64 || traffic == Traffic::fqmix;
    const uint32_t flows = name.find("64k") != std::string::npos      ? 65536
                           : name.find("_1flow") != std::string::npos ? 1
                                                                      : 1024;
    TreeSpec spec = fq ? fq_tree(flows) : gateway_tree();
    if (lone) spec.max_packet_bytes = 1500 + 18;  // MTU + Ethernet header + a VLAN tag, as compiled
    auto built = Scheduler::build(spec);
    if (!built.scheduler) {
        std::fprintf(stderr, "%s\n", built.error->to_string().c_str());
        return 1;
    }
    Scheduler& s = *built.scheduler;
    Source src(traffic, flows);
    uint32_t per_step = kBurst;
    Deq deq = Deq::loop;
    if (name == "gateway1") {
        per_step = 1;
        deq = Deq::single;
    }
    if (name.find("_burst") != std::string::npos) deq = Deq::burst;
    // Virtual time: gateway at ~10G for the mean packet (avg ~3.5 kB -> ~2.8 us; lone: 1524
    // wire bytes -> ~1.22 us); fq64 far below its shaper.
    const uint64_t step_ns = lone                          ? 1'220ull * per_step
                             : traffic == Traffic::gateway ? 2'800ull * per_step
                                                           : 1'000;
    // fq trees: sched_bench's depth, max(1024, flows).
    const uint32_t depth = fq ? std::max<uint32_t>(1024, flows) : 1024;
    uint64_t now_ns = 1;
    // Prefill to a steady depth.
    Packet in[kBurst];
    DroppedPacket drops[kBurst];
    for (uint32_t f = 0; f < depth; f += kBurst) {
        for (Packet& p : in)
            p = src.next();
        s.enqueue(in, kBurst, now_ns, drops);
    }
    const uint64_t delivered = measured(s, src, steps, per_step, deq, now_ns, step_ns);
    std::printf(
        "%s: steps %u, packets enqueued %llu, delivered %llu, queued %llu (order fingerprint "
        "%llu)\n",
        name.c_str(), steps, static_cast<unsigned long long>(uint64_t{steps} * per_step),
        static_cast<unsigned long long>(delivered),
        static_cast<unsigned long long>(s.queued_packets()),
        static_cast<unsigned long long>(g_sink));
    return 0;
}
