// The link time of an Ethernet frame, in bytes: a frame as captured or handed to a PMD carries
// no preamble, start-of-frame delimiter, inter-frame gap or FCS, yet all of them occupy the
// wire, and a frame shorter than the minimum is padded. One rule for every place that turns
// frames into link time: the TX pacer and the scheduler's byte budget (dataplane/), and the
// virtual links, ingress schedules and generator of replay/.
#pragma once

#include <algorithm>
#include <cstdint>

namespace twinlane::sched {

inline constexpr uint32_t kMinFrameBytesWithoutFcs = 60;
inline constexpr uint32_t kFcsBytes = 4;
inline constexpr uint32_t kPreambleSfdBytes = 8;
inline constexpr uint32_t kInterFrameGapBytes = 12;
// Wire bytes per frame not in its length.
inline constexpr uint32_t kWireOverheadBytes = kFcsBytes + kPreambleSfdBytes + kInterFrameGapBytes;

// max(frame, 60) + 24: the bytes of link time a frame of `frame_bytes` (without FCS) takes.
constexpr uint64_t wire_bytes(uint32_t frame_bytes) {
    return std::max(frame_bytes, kMinFrameBytesWithoutFcs) + kWireOverheadBytes;
}

}  // namespace twinlane::sched
