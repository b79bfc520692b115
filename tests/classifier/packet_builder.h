// Test helper: builds Ethernet frames layer by layer (VLAN tags, IPv4 with options/fragment
// fields, IPv6 with extension headers, TCP/UDP/ICMP, RoCEv2 BTH, VXLAN + inner frame) and fixes
// lengths and the IPv4 checksum in build(). Every length field covers "to the end of the frame",
// so nested headers (VXLAN) stay consistent. Test-only; allocates freely.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "classifier/dscp_rewrite.h"

namespace twinlane::classifier::testing {

using Ipv4Address = std::array<uint8_t, 4>;
using Ipv6Address = std::array<uint8_t, 16>;

inline Ipv6Address ipv6(uint16_t first_group, uint16_t last_group) {
    Ipv6Address address{};
    address[0] = uint8_t(first_group >> 8);
    address[1] = uint8_t(first_group);
    address[14] = uint8_t(last_group >> 8);
    address[15] = uint8_t(last_group);
    return address;
}

class PacketBuilder {
  public:
    PacketBuilder& ethernet(uint16_t ether_type = 0) {
        // Byte by byte: GCC 12 warns falsely (stringop-overflow) on a range insert here.
        const uint8_t header[12] = {0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2};
        for (uint8_t byte : header)
            put8(byte);
        pending_ether_type_ = bytes_.size();
        put16(ether_type);
        return *this;
    }
    PacketBuilder& vlan(uint16_t vid, uint16_t tpid = 0x8100) {
        set_ether_type(tpid);
        put16(vid & 0x0FFF);
        pending_ether_type_ = bytes_.size();
        put16(0);
        return *this;
    }
    PacketBuilder& ipv4(Ipv4Address src, Ipv4Address dst, uint8_t protocol, uint8_t tos = 0,
                        uint32_t option_bytes = 0, uint16_t id = 0x1234,
                        uint16_t fragment_offset_units = 0, bool more_fragments = false) {
        set_ether_type(0x0800);
        ipv4_offsets_.push_back(bytes_.size());
        const uint32_t header = 20 + option_bytes;  // option_bytes must be a multiple of 4
        put8(uint8_t(0x40 | (header / 4)));
        put8(tos);
        put16(0);  // total length: build()
        put16(id);
        put16(uint16_t((more_fragments ? 0x2000 : 0) | (fragment_offset_units & 0x1FFF)));
        put8(64);
        put8(protocol);
        put16(0);  // checksum: build()
        for (uint8_t byte : src)
            put8(byte);
        for (uint8_t byte : dst)
            put8(byte);
        for (uint32_t i = 0; i < option_bytes; ++i)
            put8(i + 1 == option_bytes ? 0 : 1);  // NOPs, EOL
        return *this;
    }
    PacketBuilder& ipv6(Ipv6Address src, Ipv6Address dst, uint8_t next_header,
                        uint8_t traffic_class = 0) {
        set_ether_type(0x86DD);
        ipv6_offsets_.push_back(bytes_.size());
        put8(uint8_t(0x60 | (traffic_class >> 4)));
        put8(uint8_t((traffic_class & 0x0F) << 4));
        put16(0);
        put16(0);  // payload length: build()
        put8(next_header);
        put8(64);
        for (uint8_t byte : src)
            put8(byte);
        for (uint8_t byte : dst)
            put8(byte);
        return *this;
    }
    // Hop-by-hop (0), routing (43) or destination options (60): `units` × 8 bytes beyond 8.
    PacketBuilder& ipv6_option_header(uint8_t next_header, uint8_t units = 0) {
        put8(next_header);
        put8(units);
        for (uint32_t i = 2; i < 8u * (units + 1u); ++i)
            put8(0);
        return *this;
    }
    PacketBuilder& ipv6_fragment(uint8_t next_header, uint16_t offset_units, bool more,
                                 uint32_t id) {
        put8(next_header);
        put8(0);
        put16(uint16_t((offset_units << 3) | (more ? 1 : 0)));
        put32(id);
        return *this;
    }
    // Authentication header: (payload_len + 2) × 4 bytes; payload_len 1 → 12 bytes (no ICV).
    PacketBuilder& ipv6_ah(uint8_t next_header, uint8_t payload_len = 1) {
        put8(next_header);
        put8(payload_len);
        for (uint32_t i = 2; i < 4u * (payload_len + 2u); ++i)
            put8(0);
        return *this;
    }
    PacketBuilder& tcp(uint16_t sport, uint16_t dport, uint32_t option_bytes = 0) {
        put16(sport);
        put16(dport);
        put32(1);
        put32(0);
        put8(uint8_t(((20 + option_bytes) / 4) << 4));
        put8(0x10);
        put16(65535);
        put16(0);
        put16(0);
        for (uint32_t i = 0; i < option_bytes; ++i)
            put8(1);
        return *this;
    }
    PacketBuilder& udp(uint16_t sport, uint16_t dport) {
        udp_offsets_.push_back(bytes_.size());
        put16(sport);
        put16(dport);
        put16(0);  // length: build()
        put16(0);
        return *this;
    }
    PacketBuilder& icmp(uint8_t type, uint8_t code) {
        put8(type);
        put8(code);
        put16(0);
        put32(0);
        return *this;
    }
    PacketBuilder& bth(uint8_t opcode, uint32_t dest_qp) {
        put8(opcode);
        put8(0);
        put16(0xFFFF);
        put8(0);
        put8(uint8_t(dest_qp >> 16));
        put8(uint8_t(dest_qp >> 8));
        put8(uint8_t(dest_qp));
        put32(0);
        return *this;
    }
    PacketBuilder& vxlan(uint32_t vni, uint8_t flags = 0x08) {
        put8(flags);
        put8(0);
        put16(0);
        put8(uint8_t(vni >> 16));
        put8(uint8_t(vni >> 8));
        put8(uint8_t(vni));
        put8(0);
        return *this;
    }
    PacketBuilder& payload(uint32_t count, uint8_t value = 0xAB) {
        bytes_.insert(bytes_.end(), count, value);
        return *this;
    }

    std::vector<uint8_t> build() const {
        std::vector<uint8_t> frame = bytes_;
        for (size_t offset : udp_offsets_)
            set16(frame, offset + 4, uint16_t(frame.size() - offset));
        for (size_t offset : ipv6_offsets_) {
            set16(frame, offset + 4, uint16_t(frame.size() - offset - 40));
        }
        // Innermost first is irrelevant: each IPv4 length covers to the end of the frame.
        for (size_t offset : ipv4_offsets_) {
            set16(frame, offset + 2, uint16_t(frame.size() - offset));
            const uint32_t header = (frame[offset] & 0x0F) * 4u;
            set16(frame, offset + 10, ipv4_header_checksum(frame.data() + offset, header));
        }
        return frame;
    }

  private:
    void put8(uint8_t value) { bytes_.push_back(value); }
    void put16(uint16_t value) {
        put8(uint8_t(value >> 8));
        put8(uint8_t(value));
    }
    void put32(uint32_t value) {
        put16(uint16_t(value >> 16));
        put16(uint16_t(value));
    }
    void set_ether_type(uint16_t ether_type) {
        bytes_[pending_ether_type_] = uint8_t(ether_type >> 8);
        bytes_[pending_ether_type_ + 1] = uint8_t(ether_type);
    }
    static void set16(std::vector<uint8_t>& frame, size_t offset, uint16_t value) {
        frame[offset] = uint8_t(value >> 8);
        frame[offset + 1] = uint8_t(value);
    }

    std::vector<uint8_t> bytes_;
    size_t pending_ether_type_ = 0;
    std::vector<size_t> ipv4_offsets_;
    std::vector<size_t> ipv6_offsets_;
    std::vector<size_t> udp_offsets_;
};

}  // namespace twinlane::classifier::testing
