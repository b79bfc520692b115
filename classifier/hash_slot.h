// hash_slot: a key's home among 2^bits slots by Fibonacci hashing (Knuth, TAOCP 6.4): the high
// bits of key * 2^32/phi. One multiply; it spreads flow hashes and small job ids alike, so the
// fixed tables keyed by them (held flows, the SLO governor's overrides and flow meter, the
// admission leaf map's per-job slots) all place keys with it.
#pragma once

#include <cstdint>

namespace twinlane::classifier {

constexpr uint32_t hash_slot(uint32_t key, uint32_t bits) {
    return bits == 0 ? 0 : (key * 0x9E3779B1u) >> (32 - bits);
}

}  // namespace twinlane::classifier
