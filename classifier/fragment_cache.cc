#include "classifier/fragment_cache.h"

#include <bit>

namespace twinlane::classifier {

FragmentCache::FragmentCache(uint32_t capacity) {
    if (capacity == 0) return;
    const uint32_t sets = std::bit_ceil((capacity + kWays - 1) / kWays);
    entries_.resize(size_t{sets} * kWays);
    set_mask_ = sets - 1;
}

PacketKey FragmentCache::datagram_key(const PacketKey& flow_key, uint32_t fragment_id) {
    PacketKey key = flow_key;
    key.words[4] = fragment_id;  // replaces ingress port, VLAN and ports
    key.words[5] &= (uint64_t{0xFF} << 56) | (uint64_t{0xFF} << 40);  // protocol, IP version
    return key;
}

void FragmentCache::remember(const PacketKey& datagram, const FragmentDecision& decision,
                             uint64_t now_ns, uint64_t timeout_ns) {
    if (entries_.empty()) return;
    Entry* set = &entries_[size_t{hash_key(datagram) & set_mask_} * kWays];
    Entry* victim = &set[0];
    for (uint32_t way = 0; way < kWays; ++way) {
        Entry& entry = set[way];
        if (entry.expires_ns != 0 && entry.key == datagram) {
            victim = &entry;
            break;
        }
        if (entry.expires_ns <= now_ns) {  // empty or expired: free to take
            victim = &entry;
            continue;
        }
        if (victim->expires_ns > now_ns && entry.expires_ns < victim->expires_ns) victim = &entry;
    }
    victim->key = datagram;
    victim->expires_ns = now_ns + (timeout_ns == 0 ? 1 : timeout_ns);
    victim->value = decision;
}

const FragmentDecision* FragmentCache::recall(const PacketKey& datagram, uint64_t now_ns) const {
    if (entries_.empty()) return nullptr;
    const Entry* set = &entries_[size_t{hash_key(datagram) & set_mask_} * kWays];
    for (uint32_t way = 0; way < kWays; ++way) {
        if (set[way].expires_ns > now_ns && set[way].key == datagram) return &set[way].value;
    }
    return nullptr;
}

}  // namespace twinlane::classifier
