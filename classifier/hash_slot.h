// hash_slot: a key's home among 2^bits slots by Fibonacci hashing (Knuth, TAOCP 6.4): the high
// bits of key * 2^32/phi. One multiply; it spreads flow hashes and small job ids alike, so the
// fixed tables keyed by them (held flows, the SLO governor's overrides and flow meter, the
// admission leaf map's per-job slots) all place keys with it. And erase_slot: deletion from
// any of the linear-probing tables (these, the flow table), without tombstones.
#pragma once

#include <cstdint>

namespace twinlane::classifier {

constexpr uint32_t hash_slot(uint32_t key, uint32_t bits) {
    return bits == 0 ? 0 : (key * 0x9E3779B1u) >> (32 - bits);
}

// Backward-shift deletion (TAOCP 6.4, Algorithm R) from a linear-probing table of mask + 1
// slots, slot `at` being removed: each later member of its probe run moves into the hole unless
// its home lies cyclically in (hole, member]. occupied(slot), home(slot), move(from, to).
// Returns the slot left empty, for the caller to clear.
template <typename Occupied, typename Home, typename Move>
uint32_t erase_slot(uint32_t at, uint32_t mask, Occupied&& occupied, Home&& home, Move&& move) {
    uint32_t hole = at;
    for (uint32_t next = (at + 1) & mask; occupied(next); next = (next + 1) & mask) {
        const uint32_t h = home(next);
        const bool stays = hole <= next ? (h > hole && h <= next) : (h > hole || h <= next);
        if (stays) continue;
        move(next, hole);
        hole = next;
    }
    return hole;
}

}  // namespace twinlane::classifier
