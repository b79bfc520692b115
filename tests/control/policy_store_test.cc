// PolicyStore and policy documents: every example policy survives document -> YAML -> parse
// unchanged; rule add/delete and class set produce valid new versions (epoch + 1); anything
// the loader would reject is rejected with the running version untouched.
#include "control/policy_store.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "conf/load_policy.h"
#include "conf/policy_document.h"
#include "control/stats_json.h"
#include "tests/conf/policy_test_util.h"

namespace twinlane::control {
namespace {

using nlohmann::json;

std::shared_ptr<const conf::Policy> load_example(const std::string& name) {
    conf::PolicyResult result = conf::load_policy(std::string(TWINLANE_CONF_DIR) + "/" + name);
    EXPECT_TRUE(result.ok()) << conf::testing::describe(result);
    return result.policy;
}

std::unique_ptr<PolicyStore> make_store(const std::string& example = "default.yaml") {
    auto created = PolicyStore::create(load_example(example));
    EXPECT_TRUE(created.errors.empty()) << created.errors.front();
    return std::move(created.store);
}

std::string joined(const ApiResult& result) {
    std::string text = result.error();
    for (const std::string& line : result.details())
        text += "\n  " + line;
    return text;
}

class ExamplePolicyTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ExamplePolicyTest, DocumentRoundTripsThroughTheLoader) {
    auto original = load_example(GetParam());
    ASSERT_TRUE(original);
    const json document = conf::policy_document(*original);
    const std::string yaml = conf::render_yaml(document);
    conf::PolicyResult reparsed = conf::parse_policy(yaml, "roundtrip.yaml");
    ASSERT_TRUE(reparsed.ok()) << conf::testing::describe(reparsed) << yaml;
    EXPECT_EQ(conf::policy_document(*reparsed.policy), document);
    // The compiled form (what the dataplane runs) is the same too.
    const conf::CompiledPolicy a = conf::compile_policy(*original);
    const conf::CompiledPolicy b = conf::compile_policy(*reparsed.policy);
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_EQ(a.egress.size(), b.egress.size());
    for (size_t i = 0; i < a.egress.size(); ++i) {
        ASSERT_EQ(a.egress[i].tree.nodes.size(), b.egress[i].tree.nodes.size());
        for (size_t n = 0; n < a.egress[i].tree.nodes.size(); ++n) {
            const auto& x = a.egress[i].tree.nodes[n];
            const auto& y = b.egress[i].tree.nodes[n];
            EXPECT_EQ(x.name, y.name);
            EXPECT_EQ(x.weight, y.weight);
            EXPECT_EQ(x.shaper.rate_bits_per_sec, y.shaper.rate_bits_per_sec) << x.name;
            EXPECT_EQ(x.shaper.burst_bytes, y.shaper.burst_bytes) << x.name;
            EXPECT_EQ(x.limit_packets, y.limit_packets);
            EXPECT_EQ(x.limit_bytes, y.limit_bytes);
            EXPECT_EQ(x.red.enabled, y.red.enabled);
            EXPECT_EQ(x.codel.enabled, y.codel.enabled);
        }
    }
    EXPECT_EQ(a.classifier.rules.size(), b.classifier.rules.size());
    EXPECT_EQ(a.classifier.flow_table_capacity, b.classifier.flow_table_capacity);
    EXPECT_EQ(a.classifier.flow_slots_per_flow, b.classifier.flow_slots_per_flow);
}

INSTANTIATE_TEST_SUITE_P(Conf, ExamplePolicyTest,
                         ::testing::Values("default.yaml", "inference-gateway.yaml",
                                           "lab-pcap.yaml", "mixed-cluster.yaml",
                                           "gateway-100g.yaml", "gateway-afxdp.yaml"));

TEST(PolicyStore, FirstVersionIsEpochOne) {
    auto store = make_store();
    EXPECT_EQ(store->epoch(), 1u);
    EXPECT_EQ(store->current()->epoch, 1u);
    EXPECT_TRUE(store->current()->compiled->ok());
}

TEST(PolicyStore, RuleAddPublishesANewVersion) {
    auto store = make_store();
    const auto before = store->current();
    const size_t rules_before = before->policy->classifier.rules.size();
    const ApiResult added = store->rules_add(
        "{name: x, priority: 5, match: {dst_port: 9000, proto: tcp}, action: {class: inference}}");
    ASSERT_TRUE(added.ok()) << joined(added);
    EXPECT_EQ(added.value()["policy_epoch"], 2);
    EXPECT_EQ(store->epoch(), 2u);
    const auto after = store->current();
    ASSERT_EQ(after->policy->classifier.rules.size(), rules_before + 1);
    // Rules stay sorted by priority: 5 is now the first one evaluated.
    EXPECT_EQ(after->policy->classifier.rules.front().name, "x");
    EXPECT_EQ(after->compiled->classifier.rules.size(), rules_before + 1);
    // The old version is still intact for whoever holds it.
    EXPECT_EQ(before->policy->classifier.rules.size(), rules_before);
    const ApiResult listed = store->rules_list();
    ASSERT_TRUE(listed.ok());
    EXPECT_EQ(listed.value().front()["name"], "x");
    EXPECT_EQ(listed.value().front()["match"]["dst_port"], "9000");
}

TEST(PolicyStore, RejectedRuleLeavesTheRunningPolicyUntouched) {
    auto store = make_store();
    const auto before = store->current();
    // Priority 10 is taken by grpc-serving in default.yaml.
    ApiResult result = store->rules_add(
        "{name: dup, priority: 10, match: {dst_port: 1}, action: {class: inference}}");
    ASSERT_FALSE(result.ok());
    ASSERT_FALSE(result.details().empty());
    EXPECT_NE(result.details().front().find("already used by rule 'grpc-serving'"),
              std::string::npos)
        << joined(result);
    // Unknown class, unknown match key, bad YAML, not a mapping, missing name, duplicate name,
    // a priority out of range, a second YAML document.
    for (const char* bad :
         {"{name: a, priority: 1, match: {dst_port: 1}, action: {class: nosuch}}",
          "{name: a, priority: 1, match: {dport: 1}, action: {class: inference}}",
          "{name: a, priority: 1, match: {dst_port: 1}, action: {class: inference}", "[1, 2]",
          "{priority: 1, match: {dst_port: 1}, action: {class: inference}}",
          "{name: grpc-serving, priority: 2, match: {dst_port: 1}, action: {class: inference}}",
          "{name: a, priority: 99999, match: {dst_port: 1}, action: {class: inference}}",
          "{name: a, priority: 1, match: {}, action: {class: inference}}\n---\n[2]"}) {
        EXPECT_FALSE(store->rules_add(bad).ok()) << bad;
    }
    EXPECT_EQ(store->epoch(), 1u);
    EXPECT_EQ(store->current(), before);
}

TEST(PolicyStore, RuleTextExpandingThroughAliasesIsRefusedBeforeItIsExpanded) {
    auto store = make_store();
    // 18 levels of aliases nesting aliases: 64 bytes of YAML per level, 2^19 nodes expanded.
    std::string items = "&a0 [q, q]";
    for (int i = 1; i < 18; ++i) {
        items += ", &a" + std::to_string(i) + " [*a" + std::to_string(i - 1) + ", *a" +
                 std::to_string(i - 1) + "]";
    }
    const auto started = std::chrono::steady_clock::now();
    const ApiResult result = store->rules_add(
        "{name: bomb, priority: 99, match: {}, action: {class: inference}, x: [" + items + "]}");
    const auto took = std::chrono::steady_clock::now() - started;
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.error(),
              "the rule expands to more than 10000 YAML nodes (aliases?) at line 1");
    EXPECT_LT(took, std::chrono::milliseconds(500));
    EXPECT_EQ(store->epoch(), 1u);
}

TEST(PolicyStore, RuleTextThatIsNotUtf8IsRefused) {
    // A request's JSON is UTF-8, but the store's own callers pass any bytes; the JSON written
    // from the policy (policy show) could not hold them.
    auto store = make_store();
    const ApiResult result = store->rules_add(
        "{name: caf\xe9, priority: 5, match: {dst_port: 1}, action: {class: inference}}");
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.error(), "the rule holds a value that is not UTF-8 text at line 1");
    EXPECT_EQ(store->epoch(), 1u);
}

TEST(PolicyStore, RuleDelete) {
    auto store = make_store();
    ASSERT_TRUE(store->rules_delete("grpc-serving").ok());
    EXPECT_EQ(store->epoch(), 2u);
    for (const conf::ClassifierRule& rule : store->current()->policy->classifier.rules) {
        EXPECT_NE(rule.name, "grpc-serving");
    }
    const ApiResult missing = store->rules_delete("grpc-serving");
    EXPECT_FALSE(missing.ok());
    EXPECT_EQ(store->epoch(), 2u);
}

const conf::TreeNode* find_node(const conf::TreeNode& node, const std::string& name) {
    if (node.name == name) return &node;
    for (const conf::TreeNode& child : node.children) {
        if (const conf::TreeNode* found = find_node(child, name)) return found;
    }
    return nullptr;
}

TEST(PolicyStore, ClassSetChangesEveryEgressTree) {
    auto store = make_store();
    ApiResult result = store->class_set("inference", "rate", "2G");
    ASSERT_TRUE(result.ok()) << joined(result);
    result = store->class_set("training", "weight", "8");
    ASSERT_TRUE(result.ok()) << joined(result);
    result = store->class_set("training", "limit_packets", "2048");
    ASSERT_TRUE(result.ok()) << joined(result);
    result = store->class_set("training", "ecn_kmin", "40KB");
    ASSERT_TRUE(result.ok()) << joined(result);
    result = store->class_set("other", "codel", "on");
    ASSERT_TRUE(result.ok()) << joined(result);
    result = store->class_set("other", "codel_target", "1ms");
    ASSERT_TRUE(result.ok()) << joined(result);
    EXPECT_EQ(store->epoch(), 7u);
    const auto version = store->current();
    ASSERT_EQ(version->policy->egress_trees.size(), 2u);
    for (const conf::EgressTree& tree : version->policy->egress_trees) {
        const conf::TreeNode* inference = find_node(tree.root, "inference");
        ASSERT_TRUE(inference && inference->shaper);
        EXPECT_EQ(inference->shaper->rate_bits_per_sec, 2'000'000'000u);
        const conf::TreeNode* training = find_node(tree.root, "training");
        ASSERT_TRUE(training);
        EXPECT_EQ(training->weight, 8u);
        ASSERT_FALSE(training->children.empty());
        for (const conf::TreeNode& leaf : training->children) {
            EXPECT_EQ(leaf.limit_packets, 2048u);
            ASSERT_TRUE(leaf.ecn);
            EXPECT_EQ(leaf.ecn->kmin_bytes, 40'000u);
        }
        const conf::TreeNode* other = find_node(tree.root, "other");
        ASSERT_TRUE(other && other->codel);
        EXPECT_EQ(other->codel->target_ns, 1'000'000u);
    }
    // Same topology: the dataplane can apply it in place (Scheduler::apply).
    const auto& spec = version->compiled->egress[0].tree;
    EXPECT_EQ(spec.nodes.size(),
              conf::compile_policy(*load_example("default.yaml")).egress[0].tree.nodes.size());
}

TEST(PolicyStore, ClassSetRejectsInvalidValues) {
    auto store = make_store();
    const auto before = store->current();
    struct Case {
        const char* cls;
        const char* key;
        const char* value;
    };
    for (const Case& c : {Case{"inference", "rate", "20G"},  // above the 10G port
                          Case{"inference", "rate", "fast"}, Case{"inference", "weight", "2"},
                          Case{"training", "weight", "0"}, Case{"training", "limit_packets", "0"},
                          Case{"training", "ecn_kmin", "300KB"},  // above kmax
                          Case{"training", "ecn_pmax", "0%"}, Case{"other", "bogus", "1"},
                          Case{"other", "codel", "maybe"}, Case{"nosuch", "weight", "1"},
                          Case{"other", "weight", "1\n2"}, Case{"other", "burst", "1ms"}}) {
        const ApiResult result = store->class_set(c.cls, c.key, c.value);
        EXPECT_FALSE(result.ok()) << c.cls << " " << c.key << " " << c.value;
    }
    EXPECT_EQ(store->epoch(), 1u);
    EXPECT_EQ(store->current(), before);
}

TEST(PolicyStore, ClassSetErrorsNameThePortNotItsIndex) {
    auto store = make_store();
    // default.yaml's inference lane is a strict child: a weight there is refused on each port.
    const ApiResult result = store->class_set("inference", "weight", "2");
    ASSERT_FALSE(result.ok());
    ASSERT_FALSE(result.details().empty());
    const std::string first = result.details().front();
    EXPECT_TRUE(first.starts_with("ports[") && !first.starts_with("ports[0]") &&
                !first.starts_with("ports[1]"))
        << first;
    EXPECT_NE(first.find("].scheduler."), std::string::npos) << first;
    EXPECT_NE(first.find("weight only applies to a child of a drr node"), std::string::npos)
        << first;
}

TEST(PolicyStore, PolicyLoadSwapsOnlyValidFiles) {
    auto store = make_store();
    const ApiResult bad = store->policy_load(std::string(TWINLANE_CONF_TEST_DATA) + "/broken.yaml");
    ASSERT_FALSE(bad.ok());
    ASSERT_FALSE(bad.details().empty());
    // file:line:col: key.path: reason
    EXPECT_NE(bad.details().front().find("broken.yaml:"), std::string::npos) << joined(bad);
    EXPECT_EQ(store->epoch(), 1u);
    EXPECT_FALSE(store->policy_load("/nonexistent/policy.yaml").ok());
    const std::string other = std::string(TWINLANE_CONF_DIR) + "/mixed-cluster.yaml";
    const ApiResult good = store->policy_load(other);
    ASSERT_TRUE(good.ok()) << joined(good);
    EXPECT_EQ(store->epoch(), 2u);
    EXPECT_EQ(store->current()->policy->source, other);
}

TEST(PolicyStore, PolicyShowAndStatsFollowTheRunningPolicy) {
    auto store = make_store();
    const ApiResult shown = store->policy_show();
    ASSERT_TRUE(shown.ok());
    EXPECT_EQ(shown.value()["policy_epoch"], 1);
    EXPECT_EQ(shown.value()["document"]["classes"].size(), 3u);
    const ApiResult queues = store->stats(StatsScope::queues);
    ASSERT_TRUE(queues.ok());
    // Two egress ports, each: root, inference, bulk, training + 8 job leaves, other.
    EXPECT_EQ(queues.value().size(), 2u * 13u);
    EXPECT_EQ(queues.value()[0]["node"], "root");
    EXPECT_EQ(queues.value()[0]["counters"]["sojourn_log2_histogram"].size(), 40u);
    const ApiResult classes = store->stats(StatsScope::classes);
    ASSERT_TRUE(classes.ok());
    EXPECT_EQ(classes.value()[1]["name"], "training");
    EXPECT_EQ(classes.value()[1]["latency"]["p99_ns"], 0);  // offline: no pipeline latency
    const ApiResult status = store->status();
    ASSERT_TRUE(status.ok());
    EXPECT_EQ(status.value()["ports"].size(), 2u);
    EXPECT_EQ(status.value()["policy_epoch"], 1);
    EXPECT_TRUE(store->flows_top(5).value().empty());
}

// stats(classes) carries each class's pipeline latency as the realtime daemon reads it.
TEST(PolicyStore, ClassStatsCarryThePipelineLatency) {
    auto store = make_store();
    const conf::Policy& policy = *store->current()->policy;
    const auto zero_nodes = [](size_t, const std::string&) { return sched::QueueCounters{}; };
    const auto classified = [](size_t) { return classifier::ClassCounters{}; };
    const auto latency = [](size_t cls) {
        ClassLatency l{.packets = 10 + cls,
                       .mean_ns = 1'000,
                       .p50_ns = 900,
                       .p99_ns = 4'000,
                       .p999_ns = 9'000,
                       .max_ns = 12'000,
                       .sum_ns = 1'000 * (10 + cls),
                       .log2_histogram = std::nullopt};
        if (cls == 1) {  // a reader that keeps the histogram (the daemon) gives it and the sum
            l.log2_histogram.emplace();
            (*l.log2_histogram)[10] = 11;
        }
        return l;
    };
    const json classes = class_stats_json(policy, zero_nodes, classified, {}, latency);
    ASSERT_EQ(classes.size(), 3u);
    EXPECT_EQ(classes[0]["latency"], json({{"packets", 10},
                                           {"mean_ns", 1'000},
                                           {"p50_ns", 900},
                                           {"p99_ns", 4'000},
                                           {"p999_ns", 9'000},
                                           {"max_ns", 12'000}}));
    EXPECT_EQ(classes[2]["latency"]["packets"], 12);
    EXPECT_EQ(classes[1]["latency"]["sum_ns"], 11'000);
    ASSERT_EQ(classes[1]["latency"]["log2_histogram"].size(), sched::kSojournHistogramBuckets);
    EXPECT_EQ(classes[1]["latency"]["log2_histogram"][10], 11);
}

// The reload-failure signal: every change request is counted by kind and outcome, and a
// refused load clears policy_last_load_ok until a load succeeds.
TEST(PolicyStore, StatusCountsChangesByOutcome) {
    auto store = make_store();
    auto changes = [&] { return store->status().value()["policy_changes"]; };
    EXPECT_EQ(changes()["load"], json({{"applied", 0}, {"refused", 0}}));
    EXPECT_TRUE(store->status().value()["policy_last_load_ok"].get<bool>());

    EXPECT_FALSE(store->policy_load("/nonexistent/policy.yaml").ok());
    EXPECT_FALSE(store->status().value()["policy_last_load_ok"].get<bool>());
    EXPECT_FALSE(store->class_set("training", "weight", "0").ok());
    EXPECT_TRUE(store->class_set("training", "weight", "2").ok());
    EXPECT_FALSE(store->rules_delete("no-such-rule").ok());
    EXPECT_TRUE(store
                    ->rules_add("{name: x, priority: 5, match: {dst_port: 9000, proto: tcp}, "
                                "action: {class: inference}}")
                    .ok());
    // An edit that is not a load leaves the load outcome alone.
    EXPECT_FALSE(store->status().value()["policy_last_load_ok"].get<bool>());
    ASSERT_TRUE(store->policy_load(std::string(TWINLANE_CONF_DIR) + "/default.yaml").ok());
    EXPECT_TRUE(store->status().value()["policy_last_load_ok"].get<bool>());

    const json counted = changes();
    EXPECT_EQ(counted["load"], json({{"applied", 1}, {"refused", 1}}));
    EXPECT_EQ(counted["class_set"], json({{"applied", 1}, {"refused", 1}}));
    EXPECT_EQ(counted["rules_add"], json({{"applied", 1}, {"refused", 0}}));
    EXPECT_EQ(counted["rules_delete"], json({{"applied", 0}, {"refused", 1}}));
    EXPECT_EQ(store->epoch(), 4u);  // class set, rule add, load
}

TEST(PolicyStore, LogLevel) {
    auto store = make_store();
    const auto saved = spdlog::get_level();
    ASSERT_TRUE(store->set_log_level("warn").ok());
    EXPECT_EQ(store->log_level().value()["log_level"], "warn");
    EXPECT_FALSE(store->set_log_level("loud").ok());
    spdlog::set_level(saved);
}

}  // namespace
}  // namespace twinlane::control
