#include "classifier/flow_table.h"

#include <algorithm>

#include "classifier/hash_slot.h"

namespace twinlane::classifier {

FlowTable::FlowTable(uint32_t capacity, uint32_t slots_per_flow)
    : entries_(slots_for(capacity, slots_per_flow)),
      cold_(entries_.size()),
      capacity_(capacity),
      slot_mask_(uint32_t(entries_.size()) - 1) {}

FlowEntry* FlowTable::insert(const PacketKey& key, uint32_t hash) {
    if (size_ == capacity_) {
        ++overflow_count_;
        return nullptr;
    }
    uint32_t slot = hash & slot_mask_;
    while (entries_[slot].in_use)
        slot = (slot + 1) & slot_mask_;
    FlowEntry& entry = entries_[slot];
    entry = FlowEntry{};
    entry.address_word = fold_addresses(key);
    entry.port_word = key.words[4];
    entry.protocol_word = key.words[5];
    entry.wide = addresses_wide(key);
    entry.in_use = 1;
    FlowColdState& cold = cold_[slot];
    cold = FlowColdState{};
    std::copy_n(key.words.begin(), 4, cold.addresses.begin());
    ++size_;
    return &entry;
}

PacketKey FlowTable::key_of(const FlowEntry& entry) const {
    PacketKey key;
    const FlowColdState& state = cold(entry);
    std::copy_n(state.addresses.begin(), 4, key.words.begin());
    key.words[4] = entry.port_word;
    key.words[5] = entry.protocol_word;
    return key;
}

FlowRecord FlowTable::record(const FlowEntry& entry) const {
    const FlowColdState& state = cold(entry);
    FlowRecord out;
    out.key = key_of(entry);
    out.packets = entry.packets;
    out.bytes = entry.bytes;
    out.first_seen_ns = state.first_seen_ns;
    out.last_seen_ns = entry.last_seen_ns;
    out.decision = state.decision;
    out.applied = entry.applied();
    out.elephant = entry.elephant;
    return out;
}

void FlowTable::erase(FlowEntry& entry) {
    // The home slot is recomputed from the key (not stored: keeps the entry in one line);
    // erase is for ageing, not per packet.
    const uint32_t hole = erase_slot(
        slot_of(entry), slot_mask_, [&](uint32_t s) { return entries_[s].in_use != 0; },
        [&](uint32_t s) { return hash_key(key_of(entries_[s])) & slot_mask_; },
        [&](uint32_t from, uint32_t to) {
            entries_[to] = entries_[from];
            cold_[to] = cold_[from];
        });
    entries_[hole].in_use = 0;
    --size_;
}

uint32_t FlowTable::expire(uint64_t now_ns, uint64_t idle_timeout_ns, uint32_t max_visits) {
    if (size_ == 0) {
        aging_cursor_ = 0;
        return 0;
    }
    uint32_t removed = 0;
    for (uint32_t visit = 0; visit < max_visits && size_ != 0; ++visit) {
        FlowEntry& entry = entries_[aging_cursor_];
        if (entry.in_use && now_ns >= entry.last_seen_ns &&
            now_ns - entry.last_seen_ns >= idle_timeout_ns) {
            // Stay on this slot: erase() may have shifted a later flow into it.
            erase(entry);
            ++removed;
            continue;
        }
        aging_cursor_ = (aging_cursor_ + 1) & slot_mask_;
    }
    if (size_ == 0) aging_cursor_ = 0;
    expired_count_ += removed;
    return removed;
}

std::vector<FlowRecord> top_flows_by_bytes(const FlowTable& table, size_t n) {
    std::vector<FlowRecord> flows;
    flows.reserve(table.size());
    table.for_each([&](const FlowRecord& flow) { flows.push_back(flow); });
    const auto larger = [](const FlowRecord& a, const FlowRecord& b) {
        return a.bytes != b.bytes ? a.bytes > b.bytes : a.packets > b.packets;
    };
    const size_t keep = std::min(n, flows.size());
    std::partial_sort(flows.begin(), flows.begin() + ptrdiff_t(keep), flows.end(), larger);
    flows.resize(keep);
    return flows;
}

}  // namespace twinlane::classifier
