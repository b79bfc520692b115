// Network (big-endian) byte order over unaligned bytes: the loads the parser and the flow key
// use, and the stores that rewrite header fields (replay's TSO segments). Pure, header-only;
// GCC folds the shifts into one load and a byte swap.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace twinlane::classifier {

inline uint16_t load_be16(const uint8_t* p) {
    return uint16_t((p[0] << 8) | p[1]);
}

inline uint32_t load_be32(const uint8_t* p) {
    return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

// One load and a byte swap (a byte-by-byte loop was not folded by GCC 12 and dominated key
// building in classifier_bench).
inline uint64_t load_be64(const uint8_t* bytes) {
    uint64_t value;
    std::memcpy(&value, bytes, sizeof value);
    if constexpr (std::endian::native == std::endian::little) value = __builtin_bswap64(value);
    return value;
}

inline void store_be16(uint8_t* p, uint16_t value) {
    p[0] = uint8_t(value >> 8);
    p[1] = uint8_t(value);
}

inline void store_be32(uint8_t* p, uint32_t value) {
    store_be16(p, uint16_t(value >> 16));
    store_be16(p + 2, uint16_t(value));
}

}  // namespace twinlane::classifier
