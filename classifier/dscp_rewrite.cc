#include "classifier/dscp_rewrite.h"

namespace twinlane::classifier {

bool rewrite_dscp(uint8_t* l3, uint8_t ip_version, uint8_t dscp) {
    if (dscp > 63) return false;
    if (ip_version == 4) {
        const uint16_t old_word = uint16_t((l3[0] << 8) | l3[1]);
        l3[1] = uint8_t((dscp << 2) | (l3[1] & 0x03));
        const uint16_t new_word = uint16_t((l3[0] << 8) | l3[1]);
        // HC' = ~(~HC + ~m + m'), one's-complement sums folded to 16 bits.
        uint32_t sum = uint16_t(~((l3[10] << 8) | l3[11]));
        sum += uint16_t(~old_word);
        sum += new_word;
        sum = (sum & 0xFFFF) + (sum >> 16);
        sum = (sum & 0xFFFF) + (sum >> 16);
        const uint16_t checksum = uint16_t(~sum);
        l3[10] = uint8_t(checksum >> 8);
        l3[11] = uint8_t(checksum);
        return true;
    }
    if (ip_version == 6) {
        // Traffic class straddles bytes 0 and 1: version:4 tc:8 flow_label:20.
        const uint8_t traffic_class = uint8_t((dscp << 2) | (((l3[1] >> 4) & 0x03)));
        l3[0] = uint8_t((l3[0] & 0xF0) | (traffic_class >> 4));
        l3[1] = uint8_t(((traffic_class & 0x0F) << 4) | (l3[1] & 0x0F));
        return true;
    }
    return false;
}

uint8_t read_dscp(const uint8_t* l3, uint8_t ip_version) {
    if (ip_version == 4) return l3[1] >> 2;
    if (ip_version == 6) return uint8_t((((l3[0] & 0x0F) << 4) | (l3[1] >> 4)) >> 2);
    return 0;
}

uint16_t ipv4_header_checksum(const uint8_t* l3, uint32_t header_bytes) {
    uint32_t sum = 0;
    for (uint32_t i = 0; i + 1 < header_bytes; i += 2) {
        if (i == 10) continue;  // the checksum field itself
        sum += uint32_t((l3[i] << 8) | l3[i + 1]);
    }
    while (sum >> 16)
        sum = (sum & 0xFFFF) + (sum >> 16);
    return uint16_t(~sum);
}

}  // namespace twinlane::classifier
