// FlowTable: a bounded, preallocated flow cache (open addressing with linear probing and
// backward-shift deletion, no tombstones). Each entry caches the flow's classification decision,
// counters (packets, bytes, first/last seen) and elephant-detection state.
//
// Sizing: `capacity` entries are allocated up front, plus an index of 2 × capacity (rounded up
// to a power of two) 8-byte slots, so the index is at most half full and a probe always ends.
// When `capacity` flows are present, insert() returns nullptr and counts an overflow: the
// caller still classifies the packet, just without caching. Ageing is incremental: expire()
// visits at most `max_visits` entries per call, resuming where the previous call stopped.
//
// Threading: single writer, no internal locking (one table per RX lcore). for_each/top-N may
// run on the owning thread only (e.g. between bursts when the control plane asks).
#pragma once

#include <cstdint>
#include <vector>

#include "classifier/huge_page_allocator.h"
#include "classifier/packet_key.h"
#include "classifier/result.h"
#include "classifier/rule.h"

namespace twinlane::classifier {

struct FlowDecision {
    uint32_t job_id = 0;
    uint32_t rule_index = kNoRule;
    uint8_t class_id = 0;
    uint8_t remark_dscp = kNoRemark;
    MatchSource source = MatchSource::default_class;

    friend bool operator==(const FlowDecision&, const FlowDecision&) = default;
};

struct alignas(64) FlowEntry {
    PacketKey key;
    uint64_t packets = 0;
    uint64_t bytes = 0;
    uint64_t first_seen_ns = 0;
    uint64_t last_seen_ns = 0;
    uint64_t window_start_ns = 0;   // elephant detection: current window start
    uint64_t window_bytes = 0;      // bytes seen in the current window
    uint32_t rules_epoch = 0;       // Classifier rule epoch `decision` was taken under
    FlowDecision decision;          // what rules/heuristics say for this flow
    FlowDecision applied;           // what its packets get now: lags `decision` (or the
                                    // elephant verdict) until a gap, see README.md
    bool elephant = false;
    bool in_use = false;
};

static_assert(sizeof(FlowEntry) == 128, "two cache lines: see FlowTable::prefetch_entry");

class FlowTable {
public:
    explicit FlowTable(uint32_t capacity);

    // Entry for `key` (with `hash` = hash_key(key)), or nullptr.
    FlowEntry* find(const PacketKey& key, uint32_t hash) {
        uint32_t slot = hash & slot_mask_;
        for (;;) {
            const uint64_t value = slots_[slot];
            if (value == 0) return nullptr;
            if (uint32_t(value >> 32) == hash) {
                FlowEntry& entry = entries_[uint32_t(value) - 1];
                if (entry.key == key) return &entry;
            }
            slot = (slot + 1) & slot_mask_;
        }
    }

    // A fresh entry (counters zero, in_use set, key filled), or nullptr when full.
    // `key` must not be present.
    FlowEntry* insert(const PacketKey& key, uint32_t hash);

    // Hint the index slot `hash` maps to into cache (issued for a burst before lookups).
    void prefetch(uint32_t hash) const { __builtin_prefetch(&slots_[hash & slot_mask_]); }

    // Second stage of a batched lookup: if the home slot of `hash` (prefetched earlier) is
    // occupied by a matching hash tag, pull that entry into cache too.
    void prefetch_entry(uint32_t hash) const {
        const uint64_t value = slots_[hash & slot_mask_];
        if (value != 0 && uint32_t(value >> 32) == hash) {
            // Both cache lines: a hit reads the key (first line) and updates ageing, elephant
            // and decision state (second line).
            const char* entry = reinterpret_cast<const char*>(&entries_[uint32_t(value) - 1]);
            __builtin_prefetch(entry);
            __builtin_prefetch(entry + 64);
        }
    }

    void erase(FlowEntry& entry);

    // Removes entries idle for at least idle_timeout_ns, visiting at most max_visits entries.
    // Returns how many were removed.
    uint32_t expire(uint64_t now_ns, uint64_t idle_timeout_ns, uint32_t max_visits);

    void clear();

    // True when the next expire() call starts a new sweep of the table from its first entry.
    bool at_sweep_start() const { return aging_cursor_ == 0 || aging_cursor_ >= high_water_; }

    template <typename Visitor>
    void for_each(Visitor&& visit) const {
        for (const FlowEntry& entry : entries_) {
            if (entry.in_use) visit(entry);
        }
    }

    uint32_t size() const { return size_; }
    uint32_t capacity() const { return uint32_t(entries_.size()); }
    uint64_t overflow_count() const { return overflow_count_; }
    uint64_t expired_count() const { return expired_count_; }

private:
    // 0 empty, else (hash << 32) | (entry index + 1)
    std::vector<uint64_t, HugePageAllocator<uint64_t>> slots_;
    std::vector<FlowEntry, HugePageAllocator<FlowEntry>> entries_;
    std::vector<uint32_t> free_entries_;  // stack of unused entry indices
    uint32_t slot_mask_ = 0;
    uint32_t size_ = 0;
    // Entries at or above this index have never been handed out (insert() takes the lowest
    // free index first), so ageing never visits them; see expire().
    uint32_t high_water_ = 0;
    uint32_t aging_cursor_ = 0;
    uint64_t overflow_count_ = 0;
    uint64_t expired_count_ = 0;
};

// Copies of the `n` flows with the most bytes, largest first (ties: more packets first).
// Allocates: for the control plane's "top flows" view, not the hot path.
std::vector<FlowEntry> top_flows_by_bytes(const FlowTable& table, size_t n);

}  // namespace twinlane::classifier
