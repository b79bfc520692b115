// A port's share of the mbuf pool against what it can hold (conf/mbuf_demand.h): leaves full of
// chained frames, descriptor rings, the size given when the policy gives none, and the refusal
// of a `mempool` that a full set of queues would run dry.
#include "conf/mbuf_demand.h"

#include <gtest/gtest.h>

#include <string>

#include "conf/load_policy.h"
#include "tests/conf/policy_test_util.h"

namespace twinlane::conf {
namespace {

using testing::expect_error;
using testing::parse;

TEST(MbufDemand, FramesAreChainsOf2KiBMbufs) {
    EXPECT_EQ(mbufs_per_frame(64), 1u);
    EXPECT_EQ(mbufs_per_frame(2048), 1u);
    EXPECT_EQ(mbufs_per_frame(2049), 2u);
    EXPECT_EQ(mbufs_per_frame(9018), 5u);
}

TEST(MbufDemand, LeafHoldsTheLesserOfItsTwoLimits) {
    TreeNode leaf;
    leaf.limit_packets = 1024;
    leaf.limit_bytes = 4 << 20;
    // 1518-byte frames: one mbuf each, so the packet limit binds.
    EXPECT_EQ(leaf_mbufs(leaf, 1518), 1024u);
    // Jumbo frames: 1024 of them would be 5120 mbufs, more than 4 MiB can be (2048 + 1024).
    EXPECT_EQ(leaf_mbufs(leaf, 9018), 3072u);
    leaf.limit_bytes = 1 << 20;
    EXPECT_EQ(leaf_mbufs(leaf, 9018), 512u + 1024u);
}

// kBase: two 1500-byte ports, `b` the egress of two fifo leaves at the default limits.
TEST(MbufDemand, PortsWithoutMempoolAreSizedToTheirQueues) {
    const PolicyResult small = parse(std::string(testing::kBase));
    ASSERT_TRUE(small.ok()) << testing::describe(small);
    const PortMbufDemand in = port_mbuf_demand(*small.policy, 0);
    const PortMbufDemand out = port_mbuf_demand(*small.policy, 1);
    EXPECT_EQ(in.descriptors, 2048u);
    EXPECT_EQ(in.queues, 0u);  // only receives
    EXPECT_EQ(out.queues, 2u * 1024u);
    EXPECT_EQ(small.policy->ports[1].mempool_mbufs, kMinAutoMempoolMbufs);
    EXPECT_FALSE(small.policy->ports[1].mempool_given);

    // Jumbo frames on either port make every queued packet up to 5 mbufs.
    std::string text(testing::kBase);
    text.replace(text.find("rate: 10G}"), 10, "rate: 10G, mtu: 9000}");
    text.replace(text.find("{name: g, kind: fifo, class: gold}"), 34,
                 "{name: g, kind: fifo, class: gold, limit: {packets: 4096, bytes: 16MiB}}");
    const PolicyResult jumbo = parse(text);
    ASSERT_TRUE(jumbo.ok()) << testing::describe(jumbo);
    const PortMbufDemand big = port_mbuf_demand(*jumbo.policy, 1);
    EXPECT_EQ(big.queues, (8192u + 4096u) + (2048u + 1024u));
    EXPECT_EQ(big.total(), 17408u);
    EXPECT_EQ(jumbo.policy->ports[1].mempool_mbufs, 32767u);  // 2^n - 1: room for live changes
    EXPECT_EQ(jumbo.policy->ports[0].mempool_mbufs, kMinAutoMempoolMbufs);
}

TEST(MbufDemand, AMempoolThatQueuesWouldRunDryIsRefused) {
    std::string text(testing::kBase);
    text.replace(text.find("{name: b, device: net_null1, rate: 10G}"), 39,
                 "{name: b, device: net_null1, rate: 10G, mempool: 4000}");
    // 2048 descriptors + 2 leaves of 1024 fit 4096; the leaf below makes it 2048 + 1024 + 4096.
    text.replace(text.find("{name: g, kind: fifo, class: gold}"), 34,
                 "{name: g, kind: fifo, class: gold, limit: {packets: 4096}}");
    expect_error(parse(text), "ports[1].mempool", 3, 54,
                 "mempool of 4000 mbufs is less than this port can hold: 7168 mbufs (2048 for "
                 "the descriptor rings, 5120 for its scheduler's leaves");

    text.replace(text.find("mempool: 4000"), 13, "mempool: 7168");
    const PolicyResult enough = parse(text);
    ASSERT_TRUE(enough.ok()) << testing::describe(enough);
    EXPECT_EQ(enough.policy->ports[1].mempool_mbufs, 7168u);
    EXPECT_TRUE(enough.policy->ports[1].mempool_given);
}

TEST(MbufDemand, DescriptorRingsAloneMustFit) {
    std::string text(testing::kBase);
    text.replace(text.find("{name: a, device: net_null0, rate: 10G}"), 39,
                 "{name: a, device: net_null0, rate: 10G, rx_descriptors: 4096, mempool: 4096}");
    expect_error(parse(text), "ports[0].mempool", 2, 76, "5120 mbufs (5120 for the descriptor");
}

}  // namespace
}  // namespace twinlane::conf
