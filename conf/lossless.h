// What a lossless class needs, from the policy alone (pure; the loader's checks, `twinlane
// check`'s report and compile use the same numbers): the headroom of each PFC ingress port
// (pfc/headroom.h; `headroom: auto`) and the room a leaf of the class needs on an egress port,
// xoff + headroom from every PFC port that forwards to it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "conf/policy.h"
#include "pfc/headroom.h"

namespace twinlane::conf {

// The smallest frame a lossless leaf's packet limit is sized for (an Ethernet minimum frame
// with its FCS): a packet limit below room / 64 could drop small packets before xoff.
inline constexpr uint64_t kMinFrameBytes = 64;

// The computed headroom of PFC ingress port `port` (its rate, frames, cable, peer, TX budget;
// twinlane's poll from pfc.poll).
pfc::Headroom auto_headroom(const Policy& policy, size_t port);

// The class's headroom on `port`: as given, else computed.
uint64_t headroom_bytes(const Policy& policy, size_t port, const LosslessPolicy& lossless);

struct LosslessRoom {
    size_t ingress_ports = 0;  // PFC ports forwarding to the egress port
    uint64_t bytes = 0;        // the sum of their xoff + headroom
};
LosslessRoom lossless_room(const Policy& policy, size_t egress_port,
                           const LosslessPolicy& lossless);

}  // namespace twinlane::conf
