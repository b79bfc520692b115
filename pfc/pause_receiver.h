// Honouring PFC on one port: the pauses its peer asks for, per priority, and the PFC watchdog.
//
// A frame pauses each priority it speaks for, for its quanta x 512 bit times at the port's rate
// from its arrival (quanta 0 resumes at once); a later frame replaces the earlier time. The
// caller holds the leaves of a paused priority in the port's egress scheduler until
// paused_until() (every other leaf keeps being served).
//
// Watchdog, as switches have it: a priority paused without a break for longer than
// `storm_detect_ns` is in a storm: pauses for it are ignored from then on (its packets are
// dropped or forwarded, by policy: the caller's part) until `storm_restore_ns` pass without a
// pause frame for it. Pure, explicit time; one owner. A frame's time may be later than the next
// tick's (realtime: the RX lcore stamps it, the egress lcore ticks with the time it read before
// taking the frame): time spans saturate at 0 rather than wrap.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "pfc/frame.h"

namespace twinlane::pfc {

enum class StormAction : uint8_t { drop, forward };

struct Watchdog {
    uint64_t storm_detect_ns = 0;  // 0: no watchdog
    uint64_t storm_restore_ns = 0;
    StormAction action = StormAction::drop;
};

class PauseReceiver {
  public:
    PauseReceiver() = default;
    PauseReceiver(uint64_t rate_bits_per_sec, const Watchdog& watchdog)
        : rate_bits_per_sec_(rate_bits_per_sec), watchdog_(watchdog) {}

    void on_frame(const PauseFrame& frame, uint64_t now_ns) {
        ++frames_;
        for (uint32_t p = 0; p < kPriorities; ++p) {
            if (!frame.speaks_for(p)) continue;
            State& s = state_[p];
            ++s.frames;
            const uint64_t until = now_ns + pause_ns(frame.quanta[p], rate_bits_per_sec_);
            if (frame.quanta[p] != 0) s.last_pause_ns = now_ns;
            if (s.storm) continue;  // ignored while in a storm
            if (s.until_ns != 0 && now_ns >= s.until_ns) close(s, s.until_ns);  // expired
            if (is_paused(s, now_ns)) {
                if (frame.quanta[p] == 0)
                    close(s, now_ns);
                else
                    s.until_ns = until;
            } else if (frame.quanta[p] != 0) {
                s.since_ns = now_ns;
                s.until_ns = until;
            }
        }
    }

    // Between bursts: closes expired pauses, detects and ends storms. Returns true when a
    // priority's state changed since the last call (so the caller re-applies its holds).
    bool tick(uint64_t now_ns) {
        bool changed = false;
        for (State& s : state_) {
            if (s.until_ns != 0 && now_ns >= s.until_ns) {
                close(s, s.until_ns);
                changed = true;
            }
            if (!s.storm && s.until_ns != 0 && watchdog_.storm_detect_ns != 0 &&
                span(s.since_ns, now_ns) >= watchdog_.storm_detect_ns) {
                close(s, now_ns);
                s.storm = true;
                ++s.storms;
                changed = true;
            } else if (s.storm && span(s.last_pause_ns, now_ns) >= watchdog_.storm_restore_ns) {
                s.storm = false;
                changed = true;
            }
        }
        return changed;
    }

    // When priority p's leaves may send again; 0 when they may now (not paused, or in a storm).
    uint64_t paused_until(uint32_t p) const { return state_[p].until_ns; }
    bool storm(uint32_t p) const { return state_[p].storm; }
    const Watchdog& watchdog() const { return watchdog_; }
    uint64_t frames() const { return frames_; }
    uint64_t frames(uint32_t p) const { return state_[p].frames; }
    uint64_t storms(uint32_t p) const { return state_[p].storms; }
    // Time priority p has been paused in all, up to now_ns.
    uint64_t paused_ns(uint32_t p, uint64_t now_ns) const {
        const State& s = state_[p];
        if (s.until_ns == 0) return s.paused_ns;
        return s.paused_ns + std::min(now_ns, s.until_ns) - std::min(now_ns, s.since_ns);
    }

  private:
    struct State {
        uint64_t since_ns = 0;  // the current pause began (while until_ns != 0)
        uint64_t until_ns = 0;  // 0: not paused
        uint64_t last_pause_ns = 0;
        uint64_t paused_ns = 0;
        uint64_t frames = 0;
        uint64_t storms = 0;
        bool storm = false;
    };
    static uint64_t span(uint64_t from_ns, uint64_t to_ns) {
        return to_ns > from_ns ? to_ns - from_ns : 0;
    }
    static bool is_paused(const State& s, uint64_t now_ns) {
        return s.until_ns != 0 && now_ns < s.until_ns;
    }
    static void close(State& s, uint64_t end_ns) {
        s.paused_ns += span(s.since_ns, end_ns);
        s.until_ns = 0;
    }

    uint64_t rate_bits_per_sec_ = 0;
    Watchdog watchdog_;
    uint64_t frames_ = 0;
    std::array<State, kPriorities> state_{};
};

}  // namespace twinlane::pfc
