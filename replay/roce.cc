#include "replay/roce.h"

#include <array>
#include <cstring>

#include "replay/frame_builder.h"

namespace twinlane::replay {
namespace {

// CRC-32 (IEEE 802.3, reflected), table built once at compile time.
constexpr std::array<uint32_t, 256> make_crc_table() {
    std::array<uint32_t, 256> table{};
    for (uint32_t i = 0; i < 256; ++i) {
        uint32_t crc = i;
        for (int bit = 0; bit < 8; ++bit)
            crc = (crc >> 1) ^ ((crc & 1U) ? 0xEDB88320U : 0U);
        table[i] = crc;
    }
    return table;
}
constexpr auto kCrcTable = make_crc_table();

uint32_t crc_update(uint32_t crc, const uint8_t* bytes, size_t length) {
    for (size_t i = 0; i < length; ++i)
        crc = kCrcTable[(crc ^ bytes[i]) & 0xFF] ^ (crc >> 8);
    return crc;
}

}  // namespace

size_t encode_roce_headers(const BthFields& bth, const RethFields& reth,
                           std::span<uint8_t, kBthBytes + kRethBytes> out) {
    uint8_t* at = out.data();
    at[0] = bth.opcode;
    at[1] = 0;  // SE=0, MigReq=0, PadCnt=0 (4096-byte payloads need no pad), TVer=0
    at[2] = static_cast<uint8_t>(bth.partition_key >> 8);
    at[3] = static_cast<uint8_t>(bth.partition_key);
    at[4] = 0;  // reserved
    at[5] = static_cast<uint8_t>(bth.dest_qp >> 16);
    at[6] = static_cast<uint8_t>(bth.dest_qp >> 8);
    at[7] = static_cast<uint8_t>(bth.dest_qp);
    at[8] = bth.ack_request ? 0x80 : 0x00;
    at[9] = static_cast<uint8_t>(bth.psn >> 16);
    at[10] = static_cast<uint8_t>(bth.psn >> 8);
    at[11] = static_cast<uint8_t>(bth.psn);
    if (!opcode_carries_reth(bth.opcode)) return kBthBytes;
    uint8_t* r = at + kBthBytes;
    for (int i = 0; i < 8; ++i)
        r[i] = static_cast<uint8_t>(reth.virtual_address >> (56 - 8 * i));
    for (int i = 0; i < 4; ++i)
        r[8 + i] = static_cast<uint8_t>(reth.remote_key >> (24 - 8 * i));
    for (int i = 0; i < 4; ++i)
        r[12 + i] = static_cast<uint8_t>(reth.dma_length >> (24 - 8 * i));
    return kBthBytes + kRethBytes;
}

uint32_t compute_icrc(std::span<const uint8_t> frame) {
    const bool is_v6 = frame.size() > 13 && frame[12] == 0x86 && frame[13] == 0xDD;
    const size_t ip_bytes = is_v6 ? 40 : 20;
    const size_t masked_bytes = ip_bytes + 8 + kBthBytes;  // IP + UDP + BTH
    const size_t l3 = kEthernetHeaderBytes;
    if (frame.size() < l3 + masked_bytes + kIcrcBytes) return 0;

    std::array<uint8_t, 40 + 8 + kBthBytes> masked{};
    std::memcpy(masked.data(), frame.data() + l3, masked_bytes);
    if (is_v6) {
        masked[0] |= 0x0F;  // traffic class (low half of byte 0 .. high half of byte 1)
        masked[1] = 0xFF;   // rest of traffic class + flow label
        masked[2] = 0xFF;
        masked[3] = 0xFF;
        masked[7] = 0xFF;  // hop limit
    } else {
        masked[1] = 0xFF;   // TOS (DSCP + ECN)
        masked[8] = 0xFF;   // TTL
        masked[10] = 0xFF;  // header checksum
        masked[11] = 0xFF;
    }
    masked[ip_bytes + 6] = 0xFF;  // UDP checksum
    masked[ip_bytes + 7] = 0xFF;
    masked[ip_bytes + 8 + 4] = 0xFF;  // BTH reserved byte

    static constexpr uint8_t kOnes[8] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
    uint32_t crc = crc_update(0xFFFFFFFFU, kOnes, sizeof(kOnes));
    crc = crc_update(crc, masked.data(), masked_bytes);
    const size_t payload_start = l3 + masked_bytes;
    crc = crc_update(crc, frame.data() + payload_start, frame.size() - kIcrcBytes - payload_start);
    return ~crc;
}

void store_icrc(std::span<uint8_t> frame) {
    const uint32_t icrc = compute_icrc(frame);
    uint8_t* slot = frame.data() + frame.size() - kIcrcBytes;
    for (int i = 0; i < 4; ++i)
        slot[i] = static_cast<uint8_t>(icrc >> (8 * i));
}

}  // namespace twinlane::replay
