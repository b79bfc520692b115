// Flow table: behaves like a map under random insert/erase/expire, bounded when full, ages
// incrementally, and reports top flows.
#include "classifier/flow_table.h"

#include <gtest/gtest.h>

#include <bit>
#include <map>
#include <random>

namespace twinlane::classifier {
namespace {

// Flow n: IPv4, or (every third) IPv6, whose addresses live in the cold state.
PacketKey key_for(uint32_t n) {
    KeyFields f;
    if (n % 3 == 2) {
        f.ip_version = 6;
        f.src_address = {0x20,
                         0x01,
                         0x0d,
                         0xb8,
                         0,
                         0,
                         0,
                         0,
                         0,
                         0,
                         0,
                         0,
                         0,
                         uint8_t(n >> 16),
                         uint8_t(n >> 8),
                         uint8_t(n)};
    } else {
        f.ip_version = 4;
        f.src_address = {10, uint8_t(n >> 16), uint8_t(n >> 8), uint8_t(n)};
    }
    f.dst_port = uint16_t(n * 7);
    return make_key(f);
}

// Every load the table can be built for (slots per flow 2..16) holds exactly `capacity` flows.
class FlowTableLoad : public ::testing::TestWithParam<uint32_t> {};
INSTANTIATE_TEST_SUITE_P(SlotsPerFlow, FlowTableLoad, ::testing::Values(2u, 4u, 16u));

TEST_P(FlowTableLoad, MatchesReferenceMapUnderRandomOperations) {
    FlowTable table(512, GetParam());
    ASSERT_EQ(table.slot_count(), 512 * GetParam());
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
            ASSERT_EQ(table.key_of(*entry), key);
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

// Incremental ageing interleaved with lookups, inserts and erases: it removes only flows idle
// for the timeout, and every other flow stays reachable (removals shift later flows back).
TEST(FlowTable, AgeingRemovesOnlyIdleFlowsUnderRandomOperations) {
    constexpr uint64_t kTimeout = 300;
    FlowTable table(256);
    std::map<uint32_t, uint64_t> last_seen;  // flow number → last step it was seen
    std::mt19937 rng(5);
    uint64_t removed = 0;
    for (uint64_t step = 1; step < 100000; ++step) {
        const uint32_t n = rng() % (step % 5000 < 2500 ? 200 : 400);  // phases of churn
        const PacketKey key = key_for(n);
        FlowEntry* entry = table.find(key, hash_key(key));
        ASSERT_EQ(entry != nullptr, last_seen.count(n) == 1) << step;
        if (entry == nullptr) entry = table.insert(key, hash_key(key));
        if (entry != nullptr) {
            if (rng() % 50 == 0) {
                table.erase(*entry);
                last_seen.erase(n);
            } else {
                entry->last_seen_ns = step;
                last_seen[n] = step;
            }
        }
        if (step % 7 == 0) {
            removed += table.expire(step, kTimeout, 16);
            for (auto it = last_seen.begin(); it != last_seen.end();) {
                const PacketKey flow = key_for(it->first);
                const bool present = table.find(flow, hash_key(flow)) != nullptr;
                if (step - it->second < kTimeout) {
                    ASSERT_TRUE(present) << step << " " << it->first;
                }
                it = present ? std::next(it) : last_seen.erase(it);
            }
            ASSERT_EQ(table.size(), last_seen.size());
        }
    }
    EXPECT_EQ(table.expired_count(), removed);
    EXPECT_GT(removed, 1000u);
}

TEST(FlowTable, FullTableCountsOverflowAndRecoversAfterErase) {
    FlowTable table(4);
    std::vector<FlowEntry*> entries;
    for (uint32_t n = 0; n < 4; ++n)
        entries.push_back(table.insert(key_for(n), hash_key(key_for(n))));
    for (FlowEntry* entry : entries)
        ASSERT_NE(entry, nullptr);
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
    // Idle timeout 500 µs at t = 1 ms: the 50 entries last seen at 1 µs expire, within one
    // sweep of the slots at 10 visits per call (a removal is a visit too: the slot is looked
    // at again, as erase() may have shifted a later flow into it).
    const uint32_t sweep_calls = (table.slot_count() + 50 + 9) / 10;
    uint32_t removed = 0;
    uint32_t calls = 0;
    while (calls < 2 * sweep_calls && table.size() != 50) {
        const uint32_t step = table.expire(1'000'000, 500'000, 10);
        EXPECT_LE(step, 10u);
        removed += step;
        ++calls;
    }
    EXPECT_EQ(removed, 50u);
    EXPECT_LE(calls, sweep_calls);
    EXPECT_GT(calls, 1u);  // bounded: not all in one call
    EXPECT_EQ(table.expired_count(), 50u);
    for (uint32_t n = 0; n < 100; ++n) {
        EXPECT_EQ(table.find(key_for(n), hash_key(key_for(n))) != nullptr, n >= 50) << n;
    }
}

// Backward-shift deletion keeps every other flow reachable when flows sharing a probe run
// (same home slot, IPv6 keys whose addresses live in the cold state) are removed in any order.
TEST(FlowTable, EraseKeepsCollidingFlowsReachable) {
    FlowTable table(64);
    const uint32_t mask = table.slot_count() - 1;
    std::vector<PacketKey> colliding;
    for (uint32_t n = 0; colliding.size() < 12; ++n) {
        KeyFields f;
        f.ip_version = 6;
        f.src_address = {0x20,
                         0x01,
                         0x0d,
                         0xb8,
                         0,
                         0,
                         0,
                         0,
                         0,
                         0,
                         0,
                         0,
                         uint8_t(n >> 24),
                         uint8_t(n >> 16),
                         uint8_t(n >> 8),
                         uint8_t(n)};
        f.dst_port = 443;
        const PacketKey key = make_key(f);
        if ((hash_key(key) & mask) == 5 || (hash_key(key) & mask) == 6) colliding.push_back(key);
    }
    for (const PacketKey& key : colliding) {
        FlowEntry* entry = table.insert(key, hash_key(key));
        ASSERT_NE(entry, nullptr);
        EXPECT_TRUE(entry->wide);
        EXPECT_EQ(table.key_of(*entry), key);
    }
    std::mt19937 rng(3);
    std::vector<PacketKey> present = colliding;
    while (!present.empty()) {
        const size_t victim = rng() % present.size();
        FlowEntry* entry = table.find(present[victim], hash_key(present[victim]));
        ASSERT_NE(entry, nullptr);
        table.erase(*entry);
        present.erase(present.begin() + ptrdiff_t(victim));
        for (const PacketKey& key : present) {
            const FlowEntry* found = table.find(key, hash_key(key));
            ASSERT_NE(found, nullptr);
            EXPECT_EQ(table.key_of(*found), key);
        }
        EXPECT_EQ(table.size(), present.size());
    }
}

// IPv4 keys and IPv6 keys whose folded addresses and ports coincide stay apart.
TEST(FlowTable, WideAndNarrowKeysWithTheSameFoldAreDifferentFlows) {
    FlowTable table(16);
    KeyFields v4;
    v4.ip_version = 4;
    v4.src_address = {10, 0, 0, 1};
    v4.dst_address = {10, 0, 0, 2};
    const PacketKey narrow = make_key(v4);
    PacketKey wide = narrow;
    wide.words[1] = 0x1234;                            // breaks "fits one word"
    wide.words[0] ^= std::rotl(uint64_t{0x1234}, 17);  // and restores the same fold
    ASSERT_EQ(fold_addresses(wide), fold_addresses(narrow));
    ASSERT_TRUE(addresses_wide(wide));
    ASSERT_NE(table.insert(narrow, 7), nullptr);  // same home slot for both
    EXPECT_EQ(table.find(wide, 7), nullptr);
    ASSERT_NE(table.insert(wide, 7), nullptr);
    EXPECT_NE(table.find(wide, 7), table.find(narrow, 7));
    EXPECT_EQ(table.key_of(*table.find(wide, 7)), wide);
    EXPECT_EQ(table.key_of(*table.find(narrow, 7)), narrow);
}

TEST(FlowTable, TopFlowsByBytes) {
    FlowTable table(64);
    for (uint32_t n = 0; n < 40; ++n) {
        FlowEntry* entry = table.insert(key_for(n), hash_key(key_for(n)));
        entry->bytes = (n * 37) % 40;  // a permutation of 0..39
    }
    const std::vector<FlowRecord> top = top_flows_by_bytes(table, 3);
    ASSERT_EQ(top.size(), 3u);
    EXPECT_EQ(top[0].bytes, 39u);
    EXPECT_EQ(top[1].bytes, 38u);
    EXPECT_EQ(top[2].bytes, 37u);
    EXPECT_EQ(top_flows_by_bytes(table, 100).size(), 40u);
}

}  // namespace
}  // namespace twinlane::classifier
