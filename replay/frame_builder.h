// Builds valid Ethernet/IPv4|IPv6/TCP|UDP frames for synthetic traces.
//
// Contract: build_frame() writes into `out` (resized, capacity reused so a caller keeps one
// buffer per source): Ethernet II header, IPv4 (no options, DF set, correct header checksum)
// or IPv6 (no extension headers), then TCP (20-byte header, correct checksum) or UDP (checksum
// computed, except IPv4 with `udp_checksum_ipv4` false, where 0 means "none" as RFC 768
// allows and RoCEv2 NICs do). The L4 payload is `payload_prefix` followed by filler bytes up
// to `payload_length`. Callers that must patch payload bytes after the checksum was computed
// (RoCE's ICRC trailer) use UDP with checksum 0, which does not cover the payload. Frames
// shorter than 60 bytes are zero-padded after the IP packet, as Ethernet requires.
// Thread-safety: pure functions.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace twinlane::replay {

using MacAddress = std::array<uint8_t, 6>;

struct IpAddress {
    uint8_t version = 4;              // 4 or 6
    std::array<uint8_t, 16> bytes{};  // IPv4 uses the first 4 bytes, network order

    static IpAddress v4(uint32_t host_order_address);
    static IpAddress v6(const std::array<uint8_t, 16>& network_order_bytes);
    friend bool operator==(const IpAddress&, const IpAddress&) = default;
};

// Locally administered unicast MAC (02:...) derived from the IP, so each host keeps one MAC.
MacAddress mac_for(const IpAddress& address);

enum class L4Protocol : uint8_t { tcp = 6, udp = 17 };

namespace tcp_flags {
inline constexpr uint8_t kFin = 0x01;
inline constexpr uint8_t kSyn = 0x02;
inline constexpr uint8_t kPsh = 0x08;
inline constexpr uint8_t kAck = 0x10;
}  // namespace tcp_flags

struct FrameHeaders {
    IpAddress src_ip;
    IpAddress dst_ip;
    uint8_t traffic_class = 0;  // IPv4 TOS / IPv6 traffic class: DSCP << 2 | ECN
    uint8_t hop_limit = 64;
    uint16_t ipv4_id = 0;
    uint32_t ipv6_flow_label = 0;
    L4Protocol protocol = L4Protocol::udp;
    uint16_t src_port = 0;
    uint16_t dst_port = 0;
    uint32_t tcp_seq = 0;
    uint32_t tcp_ack = 0;
    uint8_t tcp_flags = tcp_flags::kAck;
    uint16_t tcp_window = 65535;
    bool udp_checksum_ipv4 = true;
};

inline constexpr size_t kEthernetHeaderBytes = 14;
inline constexpr size_t kMinimumFrameBytes = 60;  // without FCS
inline constexpr uint8_t kEcnEct0 = 0x2;

// Bytes before the L4 payload: Ethernet + IP + TCP/UDP.
constexpr size_t header_bytes(uint8_t ip_version, L4Protocol protocol) {
    return kEthernetHeaderBytes + (ip_version == 6 ? 40 : 20) +
           (protocol == L4Protocol::tcp ? 20 : 8);
}

void build_frame(const FrameHeaders& headers, std::span<const uint8_t> payload_prefix,
                 size_t payload_length, uint8_t filler, std::vector<uint8_t>& out);

// RFC 1071 ones' complement sum, folded and complemented; `initial` chains partial sums.
uint16_t internet_checksum(std::span<const uint8_t> bytes, uint32_t initial = 0);

}  // namespace twinlane::replay
