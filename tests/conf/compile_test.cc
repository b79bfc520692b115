// Policy -> sched::TreeSpec per egress port and classifier::ClassifierConfig.
#include "conf/compile.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "conf/load_policy.h"
#include "sched/scheduler.h"
#include "tests/conf/policy_test_util.h"

namespace twinlane::conf {
namespace {

std::shared_ptr<const Policy> load_ok(const std::string& path) {
    const PolicyResult result = load_policy(path);
    EXPECT_TRUE(result.ok()) << testing::describe(result);
    return result.policy;
}

std::shared_ptr<const Policy> parse_ok(const std::string& text) {
    const PolicyResult result = testing::parse(text);
    EXPECT_TRUE(result.ok()) << testing::describe(result);
    return result.policy;
}

const sched::NodeSpec* find_node(const sched::TreeSpec& tree, const std::string& name) {
    for (const sched::NodeSpec& node : tree.nodes) {
        if (node.name == name) return &node;
    }
    return nullptr;
}

TEST(Compile, EveryExampleCompilesAndBuildsASchedulerPerEgressPort) {
    for (const auto& entry : std::filesystem::directory_iterator(TWINLANE_CONF_DIR)) {
        if (entry.path().extension() != ".yaml") continue;
        auto policy = load_ok(entry.path().string());
        ASSERT_TRUE(policy) << entry.path();
        const CompiledPolicy compiled = compile_policy(*policy);
        for (const std::string& error : compiled.errors)
            ADD_FAILURE() << entry.path() << ": " << error;
        ASSERT_EQ(compiled.egress.size(), policy->egress_trees.size());
        for (const CompiledEgress& egress : compiled.egress) {
            auto built = sched::Scheduler::build(egress.tree);
            ASSERT_NE(built.scheduler, nullptr)
                << entry.path() << ": " << (built.error ? built.error->to_string() : "");
            // Every class reaches a real leaf of the built scheduler, for any job.
            for (uint8_t cls = 0; cls < policy->classes.size(); ++cls) {
                for (uint32_t job : {0u, 1u, 101u, 205u, 4'000'000'000u}) {
                    EXPECT_LT(egress.leaves.leaf(cls, job), built.scheduler->leaf_count());
                }
            }
        }
    }
}

TEST(Compile, DefaultPolicyTree) {
    auto policy = load_ok(std::string(TWINLANE_CONF_DIR) + "/default.yaml");
    ASSERT_TRUE(policy);
    const CompiledPolicy compiled = compile_policy(*policy);
    ASSERT_TRUE(compiled.ok());
    const sched::TreeSpec& tree = compiled.egress.at(0).tree;
    EXPECT_EQ(tree.max_packet_bytes, 9018u);  // mtu 9000 + Ethernet and VLAN headers
    // Pre-order: root, inference, bulk, training, its 8 job leaves, other.
    ASSERT_EQ(tree.nodes.size(), 13u);
    EXPECT_EQ(tree.nodes[0].name, "root");
    EXPECT_EQ(tree.nodes[0].parent, "");
    EXPECT_EQ(tree.nodes[0].shaper.rate_bits_per_sec, 10'000'000'000u);
    EXPECT_EQ(tree.nodes[0].shaper.burst_bytes, 25'000u);  // the port's 20 us tx_budget
    EXPECT_EQ(tree.nodes[1].name, "inference");
    EXPECT_EQ(tree.nodes[1].priority, 0u);
    EXPECT_EQ(tree.nodes[1].shaper.rate_bits_per_sec, 5'000'000'000u);
    EXPECT_EQ(tree.nodes[1].shaper.burst_bytes, 625'000u);  // 1 ms at 5 Gb/s
    EXPECT_TRUE(tree.nodes[1].codel.enabled);
    EXPECT_EQ(tree.nodes[1].codel.target_ns, 500'000u);
    EXPECT_EQ(tree.nodes[2].name, "bulk");
    EXPECT_EQ(tree.nodes[2].priority, 1u);
    EXPECT_EQ(tree.nodes[2].shaper.rate_bits_per_sec, 0u);
    EXPECT_EQ(tree.nodes[3].name, "training");
    EXPECT_EQ(tree.nodes[3].weight, 4u);
    EXPECT_EQ(tree.nodes[4].name, "training.job0");
    EXPECT_EQ(tree.nodes[4].parent, "training");
    EXPECT_EQ(tree.nodes[4].kind, sched::NodeKind::fq);
    EXPECT_TRUE(tree.nodes[4].red.enabled);
    EXPECT_EQ(tree.nodes[4].red.kmin_bytes, 20'000u);
    EXPECT_EQ(tree.nodes[4].red.kmax_bytes, 200'000u);
    EXPECT_DOUBLE_EQ(tree.nodes[4].red.pmax, 0.2);
    EXPECT_EQ(tree.nodes[4].fq_buckets, 4096u);
    EXPECT_EQ(tree.nodes[4].limit_packets, 2048u);
    // A per_job node's leaves are fair by job (jobs may share one); no other leaf is.
    for (const sched::NodeSpec& node : tree.nodes)
        EXPECT_EQ(node.fq_by_job, node.parent == "training") << node.name;
    EXPECT_EQ(tree.nodes[11].name, "training.job7");
    EXPECT_EQ(tree.nodes[12].name, "other");
    EXPECT_EQ(tree.nodes[12].kind, sched::NodeKind::fifo);
    EXPECT_EQ(tree.nodes[12].limit_bytes, 1u << 20);
    EXPECT_EQ(tree.default_leaf, "other");

    // Leaves in order: inference 0, training.job0..7 = 1..8, other 9.
    const CompiledEgress& egress = compiled.egress.at(0);
    const auto cls = [&](const char* name) {
        return static_cast<uint8_t>(*policy->find_class(name));
    };
    EXPECT_EQ(egress.leaves.leaf(cls("inference"), 77), 0);
    EXPECT_EQ(egress.leaves.leaf(cls("training"), 0), 1);
    EXPECT_EQ(egress.leaves.leaf(cls("training"), 9), 2);  // 9 % 8 = 1
    EXPECT_EQ(egress.leaves.leaf(cls("training"), 7), 8);
    // job_by_source's job of 198.18.20.0/24, the fifth gen job, which no rule names: leaf 4 + 1
    EXPECT_EQ(egress.leaves.leaf(cls("training"), (198u << 16) | (18u << 8) | 20u), 5);
    EXPECT_EQ(egress.leaves.leaf(cls("other"), 7), 9);
}

TEST(Compile, ListedJobsFallBackToTheCatchAllLeaf) {
    auto policy = parse_ok(
        std::string(testing::kBaseNoTree) +
        "scheduler:\n"
        "  name: root\n"
        "  kind: strict\n"
        "  children:\n"
        "    - {name: g, kind: fifo, class: gold}\n"
        "    - {name: t, kind: drr, class: bulk, per_job: {jobs: [7, 3], leaf: {kind: fq}}}\n");
    ASSERT_TRUE(policy);
    const CompiledPolicy compiled = compile_policy(*policy);
    ASSERT_TRUE(compiled.ok());
    const CompiledEgress& egress = compiled.egress.at(0);
    EXPECT_EQ(egress.leaves.leaf(1, 7), 1);
    EXPECT_EQ(egress.leaves.leaf(1, 3), 2);
    EXPECT_EQ(egress.leaves.leaf(1, 0), 3);
    EXPECT_EQ(egress.leaves.leaf(1, 12345), 3);
    EXPECT_NE(find_node(egress.tree, "t.other_jobs"), nullptr);
    EXPECT_EQ(egress.tree.default_leaf, "t.other_jobs");  // bulk is the default (last) class
}

TEST(Compile, RootShaperBelowThePortRateIsKept) {
    auto policy = parse_ok(std::string(testing::kBaseNoTree) +
                           "scheduler:\n"
                           "  name: root\n"
                           "  kind: drr\n"
                           "  shaper: {rate: 80%, burst: 30KB}\n"
                           "  children:\n"
                           "    - {name: g, kind: fifo, class: gold}\n"
                           "    - {name: k, kind: fifo, class: bulk}\n");
    ASSERT_TRUE(policy);
    const CompiledPolicy compiled = compile_policy(*policy);
    ASSERT_TRUE(compiled.ok());
    EXPECT_EQ(compiled.egress.at(0).tree.nodes[0].shaper.rate_bits_per_sec, 8'000'000'000u);
    EXPECT_EQ(compiled.egress.at(0).tree.nodes[0].shaper.burst_bytes, 30'000u);
}

TEST(Compile, ClassifierFromMixedCluster) {
    auto policy = load_ok(std::string(TWINLANE_CONF_DIR) + "/mixed-cluster.yaml");
    ASSERT_TRUE(policy);
    const uint16_t port_ids[] = {4, 9};  // uplink is DPDK port 4, rack is port 9
    const CompiledPolicy compiled = compile_policy(*policy, port_ids);
    ASSERT_TRUE(compiled.ok()) << compiled.errors.front();
    const classifier::ClassifierConfig& config = compiled.classifier;
    EXPECT_EQ(config.class_names,
              (std::vector<std::string>{"inference", "training", "storage", "other"}));
    EXPECT_EQ(config.default_class, 3);
    ASSERT_EQ(config.rules.size(), 5u);
    const classifier::Rule& first = config.rules[0];
    EXPECT_EQ(first.priority, 10u);
    EXPECT_EQ(first.match.ingress_port, 9);
    EXPECT_EQ(first.match.roce, true);
    EXPECT_EQ(first.match.dest_qp.first, 0x100u);
    EXPECT_EQ(first.match.dest_qp.last, 0x1ffu);
    EXPECT_EQ(first.action.class_id, 1);
    EXPECT_EQ(first.action.job_id, 101u);
    const classifier::Rule& triton = config.rules[4];
    EXPECT_EQ(triton.match.ip_protocol, 6);
    EXPECT_EQ(triton.match.dst_ports.first, 8000);
    EXPECT_EQ(triton.match.dst_ports.last, 8001);
    EXPECT_EQ(triton.match.src_ports.first, 0);
    EXPECT_EQ(triton.match.src_ports.last, 65535);
    EXPECT_EQ(triton.action.remark_dscp, 46);
    EXPECT_TRUE(config.roce_detection);
    EXPECT_EQ(config.roce_class, 1);
    EXPECT_EQ(config.dscp_map.size(), 4u);
    EXPECT_EQ(config.model_serving_ports, (std::vector<uint16_t>{8000, 8001, 50051}));
    EXPECT_EQ(config.elephant_threshold_bytes, 256u << 20);
    EXPECT_EQ(config.bulk_class, 2);
    EXPECT_EQ(config.flow_table_capacity, 1u << 20);
    EXPECT_TRUE(config.vxlan_inner);
}

TEST(Compile, AbsentHeuristicsAreOff) {
    auto policy = parse_ok(std::string(testing::kBase));
    ASSERT_TRUE(policy);
    const CompiledPolicy compiled = compile_policy(*policy);
    ASSERT_TRUE(compiled.ok());
    const classifier::ClassifierConfig& config = compiled.classifier;
    EXPECT_FALSE(config.roce_detection);
    EXPECT_TRUE(config.dscp_map.empty());
    EXPECT_TRUE(config.model_serving_ports.empty());
    EXPECT_EQ(config.elephant_threshold_bytes, 0u);
    EXPECT_EQ(config.job_prefix_ipv4, 0);
    EXPECT_EQ(config.job_prefix_ipv6, 0);
    EXPECT_TRUE(config.rules.empty());
    EXPECT_EQ(config.class_names, (std::vector<std::string>{"gold", "bulk"}));
}

TEST(Compile, JobsBySourcePrefix) {
    const auto compiled_with = [](const std::string& heuristic) {
        auto policy = parse_ok(std::string(testing::kBase) + "classifier:\n  heuristics:\n    " +
                               heuristic + "\n");
        EXPECT_TRUE(policy);
        return compile_policy(*policy).classifier;
    };
    const classifier::ClassifierConfig both = compiled_with("job_by_source: {ipv4: 20, ipv6: 56}");
    EXPECT_EQ(both.job_prefix_ipv4, 20);
    EXPECT_EQ(both.job_prefix_ipv6, 56);
    const classifier::ClassifierConfig defaults = compiled_with("job_by_source: {}");
    EXPECT_EQ(defaults.job_prefix_ipv4, 24);
    EXPECT_EQ(defaults.job_prefix_ipv6, 64);
}

TEST(Compile, WrongNumberOfPortIdsIsReported) {
    auto policy = parse_ok(std::string(testing::kBase));
    ASSERT_TRUE(policy);
    const uint16_t one_id[] = {0};
    const CompiledPolicy compiled = compile_policy(*policy, one_id);
    ASSERT_EQ(compiled.errors.size(), 1u);
    EXPECT_NE(compiled.errors[0].find("1 DPDK port ids for 2 ports"), std::string::npos);
}

}  // namespace
}  // namespace twinlane::conf
