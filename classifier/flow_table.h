// FlowTable: a bounded, preallocated flow cache. Open addressing with linear probing and
// backward-shift deletion (no tombstones); each flow lives in the slot its hash probes to, so a
// lookup needs no index and a hit reads and writes one 64-byte line: FlowEntry, with the key,
// the counters, the elephant window and the decision packets get now. What a hit does not need
// (the rules' decision, first-seen time, the addresses of IPv6 keys) is kept per slot in a
// parallel array of FlowColdState.
//
// Why this layout: with an 8-byte index slot pointing into a 128-byte entry, a hit was two
// dependent DRAM reads and two lines; 1M flows ran at 16-17 Mpps, now 27 (classifier_bench,
// classifier/README.md "Benchmarks").
//
// Keys: when both addresses fit one word (IPv4, or no IP) the entry holds the whole key; for
// IPv6 it holds a fold of the addresses and `wide`, and a hit also compares the addresses in
// FlowColdState (a second line, prefetched with the first).
//
// Sizing: slots_per_flow × capacity slots rounded up to a power of two (default 4: load at
// most 1/4), 128 bytes per slot (FlowEntry + FlowColdState), allocated and touched at
// construction. The load sets how many flows sit away from their home slot, each a second
// line per hit: ~25% at load 1/2, ~12% at 1/4 (no layout with one line per entry does better
// at a given load); 1M flows in random order ran 22.6-27.7 Mpps with 2 slots per flow,
// 30.4-34.6 with 4 (classifier/README.md "Benchmarks"). 2 halves the memory. When `capacity` flows
// are present insert() returns nullptr and counts an overflow: the caller still classifies, just
// without caching. Ageing is incremental: expire() visits at most `max_visits` slots per call,
// resuming where the previous call stopped.
//
// Threading: single writer, no internal locking (one table per RX lcore). for_each/top-N run on
// the owning thread only (e.g. between bursts when the control plane asks).
#pragma once

#include <algorithm>
#include <array>
#include <bit>
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

// Rule indices a flow entry can hold (24 bits; all ones is kNoRule). ClassifierConfig and the
// policy compiler refuse larger rule tables.
inline constexpr uint32_t kMaxFlowRuleIndex = 0xFFFFFEu;
// Elephant windows count bytes in 32 bits (saturating): thresholds must stay below.
inline constexpr uint64_t kMaxElephantThresholdBytes = 0xFFFFFFFEu;

// Everything a flow-table hit touches, in one cache line.
struct alignas(64) FlowEntry {
    uint64_t address_word = 0;   // see fold_addresses(): both addresses, or a fold if `wide`
    uint64_t port_word = 0;      // PacketKey::words[4]
    uint64_t protocol_word = 0;  // PacketKey::words[5]
    uint64_t bytes = 0;
    uint64_t last_seen_ns = 0;
    uint64_t remark_dscp : 8 = kNoRemark;  // applied decision (with source, job_id, ...)
    uint64_t source : 3 = uint64_t(MatchSource::default_class);
    uint64_t in_use : 1 = 0;
    uint64_t wide : 1 = 0;           // addresses do not fit address_word: see FlowColdState
    uint64_t explicit_rule : 1 = 0;  // the rules' decision came from a rule: no elephants
    uint64_t elephant : 1 = 0;
    uint64_t pending : 1 = 0;  // applied differs from what the flow should get: waits
                               // for a gap (README.md, "Reclassification")
    // Top bits of the word: counting is one add, its carry leaves the word. Wraps after 2^48
    // (22 days of one flow at 148 Mpps).
    uint64_t packets : 48 = 0;
    uint32_t job_id = 0;
    uint32_t rule_index : 24 = 0xFFFFFFu;  // kNoRule as all ones
    uint32_t class_id : 8 = 0;
    uint32_t rules_epoch = 0;   // Classifier rule epoch FlowColdState::decision was taken under
    uint32_t window_bytes = 0;  // elephant detection: bytes in the window of last_seen_ns

    FlowDecision applied() const {
        return {job_id, rule_index == 0xFFFFFFu ? kNoRule : uint32_t(rule_index), uint8_t(class_id),
                uint8_t(remark_dscp), MatchSource(source)};
    }
    void set_applied(const FlowDecision& decision) {
        job_id = decision.job_id;
        rule_index = decision.rule_index == kNoRule ? 0xFFFFFFu : decision.rule_index;
        class_id = decision.class_id;
        remark_dscp = decision.remark_dscp;
        source = uint64_t(decision.source);
    }
};

static_assert(sizeof(FlowEntry) == 64, "one cache line per hit: see the header comment");
static_assert(kMatchSourceCount <= 8, "FlowEntry::source has 3 bits");

// The rest of a flow, same slot index as its FlowEntry: written when the flow starts or the rule
// table changes, read for IPv6 keys, reclassification, erase and the flow listing.
struct alignas(64) FlowColdState {
    std::array<uint64_t, 4> addresses{};  // PacketKey::words[0..3]
    FlowDecision decision;                // what rules/heuristics say (before elephants)
    uint64_t first_seen_ns = 0;
};

// A flow as the control plane and tests see it (a copy, not a reference into the table).
struct FlowRecord {
    PacketKey key;
    uint64_t packets = 0;
    uint64_t bytes = 0;
    uint64_t first_seen_ns = 0;
    uint64_t last_seen_ns = 0;
    FlowDecision decision;  // what rules/heuristics say
    FlowDecision applied;   // what its packets get now (may lag, see README.md)
    bool elephant = false;
};

// Both addresses of `key` in one word: exact (address_word of an IPv4 key is src << 32 | dst)
// when they fit, which is what `wide` = false means; otherwise a fold, and the caller compares
// the addresses themselves.
inline bool addresses_wide(const PacketKey& key) {
    const auto& w = key.words;
    return (w[1] | w[3] | (w[0] & 0xFFFFFFFFu) | (w[2] & 0xFFFFFFFFu)) != 0;
}
inline uint64_t fold_addresses(const PacketKey& key) {
    const auto& w = key.words;
    return w[0] ^ std::rotl(w[2], 32) ^ std::rotl(w[1], 17) ^ std::rotl(w[3], 47);
}

inline constexpr uint32_t kDefaultSlotsPerFlow = 4;
inline constexpr uint32_t kMaxSlotsPerFlow = 16;
inline constexpr uint64_t kMaxFlowSlots = uint64_t{1} << 30;

class FlowTable {
  public:
    // `slots_per_flow`: a power of two in [2, kMaxSlotsPerFlow]; capacity × slots_per_flow at
    // most kMaxFlowSlots (ClassifierConfig::validate checks both).
    explicit FlowTable(uint32_t capacity, uint32_t slots_per_flow = kDefaultSlotsPerFlow);
    // Slots for `capacity` flows: slots_per_flow × capacity rounded up to a power of two.
    static uint32_t slots_for(uint32_t capacity, uint32_t slots_per_flow) {
        return std::bit_ceil(std::max<uint32_t>(2, capacity * slots_per_flow));
    }
    // What the constructor allocates (and touches), for a memory check before building.
    static uint64_t memory_bytes(uint32_t capacity, uint32_t slots_per_flow) {
        return uint64_t{slots_for(capacity, slots_per_flow)} *
               (sizeof(FlowEntry) + sizeof(FlowColdState));
    }

    // Entry for `key` (with `hash` = hash_key(key)), or nullptr.
    FlowEntry* find(const PacketKey& key, uint32_t hash) {
        const bool wide = addresses_wide(key);
        uint32_t slot = home_slot(hash);
        for (;;) {
            switch (probe(key, wide, slot)) {
                case Probe::found:
                    return &entries_[slot];
                case Probe::absent:
                    return nullptr;
                case Probe::next:
                    break;
            }
        }
    }

    // One step of find(), for callers that interleave many lookups (classify_burst): looks at
    // `slot` (first home_slot(hash)) for `key` (`wide` = addresses_wide(key)). On Probe::next the
    // flow, if present, is further along: `slot` is advanced and that slot prefetched, so the
    // caller can do other work (other packets' lookups) before the next step instead of stalling on
    // it.
    enum class Probe : uint8_t { found, absent, next };
    Probe probe(const PacketKey& key, bool wide, uint32_t& slot) const {
        const FlowEntry& entry = entries_[slot];
        if (!entry.in_use) {
            // A new flow: insert() will write this slot's cold state.
            __builtin_prefetch(&cold_[slot], 1);
            return Probe::absent;
        }
        const uint64_t difference = (entry.address_word ^ fold_addresses(key)) |
                                    (entry.port_word ^ key.words[4]) |
                                    (entry.protocol_word ^ key.words[5]);
        if (difference == 0 && entry.wide == wide && (!wide || same_addresses(cold_[slot], key)))
            [[likely]] {
            return Probe::found;
        }
        slot = (slot + 1) & slot_mask_;
        prefetch_slot(slot, wide);
        return Probe::next;
    }
    uint32_t home_slot(uint32_t hash) const { return hash & slot_mask_; }
    FlowEntry& at(uint32_t slot) { return entries_[slot]; }

    // A fresh entry (counters zero, in_use set, key stored), or nullptr when full. `key` must
    // not be present. The caller fills the decision (cold(entry).decision, applied).
    FlowEntry* insert(const PacketKey& key, uint32_t hash);

    // Hint the home slot of `hash` into cache (issued for a burst before lookups); for a key
    // with `wide` addresses (addresses_wide()) its cold state too, which the compare reads.
    void prefetch(uint32_t hash, bool wide) const { prefetch_slot(home_slot(hash), wide); }

    FlowColdState& cold(const FlowEntry& entry) { return cold_[slot_of(entry)]; }
    const FlowColdState& cold(const FlowEntry& entry) const { return cold_[slot_of(entry)]; }
    PacketKey key_of(const FlowEntry& entry) const;
    FlowRecord record(const FlowEntry& entry) const;

    void erase(FlowEntry& entry);

    // Removes entries idle for at least idle_timeout_ns, visiting at most max_visits slots.
    // Returns how many were removed.
    uint32_t expire(uint64_t now_ns, uint64_t idle_timeout_ns, uint32_t max_visits);

    // True when the next expire() call starts a new sweep of the table from its first slot.
    bool at_sweep_start() const { return aging_cursor_ == 0; }

    // Calls visit(const FlowRecord&) for every flow. Copies each flow out: control plane only.
    template <typename Visitor>
    void for_each(Visitor&& visit) const {
        if (size_ == 0) return;
        for (const FlowEntry& entry : entries_) {
            if (entry.in_use) visit(record(entry));
        }
    }

    uint32_t size() const { return size_; }
    uint32_t capacity() const { return capacity_; }
    uint32_t slot_count() const { return slot_mask_ + 1; }
    uint64_t overflow_count() const { return overflow_count_; }
    uint64_t expired_count() const { return expired_count_; }

  private:
    void prefetch_slot(uint32_t slot, bool wide) const {
        __builtin_prefetch(&entries_[slot]);
        if (wide) [[unlikely]]
            __builtin_prefetch(&cold_[slot]);
    }
    uint32_t slot_of(const FlowEntry& entry) const { return uint32_t(&entry - entries_.data()); }
    static bool same_addresses(const FlowColdState& cold, const PacketKey& key) {
        const auto& w = key.words;
        return ((cold.addresses[0] ^ w[0]) | (cold.addresses[1] ^ w[1]) |
                (cold.addresses[2] ^ w[2]) | (cold.addresses[3] ^ w[3])) == 0;
    }

    std::vector<FlowEntry, HugePageAllocator<FlowEntry>> entries_;       // by slot
    std::vector<FlowColdState, HugePageAllocator<FlowColdState>> cold_;  // by slot
    uint32_t capacity_ = 0;
    uint32_t slot_mask_ = 0;
    uint32_t size_ = 0;
    uint32_t aging_cursor_ = 0;
    uint64_t overflow_count_ = 0;
    uint64_t expired_count_ = 0;
};

// The `n` flows with the most bytes, largest first (ties: more packets first).
// Allocates: for the control plane's "top flows" view, not the hot path.
std::vector<FlowRecord> top_flows_by_bytes(const FlowTable& table, size_t n);

}  // namespace twinlane::classifier
