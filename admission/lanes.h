// Lanes: each class is a lane, one per (egress port, class) in the realtime pipeline (a lane
// ring when RX and scheduler run on different lcores), so an inference packet never waits
// behind bulk before the scheduler. The lane count bounds the policy's classes.
#pragma once

#include <algorithm>
#include <cstdint>

#include "classifier/config.h"

namespace twinlane::admission {

inline constexpr uint32_t kMaxLanes = 16;
static_assert(kMaxLanes <= classifier::kMaxClasses);

// sched::Packet::user carries the lane in its low 4 bits and, for a packet PFC counts while it is
// inside twinlane, the tag of its (ingress port, priority) account in the high 4 (0: none;
// conf::CompiledEgress::pfc_accounts).
static_assert(kMaxLanes <= 16);
inline uint8_t pack_user(uint8_t lane, uint8_t pfc_tag) {
    return static_cast<uint8_t>(lane | pfc_tag << 4);
}
inline uint8_t user_lane(uint8_t user) {
    return user & 0x0F;
}
inline uint8_t user_pfc_tag(uint8_t user) {
    return user >> 4;
}

// The lane of a class id (a valid classifier never gives one past the last lane).
inline uint8_t lane_of(uint8_t class_id, uint32_t lane_count) {
    return static_cast<uint8_t>(std::min<uint32_t>(class_id, lane_count - 1));
}

}  // namespace twinlane::admission
