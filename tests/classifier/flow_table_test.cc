// Flow table: behaves like a map under random insert/erase/expire, bounded when full, ages
// incrementally, and reports top flows.
#include "classifier/flow_table.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace twinlane::classifier {
namespace {

PacketKey key_for(uint32_t n) {
    KeyFields f;
    f.ip_version = 4;
    f.src_address = {10, uint8_t(n >> 16), uint8_t(n >> 8), uint8_t(n)};
    f.dst_port = uint16_t(n * 7);
    return make_key(f);
}

TEST(FlowTable, MatchesReferenceMapUnderRandomOperations) {
    FlowTable table(512);
    std::map<uint32_t, uint64_t> reference;  // flow number → packets tag
    std::mt19937 rng(7);
    for (int step = 0; step < 200000; ++step) {
        const uint32_t n = rng() % 700;  // more distinct flows than capacity
        const PacketKey key = key_for(n);
        const uint32_t hash = hash_key(key);
        FlowEntry* entry = table.find(key, hash);
        ASSERT_EQ(entry != nullptr, reference.count(n) == 1) << step;
        if (entry != nullptr) {
            ASSERT_EQ(entry->packets, reference[n]);
            if (rng() % 3 == 0) {
                table.erase(*entry);
                reference.erase(n);
            } else {
                entry->packets += 1;
                reference[n] += 1;
            }
        } else {
            entry = table.insert(key, hash);
            if (reference.size() == 512) {
                ASSERT_EQ(entry, nullptr);
            } else {
                ASSERT_NE(entry, nullptr);
                entry->packets = 1;
                reference[n] = 1;
            }
        }
        ASSERT_EQ(table.size(), reference.size());
    }
    EXPECT_GT(table.overflow_count(), 0u);
}

TEST(FlowTable, FullTableCountsOverflowAndRecoversAfterErase) {
    FlowTable table(4);
    std::vector<FlowEntry*> entries;
    for (uint32_t n = 0; n < 4; ++n) entries.push_back(table.insert(key_for(n), hash_key(key_for(n))));
    for (FlowEntry* entry : entries) ASSERT_NE(entry, nullptr);
    EXPECT_EQ(table.insert(key_for(9), hash_key(key_for(9))), nullptr);
    EXPECT_EQ(table.overflow_count(), 1u);
    table.erase(*entries[2]);
    EXPECT_NE(table.insert(key_for(9), hash_key(key_for(9))), nullptr);
    EXPECT_NE(table.find(key_for(3), hash_key(key_for(3))), nullptr);
    EXPECT_EQ(table.find(key_for(2), hash_key(key_for(2))), nullptr);
}

TEST(FlowTable, IncrementalAgingIsBoundedPerCall) {
    FlowTable table(100);
    for (uint32_t n = 0; n < 100; ++n) {
        FlowEntry* entry = table.insert(key_for(n), hash_key(key_for(n)));
        entry->last_seen_ns = n < 50 ? 1'000 : 900'000;  // half old, half recent
    }
    // Idle timeout 500 µs at t = 1 ms: the 50 entries last seen at 1 µs expire.
    uint32_t removed = 0;
    uint32_t calls = 0;
    while (calls < 100) {
        const uint32_t step = table.expire(1'000'000, 500'000, 10);
        EXPECT_LE(step, 10u);
        removed += step;
        ++calls;
        if (table.size() == 50) break;
    }
    EXPECT_EQ(removed, 50u);
    EXPECT_EQ(calls, 5u);  // entries 0..49 are the first 50 visited, 10 per call
    EXPECT_EQ(table.expired_count(), 50u);
    for (uint32_t n = 50; n < 100; ++n) EXPECT_NE(table.find(key_for(n), hash_key(key_for(n))), nullptr);
}

TEST(FlowTable, TopFlowsByBytes) {
    FlowTable table(64);
    for (uint32_t n = 0; n < 40; ++n) {
        FlowEntry* entry = table.insert(key_for(n), hash_key(key_for(n)));
        entry->bytes = (n * 37) % 40;  // a permutation of 0..39
    }
    const std::vector<FlowEntry> top = top_flows_by_bytes(table, 3);
    ASSERT_EQ(top.size(), 3u);
    EXPECT_EQ(top[0].bytes, 39u);
    EXPECT_EQ(top[1].bytes, 38u);
    EXPECT_EQ(top[2].bytes, 37u);
    EXPECT_EQ(top_flows_by_bytes(table, 100).size(), 40u);
}

}  // namespace
}  // namespace twinlane::classifier
