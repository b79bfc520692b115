// Classification throughput for 64-byte frames (IPv6: 80), one core.
//   BM_HitPath_*:   every packet hits the flow table (1M cached flows, packets in a random flow
//                   order different from insertion order; hot: 4096 flows).
//   BM_MissPath:    no flow table: parse + compiled rules (10 / 1k / 10k) + heuristics per packet.
//   BM_RuleLookup_*: the compiled table against the linear reference, lookup only.
//   BM_MemoryCeiling_1M: the memory access pattern of a 1M-flow hit alone, no other work.
//   BM_MemoryCeiling_InPlace_1M: the same for entries stored at their hash position (1 or 2
//                   cache lines per hit).
// items_per_second = packets per second.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <memory>
#include <numeric>
#include <random>

#include "classifier/classifier.h"
#include "classifier/huge_page_allocator.h"
#include "tests/classifier/packet_builder.h"

namespace twinlane::classifier {
namespace {

using testing::Ipv4Address;
using testing::PacketBuilder;
constexpr uint32_t kFrameBytes = 64;

// What the frames of a FramePool carry: plain UDP, RoCEv2 (UDP 4791, one QP per flow: a
// gateway's training traffic), TCP behind one 802.1Q tag or behind QinQ (802.1ad + 802.1Q), or
// over IPv6 TCP and RoCEv2 (an IPv6 underlay, common in AI clusters).
enum class FrameKind { udp, roce, vlan_tcp, qinq_tcp, ipv6_tcp, ipv6_roce };

// `count` distinct flows as 64-byte frames (IPv6: 80, its smallest TCP frame is 74),
// contiguous, in a shuffled flow order.
struct FramePool {
    uint32_t frame_bytes;
    std::vector<uint8_t> bytes;
    std::vector<const uint8_t*> pointers;
    std::vector<uint32_t> lengths;

    FramePool(uint32_t count, uint32_t seed, FrameKind kind = FrameKind::udp)
        : frame_bytes(kind == FrameKind::ipv6_tcp || kind == FrameKind::ipv6_roce ? 80
                                                                                  : kFrameBytes),
          bytes(size_t{count} * frame_bytes) {
        std::vector<uint32_t> order(count);
        std::iota(order.begin(), order.end(), 0u);
        std::shuffle(order.begin(), order.end(), std::mt19937(seed));
        for (uint32_t i = 0; i < count; ++i) {
            const uint32_t flow = order[i];
            const Ipv4Address src{10, uint8_t(flow >> 16), uint8_t(flow >> 8), uint8_t(flow)};
            const Ipv4Address dst{10, 200, uint8_t(flow % 7), uint8_t(flow % 251)};
            PacketBuilder builder;
            builder.ethernet();
            if (kind == FrameKind::udp) {
                builder.ipv4(src, dst, 17)
                    .udp(uint16_t(1024 + flow % 50000), uint16_t(flow % 3 ? 8000 : 9999));
            } else if (kind == FrameKind::roce) {  // same address pair, one QP per flow
                builder.ipv4({10, 1, 0, 1}, {10, 2, 0, 1}, 17).udp(49152, 4791).bth(4, flow);
            } else if (kind == FrameKind::vlan_tcp) {
                builder.vlan(uint16_t(100 + flow % 8))
                    .ipv4(src, dst, 6)
                    .tcp(uint16_t(1024 + flow % 50000), 50051);
            } else if (kind == FrameKind::qinq_tcp) {  // 802.1ad outer, 802.1Q inner
                builder.vlan(uint16_t(100 + flow % 8), 0x88A8)
                    .vlan(uint16_t(1024 + flow % 1024))
                    .ipv4(src, dst, 6)
                    .tcp(uint16_t(1024 + flow % 50000), 50051);
            } else if (kind == FrameKind::ipv6_tcp) {
                builder.ipv6(testing::ipv6(0xFD00, uint16_t(flow)), testing::ipv6(0xFD01, 1), 6)
                    .tcp(uint16_t(1024 + flow % 50000), 50051);
            } else {
                builder.ipv6(testing::ipv6(0xFD00, 1), testing::ipv6(0xFD01, 1), 17)
                    .udp(49152, 4791)
                    .bth(4, flow);
            }
            const size_t headers = builder.build().size();
            auto frame = builder.payload(uint32_t(frame_bytes - headers)).build();
            std::copy(frame.begin(), frame.end(),
                      bytes.begin() + ptrdiff_t(size_t{i} * frame_bytes));
        }
        for (uint32_t i = 0; i < count; ++i) {
            pointers.push_back(bytes.data() + size_t{i} * frame_bytes);
            lengths.push_back(frame_bytes);
        }
    }
};

ClassifierConfig hit_config(uint32_t flows, uint32_t slots_per_flow) {
    ClassifierConfig config = ClassifierConfig::defaults();
    config.flow_table_capacity = flows;
    config.flow_slots_per_flow = slots_per_flow;
    config.aging_scan_per_burst = 0;  // measure lookups only
    return config;
}

void hit_path(benchmark::State& state, bool burst, uint32_t slots_per_flow = kDefaultSlotsPerFlow,
              FrameKind kind = FrameKind::udp) {
    const uint32_t flows = uint32_t(state.range(0));
    static std::unique_ptr<Classifier> classifier;
    static std::unique_ptr<FramePool> traffic;
    static uint64_t prepared_for = 0;
    const uint64_t setup = uint64_t(kind) << 40 | uint64_t{slots_per_flow} << 32 | flows;
    if (prepared_for != setup) {
        classifier.reset();  // free the previous table first: two 1M tables are 1 GiB
        classifier = std::make_unique<Classifier>(hit_config(flows, slots_per_flow));
        const FramePool warmup(flows, 1, kind);
        std::vector<Result> out(flows);
        classifier->classify_burst(warmup.pointers.data(), warmup.lengths.data(), flows, 0, 0,
                                   out.data());
        traffic = std::make_unique<FramePool>(flows, 2, kind);  // same flows, another order
        prepared_for = setup;
    }
    Result out[kMaxBurst];
    uint32_t next = 0;
    uint64_t now = 1;
    for (auto _ : state) {
        if (burst) {
            classifier->classify_burst(&traffic->pointers[next], &traffic->lengths[next], kMaxBurst,
                                       0, now, out);
        } else {
            for (uint32_t i = 0; i < kMaxBurst; ++i) {
                out[i] = classifier->classify(traffic->pointers[next + i],
                                              traffic->lengths[next + i], 0, now);
            }
        }
        benchmark::DoNotOptimize(out);
        next += kMaxBurst;
        if (next + kMaxBurst > flows) next = 0;
        ++now;
    }
    if (classifier->counters().flow_inserts != flows) state.SkipWithError("flows missed the cache");
    state.SetItemsProcessed(int64_t(state.iterations()) * kMaxBurst);
}

void BM_HitPath_Burst(benchmark::State& state) {
    hit_path(state, true);
}
void BM_HitPath_Single(benchmark::State& state) {
    hit_path(state, false);
}
// The 1M-flow runs keep at least 0.5 s even in CI's brief pass (--benchmark_min_time=0.01):
// shorter, they cover a fraction of the flows once, right after the table was built, and
// measure that instead of the steady state (CI printed 25 Mpps where 0.5 s runs give 32).
BENCHMARK(BM_HitPath_Burst)->Arg(256)->Arg(4096);
BENCHMARK(BM_HitPath_Burst)->Arg(1 << 20)->MinTime(0.5);
// The same with the table at load 1/2 (flow_table.slots_per_flow 2: half the memory).
void BM_HitPath_Burst_TwoSlotsPerFlow(benchmark::State& state) {
    hit_path(state, true, 2);
}
BENCHMARK(BM_HitPath_Burst_TwoSlotsPerFlow)->Arg(1 << 20)->MinTime(0.5);
// 1M IPv6 TCP flows: an IPv6 entry's addresses sit in its cold line, a second line per hit.
void BM_HitPath_Ipv6Tcp_Burst_1M(benchmark::State& state) {
    hit_path(state, true, kDefaultSlotsPerFlow, FrameKind::ipv6_tcp);
}
BENCHMARK(BM_HitPath_Ipv6Tcp_Burst_1M)->Arg(1 << 20)->MinTime(0.5);
BENCHMARK(BM_HitPath_Single)->Arg(4096)->Arg(1 << 20);

// The hit path for 4096 hot flows of a gateway's other common frames: RoCEv2 (training; one
// QP per flow) and TCP behind one 802.1Q tag. Both take parse_simple_ipv4 since the fifth
// session (before: the full parser).
void hit_path_of(benchmark::State& state, FrameKind kind) {
    constexpr uint32_t kFlows = 4096;
    Classifier classifier(hit_config(kFlows, kDefaultSlotsPerFlow));
    const FramePool warmup(kFlows, 1, kind);
    std::vector<Result> warm(kFlows);
    classifier.classify_burst(warmup.pointers.data(), warmup.lengths.data(), kFlows, 0, 0,
                              warm.data());
    const FramePool traffic(kFlows, 2, kind);
    Result out[kMaxBurst];
    uint32_t next = 0;
    uint64_t now = 1;
    for (auto _ : state) {
        classifier.classify_burst(&traffic.pointers[next], &traffic.lengths[next], kMaxBurst, 0,
                                  now, out);
        benchmark::DoNotOptimize(out);
        next = next + 2 * kMaxBurst > kFlows ? 0 : next + kMaxBurst;
        ++now;
    }
    if (classifier.counters().flow_inserts != kFlows) state.SkipWithError("flows missed the cache");
    state.SetItemsProcessed(int64_t(state.iterations()) * kMaxBurst);
}
void BM_HitPath_Roce_Burst(benchmark::State& state) {
    hit_path_of(state, FrameKind::roce);
}
void BM_HitPath_VlanTcp_Burst(benchmark::State& state) {
    hit_path_of(state, FrameKind::vlan_tcp);
}
void BM_HitPath_QinQTcp_Burst(benchmark::State& state) {
    hit_path_of(state, FrameKind::qinq_tcp);
}
void BM_HitPath_Ipv6Tcp_Burst(benchmark::State& state) {
    hit_path_of(state, FrameKind::ipv6_tcp);
}
void BM_HitPath_Ipv6Roce_Burst(benchmark::State& state) {
    hit_path_of(state, FrameKind::ipv6_roce);
}
BENCHMARK(BM_HitPath_Roce_Burst);
BENCHMARK(BM_HitPath_VlanTcp_Burst);
BENCHMARK(BM_HitPath_QinQTcp_Burst);
BENCHMARK(BM_HitPath_Ipv6Tcp_Burst);
BENCHMARK(BM_HitPath_Ipv6Roce_Burst);

// The hit path with the default flow table (65536 entries) and its per-burst ageing step on
// (64 visits, 30 s timeout: nothing expires), as the dataplane runs it: `flows` hot flows.
void BM_HitPathAgeing_Burst(benchmark::State& state) {
    const uint32_t flows = uint32_t(state.range(0));
    Classifier classifier(ClassifierConfig::defaults());
    const FramePool traffic(std::max(flows, kMaxBurst), 7);
    std::vector<Result> warm(flows);
    classifier.classify_burst(traffic.pointers.data(), traffic.lengths.data(), flows, 0, 1,
                              warm.data());
    Result out[kMaxBurst];
    uint32_t next = 0;
    uint64_t now = 1;
    for (auto _ : state) {
        const uint32_t first = flows < kMaxBurst ? 0 : next;
        std::array<const uint8_t*, kMaxBurst> frames;
        for (uint32_t i = 0; i < kMaxBurst; ++i)
            frames[i] = traffic.pointers[flows < kMaxBurst ? (i % flows) : first + i];
        classifier.classify_burst(frames.data(), &traffic.lengths[0], kMaxBurst, 0, now, out);
        benchmark::DoNotOptimize(out);
        next += kMaxBurst;
        if (next + kMaxBurst > flows) next = 0;
        now += 10'000;  // 10 us per burst
    }
    if (classifier.flows().size() != flows) state.SkipWithError("unexpected flow count");
    state.SetItemsProcessed(int64_t(state.iterations()) * kMaxBurst);
}
BENCHMARK(BM_HitPathAgeing_Burst)->Arg(1)->Arg(4096);

// 4M random indices below `range`: the memory-ceiling benchmarks' access order.
std::vector<uint32_t> random_indices(uint32_t range, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<uint32_t> indices(size_t{1} << 22);
    for (uint32_t& index : indices)
        index = rng() % range;
    return indices;
}

// A two-line flow entry, as FlowTable stored until the fourth session (key, counters, times in
// the first line; decisions in the second).
struct alignas(64) TwoLineEntry {
    PacketKey key;
    uint64_t packets = 0;
    uint64_t bytes = 0;
    uint64_t last_seen_ns = 0;
    char second_line[64 - 24];
};
static_assert(sizeof(TwoLineEntry) == 128);

// The ceiling of the earlier index layout: the memory accesses per packet of a 1M-flow hit in
// it (a random 8-byte index slot out of 16 MiB, then both lines of a random 128-byte entry out
// of 128 MiB, one of them written; huge-page-advised like the flow table), 32 per group with
// every access prefetched, and nothing else.
void BM_MemoryCeiling_1M(benchmark::State& state) {
    constexpr uint32_t kEntries = 1u << 20;
    constexpr uint32_t kSlots = 2u << 20;
    static const auto slots = [] {
        std::vector<uint64_t, HugePageAllocator<uint64_t>> random_entries(kSlots);
        std::mt19937 rng(9);
        for (uint64_t& slot : random_entries)
            slot = rng() % kEntries;
        return random_entries;
    }();
    static std::vector<TwoLineEntry, HugePageAllocator<TwoLineEntry>> entries(kEntries);
    static const std::vector<uint32_t> order = random_indices(kSlots, 8);
    size_t next = 0;
    uint64_t sum = 0;
    for (auto _ : state) {
        const uint32_t* index = &order[next];
        uint64_t entry[kMaxBurst];
        for (uint32_t i = 0; i < kMaxBurst; ++i)
            __builtin_prefetch(&slots[index[i]]);
        for (uint32_t i = 0; i < kMaxBurst; ++i) {
            entry[i] = slots[index[i]];
            __builtin_prefetch(&entries[entry[i]]);
            __builtin_prefetch(reinterpret_cast<const char*>(&entries[entry[i]]) + 64);
        }
        for (uint32_t i = 0; i < kMaxBurst; ++i) {
            TwoLineEntry& flow = entries[entry[i]];
            sum += flow.key.words[0];
            ++flow.packets;
        }
        next += kMaxBurst;
        if (next + kMaxBurst > order.size()) next = 0;
    }
    benchmark::DoNotOptimize(sum);
    state.SetItemsProcessed(int64_t(state.iterations()) * kMaxBurst);
}
BENCHMARK(BM_MemoryCeiling_1M);

// The ceiling of the in-place layout (entries stored at their hash position, no index: FlowTable
// now): one random 128-byte slot out of 2M (256 MiB: a 1M-flow table at load 1/2), of which
// `lines` cache lines are prefetched and touched (1: FlowEntry; 2: FlowEntry + FlowColdState,
// as an IPv6 hit). Whatever the classifier does on top (parse, hash, compare, update) can
// only make BM_HitPath_Burst/1048576 slower than /1.
// On the 2-vCPU VM (README.md): 1 line 91-109, 2 lines 59-66 M lookups/s vs 46-57 for
// BM_MemoryCeiling_1M, whose 16 MiB index is mostly served by the 32 MiB L3. A core completes
// ~110-125 M random DRAM lines/s here, so DRAM lines per hit, not dependent reads, set the limit.
void BM_MemoryCeiling_InPlace_1M(benchmark::State& state) {
    constexpr uint32_t kSlots = 2u << 20;
    const int lines = int(state.range(0));
    static std::vector<TwoLineEntry, HugePageAllocator<TwoLineEntry>> slots(kSlots);
    static const std::vector<uint32_t> order = random_indices(kSlots, 8);
    size_t next = 0;
    uint64_t sum = 0;
    for (auto _ : state) {
        const uint32_t* index = &order[next];
        for (uint32_t i = 0; i < kMaxBurst; ++i) {
            const char* entry = reinterpret_cast<const char*>(&slots[index[i]]);
            __builtin_prefetch(entry);
            if (lines > 1) __builtin_prefetch(entry + 64);
        }
        for (uint32_t i = 0; i < kMaxBurst; ++i) {
            TwoLineEntry& flow = slots[index[i]];
            sum += flow.key.words[0];
            ++flow.packets;                                  // first line
            if (lines > 1) flow.second_line[0] = char(sum);  // second line
        }
        next += kMaxBurst;
        if (next + kMaxBurst > order.size()) next = 0;
    }
    benchmark::DoNotOptimize(sum);
    state.SetItemsProcessed(int64_t(state.iterations()) * kMaxBurst);
}
BENCHMARK(BM_MemoryCeiling_InPlace_1M)->Arg(1)->Arg(2);

IpPrefix v4_prefix(uint32_t address, uint8_t length) {
    IpPrefix prefix;
    prefix.address = {uint8_t(address >> 24), uint8_t(address >> 16), uint8_t(address >> 8),
                      uint8_t(address)};
    prefix.length = length;
    const uint32_t mask = length == 0 ? 0 : ~uint32_t{0} << (32 - length);
    const uint32_t net = address & mask;
    prefix.address = {uint8_t(net >> 24), uint8_t(net >> 16), uint8_t(net >> 8), uint8_t(net)};
    return prefix;
}

// A mixed rule set: dst /24 + protocol + port, src /16 + dst /32 + unaligned port range,
// dst /24 + DSCP, ingress port + VLAN, IPv6 dst /48 + port. Random priorities.
std::vector<Rule> make_rules(uint32_t count) {
    std::mt19937 rng(99);
    std::vector<Rule> rules(count);
    for (uint32_t i = 0; i < count; ++i) {
        Rule& rule = rules[i];
        rule.priority = rng() % 1000;
        rule.action.class_id = uint8_t(i % 3);
        rule.action.job_id = i;
        switch (i % 10) {
            case 0:
            case 1:
            case 2:
            case 3:
                rule.match.dst = v4_prefix((10u << 24) | (200u << 16) | ((i % 7) << 8), 24);
                rule.match.ip_protocol = i % 2 ? 6 : 17;
                rule.match.dst_ports = {uint16_t(10000 + i), uint16_t(10000 + i)};
                break;
            case 4:
            case 5:
                rule.match.src = v4_prefix((10u << 24) | ((i & 0xFF) << 16), 16);
                rule.match.dst = v4_prefix(0x0A000000u | i, 32);
                rule.match.dst_ports = {uint16_t(20000 + i), uint16_t(20002 + i)};
                break;
            case 6:
            case 7:
                rule.match.dst = v4_prefix((172u << 24) | (i << 8), 24);
                rule.match.dscp = uint8_t(i % 64);
                break;
            case 8:
                rule.match.ingress_port = uint16_t(1 + i % 4);
                rule.match.vlan_id = uint16_t(i % 4096);
                break;
            default: {
                IpPrefix v6;
                v6.ip_version = 6;
                v6.address = {0x20, 0x01, 0x0d, 0xb8, uint8_t(i >> 8), uint8_t(i)};
                v6.length = 48;
                rule.match.dst = v6;
                rule.match.dst_ports = {443, 443};
                break;
            }
        }
    }
    return rules;
}

void BM_MissPath(benchmark::State& state) {
    ClassifierConfig config = ClassifierConfig::defaults();
    config.rules = make_rules(uint32_t(state.range(0)));
    config.flow_table_capacity = 0;  // every packet takes the rule + heuristics path
    config.elephant_threshold_bytes = 0;
    Classifier classifier(config);
    const FramePool traffic(4096, 3);
    Result out[kMaxBurst];
    uint32_t next = 0;
    for (auto _ : state) {
        classifier.classify_burst(&traffic.pointers[next], &traffic.lengths[next], kMaxBurst, 0, 1,
                                  out);
        benchmark::DoNotOptimize(out);
        next = (next + kMaxBurst) % 4096;
    }
    state.counters["tuples"] = double(classifier.rules().tuple_count());
    state.SetItemsProcessed(int64_t(state.iterations()) * kMaxBurst);
}
BENCHMARK(BM_MissPath)->Arg(10)->Arg(1000)->Arg(10000);

// Flow-table miss with insertion: every packet is a new flow (rules + heuristics + insert).
// The table is emptied (untimed) after each pass over the 64k-flow pool.
void BM_NewFlowPath(benchmark::State& state) {
    constexpr uint32_t kFlows = 65536;
    ClassifierConfig config = ClassifierConfig::defaults();
    config.rules = make_rules(uint32_t(state.range(0)));
    config.flow_table_capacity = kFlows;
    config.aging_scan_per_burst = 0;
    Classifier classifier(config);
    const FramePool traffic(kFlows, 4);
    Result out[kMaxBurst];
    uint32_t next = 0;
    for (auto _ : state) {
        if (next == 0 && classifier.flows().size() != 0) {
            state.PauseTiming();
            while (classifier.flows().size() != 0) {
                classifier.expire_flows(uint64_t{1} << 62, kFlows);
            }
            state.ResumeTiming();
        }
        classifier.classify_burst(&traffic.pointers[next], &traffic.lengths[next], kMaxBurst, 0, 1,
                                  out);
        benchmark::DoNotOptimize(out);
        next = (next + kMaxBurst) % kFlows;
    }
    if (classifier.counters().flow_overflows != 0) state.SkipWithError("table overflowed");
    state.SetItemsProcessed(int64_t(state.iterations()) * kMaxBurst);
}
BENCHMARK(BM_NewFlowPath)->Arg(10)->Arg(10000);

std::vector<PacketKey> lookup_keys() {
    std::vector<PacketKey> keys;
    std::mt19937 rng(5);
    for (uint32_t i = 0; i < 4096; ++i) {
        KeyFields f;
        f.ip_version = 4;
        f.ip_protocol = i % 2 ? 6 : 17;
        f.src_address = {10, uint8_t(rng()), 0, 1};
        f.dst_address = {10, 200, uint8_t(rng() % 7), uint8_t(rng())};
        f.dst_port = uint16_t(10000 + rng() % 10000);
        keys.push_back(make_key(f));
    }
    return keys;
}

void BM_RuleLookup_Compiled(benchmark::State& state) {
    const std::vector<Rule> rules = make_rules(uint32_t(state.range(0)));
    const CompiledRuleTable table = CompiledRuleTable::build(rules, 1);
    const std::vector<PacketKey> keys = lookup_keys();
    size_t i = 0;
    for (auto _ : state) {
        benchmark::DoNotOptimize(table.match(keys[i]));
        i = (i + 1) % keys.size();
    }
    state.SetItemsProcessed(int64_t(state.iterations()));
}
BENCHMARK(BM_RuleLookup_Compiled)->Arg(10)->Arg(1000)->Arg(10000);

void BM_RuleLookup_Linear(benchmark::State& state) {
    const std::vector<Rule> rules = make_rules(uint32_t(state.range(0)));
    const std::vector<PacketKey> keys = lookup_keys();
    size_t i = 0;
    for (auto _ : state) {
        benchmark::DoNotOptimize(first_match_linear(rules, keys[i]));
        i = (i + 1) % keys.size();
    }
    state.SetItemsProcessed(int64_t(state.iterations()));
}
BENCHMARK(BM_RuleLookup_Linear)->Arg(10)->Arg(1000)->Arg(10000);

void BM_Parse(benchmark::State& state) {
    const FramePool traffic(4096, 6);
    ParsedPacket parsed;
    const ParserOptions options;
    uint32_t next = 0;
    for (auto _ : state) {
        parse_packet(traffic.pointers[next], kFrameBytes, options, parsed);
        benchmark::DoNotOptimize(parsed);
        next = (next + 1) % 4096;
    }
    state.SetItemsProcessed(int64_t(state.iterations()));
}
BENCHMARK(BM_Parse);

void BM_RuleTableBuild(benchmark::State& state) {
    const std::vector<Rule> rules = make_rules(uint32_t(state.range(0)));
    for (auto _ : state)
        benchmark::DoNotOptimize(CompiledRuleTable::build(rules, 1).tuple_count());
}
BENCHMARK(BM_RuleTableBuild)->Arg(10000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace twinlane::classifier

BENCHMARK_MAIN();
