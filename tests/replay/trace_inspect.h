// Test-side decoding of generated frames, written independently of replay/frame_builder so the
// tests check the generator against the wire formats, not against its own helpers.
#pragma once

#include <cstdint>
#include <span>

namespace twinlane::replay::testing {

struct DecodedFrame {
    bool valid = false;  // Ethernet + IPv4/IPv6 + TCP/UDP decoded within bounds
    uint8_t ip_version = 0;
    uint8_t traffic_class = 0;  // TOS / IPv6 traffic class
    uint8_t protocol = 0;
    const uint8_t* src_ip = nullptr;  // 4 or 16 bytes, network order
    const uint8_t* dst_ip = nullptr;
    uint16_t src_port = 0;
    uint16_t dst_port = 0;
    uint8_t tcp_flags = 0;
    uint32_t tcp_seq = 0;
    bool ipv4_checksum_ok = false;  // IPv4 only
    bool l4_checksum_ok = false;    // UDP with checksum 0 over IPv4 counts as ok
    bool udp_checksum_zero = false;
    size_t l4_payload_offset = 0;
    size_t l4_payload_length = 0;
};

inline uint16_t read16(const uint8_t* at) {
    return static_cast<uint16_t>(at[0] << 8 | at[1]);
}
inline uint32_t read32(const uint8_t* at) {
    return static_cast<uint32_t>(read16(at)) << 16 | read16(at + 2);
}

// Ones' complement sum without the final complement: a correct header sums to 0xFFFF.
inline uint32_t ones_sum(const uint8_t* data, size_t length, uint32_t sum = 0) {
    for (size_t i = 0; i + 1 < length; i += 2)
        sum += read16(data + i);
    if (length % 2) sum += static_cast<uint32_t>(data[length - 1]) << 8;
    while (sum >> 16)
        sum = (sum & 0xFFFF) + (sum >> 16);
    return sum;
}

inline DecodedFrame decode(std::span<const uint8_t> frame) {
    DecodedFrame out;
    if (frame.size() < 14) return out;
    const uint16_t ethertype = read16(frame.data() + 12);
    const uint8_t* ip = frame.data() + 14;
    const size_t ip_room = frame.size() - 14;
    size_t ip_header = 0;
    size_t l4_length = 0;
    uint32_t pseudo = 0;
    if (ethertype == 0x0800) {
        if (ip_room < 20 || (ip[0] >> 4) != 4) return out;
        ip_header = static_cast<size_t>(ip[0] & 0xF) * 4;
        const size_t total = read16(ip + 2);
        if (ip_header < 20 || total > ip_room || total < ip_header) return out;
        out.ip_version = 4;
        out.traffic_class = ip[1];
        out.protocol = ip[9];
        out.src_ip = ip + 12;
        out.dst_ip = ip + 16;
        out.ipv4_checksum_ok = ones_sum(ip, ip_header) == 0xFFFF;
        l4_length = total - ip_header;
        pseudo = ones_sum(ip + 12, 8, out.protocol + static_cast<uint32_t>(l4_length));
    } else if (ethertype == 0x86DD) {
        if (ip_room < 40 || (ip[0] >> 4) != 6) return out;
        ip_header = 40;
        l4_length = read16(ip + 4);
        if (40 + l4_length > ip_room) return out;
        out.ip_version = 6;
        out.traffic_class = static_cast<uint8_t>((read16(ip) >> 4) & 0xFF);
        out.protocol = ip[6];
        out.src_ip = ip + 8;
        out.dst_ip = ip + 24;
        pseudo = ones_sum(ip + 8, 32, out.protocol + static_cast<uint32_t>(l4_length));
    } else {
        return out;
    }
    const uint8_t* l4 = ip + ip_header;
    if (out.protocol == 6) {
        if (l4_length < 20) return out;
        const size_t tcp_header = static_cast<size_t>(l4[12] >> 4) * 4;
        if (tcp_header < 20 || tcp_header > l4_length) return out;
        out.tcp_seq = read32(l4 + 4);
        out.tcp_flags = l4[13];
        out.l4_payload_offset = 14 + ip_header + tcp_header;
        out.l4_payload_length = l4_length - tcp_header;
    } else if (out.protocol == 17) {
        if (l4_length < 8 || read16(l4 + 4) != l4_length) return out;
        out.udp_checksum_zero = read16(l4 + 6) == 0;
        out.l4_payload_offset = 14 + ip_header + 8;
        out.l4_payload_length = l4_length - 8;
    } else {
        return out;
    }
    out.src_port = read16(l4);
    out.dst_port = read16(l4 + 2);
    out.l4_checksum_ok = (out.protocol == 17 && out.ip_version == 4 && out.udp_checksum_zero) ||
                         ones_sum(l4, l4_length, pseudo) == 0xFFFF;
    out.valid = true;
    return out;
}

}  // namespace twinlane::replay::testing
