// Headroom of a lossless priority: the bytes that still arrive after twinlane decides to pause
// its sender (the queue crossed xoff), so that a sender that obeys never meets a full queue.
// SONiC's formula for a switch port plus the software's own reaction:
//
//   cable      2 x cable length / 1.98e8 m/s x rate   the XOFF travels to the peer and what the
//                                                     peer sent meanwhile travels back
//   peer       peer_response                          the peer's reaction (its pipeline)
//   frames     2 x largest frame                      the frame the peer is sending when XOFF
//                                                     lands, and the one twinlane is sending
//                                                     when it decides (the XOFF waits for it)
//   software   poll x rate + tx_budget                a loop of twinlane's lcore before it sees
//                                                     the crossing, and the NIC TX ring's bytes
//                                                     queued ahead of the XOFF on the ingress port
//
// Pure; units in the names.
#pragma once

#include <cstdint>
#include <string>

namespace twinlane::pfc {

// Speed of light in copper or fibre, as SONiC's buffer calculation takes it.
inline constexpr uint64_t kCableMetresPerSecond = 198'000'000;

struct HeadroomInputs {
    uint64_t rate_bits_per_sec = 0;  // the ingress port's rate
    uint32_t max_frame_bytes = 0;
    uint64_t cable_metres = 0;
    uint64_t peer_response_bytes = 0;
    uint64_t poll_ns = 0;          // twinlane's worst loop time
    uint64_t tx_budget_bytes = 0;  // the ingress port's TX budget (it sends the XOFF)
};

struct Headroom {
    uint64_t cable_bytes = 0;
    uint64_t peer_bytes = 0;
    uint64_t frame_bytes = 0;
    uint64_t software_bytes = 0;
    uint64_t total_bytes() const { return cable_bytes + peer_bytes + frame_bytes + software_bytes; }
    // "73395 B (cable 1263 + peer 4096 + frames 18036 + software 50000)"
    std::string to_string() const;
};

Headroom compute_headroom(const HeadroomInputs& in);

}  // namespace twinlane::pfc
