// Every example policy in conf/ is valid; the broken fixture reports all its errors at once.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "conf/load_policy.h"
#include "conf/policy.h"
#include "tests/conf/policy_test_util.h"

namespace twinlane::conf {
namespace {

std::vector<std::filesystem::path> example_files() {
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(TWINLANE_CONF_DIR)) {
        if (entry.path().extension() == ".yaml") files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    return files;
}

TEST(Examples, EveryConfFileIsValid) {
    const auto files = example_files();
    EXPECT_GE(files.size(), 4u);
    for (const auto& file : files) {
        const PolicyResult result = load_policy(file.string());
        EXPECT_TRUE(result.ok()) << file << ":\n" << testing::describe(result);
    }
}

TEST(Examples, TheDocumentedExamplesExist) {
    const auto files = example_files();
    for (const char* name :
         {"default.yaml", "inference-gateway.yaml", "mixed-cluster.yaml", "lab-pcap.yaml"}) {
        const bool found = std::any_of(files.begin(), files.end(),
                                       [&](const auto& path) { return path.filename() == name; });
        EXPECT_TRUE(found) << name;
    }
}

TEST(Examples, DefaultPolicyShape) {
    const PolicyResult result = load_policy(std::string(TWINLANE_CONF_DIR) + "/default.yaml");
    ASSERT_TRUE(result.ok()) << testing::describe(result);
    const Policy& policy = *result.policy;
    EXPECT_EQ(policy.ports.size(), 2u);
    EXPECT_EQ(policy.forwarding.size(), 2u);  // bump in the wire, both directions
    ASSERT_EQ(policy.egress_trees.size(), 2u);
    const TreeNode& root = policy.egress_trees[0].root;
    EXPECT_EQ(root.kind, NodeKind::strict);
    ASSERT_EQ(root.children.size(), 2u);
    const TreeNode& inference = root.children[0];
    EXPECT_EQ(inference.class_index, policy.find_class("inference"));
    ASSERT_TRUE(inference.shaper.has_value());
    EXPECT_EQ(inference.shaper->rate_bits_per_sec, 5'000'000'000u);  // capped at 50% of 10G
    const TreeNode& training = root.children[1].children[0];
    EXPECT_EQ(training.class_index, policy.find_class("training"));
    EXPECT_EQ(training.job_split.mode, JobSplit::Mode::modulo);
    ASSERT_FALSE(training.children.empty());
    EXPECT_TRUE(training.children[0].ecn.has_value());
    EXPECT_EQ(root.children[1].children[1].kind, NodeKind::fifo);
}

// The full example at the end of conf/README.md is valid too, so the reference cannot rot.
TEST(Examples, ReadmeFullExampleIsValid) {
    std::ifstream in(std::string(TWINLANE_CONF_DIR) + "/README.md");
    ASSERT_TRUE(in);
    std::stringstream text;
    text << in.rdbuf();
    const std::string readme = text.str();
    const std::string fence = "```yaml\nversion: 1";
    const size_t start = readme.rfind(fence);
    ASSERT_NE(start, std::string::npos);
    const size_t body = start + std::string("```yaml\n").size();
    const size_t end = readme.find("```", body);
    ASSERT_NE(end, std::string::npos);
    const PolicyResult result = parse_policy(readme.substr(body, end - body), "README.md");
    ASSERT_TRUE(result.ok()) << testing::describe(result);
    EXPECT_EQ(result.policy->classifier.rules.size(), 2u);
}

TEST(Examples, BrokenFixtureReportsEveryError) {
    const std::string path = std::string(TWINLANE_CONF_TEST_DATA) + "/broken.yaml";
    const PolicyResult result = load_policy(path);
    ASSERT_FALSE(result.ok());
    std::vector<std::string> lines;
    for (const PolicyError& error : result.errors)
        lines.push_back(error.to_string());
    const std::vector<std::string> expected_prefixes = {
        path + ":3:12: log_level: 'verbose' is not one of",
        path + ":7:11: ports[0].rate: '10GBps' is a byte rate",
        path + ":8:5: ports[0].rx_queus: unknown key 'rx_queus' (did you mean 'rx_queues'?)",
        path + ":9:11: ports[1].name: duplicate port name 'west'",
        path + ":13:22: forwarding[0].to: unknown port 'est' (did you mean 'west'?)",
        path +
            ":21:14: scheduler.children[0].class: unknown class 'inferense' (did you mean "
            "'inference'?)",
        path + ":25:62: scheduler.children[1].children[0].weight: must be between 1 and 65536",
        path + ":30:25: classifier.rules[0].match.dst_port: range '80-70' ends before it starts",
        path + ":31:23: classifier.rules[0].action.class: unknown class 'gold'",
        path + ":32:17: metrics.port: must be between 1 and 65535, got '99999'",
    };
    ASSERT_EQ(lines.size(), expected_prefixes.size()) << testing::describe(result);
    for (size_t i = 0; i < lines.size(); ++i) {
        EXPECT_EQ(lines[i].rfind(expected_prefixes[i], 0), 0u)
            << "got:      " << lines[i] << "\nexpected: " << expected_prefixes[i];
    }
}

}  // namespace
}  // namespace twinlane::conf
