// A virtual Ethernet link of a given rate: how long a frame occupies the wire.
//
// Frames as captured carry no preamble, start-of-frame delimiter, inter-frame gap or FCS, yet
// all of them take link time: each frame costs sched::wire_bytes (sched/ethernet_wire.h).
// Serialisation times are exact over a whole run: the fractional nanosecond left by each frame is
// carried into the next, so 10^6 frames at 10G end exactly where the bit count says. Pure value
// type; not thread-safe.
#pragma once

#include <cstdint>

#include "sched/ethernet_wire.h"

namespace twinlane::replay {

using sched::wire_bytes;

class VirtualLink {
  public:
    explicit VirtualLink(uint64_t rate_bits_per_sec) : rate_(rate_bits_per_sec) {}

    uint64_t rate_bits_per_sec() const { return rate_; }

    // Time the link needs to carry a frame of `frame_bytes` (advances the carried remainder).
    uint64_t transmit_ns(uint32_t frame_bytes) {
        // Fits in 64 bits: a 64 KiB frame is 5.3e14 bit-ns, the remainder is below the rate.
        const uint64_t scaled = wire_bytes(frame_bytes) * 8u * 1'000'000'000u + remainder_;
        remainder_ = scaled % rate_;
        return scaled / rate_;
    }

    // The same, without carrying: for bounds and reports.
    uint64_t serialization_ns(uint32_t frame_bytes) const {
        return (wire_bytes(frame_bytes) * 8u * 1'000'000'000u + rate_ - 1) / rate_;
    }

  private:
    uint64_t rate_;
    uint64_t remainder_ = 0;
};

}  // namespace twinlane::replay
