// Validation of TreeSpec: every error names the node and the field.
#include <gtest/gtest.h>

#include "sched/scheduler.h"
#include "sched_test_util.h"

namespace twinlane::sched {
namespace {

using testing::make_leaf;
using testing::make_node;

TreeSpec valid_tree() {
    TreeSpec spec;
    spec.nodes.push_back(make_node("port", NodeKind::strict));
    spec.nodes.push_back(make_leaf("inference", NodeKind::fifo, "port"));
    spec.nodes.back().priority = 0;
    spec.nodes.push_back(make_node("bulk", NodeKind::drr, "port"));
    spec.nodes.back().priority = 1;
    spec.nodes.push_back(make_leaf("nccl", NodeKind::fq, "bulk"));
    spec.nodes.push_back(make_leaf("other", NodeKind::fifo, "bulk"));
    return spec;
}

void expect_error(const TreeSpec& spec, const std::string& node, const std::string& field) {
    const std::optional<ValidationError> problem = validate(spec);
    ASSERT_TRUE(problem.has_value()) << "expected an error on " << node << "." << field;
    EXPECT_EQ(problem->node, node) << problem->to_string();
    EXPECT_EQ(problem->field, field) << problem->to_string();
    EXPECT_FALSE(Scheduler::build(spec).scheduler);
}

TEST(TreeSpecTest, ValidTreeBuildsAndResolvesLeafIds) {
    const TreeSpec spec = valid_tree();
    EXPECT_FALSE(validate(spec).has_value());
    auto scheduler = testing::build_or_fail(spec);
    ASSERT_TRUE(scheduler);
    EXPECT_EQ(scheduler->leaf_count(), 3u);
    EXPECT_EQ(scheduler->leaf_id("inference"), std::optional<uint16_t>(0));
    EXPECT_EQ(scheduler->leaf_id("nccl"), std::optional<uint16_t>(1));
    EXPECT_EQ(scheduler->leaf_id("other"), std::optional<uint16_t>(2));
    EXPECT_FALSE(scheduler->leaf_id("bulk").has_value());  // inner node, not a leaf
    EXPECT_FALSE(scheduler->leaf_id("nope").has_value());
    EXPECT_EQ(scheduler->leaf_name(1), "nccl");
    EXPECT_EQ(scheduler->pool_capacity(), 3u * 100000u);
}

TEST(TreeSpecTest, ErrorMessageNamesNodeAndField) {
    TreeSpec spec = valid_tree();
    spec.nodes[3].weight = 0;
    const auto problem = validate(spec);
    ASSERT_TRUE(problem);
    EXPECT_EQ(problem->to_string(),
              "node 'nccl': field 'weight': must be in [1, 65536] under a drr parent");
}

TEST(TreeSpecTest, RejectsCycle) {
    TreeSpec spec = valid_tree();
    spec.nodes.push_back(make_node("a", NodeKind::drr, "b"));
    spec.nodes.push_back(make_node("b", NodeKind::drr, "a"));
    expect_error(spec, "a", "parent");
}

TEST(TreeSpecTest, RejectsSelfParent) {
    TreeSpec spec = valid_tree();
    spec.nodes.push_back(make_node("loop", NodeKind::drr, "loop"));
    expect_error(spec, "loop", "parent");
}

TEST(TreeSpecTest, RejectsZeroWeightUnderDrr) {
    TreeSpec spec = valid_tree();
    spec.nodes[4].weight = 0;
    expect_error(spec, "other", "weight");
}

TEST(TreeSpecTest, IgnoresWeightUnderStrict) {
    TreeSpec spec = valid_tree();
    spec.nodes[1].weight = 0;  // parent is strict: weight unused
    EXPECT_FALSE(validate(spec).has_value());
}

TEST(TreeSpecTest, RejectsUnknownParent) {
    TreeSpec spec = valid_tree();
    spec.nodes[4].parent = "missing";
    expect_error(spec, "other", "parent");
}

TEST(TreeSpecTest, RejectsLeafAsParent) {
    TreeSpec spec = valid_tree();
    spec.nodes.push_back(make_leaf("child", NodeKind::fifo, "inference"));
    expect_error(spec, "child", "parent");
}

TEST(TreeSpecTest, RejectsTwoRootsAndNoRoot) {
    TreeSpec spec = valid_tree();
    spec.nodes.push_back(make_node("port2", NodeKind::fifo));
    expect_error(spec, "port2", "parent");
    TreeSpec rootless;
    rootless.nodes.push_back(make_node("x", NodeKind::drr, "y"));
    rootless.nodes.push_back(make_node("y", NodeKind::drr, "x"));
    EXPECT_TRUE(validate(rootless).has_value());
}

TEST(TreeSpecTest, RejectsDuplicateAndEmptyNames) {
    TreeSpec spec = valid_tree();
    spec.nodes.push_back(make_leaf("other", NodeKind::fifo, "bulk"));
    expect_error(spec, "other", "name");
    spec = valid_tree();
    spec.nodes.push_back(make_leaf("", NodeKind::fifo, "bulk"));
    expect_error(spec, "#5", "name");
}

TEST(TreeSpecTest, RejectsFqBucketsNotPowerOfTwo) {
    TreeSpec spec = valid_tree();
    spec.nodes[3].fq_buckets = 1000;
    expect_error(spec, "nccl", "fq_buckets");
    spec.nodes[3].fq_buckets = 0;
    expect_error(spec, "nccl", "fq_buckets");
    spec.nodes[3].fq_buckets = 1024;
    EXPECT_FALSE(validate(spec).has_value());
}

TEST(TreeSpecTest, RejectsInnerNodeWithoutChildren) {
    TreeSpec spec = valid_tree();
    spec.nodes.push_back(make_node("empty", NodeKind::drr, "bulk"));
    expect_error(spec, "empty", "kind");
}

TEST(TreeSpecTest, RejectsDuplicateStrictPriority) {
    TreeSpec spec = valid_tree();
    spec.nodes[2].priority = 0;
    expect_error(spec, "bulk", "priority");
}

TEST(TreeSpecTest, RejectsShaperWithoutBurstOrTooFast) {
    TreeSpec spec = valid_tree();
    spec.nodes[0].shaper.rate_bits_per_sec = 10'000'000'000;
    expect_error(spec, "port", "shaper.burst_bytes");
    spec.nodes[0].shaper.burst_bytes = 20000;
    EXPECT_FALSE(validate(spec).has_value());
    spec.nodes[0].shaper.rate_bits_per_sec = kMaxRateBitsPerSec + 1;
    expect_error(spec, "port", "shaper.rate_bits_per_sec");
}

TEST(TreeSpecTest, RejectsBadLeafLimitsAndAqm) {
    TreeSpec spec = valid_tree();
    spec.nodes[1].limit_packets = 0;
    expect_error(spec, "inference", "limit_packets");
    spec = valid_tree();
    spec.nodes[1].limit_bytes = 1000;  // below one max packet
    expect_error(spec, "inference", "limit_bytes");
    spec = valid_tree();
    spec.nodes[1].red = RedSpec{true, 10000, 10000, 0.1, true};
    expect_error(spec, "inference", "red.kmax_bytes");
    spec.nodes[1].red = RedSpec{true, 10000, 20000, 0.0, true};
    expect_error(spec, "inference", "red.pmax");
    spec = valid_tree();
    spec.nodes[1].codel = CodelSpec{true, 5'000'000, 1'000'000, true};
    expect_error(spec, "inference", "codel.interval_ns");
}

TEST(TreeSpecTest, RejectsTreeWideProblems) {
    TreeSpec spec;
    expect_error(spec, "", "nodes");
    spec = valid_tree();
    spec.max_packet_bytes = 10;
    expect_error(spec, "", "max_packet_bytes");
    spec = valid_tree();
    spec.default_leaf = "bulk";
    expect_error(spec, "", "default_leaf");
    spec.default_leaf = "other";
    EXPECT_FALSE(validate(spec).has_value());
}

TEST(TreeSpecTest, RejectsTooDeepTree) {
    TreeSpec spec;
    spec.nodes.push_back(make_node("n0", NodeKind::drr));
    for (int i = 1; i < 20; ++i) {
        spec.nodes.push_back(
            make_node("n" + std::to_string(i), NodeKind::drr, "n" + std::to_string(i - 1)));
    }
    spec.nodes.push_back(make_leaf("leaf", NodeKind::fifo, "n19"));
    const auto problem = validate(spec);
    ASSERT_TRUE(problem);
    EXPECT_EQ(problem->field, "parent");
}

}  // namespace
}  // namespace twinlane::sched
