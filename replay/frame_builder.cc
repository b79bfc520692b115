#include "replay/frame_builder.h"

#include <algorithm>
#include <cstring>

namespace twinlane::replay {
namespace {

void put16(uint8_t* at, uint16_t value) {
    at[0] = static_cast<uint8_t>(value >> 8);
    at[1] = static_cast<uint8_t>(value);
}

void put32(uint8_t* at, uint32_t value) {
    put16(at, static_cast<uint16_t>(value >> 16));
    put16(at + 2, static_cast<uint16_t>(value));
}

uint32_t sum16(std::span<const uint8_t> bytes, uint32_t sum) {
    size_t i = 0;
    for (; i + 1 < bytes.size(); i += 2) {
        sum += static_cast<uint32_t>(bytes[i] << 8 | bytes[i + 1]);
        // Fold early so very long payloads (jumbo frames) cannot overflow 32 bits.
        if (sum > 0x7FFF'FFFF) sum = (sum & 0xFFFF) + (sum >> 16);
    }
    if (i < bytes.size()) sum += static_cast<uint32_t>(bytes[i] << 8);
    return sum;
}

uint16_t fold(uint32_t sum) {
    while (sum >> 16)
        sum = (sum & 0xFFFF) + (sum >> 16);
    return static_cast<uint16_t>(~sum);
}

}  // namespace

IpAddress IpAddress::v4(uint32_t host_order_address) {
    IpAddress address;
    address.version = 4;
    put32(address.bytes.data(), host_order_address);
    return address;
}

IpAddress IpAddress::v6(const std::array<uint8_t, 16>& network_order_bytes) {
    IpAddress address;
    address.version = 6;
    address.bytes = network_order_bytes;
    return address;
}

MacAddress mac_for(const IpAddress& address) {
    const uint8_t* low = address.bytes.data() + (address.version == 6 ? 12 : 0);
    return {0x02, static_cast<uint8_t>(address.version), low[0], low[1], low[2], low[3]};
}

uint16_t internet_checksum(std::span<const uint8_t> bytes, uint32_t initial) {
    return fold(sum16(bytes, initial));
}

void build_frame(const FrameHeaders& headers, std::span<const uint8_t> payload_prefix,
                 size_t payload_length, uint8_t filler, std::vector<uint8_t>& out) {
    const bool is_v6 = headers.src_ip.version == 6;
    const size_t ip_header_bytes = is_v6 ? 40 : 20;
    const size_t l4_header_bytes = headers.protocol == L4Protocol::tcp ? 20 : 8;
    const size_t l4_bytes = l4_header_bytes + payload_length;
    out.resize(kEthernetHeaderBytes + ip_header_bytes + l4_bytes);
    uint8_t* frame = out.data();

    const MacAddress dst_mac = mac_for(headers.dst_ip);
    const MacAddress src_mac = mac_for(headers.src_ip);
    std::memcpy(frame, dst_mac.data(), 6);
    std::memcpy(frame + 6, src_mac.data(), 6);
    put16(frame + 12, is_v6 ? 0x86DD : 0x0800);

    uint8_t* ip = frame + kEthernetHeaderBytes;
    uint8_t* l4 = ip + ip_header_bytes;
    const uint8_t protocol = static_cast<uint8_t>(headers.protocol);
    // The pseudo-header sum is shared by TCP and UDP checksums.
    uint32_t pseudo_sum = protocol + static_cast<uint32_t>(l4_bytes);
    if (is_v6) {
        put32(ip, 0x6000'0000U | static_cast<uint32_t>(headers.traffic_class) << 20 |
                      (headers.ipv6_flow_label & 0xFFFFF));
        put16(ip + 4, static_cast<uint16_t>(l4_bytes));
        ip[6] = protocol;
        ip[7] = headers.hop_limit;
        std::memcpy(ip + 8, headers.src_ip.bytes.data(), 16);
        std::memcpy(ip + 24, headers.dst_ip.bytes.data(), 16);
        pseudo_sum = sum16({ip + 8, 32}, pseudo_sum);
    } else {
        ip[0] = 0x45;
        ip[1] = headers.traffic_class;
        put16(ip + 2, static_cast<uint16_t>(ip_header_bytes + l4_bytes));
        put16(ip + 4, headers.ipv4_id);
        put16(ip + 6, 0x4000);  // DF: these senders do path MTU discovery
        ip[8] = headers.hop_limit;
        ip[9] = protocol;
        put16(ip + 10, 0);
        std::memcpy(ip + 12, headers.src_ip.bytes.data(), 4);
        std::memcpy(ip + 16, headers.dst_ip.bytes.data(), 4);
        put16(ip + 10, internet_checksum({ip, 20}));
        pseudo_sum = sum16({ip + 12, 8}, pseudo_sum);
    }

    put16(l4, headers.src_port);
    put16(l4 + 2, headers.dst_port);
    uint8_t* payload = l4 + l4_header_bytes;
    const size_t prefix_bytes = std::min(payload_prefix.size(), payload_length);
    if (prefix_bytes > 0) std::memcpy(payload, payload_prefix.data(), prefix_bytes);
    std::memset(payload + prefix_bytes, filler, payload_length - prefix_bytes);

    if (headers.protocol == L4Protocol::tcp) {
        put32(l4 + 4, headers.tcp_seq);
        put32(l4 + 8, headers.tcp_ack);
        l4[12] = 5 << 4;  // data offset: 5 words, no options
        l4[13] = headers.tcp_flags;
        put16(l4 + 14, headers.tcp_window);
        put16(l4 + 16, 0);
        put16(l4 + 18, 0);
        put16(l4 + 16, fold(sum16({l4, l4_bytes}, pseudo_sum)));
    } else {
        put16(l4 + 4, static_cast<uint16_t>(l4_bytes));
        put16(l4 + 6, 0);
        if (is_v6 || headers.udp_checksum_ipv4) {
            uint16_t checksum = fold(sum16({l4, l4_bytes}, pseudo_sum));
            if (checksum == 0) checksum = 0xFFFF;  // 0 means "no checksum" on the wire
            put16(l4 + 6, checksum);
        }
    }
    // Ethernet's minimum frame is 64 bytes with FCS; pad after the IP packet like a NIC does.
    if (out.size() < kMinimumFrameBytes) out.resize(kMinimumFrameBytes, 0);
}

}  // namespace twinlane::replay
