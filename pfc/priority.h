// A packet's 802.1p priority, as a lossless class is bound to it: the PCP of its outer VLAN tag
// (802.1Q or 802.1ad), else, for untagged RoCE, what the policy's DSCP → priority map says
// (RoCE deployments mark lossless traffic with a DSCP, e.g. 26, and map it to priority 3).
// Pure and inline: run per packet, and only for packets of lossless classes.
#pragma once

#include <array>
#include <cstdint>

namespace twinlane::pfc {

inline constexpr uint8_t kNoPriority = 0xFF;

using DscpPriorityMap = std::array<uint8_t, 64>;  // kNoPriority where unmapped

// `readable` bytes of the frame from its Ethernet header on.
inline uint8_t packet_priority(const uint8_t* frame, uint32_t readable,
                               const DscpPriorityMap& dscp_priority) {
    if (readable < 16) return kNoPriority;
    const uint16_t ether_type = static_cast<uint16_t>(frame[12] << 8 | frame[13]);
    if (ether_type == 0x8100 || ether_type == 0x88A8) return frame[14] >> 5;
    if (ether_type == 0x0800) return dscp_priority[frame[15] >> 2];  // IPv4 TOS
    if (ether_type == 0x86DD) return dscp_priority[(frame[14] & 0x0F) << 2 | frame[15] >> 6];
    return kNoPriority;
}

}  // namespace twinlane::pfc
