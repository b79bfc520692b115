// Rule lookup: twinlane's CompiledRuleTable against DPDK's rte_acl on the same IPv4 5-tuple rule
// sets (10 / 1k / 10k rules: protocol, source/destination prefixes, port ranges), to decide
// which one the classifier should use. Lookups are batched 32 keys per call for both (rte_acl
// is built for batches). The only classifier binary that links DPDK; it initialises EAL without
// hugepages or devices (--no-huge --no-pci --no-shconf).
#include <benchmark/benchmark.h>
#include <rte_acl.h>
#include <rte_eal.h>

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "classifier/rule_table.h"

namespace twinlane::classifier {
namespace {

constexpr uint32_t kBatch = 32;
constexpr uint32_t kKeys = 4096;

struct AclTuple {  // rte_acl input: network byte order, first field 1 byte
    uint8_t protocol;
    uint32_t src;
    uint32_t dst;
    uint16_t src_port;
    uint16_t dst_port;
};

rte_acl_field_def acl_fields[5] = {
    {RTE_ACL_FIELD_TYPE_BITMASK, sizeof(uint8_t), 0, 0, offsetof(AclTuple, protocol)},
    {RTE_ACL_FIELD_TYPE_MASK, sizeof(uint32_t), 1, 1, offsetof(AclTuple, src)},
    {RTE_ACL_FIELD_TYPE_MASK, sizeof(uint32_t), 2, 2, offsetof(AclTuple, dst)},
    {RTE_ACL_FIELD_TYPE_RANGE, sizeof(uint16_t), 3, 3, offsetof(AclTuple, src_port)},
    {RTE_ACL_FIELD_TYPE_RANGE, sizeof(uint16_t), 4, 3, offsetof(AclTuple, dst_port)},
};
RTE_ACL_RULE_DEF(AclRule, 5);

struct FiveTuple {
    uint8_t protocol;
    uint32_t src, dst;
    uint16_t src_port, dst_port;
};

IpPrefix prefix_of(uint32_t address, uint8_t length) {
    const uint32_t net = length == 0 ? 0 : address & (~uint32_t{0} << (32 - length));
    IpPrefix prefix;
    prefix.address = {uint8_t(net >> 24), uint8_t(net >> 16), uint8_t(net >> 8), uint8_t(net)};
    prefix.length = length;
    return prefix;
}

std::vector<Rule> five_tuple_rules(uint32_t count) {
    std::mt19937 rng(17);
    std::vector<Rule> rules(count);
    for (uint32_t i = 0; i < count; ++i) {
        Rule& rule = rules[i];
        rule.priority = rng() % 1000;
        rule.action.job_id = i;
        if (i % 2) rule.match.ip_protocol = i % 4 == 1 ? 6 : 17;
        rule.match.dst = prefix_of((10u << 24) | (rng() & 0xFFFFFF), uint8_t(i % 3 == 0 ? 24 : 32));
        if (i % 5 == 0) rule.match.src = prefix_of((192u << 24) | (rng() & 0xFFFF00), 16);
        const uint16_t port = uint16_t(1024 + rng() % 30000);
        rule.match.dst_ports =
            i % 4 == 0 ? PortRange{port, uint16_t(port + 100)} : PortRange{port, port};
    }
    return rules;
}

std::vector<FiveTuple> lookup_tuples(const std::vector<Rule>& rules) {
    std::mt19937 rng(23);
    std::vector<FiveTuple> tuples(kKeys);
    for (FiveTuple& t : tuples) {
        // Half aimed at a rule's destination/port, half random: both hits and misses.
        const Rule& rule = rules[rng() % rules.size()];
        const auto& a = rule.match.dst->address;
        const uint32_t dst =
            (uint32_t{a[0]} << 24) | (uint32_t{a[1]} << 16) | (uint32_t{a[2]} << 8) | a[3];
        const bool aimed = rng() % 2 == 0;
        t.protocol = rule.match.ip_protocol.value_or(6);
        t.src = (192u << 24) | (rng() & 0xFFFFFF);
        t.dst = aimed ? dst | (rule.match.dst->length == 24 ? rng() & 0xFF : 0)
                      : (10u << 24) | (rng() & 0xFFFFFF);
        t.src_port = uint16_t(rng());
        t.dst_port = aimed ? rule.match.dst_ports.first : uint16_t(rng());
    }
    return tuples;
}

PacketKey key_of(const FiveTuple& t) {
    KeyFields f;
    f.ip_version = 4;
    f.ip_protocol = t.protocol;
    f.src_address = {uint8_t(t.src >> 24), uint8_t(t.src >> 16), uint8_t(t.src >> 8),
                     uint8_t(t.src)};
    f.dst_address = {uint8_t(t.dst >> 24), uint8_t(t.dst >> 16), uint8_t(t.dst >> 8),
                     uint8_t(t.dst)};
    f.src_port = t.src_port;
    f.dst_port = t.dst_port;
    return make_key(f);
}

void BM_Compiled(benchmark::State& state) {
    const std::vector<Rule> rules = five_tuple_rules(uint32_t(state.range(0)));
    const CompiledRuleTable table = CompiledRuleTable::build(rules, 1);
    std::vector<PacketKey> keys;
    for (const FiveTuple& t : lookup_tuples(rules))
        keys.push_back(key_of(t));
    uint32_t results[kBatch];
    uint32_t next = 0;
    for (auto _ : state) {
        for (uint32_t i = 0; i < kBatch; ++i)
            results[i] = table.match(keys[next + i]);
        benchmark::DoNotOptimize(results);
        next = (next + kBatch) % kKeys;
    }
    state.counters["tuples"] = double(table.tuple_count());
    state.SetItemsProcessed(int64_t(state.iterations()) * kBatch);
}

rte_acl_ctx* build_acl(const std::vector<Rule>& rules, const std::string& name) {
    rte_acl_param param{};
    param.name = name.c_str();
    param.socket_id = SOCKET_ID_ANY;
    param.rule_size = RTE_ACL_RULE_SZ(5);
    param.max_rule_num = uint32_t(rules.size());
    rte_acl_ctx* ctx = rte_acl_create(&param);
    if (ctx == nullptr) return nullptr;
    // rte_acl: higher priority wins, so rank by (priority, position) like CompiledRuleTable.
    std::vector<uint32_t> order(rules.size());
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return rules[a].priority < rules[b].priority; });
    std::vector<AclRule> acl_rules(rules.size());
    for (uint32_t rank = 0; rank < order.size(); ++rank) {
        const Rule& rule = rules[order[rank]];
        AclRule& out = acl_rules[rank];
        out = AclRule{};
        out.data.category_mask = 1;
        out.data.priority = int32_t(RTE_ACL_MAX_PRIORITY - rank);
        out.data.userdata = order[rank] + 1;  // 0 means "no match"
        out.field[0].value.u8 = rule.match.ip_protocol.value_or(0);
        out.field[0].mask_range.u8 = rule.match.ip_protocol ? 0xFF : 0;
        auto set_prefix = [](rte_acl_field& field, const std::optional<IpPrefix>& prefix) {
            if (!prefix) return;
            const auto& a = prefix->address;
            field.value.u32 =
                (uint32_t{a[0]} << 24) | (uint32_t{a[1]} << 16) | (uint32_t{a[2]} << 8) | a[3];
            field.mask_range.u32 = prefix->length;
        };
        set_prefix(out.field[1], rule.match.src);
        set_prefix(out.field[2], rule.match.dst);
        out.field[3].value.u16 = rule.match.src_ports.first;
        out.field[3].mask_range.u16 = rule.match.src_ports.last;
        out.field[4].value.u16 = rule.match.dst_ports.first;
        out.field[4].mask_range.u16 = rule.match.dst_ports.last;
    }
    rte_acl_config config{};
    config.num_categories = 1;
    config.num_fields = 5;
    std::copy(std::begin(acl_fields), std::end(acl_fields), config.defs);
    if (rte_acl_add_rules(ctx, reinterpret_cast<const rte_acl_rule*>(acl_rules.data()),
                          uint32_t(acl_rules.size())) != 0 ||
        rte_acl_build(ctx, &config) != 0) {
        rte_acl_free(ctx);
        return nullptr;
    }
    return ctx;
}

void BM_RteAcl(benchmark::State& state) {
    const std::vector<Rule> rules = five_tuple_rules(uint32_t(state.range(0)));
    rte_acl_ctx* ctx = build_acl(rules, "bench" + std::to_string(state.range(0)));
    if (ctx == nullptr) {
        state.SkipWithError("rte_acl build failed");
        return;
    }
    std::vector<AclTuple> tuples;
    std::vector<const uint8_t*> data;
    const std::vector<FiveTuple> lookups = lookup_tuples(rules);
    tuples.reserve(lookups.size());
    for (const FiveTuple& t : lookups) {
        tuples.push_back({t.protocol, __builtin_bswap32(t.src), __builtin_bswap32(t.dst),
                          __builtin_bswap16(t.src_port), __builtin_bswap16(t.dst_port)});
    }
    for (const AclTuple& t : tuples)
        data.push_back(reinterpret_cast<const uint8_t*>(&t));
    // Agreement check (untimed): both engines must pick the same rule for every key.
    const CompiledRuleTable table = CompiledRuleTable::build(rules, 1);
    std::vector<uint32_t> all(kKeys);
    rte_acl_classify(ctx, data.data(), all.data(), kKeys, 1);
    for (uint32_t i = 0; i < kKeys; ++i) {
        const uint32_t expected = table.match(key_of(lookups[i]));
        if (all[i] != (expected == kNoRule ? 0 : expected + 1)) {
            state.SkipWithError("rte_acl and CompiledRuleTable disagree");
            rte_acl_free(ctx);
            return;
        }
    }
    uint32_t results[kBatch];
    uint32_t next = 0;
    for (auto _ : state) {
        rte_acl_classify(ctx, &data[next], results, kBatch, 1);
        benchmark::DoNotOptimize(results);
        next = (next + kBatch) % kKeys;
    }
    state.SetItemsProcessed(int64_t(state.iterations()) * kBatch);
    rte_acl_free(ctx);
}

BENCHMARK(BM_Compiled)->Arg(10)->Arg(1000)->Arg(10000);
BENCHMARK(BM_RteAcl)->Arg(10)->Arg(1000)->Arg(10000);

}  // namespace
}  // namespace twinlane::classifier

int main(int argc, char** argv) {
    // --no-shconf: no shared runtime files, so parallel runs cannot collide (DPDK 22.11
    // refuses --in-memory together with --no-huge).
    const char* eal_args[] = {"classifier_acl_bench", "--no-huge",         "-m", "512", "--no-pci",
                              "--no-shconf",          "--log-level=error", "-l", "0"};
    if (rte_eal_init(int(std::size(eal_args)), const_cast<char**>(eal_args)) < 0) {
        std::fprintf(stderr, "classifier_acl_bench: EAL init failed\n");
        return 1;
    }
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    rte_eal_cleanup();
    return 0;
}
