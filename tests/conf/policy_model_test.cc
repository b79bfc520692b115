// What a valid policy turns into: defaults, resolved units and percentages, per-job expansion,
// cross-references as indexes, rule order.
#include <gtest/gtest.h>

#include <string>

#include "conf/load_policy.h"
#include "conf/policy.h"
#include "tests/conf/policy_test_util.h"

namespace twinlane::conf {
namespace {

using testing::kBase;
using testing::parse;

std::shared_ptr<const Policy> parse_ok(const std::string& text) {
    const PolicyResult result = parse(text);
    EXPECT_TRUE(result.ok()) << testing::describe(result);
    return result.policy;
}

TEST(PolicyModel, PortDefaults) {
    auto policy = parse_ok(std::string(kBase));
    ASSERT_TRUE(policy);
    ASSERT_EQ(policy->ports.size(), 2u);
    const PortPolicy& port = policy->ports[0];
    EXPECT_EQ(port.name, "a");
    EXPECT_EQ(port.device, "net_null0");
    EXPECT_EQ(port.rate_bits_per_sec, 10'000'000'000u);
    EXPECT_EQ(port.rx_queues, 1);
    EXPECT_EQ(port.tx_queues, 1);
    EXPECT_EQ(port.rx_descriptors, 1024);
    EXPECT_EQ(port.tx_descriptors, 1024);
    EXPECT_EQ(port.mtu, 1500);
    EXPECT_EQ(port.tx_budget_bytes, 25'000u);  // 20 us at 10 Gb/s
    EXPECT_EQ(port.burst_time_ns, 5'000u);
    EXPECT_EQ(port.mempool_mbufs, 8191u);
}

// The default budget (20 us) is less than a frame on slow or jumbo ports: it is raised to one,
// as an unstated shaper burst is. A stated budget below a frame stays an error (policy_errors).
TEST(PolicyModel, DefaultTxBudgetHoldsAFrame) {
    auto policy = parse_ok(
        "ports:\n"
        "  - {name: a, device: net_null0, rate: 100M}\n"
        "  - {name: b, device: net_null1, rate: 1G, mtu: 9000}\n"
        "  - {name: c, device: net_null2, rate: 1G}\n"
        "forwarding: [{from: a, to: b}, {from: b, to: c}]\n"
        "classes: [c]\n"
        "scheduler: {name: r, kind: fifo, class: c}\n");
    ASSERT_TRUE(policy);
    EXPECT_EQ(policy->ports[0].tx_budget_bytes, 1'518u);  // 20 us at 100M is 250 B
    EXPECT_EQ(policy->ports[1].tx_budget_bytes, 9'018u);  // 2500 B, below a jumbo frame
    EXPECT_EQ(policy->ports[2].tx_budget_bytes, 2'500u);  // 20 us at 1G holds a frame
}

TEST(PolicyModel, BurstTime) {
    auto policy = parse_ok(
        "ports:\n"
        "  - {name: a, device: net_null0, rate: 10G, burst_time: 2us}\n"
        "  - {name: b, device: net_null1, rate: 10G, burst_time: 0us}\n"
        "forwarding: [{from: a, to: b}]\n"
        "classes: [c]\n"
        "scheduler: {name: r, kind: fifo, class: c}\n");
    ASSERT_TRUE(policy);
    EXPECT_EQ(policy->ports[0].burst_time_ns, 2'000u);
    EXPECT_EQ(policy->ports[1].burst_time_ns, 0u);  // off: full bursts
}

TEST(PolicyModel, OtherSectionDefaults) {
    auto policy = parse_ok(std::string(kBase));
    ASSERT_TRUE(policy);
    EXPECT_EQ(policy->source, "test.yaml");
    EXPECT_EQ(policy->log_level, LogLevel::info);
    EXPECT_EQ(policy->lcores.mode, LcorePolicy::Mode::automatic);
    EXPECT_EQ(policy->control.socket_path, "/run/twinlane/twinlane.sock");
    EXPECT_EQ(policy->control.socket_mode, 0660u);
    EXPECT_TRUE(policy->metrics.enabled);
    EXPECT_EQ(policy->metrics.listen_address, "127.0.0.1");
    EXPECT_EQ(policy->metrics.port, 9464);
    const HeuristicsPolicy& heuristics = policy->classifier.heuristics;
    EXPECT_EQ(heuristics.default_class, 1u);  // the last class
    EXPECT_FALSE(heuristics.roce_class.has_value());
    EXPECT_FALSE(heuristics.serving.has_value());
    EXPECT_FALSE(heuristics.elephant.has_value());
    EXPECT_EQ(heuristics.malformed, MalformedAction::default_class);
    EXPECT_EQ(heuristics.reclass_gap_ns, 0u);  // reclassify at once, queued packets move
    EXPECT_EQ(policy->classifier.flow_table.capacity, 65536u);
    EXPECT_EQ(policy->classifier.flow_table.slots_per_flow, 4u);
    EXPECT_EQ(policy->classifier.flow_table.idle_timeout_ns, 30'000'000'000u);
}

TEST(PolicyModel, OneTreePerEgressPortWithPortOverride) {
    auto policy = parse_ok(
        "ports:\n"
        "  - {name: a, device: net_null0, rate: 10G}\n"
        "  - name: b\n"
        "    device: net_null1\n"
        "    rate: 1G\n"
        "    scheduler: {name: only, kind: fifo, class: c}\n"
        "  - {name: c, device: net_null2, rate: 10G}\n"
        "forwarding: [{from: a, to: b}, {from: b, to: a}]\n"
        "classes: [c]\n"
        "scheduler: {name: shared, kind: fq, class: c}\n");
    ASSERT_TRUE(policy);
    ASSERT_EQ(policy->egress_trees.size(), 2u);
    const EgressTree* to_a = policy->tree_for_port(0);
    const EgressTree* to_b = policy->tree_for_port(1);
    ASSERT_TRUE(to_a && to_b);
    EXPECT_EQ(to_a->root.name, "shared");
    EXPECT_EQ(to_a->root.rate_bits_per_sec, 10'000'000'000u);
    EXPECT_EQ(to_b->root.name, "only");
    EXPECT_EQ(to_b->root.rate_bits_per_sec, 1'000'000'000u);
    EXPECT_EQ(policy->tree_for_port(2), nullptr);  // port c never transmits
    EXPECT_EQ(policy->find_port("b"), 1u);
    EXPECT_FALSE(policy->find_port("z").has_value());
}

// Percentage, absolute and nested shapers with time- and byte-sized bursts.
constexpr std::string_view kShaperTree =
    "scheduler:\n"
    "  name: root\n"
    "  kind: strict\n"
    "  children:\n"
    "    - {name: g, kind: fq, class: gold, shaper: {rate: 50%}}\n"
    "    - name: rest\n"
    "      kind: drr\n"
    "      shaper: {rate: 4G, burst: 64KiB}\n"
    "      children:\n"
    "        - {name: k, kind: fifo, class: bulk, weight: 3, shaper: {rate: 25%, burst: 20us}}\n";

TEST(PolicyModel, ShapersResolvePerPortAndNest) {
    auto policy = parse_ok(std::string(testing::kBaseNoTree) + std::string(kShaperTree));
    ASSERT_TRUE(policy);
    const TreeNode& root = policy->egress_trees.at(0).root;
    EXPECT_EQ(root.kind, NodeKind::strict);
    EXPECT_FALSE(root.shaper.has_value());
    EXPECT_EQ(root.rate_bits_per_sec, 10'000'000'000u);
    const TreeNode& gold = root.children.at(0);
    ASSERT_TRUE(gold.shaper.has_value());
    EXPECT_EQ(gold.shaper->rate_bits_per_sec, 5'000'000'000u);
    EXPECT_EQ(gold.shaper->burst_bytes, 625'000u);  // default: 1 ms at 5 Gb/s
    const TreeNode& rest = root.children.at(1);
    EXPECT_EQ(rest.rate_bits_per_sec, 4'000'000'000u);
    EXPECT_EQ(rest.shaper->burst_bytes, 65'536u);
    const TreeNode& bulk = rest.children.at(0);
    EXPECT_EQ(bulk.weight, 3u);
    EXPECT_EQ(bulk.shaper->rate_bits_per_sec, 1'000'000'000u);  // 25% of the parent's 4G
    EXPECT_EQ(bulk.shaper->burst_bytes, 2'500u);                // 20 us at 1 Gb/s
    EXPECT_EQ(bulk.class_index, 1u);
    EXPECT_EQ(gold.class_index, 0u);
}

// `twinlane replay --link-rate`: the port is read at another rate; what the file sized for
// its own rate follows (percentages) or is fitted (absolute shapers, bursts below a frame).
TEST(PolicyModel, PortRateOverrideRescalesTheTree) {
    const std::string text = std::string(testing::kBaseNoTree) + std::string(kShaperTree);
    const PolicyResult plain = parse_policy(text, "t.yaml");
    ASSERT_TRUE(plain.ok()) << testing::describe(plain);
    const PolicyResult slow = parse_policy(text, "t.yaml", PortRateOverride{"b", 1'000'000'000});
    ASSERT_TRUE(slow.ok()) << testing::describe(slow);
    const auto& ports = slow.policy->ports;
    EXPECT_EQ(ports.at(0).rate_bits_per_sec, 10'000'000'000u) << "only the named port";
    EXPECT_EQ(ports.at(1).rate_bits_per_sec, 1'000'000'000u);
    EXPECT_GE(ports.at(1).tx_budget_bytes, 1518u);
    const TreeNode& root = slow.policy->egress_trees.at(0).root;
    EXPECT_EQ(root.rate_bits_per_sec, 1'000'000'000u);
    EXPECT_EQ(root.children.at(0).shaper->rate_bits_per_sec, 500'000'000u) << "50% of 1G";
    const TreeNode& rest = root.children.at(1);
    EXPECT_EQ(rest.shaper->rate_bits_per_sec, 1'000'000'000u) << "4G capped to the 1G link";
    EXPECT_EQ(rest.shaper->burst_bytes, 65'536u);
    const TreeNode& bulk = rest.children.at(0);
    EXPECT_EQ(bulk.shaper->rate_bits_per_sec, 250'000'000u) << "25% of the capped parent";
    EXPECT_EQ(bulk.shaper->burst_bytes, 1518u) << "20 us at 250M is 625 B: raised to a frame";

    // The same file with a 1G port rate written in it is refused: the fitting is only for
    // a rate given outside the file.
    std::string written = text;
    written.replace(written.find("net_null1, rate: 10G"), 20, "net_null1, rate: 1G");
    const PolicyResult refused = parse_policy(written, "t.yaml");
    EXPECT_FALSE(refused.ok());
    EXPECT_NE(testing::find_error(refused, "scheduler.children[1].shaper.rate"), nullptr)
        << testing::describe(refused);
    // An override naming no port of the file changes nothing.
    const PolicyResult other = parse_policy(text, "t.yaml", PortRateOverride{"zz", 1'000'000'000});
    ASSERT_TRUE(other.ok());
    EXPECT_EQ(other.policy->ports.at(1).rate_bits_per_sec, 10'000'000'000u);
}

TEST(PolicyModel, LeafParametersAndDefaults) {
    auto policy =
        parse_ok(std::string(testing::kBaseNoTree) +
                 "scheduler:\n"
                 "  name: root\n"
                 "  kind: drr\n"
                 "  children:\n"
                 "    - name: g\n"
                 "      kind: fq\n"
                 "      class: gold\n"
                 "      buckets: 256\n"
                 "      sparse_boost: off\n"
                 "      limit: {packets: 100, bytes: 1MiB}\n"
                 "      codel: {target: 1ms, interval: 20ms, ecn: false}\n"
                 "      ecn: {kmin: 10KB, kmax: 100KB, pmax: 12.5%, drop_non_ect: false}\n"
                 "    - {name: k, kind: fifo, class: bulk, ecn: {enabled: false}}\n");
    ASSERT_TRUE(policy);
    const TreeNode& gold = policy->egress_trees.at(0).root.children.at(0);
    EXPECT_EQ(gold.fq_buckets, 256u);
    EXPECT_FALSE(gold.fq_sparse_boost);
    EXPECT_EQ(gold.limit_packets, 100u);
    EXPECT_EQ(gold.limit_bytes, 1'048'576u);
    ASSERT_TRUE(gold.codel.has_value());
    EXPECT_EQ(gold.codel->target_ns, 1'000'000u);
    EXPECT_EQ(gold.codel->interval_ns, 20'000'000u);
    EXPECT_FALSE(gold.codel->ecn);
    ASSERT_TRUE(gold.ecn.has_value());
    EXPECT_EQ(gold.ecn->kmin_bytes, 10'000u);
    EXPECT_EQ(gold.ecn->kmax_bytes, 100'000u);
    EXPECT_EQ(gold.ecn->pmax_ppm, 125'000u);
    EXPECT_FALSE(gold.ecn->drop_non_ect);

    const TreeNode& bulk = policy->egress_trees.at(0).root.children.at(1);
    EXPECT_FALSE(bulk.ecn.has_value());
    EXPECT_FALSE(bulk.codel.has_value());
    EXPECT_EQ(bulk.limit_packets, 1024u);
    EXPECT_EQ(bulk.limit_bytes, 4u << 20);
    EXPECT_EQ(bulk.weight, 1u);
}

TEST(PolicyModel, PerJobListedExpandsWithACatchAllChild) {
    auto policy =
        parse_ok(std::string(testing::kBaseNoTree) +
                 "scheduler:\n"
                 "  name: root\n"
                 "  kind: strict\n"
                 "  children:\n"
                 "    - {name: g, kind: fifo, class: gold}\n"
                 "    - name: train\n"
                 "      kind: drr\n"
                 "      class: bulk\n"
                 "      per_job: {jobs: [7, 3], leaf: {kind: fq, buckets: 64, ecn: {pmax: 5%}}}\n");
    ASSERT_TRUE(policy);
    const TreeNode& train = policy->egress_trees.at(0).root.children.at(1);
    EXPECT_EQ(train.class_index, 1u);
    EXPECT_EQ(train.job_split.mode, JobSplit::Mode::listed);
    EXPECT_EQ(train.job_split.jobs, (std::vector<uint32_t>{7, 3}));
    ASSERT_EQ(train.children.size(), 3u);
    EXPECT_EQ(train.children[0].name, "train.job7");
    EXPECT_EQ(train.children[1].name, "train.job3");
    EXPECT_EQ(train.children[2].name, "train.other_jobs");
    for (const TreeNode& child : train.children) {
        EXPECT_EQ(child.kind, NodeKind::fq);
        EXPECT_EQ(child.fq_buckets, 64u);
        ASSERT_TRUE(child.ecn.has_value());
        EXPECT_EQ(child.ecn->pmax_ppm, 50'000u);
        EXPECT_FALSE(child.class_index.has_value());
        EXPECT_EQ(child.weight, 1u);
    }
}

TEST(PolicyModel, PerJobModulo) {
    auto policy = parse_ok(
        std::string(testing::kBaseNoTree) +
        "scheduler:\n"
        "  name: root\n"
        "  kind: drr\n"
        "  children:\n"
        "    - {name: g, kind: fifo, class: gold}\n"
        "    - {name: t, kind: drr, class: bulk, per_job: {count: 3, leaf: {kind: fifo}}}\n");
    ASSERT_TRUE(policy);
    const TreeNode& t = policy->egress_trees.at(0).root.children.at(1);
    EXPECT_EQ(t.job_split.mode, JobSplit::Mode::modulo);
    EXPECT_EQ(t.job_split.count, 3u);
    ASSERT_EQ(t.children.size(), 3u);
    EXPECT_EQ(t.children[2].name, "t.job2");
    EXPECT_EQ(t.children[2].kind, NodeKind::fifo);
}

TEST(PolicyModel, ClassifierRulesAreSortedAndResolved) {
    auto policy =
        parse_ok(std::string(kBase) +
                 "classifier:\n"
                 "  rules:\n"
                 "    - name: late\n"
                 "      priority: 20\n"
                 "      match: {ingress_port: b, vlan: 7, dst: 'fd00:1::/32', proto: udp, "
                 "src_port: 1000-2000, dst_port: 4791, dscp: 26, roce: {qp: 0x10-0x1f}}\n"
                 "      action: {class: bulk, job: 9, dscp: 10}\n"
                 "    - priority: 10\n"
                 "      match: {src: 192.168.1.0/24, proto: 6}\n"
                 "      action: {class: gold}\n"
                 "  heuristics:\n"
                 "    roce: bulk\n"
                 "    dscp_map: {46: gold, 10: bulk}\n"
                 "    serving: {ports: [8000-8001, 50051], class: gold}\n"
                 "    elephant: {bytes: 10MB, window: 1s, quiet: 2s, class: bulk}\n"
                 "    reclass_gap: 5ms\n"
                 "    default_class: gold\n"
                 "    malformed: drop\n"
                 "    vxlan_inner: true\n"
                 "  flow_table: {capacity: 4096, slots_per_flow: 2, idle_timeout: 5s}\n");
    ASSERT_TRUE(policy);
    const ClassifierPolicy& classifier = policy->classifier;
    ASSERT_EQ(classifier.rules.size(), 2u);
    const ClassifierRule& first = classifier.rules[0];
    EXPECT_EQ(first.name, "rule1");  // unnamed: numbered by position in the file
    EXPECT_EQ(first.priority, 10u);
    ASSERT_TRUE(first.match.src.has_value());
    EXPECT_EQ(first.match.src->version, 4);
    EXPECT_EQ(first.match.src->length, 24);
    EXPECT_EQ(first.match.src->address[0], 192);
    EXPECT_EQ(first.match.src->address[2], 1);
    EXPECT_EQ(first.match.proto, 6);
    EXPECT_EQ(first.action.class_index, 0u);

    const ClassifierRule& late = classifier.rules[1];
    EXPECT_EQ(late.name, "late");
    EXPECT_EQ(late.match.ingress_port, 1u);
    EXPECT_EQ(late.match.vlan, 7);
    ASSERT_TRUE(late.match.dst.has_value());
    EXPECT_EQ(late.match.dst->version, 6);
    EXPECT_EQ(late.match.dst->address[0], 0xfd);
    EXPECT_EQ(late.match.dst->address[3], 0x01);
    EXPECT_EQ(late.match.proto, 17);
    EXPECT_EQ(late.match.src_port->first, 1000u);
    EXPECT_EQ(late.match.src_port->last, 2000u);
    EXPECT_EQ(late.match.dst_port->first, 4791u);
    EXPECT_EQ(late.match.dst_port->last, 4791u);
    EXPECT_EQ(late.match.dscp, 26);
    EXPECT_EQ(late.match.roce, true);
    EXPECT_EQ(late.match.roce_qp->first, 16u);
    EXPECT_EQ(late.match.roce_qp->last, 31u);
    EXPECT_EQ(late.action.class_index, 1u);
    EXPECT_EQ(late.action.job, 9u);
    EXPECT_EQ(late.action.remark_dscp, 10);

    const HeuristicsPolicy& h = classifier.heuristics;
    EXPECT_EQ(h.roce_class, 1u);
    EXPECT_EQ(h.dscp_class[46], 0u);
    EXPECT_EQ(h.dscp_class[10], 1u);
    EXPECT_FALSE(h.dscp_class[0].has_value());
    ASSERT_TRUE(h.serving.has_value());
    ASSERT_EQ(h.serving->ports.size(), 2u);
    EXPECT_EQ(h.serving->ports[0].last, 8001u);
    ASSERT_TRUE(h.elephant.has_value());
    EXPECT_EQ(h.elephant->bytes, 10'000'000u);
    EXPECT_EQ(h.elephant->window_ns, 1'000'000'000u);
    EXPECT_EQ(h.elephant->quiet_ns, 2'000'000'000u);
    EXPECT_EQ(h.reclass_gap_ns, 5'000'000u);
    EXPECT_EQ(h.default_class, 0u);
    EXPECT_EQ(h.malformed, MalformedAction::drop);
    EXPECT_TRUE(h.vxlan_inner);
    EXPECT_EQ(classifier.flow_table.capacity, 4096u);
    EXPECT_EQ(classifier.flow_table.slots_per_flow, 2u);
    EXPECT_EQ(classifier.flow_table.idle_timeout_ns, 5'000'000'000u);
}

TEST(PolicyModel, ExplicitAndSingleLcores) {
    auto explicit_roles = parse_ok(std::string(kBase) +
                                   "lcores:\n"
                                   "  rx: [{lcore: 1, poll: [{port: a, queues: [0]}]}]\n"
                                   "  scheduler: [{lcore: 2, ports: [b]}]\n");
    ASSERT_TRUE(explicit_roles);
    const LcorePolicy& lcores = explicit_roles->lcores;
    EXPECT_EQ(lcores.mode, LcorePolicy::Mode::explicit_roles);
    ASSERT_EQ(lcores.rx.size(), 1u);
    EXPECT_EQ(lcores.rx[0].lcore, 1u);
    ASSERT_EQ(lcores.rx[0].queues.size(), 1u);
    EXPECT_EQ(lcores.rx[0].queues[0].port, 0u);
    ASSERT_EQ(lcores.scheduler.size(), 1u);
    EXPECT_EQ(lcores.scheduler[0].egress_ports, (std::vector<size_t>{1}));

    auto single = parse_ok(std::string(kBase) + "lcores: {single: 3}\n");
    ASSERT_TRUE(single);
    EXPECT_EQ(single->lcores.mode, LcorePolicy::Mode::run_to_completion);
    EXPECT_EQ(single->lcores.single_lcore, 3u);
}

TEST(PolicyModel, ControlMetricsAndLogLevel) {
    auto policy = parse_ok(std::string(kBase) +
                           "log_level: debug\n"
                           "control: {socket: /tmp/tl.sock, mode: 0600}\n"
                           "metrics: {enabled: false, listen: '::', port: 9100}\n");
    ASSERT_TRUE(policy);
    EXPECT_EQ(policy->log_level, LogLevel::debug);
    EXPECT_EQ(policy->control.socket_path, "/tmp/tl.sock");
    EXPECT_EQ(policy->control.socket_mode, 0600u);
    EXPECT_FALSE(policy->metrics.enabled);
    EXPECT_EQ(policy->metrics.listen_address, "::");
    EXPECT_EQ(policy->metrics.port, 9100);
}

TEST(PolicyModel, ShortAndLongClassForms) {
    auto policy =
        parse_ok(std::string(kBase).replace(std::string(kBase).find("classes: [gold, bulk]"), 21,
                                            "classes: [{name: gold, description: fast}, bulk]"));
    ASSERT_TRUE(policy);
    ASSERT_EQ(policy->classes.size(), 2u);
    EXPECT_EQ(policy->find_class("gold"), 0u);
    EXPECT_EQ(policy->find_class("bulk"), 1u);
}

}  // namespace
}  // namespace twinlane::conf
