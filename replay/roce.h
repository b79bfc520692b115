// RoCEv2 (InfiniBand transport over UDP/IP) header encoding for synthetic training traffic.
//
// Contract: encode_roce_headers() writes the Base Transport Header (12 bytes) and, for the
// first/only packet of an RDMA WRITE, the RDMA Extended Transport Header (16 bytes).
// store_icrc() computes the invariant CRC of a complete Ethernet/IP/UDP/BTH frame whose last
// four bytes are the ICRC slot and stores it there (little-endian, as Linux rxe does): the CRC
// covers 8 bytes of ones, the IP header with TOS/ECN, TTL and checksum (IPv6: traffic class,
// flow label, hop limit) masked to ones, the UDP header with its checksum masked, the BTH with
// its reserved byte masked, and the payload. Masking is why the scheduler may set ECN CE
// without invalidating the packet.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace twinlane::replay {

inline constexpr uint16_t kRoceV2UdpPort = 4791;
inline constexpr size_t kBthBytes = 12;
inline constexpr size_t kRethBytes = 16;
inline constexpr size_t kIcrcBytes = 4;

namespace bth_opcode {
inline constexpr uint8_t kRcRdmaWriteFirst = 0x06;
inline constexpr uint8_t kRcRdmaWriteMiddle = 0x07;
inline constexpr uint8_t kRcRdmaWriteLast = 0x08;
inline constexpr uint8_t kRcRdmaWriteOnly = 0x0A;
}  // namespace bth_opcode

struct BthFields {
    uint8_t opcode = bth_opcode::kRcRdmaWriteOnly;
    bool ack_request = false;
    uint16_t partition_key = 0xFFFF;
    uint32_t dest_qp = 0;  // 24 bits
    uint32_t psn = 0;      // 24 bits
};

struct RethFields {
    uint64_t virtual_address = 0;
    uint32_t remote_key = 0;
    uint32_t dma_length = 0;
};

constexpr bool opcode_carries_reth(uint8_t opcode) {
    return opcode == bth_opcode::kRcRdmaWriteFirst || opcode == bth_opcode::kRcRdmaWriteOnly;
}

// Returns the bytes written (12 or 28); `out` must hold kBthBytes + kRethBytes.
size_t encode_roce_headers(const BthFields& bth, const RethFields& reth,
                           std::span<uint8_t, kBthBytes + kRethBytes> out);

uint32_t compute_icrc(std::span<const uint8_t> frame);
void store_icrc(std::span<uint8_t> frame);

}  // namespace twinlane::replay
