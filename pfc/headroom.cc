#include "pfc/headroom.h"

namespace twinlane::pfc {
namespace {

__extension__ using Wide = unsigned __int128;

// bytes = rate x time, rounded up: an under-estimate would let a queue overflow.
uint64_t bytes_in(uint64_t rate_bits_per_sec, uint64_t numerator, uint64_t denominator) {
    const Wide bits = static_cast<Wide>(rate_bits_per_sec) * numerator;
    const Wide divisor = static_cast<Wide>(denominator) * 8;
    return static_cast<uint64_t>((bits + divisor - 1) / divisor);
}

}  // namespace

Headroom compute_headroom(const HeadroomInputs& in) {
    Headroom h;
    h.cable_bytes = bytes_in(in.rate_bits_per_sec, 2 * in.cable_metres, kCableMetresPerSecond);
    h.peer_bytes = in.peer_response_bytes;
    h.frame_bytes = 2 * uint64_t{in.max_frame_bytes};
    h.software_bytes =
        bytes_in(in.rate_bits_per_sec, in.poll_ns, 1'000'000'000) + in.tx_budget_bytes;
    return h;
}

std::string Headroom::to_string() const {
    return std::to_string(total_bytes()) + " B (cable " + std::to_string(cable_bytes) + " + peer " +
           std::to_string(peer_bytes) + " + frames " + std::to_string(frame_bytes) +
           " + software " + std::to_string(software_bytes) + ")";
}

}  // namespace twinlane::pfc
