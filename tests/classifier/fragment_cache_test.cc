// Fragment cache: recall within the timeout, expiry, bounded sets with eviction of the entry
// closest to expiry, and disabled when capacity is 0.
#include "classifier/fragment_cache.h"

#include <gtest/gtest.h>

namespace twinlane::classifier {
namespace {

PacketKey datagram(uint32_t id) {
    KeyFields f;
    f.ip_version = 4;
    f.ip_protocol = 17;
    f.src_address = {10, 0, 0, 1};
    f.dst_address = {10, 0, 0, 2};
    f.src_port = 1234;  // ignored by datagram_key
    return FragmentCache::datagram_key(make_key(f), id);
}

FragmentDecision decision(uint32_t job) {
    FragmentDecision d;
    d.decision.job_id = job;
    d.flow_hash = job * 3;
    return d;
}

TEST(FragmentCache, RecallsUntilTimeout) {
    FragmentCache cache(64);
    cache.remember(datagram(1), decision(7), 100, 1000);
    ASSERT_NE(cache.recall(datagram(1), 1099), nullptr);
    EXPECT_EQ(cache.recall(datagram(1), 1099)->decision.job_id, 7u);
    EXPECT_EQ(cache.recall(datagram(1), 1100), nullptr);
    EXPECT_EQ(cache.recall(datagram(2), 500), nullptr);
}

TEST(FragmentCache, DatagramKeyIgnoresPortsAndIngress) {
    KeyFields a;
    a.ip_version = 4;
    a.src_port = 1;
    a.ingress_port = 3;
    KeyFields b = a;
    b.src_port = 0;
    b.ingress_port = 0;
    EXPECT_EQ(FragmentCache::datagram_key(make_key(a), 9),
              FragmentCache::datagram_key(make_key(b), 9));
    EXPECT_FALSE(FragmentCache::datagram_key(make_key(a), 9) ==
                 FragmentCache::datagram_key(make_key(a), 10));
}

TEST(FragmentCache, BoundedWithEviction) {
    FragmentCache cache(4);  // one set of 4 ways: every datagram competes
    for (uint32_t id = 0; id < 4; ++id)
        cache.remember(datagram(id), decision(id), id, 1000);
    for (uint32_t id = 0; id < 4; ++id)
        EXPECT_NE(cache.recall(datagram(id), 10), nullptr);
    cache.remember(datagram(99), decision(99), 10, 1000);  // evicts id 0 (expires first)
    EXPECT_EQ(cache.recall(datagram(0), 10), nullptr);
    EXPECT_NE(cache.recall(datagram(99), 10), nullptr);
    EXPECT_NE(cache.recall(datagram(1), 10), nullptr);
    cache.remember(datagram(1), decision(42), 20, 1000);  // refresh in place
    EXPECT_EQ(cache.recall(datagram(1), 20)->decision.job_id, 42u);
    EXPECT_NE(cache.recall(datagram(2), 20), nullptr);
}

TEST(FragmentCache, ZeroCapacityDisables) {
    FragmentCache cache(0);
    cache.remember(datagram(1), decision(1), 0, 1000);
    EXPECT_EQ(cache.recall(datagram(1), 1), nullptr);
}

}  // namespace
}  // namespace twinlane::classifier
