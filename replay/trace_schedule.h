// When each frame of a capture is due when it is sent again: at its recorded timing (`speed`
// 1; 2 is twice as fast) and, with a link rate, no sooner than the link has carried the frames
// before it (its wire bytes as the TX pacer counts them: padding, FCS, preamble, gap). A
// capture's timestamps record when sources sent, not what one ingress link can deliver: a
// generated trace bursts far above any link, and a real ingress port never does. The first
// frame is due at 0; a frame stamped before the first is due at once, so a capture whose clock
// stepped back is sent in file order. Pure, in ticks of `tsc_hz` (the TSC for `twinlane send`
// and `twinlane run --pace-input`, dataplane/paced_input.h; nanoseconds, 1e9, for `twinlane
// replay --ingress-rate`, replay_engine.h): one rule for realtime and replay. Sent in real
// time, a capture whose clock jumps ahead (an idle hour, a clock step, a corrupt record) would
// hold every frame after the jump that long: `max_gap_ns` cuts such a jump to that gap (as
// tcpreplay's --maxsleep), counted; virtual time, which waits for nothing, keeps every gap.
#pragma once

#include <algorithm>
#include <cstdint>

#include "replay/virtual_link.h"

namespace twinlane::replay {

class TraceSchedule {
  public:
    // link_bps 0: no link limit. max_gap_ns 0: every gap kept.
    TraceSchedule(uint64_t tsc_hz, double speed, uint64_t link_bps, uint64_t max_gap_ns = 0)
        : tsc_per_trace_ns_(static_cast<double>(tsc_hz) / 1e9 / speed),
          tsc_per_wire_byte_(link_bps == 0
                                 ? 0.0
                                 : static_cast<double>(tsc_hz) * 8 / static_cast<double>(link_bps)),
          max_gap_ns_(max_gap_ns) {}

    // Due times count from `first_ns` instead of the first frame's timestamp: captures of
    // several links on one clock keep their relative timing (the earliest first frame among
    // them). Before the first next(); a frame stamped before `first_ns` is due at once.
    void start_at(uint64_t first_ns) {
        started_ = true;
        first_ns_ = first_ns;
        latest_ns_ = first_ns;
    }

    // The next frame's due time, in ticks after the first frame's; frames in file order.
    uint64_t next(uint64_t timestamp_ns, uint32_t wire_length) {
        if (!started_) start_at(timestamp_ns);
        if (timestamp_ns > latest_ns_) {
            // A jump past the latest time seen; a frame stamped before it (a clock stepping
            // back) keeps its place in the capture's timing.
            cut(timestamp_ns - latest_ns_);
            latest_ns_ = timestamp_ns;
        }
        const uint64_t since_first = timestamp_ns > first_ns_ ? timestamp_ns - first_ns_ : 0;
        const uint64_t gap_ns = since_first > cut_ns_ ? since_first - cut_ns_ : 0;
        // A double holds gaps exactly up to 2^53 ns (104 days).
        const auto recorded =
            static_cast<uint64_t>(static_cast<double>(gap_ns) * tsc_per_trace_ns_);
        const uint64_t due = std::max(recorded, link_free_);
        link_free_ = due + static_cast<uint64_t>(static_cast<double>(wire_bytes(wire_length)) *
                                                 tsc_per_wire_byte_);
        return due;
    }

    // When the link has carried the last frame given to next(): its arrival at the far end.
    uint64_t last_end() const { return link_free_; }
    // The first frame's timestamp, from which due times count (once started()).
    uint64_t first_timestamp_ns() const { return first_ns_; }
    bool started() const { return started_; }
    // Jumps of the capture's clock longer than max_gap_ns, and the time they were shortened by.
    uint64_t gaps_cut() const { return gaps_cut_; }
    uint64_t cut_ns() const { return cut_ns_; }

    // A jump of `jump_ns` as it is kept: at most max_gap_ns, the rest counted as cut. Also for a
    // capture that starts that long after the clock it shares with others (paced_input.h).
    uint64_t cut(uint64_t jump_ns) {
        if (max_gap_ns_ == 0 || jump_ns <= max_gap_ns_) return jump_ns;
        cut_ns_ += jump_ns - max_gap_ns_;
        ++gaps_cut_;
        return max_gap_ns_;
    }

  private:
    double tsc_per_trace_ns_;
    double tsc_per_wire_byte_;
    uint64_t max_gap_ns_;
    bool started_ = false;
    uint64_t first_ns_ = 0;
    uint64_t latest_ns_ = 0;  // the latest timestamp so far
    uint64_t cut_ns_ = 0;     // taken out of the capture's clock by cut gaps
    uint64_t gaps_cut_ = 0;
    uint64_t link_free_ = 0;  // when the link has carried the frames so far
};

}  // namespace twinlane::replay
