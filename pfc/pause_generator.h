// Sending PFC for one ingress port: per lossless priority, the bytes of that priority from this
// port still inside twinlane (lane rings and schedulers) against xoff/xon. Crossing above xoff
// pauses the sender (the longest pause, 0xFFFF quanta), refreshed at half its length while the
// queue stays above xon; falling to xon resumes it (quanta 0). One frame carries every priority
// that needs a word at that moment. Pure, explicit time; one owner (the lcore that transmits on
// this port, or replay).
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "pfc/frame.h"

namespace twinlane::pfc {

struct PriorityThresholds {
    bool lossless = false;
    uint64_t xoff_bytes = 0;  // pause above this
    uint64_t xon_bytes = 0;   // resume at or below this (< xoff)
};

class PauseGenerator {
  public:
    PauseGenerator() = default;
    // `rate_bits_per_sec`: the port's (pause quanta are its bit times).
    PauseGenerator(const std::array<PriorityThresholds, kPriorities>& thresholds,
                   uint64_t rate_bits_per_sec)
        : thresholds_(thresholds), refresh_ns_(pause_ns(kMaxQuanta, rate_bits_per_sec) / 2) {
        for (const PriorityThresholds& t : thresholds)
            any_ |= t.lossless;
    }

    bool enabled() const { return any_; }
    bool lossless(uint32_t priority) const { return thresholds_[priority].lossless; }

    // The frame to send now, if any, given each priority's bytes inside twinlane.
    std::optional<PauseFrame> update(const std::array<uint64_t, kPriorities>& occupancy_bytes,
                                     uint64_t now_ns) {
        PauseFrame frame;
        for (uint32_t p = 0; p < kPriorities; ++p) {
            const PriorityThresholds& t = thresholds_[p];
            if (!t.lossless) continue;
            const uint64_t bytes = occupancy_bytes[p];
            if (!paused_[p] && bytes > t.xoff_bytes) {
                paused_[p] = true;
                add(frame, p, kMaxQuanta, now_ns);
            } else if (paused_[p] && bytes <= t.xon_bytes) {
                paused_[p] = false;
                add(frame, p, 0, now_ns);
            } else if (paused_[p] && now_ns - last_sent_ns_[p] >= refresh_ns_) {
                add(frame, p, kMaxQuanta, now_ns);
            }
        }
        if (frame.class_enable == 0) return std::nullopt;
        return frame;
    }

    // The frame update() returned could not be sent (the NIC's ring was full): it is asked for
    // again at the next update().
    void unsent(const PauseFrame& frame) {
        for (uint32_t p = 0; p < kPriorities; ++p) {
            if (!frame.speaks_for(p)) continue;
            if (frame.quanta[p] == 0) {
                paused_[p] = true;  // XON not out yet: still paused
            } else {
                paused_[p] = false;
                last_sent_ns_[p] = 0;
            }
        }
    }

    bool paused(uint32_t priority) const { return paused_[priority]; }

  private:
    void add(PauseFrame& frame, uint32_t p, uint16_t quanta, uint64_t now_ns) {
        frame.class_enable = static_cast<uint8_t>(frame.class_enable | (1u << p));
        frame.quanta[p] = quanta;
        last_sent_ns_[p] = now_ns;
    }

    std::array<PriorityThresholds, kPriorities> thresholds_{};
    uint64_t refresh_ns_ = 0;
    bool any_ = false;
    std::array<bool, kPriorities> paused_{};
    std::array<uint64_t, kPriorities> last_sent_ns_{};
};

}  // namespace twinlane::pfc
