#include "classifier/parser.h"

#include <cstring>

namespace twinlane::classifier {
namespace {

constexpr uint16_t kEtherTypeIpv4 = 0x0800;
constexpr uint16_t kEtherTypeIpv6 = 0x86DD;
constexpr uint16_t kEtherTypeVlan = 0x8100;
constexpr uint16_t kEtherTypeQinQ = 0x88A8;
constexpr uint16_t kEtherTypeQinQLegacy = 0x9100;

constexpr uint8_t kProtoHopByHop = 0;
constexpr uint8_t kProtoIcmp = 1;
constexpr uint8_t kProtoTcp = 6;
constexpr uint8_t kProtoUdp = 17;
constexpr uint8_t kProtoRouting = 43;
constexpr uint8_t kProtoFragment = 44;
constexpr uint8_t kProtoAh = 51;
constexpr uint8_t kProtoIcmpv6 = 58;
constexpr uint8_t kProtoDestOptions = 60;

constexpr uint32_t kEthernetHeader = 14;
constexpr uint32_t kVlanTag = 4;
constexpr uint32_t kIpv4MinHeader = 20;
constexpr uint32_t kIpv6Header = 40;
constexpr uint32_t kTcpMinHeader = 20;
constexpr uint32_t kUdpHeader = 8;
constexpr uint32_t kIcmpHeader = 4;
constexpr uint32_t kBthHeader = 12;
constexpr uint32_t kVxlanHeader = 8;

// One parse of one frame. `readable` bounds every read; `end` arguments bound what length
// fields may claim (the wire length, or the enclosing IP/UDP payload for inner headers).
class FrameParser {
  public:
    FrameParser(const uint8_t* data, uint32_t readable, const ParserOptions& options,
                ParsedPacket& out)
        : data_(data), readable_(readable), options_(options), out_(out) {}

    MalformedReason ethernet(uint32_t offset, uint32_t end, bool inner) {
        if (!readable(offset, kEthernetHeader) || end - offset < kEthernetHeader) {
            return MalformedReason::ethernet_truncated;
        }
        uint16_t ether_type = load_be16(data_ + offset + 12);
        offset += kEthernetHeader;
        unsigned depth = 0;
        while (ether_type == kEtherTypeVlan || ether_type == kEtherTypeQinQ ||
               ether_type == kEtherTypeQinQLegacy) {
            if (depth == options_.max_vlan_depth) return MalformedReason::vlan_too_deep;
            if (!readable(offset, kVlanTag) || end - offset < kVlanTag) {
                return MalformedReason::vlan_truncated;
            }
            if (!inner) {
                if (depth == 0) out_.vlan_id = load_be16(data_ + offset) & 0x0FFF;
                out_.vlan_count = uint8_t(depth + 1);
            }
            ether_type = load_be16(data_ + offset + 2);
            offset += kVlanTag;
            ++depth;
        }
        if (ether_type == kEtherTypeIpv4) return ipv4(offset, end, inner);
        if (ether_type == kEtherTypeIpv6) return ipv6(offset, end, inner);
        return MalformedReason::none;  // ARP, LLDP, ...: not IP, not malformed
    }

  private:
    bool readable(uint32_t offset, uint32_t length) const {
        return offset <= readable_ && length <= readable_ - offset;
    }

    void set_l3(uint32_t offset, uint8_t version, uint8_t traffic_class, bool inner) {
        if (!inner) {
            out_.l3_offset = uint16_t(offset);
            out_.ip_version = version;
            out_.dscp = traffic_class >> 2;
            out_.ecn = traffic_class & 3;
        }
        out_.flow_l3_offset = uint16_t(offset);
        out_.flow_ip_version = version;
        out_.flow_dscp = traffic_class >> 2;
    }

    MalformedReason ipv4(uint32_t offset, uint32_t end, bool inner) {
        if (!readable(offset, kIpv4MinHeader)) return MalformedReason::ipv4_truncated;
        const uint8_t* ip = data_ + offset;
        if ((ip[0] >> 4) != 4) return MalformedReason::ipv4_bad_version;
        const uint32_t header_length = uint32_t(ip[0] & 0x0F) * 4;
        if (header_length < kIpv4MinHeader) return MalformedReason::ipv4_bad_header_length;
        if (!readable(offset, header_length)) return MalformedReason::ipv4_truncated;
        const uint32_t total_length = load_be16(ip + 2);
        if (total_length < header_length || offset > end || total_length > end - offset) {
            return MalformedReason::ipv4_bad_total_length;
        }
        set_l3(offset, 4, ip[1], inner);
        out_.ip_protocol = ip[9];
        std::memcpy(out_.src_address.data(), ip + 12, 4);
        std::memcpy(out_.dst_address.data(), ip + 16, 4);
        out_.src_ipv4 = load_be32(ip + 12);
        out_.dst_ipv4 = load_be32(ip + 16);
        const uint16_t fragment_field = load_be16(ip + 6);
        const bool more_fragments = (fragment_field & 0x2000) != 0;
        const uint32_t fragment_offset = fragment_field & 0x1FFF;
        if (fragment_offset != 0) {
            out_.fragment = Fragment::later;
            out_.fragment_id = load_be16(ip + 4);
            return MalformedReason::none;  // no L4 header in a non-first fragment
        }
        if (more_fragments) {
            out_.fragment = Fragment::first;
            out_.fragment_id = load_be16(ip + 4);
        }
        return l4(offset + header_length, offset + total_length, ip[9], inner);
    }

    MalformedReason ipv6(uint32_t offset, uint32_t end, bool inner) {
        if (!readable(offset, kIpv6Header)) return MalformedReason::ipv6_truncated;
        const uint8_t* ip = data_ + offset;
        if ((ip[0] >> 4) != 6) return MalformedReason::ipv6_bad_version;
        const uint32_t payload_length = load_be16(ip + 4);
        if (offset > end || end - offset < kIpv6Header ||
            payload_length > end - offset - kIpv6Header) {
            return MalformedReason::ipv6_bad_payload_length;
        }
        // Payload length 0 is a jumbogram (RFC 2675): the frame bounds the payload.
        const uint32_t l3_end = payload_length == 0 ? end : offset + kIpv6Header + payload_length;
        set_l3(offset, 6, uint8_t(((ip[0] & 0x0F) << 4) | (ip[1] >> 4)), inner);
        std::memcpy(out_.src_address.data(), ip + 8, 16);
        std::memcpy(out_.dst_address.data(), ip + 24, 16);
        out_.src_ipv4 = 0;  // an inner IPv6 packet replaces outer IPv4 addresses
        out_.dst_ipv4 = 0;

        uint8_t next = ip[6];
        uint32_t cursor = offset + kIpv6Header;
        for (unsigned walked = 0;; ++walked) {
            const bool extension = next == kProtoHopByHop || next == kProtoRouting ||
                                   next == kProtoDestOptions || next == kProtoFragment ||
                                   next == kProtoAh;
            if (!extension) break;
            if (walked == kMaxIpv6ExtensionHeaders) return MalformedReason::ipv6_ext_too_deep;
            if (!readable(cursor, 2) || cursor > l3_end || l3_end - cursor < 2) {
                return MalformedReason::ipv6_ext_truncated;
            }
            const uint8_t* ext = data_ + cursor;
            uint32_t length = 0;
            if (next == kProtoFragment) {
                length = 8;
            } else if (next == kProtoAh) {
                length = (uint32_t{ext[1]} + 2) * 4;
            } else {
                length = (uint32_t{ext[1]} + 1) * 8;
            }
            if (!readable(cursor, length) || length > l3_end - cursor) {
                return MalformedReason::ipv6_ext_truncated;
            }
            if (next == kProtoFragment) {
                const uint16_t offset_field = load_be16(ext + 2);
                out_.fragment_id = load_be32(ext + 4);
                if ((offset_field & 0xFFF8) != 0) {
                    out_.fragment = Fragment::later;
                    out_.ip_protocol = ext[0];
                    return MalformedReason::none;
                }
                // An atomic fragment (offset 0, M 0) is a whole packet: treat as unfragmented.
                if (offset_field & 1) out_.fragment = Fragment::first;
            }
            next = ext[0];
            cursor += length;
        }
        out_.ip_protocol = next;
        return l4(cursor, l3_end, next, inner);
    }

    MalformedReason l4(uint32_t offset, uint32_t l3_end, uint8_t protocol, bool inner) {
        const uint32_t room = offset <= l3_end ? l3_end - offset : 0;
        switch (protocol) {
            case kProtoTcp: {
                if (!readable(offset, kTcpMinHeader) || room < kTcpMinHeader) {
                    return MalformedReason::l4_truncated;
                }
                const uint8_t* tcp = data_ + offset;
                const uint32_t header_length = uint32_t(tcp[12] >> 4) * 4;
                if (header_length < kTcpMinHeader) return MalformedReason::tcp_bad_data_offset;
                if (!readable(offset, header_length) || room < header_length) {
                    return MalformedReason::l4_truncated;
                }
                out_.src_port = load_be16(tcp);
                out_.dst_port = load_be16(tcp + 2);
                return MalformedReason::none;
            }
            case kProtoUdp: {
                if (!readable(offset, kUdpHeader) || room < kUdpHeader) {
                    return MalformedReason::l4_truncated;
                }
                const uint8_t* udp = data_ + offset;
                const uint32_t udp_length = load_be16(udp + 4);
                // A first fragment carries the whole datagram's length, not its own: only
                // the part in this fragment (up to `room`) can be checked and parsed.
                if (udp_length < kUdpHeader ||
                    (udp_length > room && out_.fragment != Fragment::first)) {
                    return MalformedReason::udp_bad_length;
                }
                const uint32_t udp_here = udp_length < room ? udp_length : room;
                out_.src_port = load_be16(udp);
                out_.dst_port = load_be16(udp + 2);
                const uint32_t payload = offset + kUdpHeader;
                if (out_.dst_port == options_.roce_port) {
                    if (!readable(payload, kBthHeader) || udp_here - kUdpHeader < kBthHeader) {
                        return MalformedReason::roce_truncated;
                    }
                    out_.roce = true;
                    out_.bth_opcode = data_[payload];
                    out_.dest_qp = (uint32_t{data_[payload + 5]} << 16) |
                                   (uint32_t{data_[payload + 6]} << 8) | data_[payload + 7];
                    return MalformedReason::none;
                }
                if (!inner && options_.vxlan_inner && out_.dst_port == options_.vxlan_port) {
                    if (!readable(payload, kVxlanHeader) || udp_here - kUdpHeader < kVxlanHeader) {
                        return MalformedReason::vxlan_truncated;
                    }
                    if ((data_[payload] & 0x08) == 0) return MalformedReason::vxlan_bad_flags;
                    out_.vxlan = true;
                    out_.vni = (uint32_t{data_[payload + 4]} << 16) |
                               (uint32_t{data_[payload + 5]} << 8) | data_[payload + 6];
                    // The inner packet replaces the flow fields of the outer one.
                    out_.src_port = 0;
                    out_.dst_port = 0;
                    out_.fragment = Fragment::none;
                    out_.fragment_id = 0;
                    out_.ip_protocol = 0;
                    out_.src_address = {};
                    out_.dst_address = {};
                    out_.src_ipv4 = 0;
                    out_.dst_ipv4 = 0;
                    out_.flow_ip_version = 0;
                    out_.flow_dscp = 0;
                    return ethernet(payload + kVxlanHeader, offset + udp_here, true);
                }
                return MalformedReason::none;
            }
            case kProtoIcmp:
            case kProtoIcmpv6: {
                if (!readable(offset, kIcmpHeader) || room < kIcmpHeader) {
                    return MalformedReason::l4_truncated;
                }
                out_.icmp_type = data_[offset];
                out_.icmp_code = data_[offset + 1];
                return MalformedReason::none;
            }
            default:
                return MalformedReason::none;
        }
    }

    const uint8_t* data_;
    uint32_t readable_;
    const ParserOptions& options_;
    ParsedPacket& out_;
};

}  // namespace

MalformedReason parse_packet(const uint8_t* data, uint32_t header_bytes, uint32_t wire_length,
                             const ParserOptions& options, ParsedPacket& out) {
    out = ParsedPacket{};
    const uint32_t readable = header_bytes < wire_length ? header_bytes : wire_length;
    FrameParser parser(data, readable, options, out);
    out.malformed = parser.ethernet(0, wire_length, false);
    return out.malformed;
}

}  // namespace twinlane::classifier
