// MalformedReason: why the parser rejected a packet. Counted per reason by the classifier and
// handled by ClassifierConfig::malformed_policy (default class or drop).
// Plain enum; no thread-safety concerns.
#pragma once

#include <cstdint>
#include <string_view>

namespace twinlane::classifier {

enum class MalformedReason : uint8_t {
    none = 0,
    ethernet_truncated,       // fewer than 14 bytes
    vlan_truncated,           // a VLAN tag announced but cut short
    vlan_too_deep,            // more stacked tags than ParserOptions::max_vlan_depth
    ipv4_truncated,           // IPv4 header (with options) cut short
    ipv4_bad_version,         // ethertype IPv4 but version field is not 4
    ipv4_bad_header_length,   // IHL < 5
    ipv4_bad_total_length,    // total length < IHL, or beyond the frame
    ipv6_truncated,           // fixed IPv6 header cut short
    ipv6_bad_version,         // ethertype IPv6 but version field is not 6
    ipv6_bad_payload_length,  // payload length beyond the frame
    ipv6_ext_truncated,       // an extension header cut short (or past the payload)
    ipv6_ext_too_deep,        // more extension headers than the bounded walk allows
    l4_truncated,             // TCP/UDP/ICMP header cut short
    tcp_bad_data_offset,      // TCP data offset < 5
    udp_bad_length,           // UDP length < 8 or beyond the IP payload
    roce_truncated,           // UDP port 4791 without a full 12-byte BTH
    vxlan_truncated,          // UDP port 4789 without a full 8-byte VXLAN header
    vxlan_bad_flags,          // VXLAN I flag (VNI valid) not set
    count
};

inline constexpr size_t kMalformedReasonCount = size_t(MalformedReason::count);

constexpr std::string_view to_string(MalformedReason reason) {
    switch (reason) {
        case MalformedReason::none:
            return "none";
        case MalformedReason::ethernet_truncated:
            return "ethernet_truncated";
        case MalformedReason::vlan_truncated:
            return "vlan_truncated";
        case MalformedReason::vlan_too_deep:
            return "vlan_too_deep";
        case MalformedReason::ipv4_truncated:
            return "ipv4_truncated";
        case MalformedReason::ipv4_bad_version:
            return "ipv4_bad_version";
        case MalformedReason::ipv4_bad_header_length:
            return "ipv4_bad_header_length";
        case MalformedReason::ipv4_bad_total_length:
            return "ipv4_bad_total_length";
        case MalformedReason::ipv6_truncated:
            return "ipv6_truncated";
        case MalformedReason::ipv6_bad_version:
            return "ipv6_bad_version";
        case MalformedReason::ipv6_bad_payload_length:
            return "ipv6_bad_payload_length";
        case MalformedReason::ipv6_ext_truncated:
            return "ipv6_ext_truncated";
        case MalformedReason::ipv6_ext_too_deep:
            return "ipv6_ext_too_deep";
        case MalformedReason::l4_truncated:
            return "l4_truncated";
        case MalformedReason::tcp_bad_data_offset:
            return "tcp_bad_data_offset";
        case MalformedReason::udp_bad_length:
            return "udp_bad_length";
        case MalformedReason::roce_truncated:
            return "roce_truncated";
        case MalformedReason::vxlan_truncated:
            return "vxlan_truncated";
        case MalformedReason::vxlan_bad_flags:
            return "vxlan_bad_flags";
        case MalformedReason::count:
            break;
    }
    return "unknown";
}

}  // namespace twinlane::classifier
