#include "sched/ecn.h"

namespace twinlane::sched {

namespace {

constexpr uint8_t kEcnMask = 0x03;

// The header's own version field: the classifier parsed it as this version before setting l3.
uint8_t ip_version(const Packet& packet) {
    return static_cast<uint8_t>(packet.l3[0] >> 4);
}

}  // namespace

EcnCodepoint read_ecn(const Packet& packet) {
    if (packet.l3 == nullptr) return EcnCodepoint::not_ect;
    const uint8_t version = ip_version(packet);
    if (version == 4) return static_cast<EcnCodepoint>(packet.l3[1] & kEcnMask);
    // IPv6: traffic class straddles bytes 0 and 1; its two low bits are bits 5..4 of byte 1.
    if (version == 6) return static_cast<EcnCodepoint>((packet.l3[1] >> 4) & kEcnMask);
    return EcnCodepoint::not_ect;
}

bool mark_ce(const Packet& packet) {
    const EcnCodepoint ecn = read_ecn(packet);
    if (ecn == EcnCodepoint::not_ect) return false;
    if (ecn == EcnCodepoint::ce) return true;
    uint8_t* ip = packet.l3;
    if (ip_version(packet) == 4) {
        // RFC 1624: HC' = ~(~HC + ~m + m') over the 16-bit word holding version/IHL and TOS.
        const uint16_t old_word = static_cast<uint16_t>((ip[0] << 8) | ip[1]);
        ip[1] = static_cast<uint8_t>(ip[1] | kEcnMask);
        const uint16_t new_word = static_cast<uint16_t>((ip[0] << 8) | ip[1]);
        const uint16_t old_checksum = static_cast<uint16_t>((ip[10] << 8) | ip[11]);
        uint32_t sum = static_cast<uint16_t>(~old_checksum);
        sum += static_cast<uint16_t>(~old_word);
        sum += new_word;
        sum = (sum & 0xffff) + (sum >> 16);
        sum = (sum & 0xffff) + (sum >> 16);
        const uint16_t new_checksum = static_cast<uint16_t>(~sum);
        ip[10] = static_cast<uint8_t>(new_checksum >> 8);
        ip[11] = static_cast<uint8_t>(new_checksum & 0xff);
    } else {
        ip[1] = static_cast<uint8_t>(ip[1] | (kEcnMask << 4));
    }
    return true;
}

uint16_t ipv4_header_checksum(const uint8_t* header, uint32_t header_bytes) {
    uint32_t sum = 0;
    for (uint32_t i = 0; i + 1 < header_bytes; i += 2) {
        if (i == 10) continue;  // the checksum field itself counts as zero
        sum += static_cast<uint32_t>((header[i] << 8) | header[i + 1]);
    }
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return static_cast<uint16_t>(~sum);
}

}  // namespace twinlane::sched
