// PacketKey: the fields rules match on and flows are told apart by, packed into six 64-bit words
// so that masking, hashing and comparing a key are a handful of word operations (the rule
// table's tuple search and the flow table both work on whole words).
//
// Layout (all values host order, addresses as big-endian 128-bit numbers split in two words):
//   w0,w1  source address       (IPv4: the 32-bit address in the top half of w0, rest zero)
//   w2,w3  destination address  (same convention)
//   w4     ingress_port:16 | vlan_id:16 | src_port:16 | dst_port:16
//   w5     ip_protocol:8 | dscp:8 | ip_version:8 | roce:8 | 0:8 | dest_qp:24
// Fields that do not apply are zero (no VLAN → vlan_id 0, no TCP/UDP → ports 0, no RoCE → 0).
// Plain value type; no thread-safety concerns.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>

#include "classifier/byte_order.h"

namespace twinlane::classifier {

struct PacketKey {
    std::array<uint64_t, 6> words{};

    // Branch-free word compare: the defaulted operator== compiled to a memcmp call that cost
    // ~6% of the flow-table hit path in classifier_bench.
    friend bool operator==(const PacketKey& a, const PacketKey& b) {
        uint64_t difference = 0;
        for (size_t i = 0; i < 6; ++i)
            difference |= a.words[i] ^ b.words[i];
        return difference == 0;
    }
};

// The decoded view used to build a key (and by the linear reference matcher in tests).
struct KeyFields {
    std::array<uint8_t, 16> src_address{};  // IPv4 uses the first 4 bytes
    std::array<uint8_t, 16> dst_address{};
    uint16_t ingress_port = 0;
    uint16_t vlan_id = 0;
    uint16_t src_port = 0;
    uint16_t dst_port = 0;
    uint8_t ip_protocol = 0;
    uint8_t dscp = 0;
    uint8_t ip_version = 0;  // 0 (not IP), 4 or 6
    bool roce = false;
    uint32_t dest_qp = 0;  // 24 bits
};

inline PacketKey make_key(const KeyFields& f) {
    PacketKey key;
    key.words[0] = load_be64(f.src_address.data());
    key.words[1] = load_be64(f.src_address.data() + 8);
    key.words[2] = load_be64(f.dst_address.data());
    key.words[3] = load_be64(f.dst_address.data() + 8);
    key.words[4] = (uint64_t{f.ingress_port} << 48) | (uint64_t{f.vlan_id} << 32) |
                   (uint64_t{f.src_port} << 16) | f.dst_port;
    key.words[5] = (uint64_t{f.ip_protocol} << 56) | (uint64_t{f.dscp} << 48) |
                   (uint64_t{f.ip_version} << 40) | (uint64_t{f.roce ? 1u : 0u} << 32) |
                   (f.dest_qp & 0xFFFFFFu);
    return key;
}

inline uint16_t key_ingress_port(const PacketKey& k) {
    return uint16_t(k.words[4] >> 48);
}
inline uint16_t key_vlan_id(const PacketKey& k) {
    return uint16_t(k.words[4] >> 32);
}
inline uint16_t key_src_port(const PacketKey& k) {
    return uint16_t(k.words[4] >> 16);
}
inline uint16_t key_dst_port(const PacketKey& k) {
    return uint16_t(k.words[4]);
}
inline uint8_t key_ip_protocol(const PacketKey& k) {
    return uint8_t(k.words[5] >> 56);
}
inline uint8_t key_dscp(const PacketKey& k) {
    return uint8_t(k.words[5] >> 48);
}
inline uint8_t key_ip_version(const PacketKey& k) {
    return uint8_t(k.words[5] >> 40);
}
inline bool key_roce(const PacketKey& k) {
    return ((k.words[5] >> 32) & 0xFF) != 0;
}
inline uint32_t key_dest_qp(const PacketKey& k) {
    return uint32_t(k.words[5] & 0xFFFFFF);
}

// Three independent pairwise multiplies (NH-style, so they overlap in the pipeline instead of
// forming a six-multiply dependency chain), then a multiply-xorshift finaliser so that low
// bits (used as table index) depend on every input bit.
inline uint32_t hash_key(const PacketKey& key) {
    const auto& w = key.words;
    uint64_t h = (w[0] + 0x243F6A8885A308D3ull) * (w[1] + 0x13198A2E03707344ull) +
                 (w[2] + 0xA4093822299F31D0ull) * (w[3] + 0x082EFA98EC4E6C89ull) +
                 (w[4] + 0x452821E638D01377ull) * (w[5] + 0xBE5466CF34E90C6Cull);
    h ^= h >> 31;
    h *= 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    return uint32_t(h ^ (h >> 32));
}

}  // namespace twinlane::classifier
