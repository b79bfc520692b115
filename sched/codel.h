// CoDel (RFC 8289) dequeue-side AQM, one state per queue (per flow queue in an fq leaf).
//
// The first signal comes once sojourn time has stayed >= target for a whole interval; while it
// stays there the next signals follow at interval/sqrt(count). The signal is a drop, or a CE
// mark for ECT packets when `ecn` is set (a marked packet is delivered, ending the drop loop,
// as in Linux). A queue holding at most one max-size packet is never signalled (RFC 8289 4.2).
// The queue is a template parameter (no virtual call); it must provide:
//   bool pop(Packet& out)              remove the head, false if empty
//   uint64_t backlog_bytes() const     bytes still queued after the pop
//   bool mark(const Packet&)           try CE marking (false if Not-ECT or ECN off)
//   bool drop(const Packet&)           hand the packet to the drop sink (false if sink full;
//                                      the packet is then delivered instead)
// Units: ns. Thread-safety: none (single writer). No allocation.
#pragma once

#include <cmath>
#include <cstdint>

#include "sched/packet.h"

namespace twinlane::sched {

struct CodelParams {
    bool enabled = false;
    uint64_t target_ns = 5'000'000;
    uint64_t interval_ns = 100'000'000;
    bool ecn = true;
    uint32_t max_packet_bytes = 9216;
};

struct CodelState {
    uint64_t first_above_ns = 0;
    uint64_t drop_next_ns = 0;
    uint32_t count = 0;
    uint32_t last_count = 0;
    bool dropping = false;
};

// interval / sqrt(count), computed in doubles: IEEE sqrt is correctly rounded, so the result is
// deterministic; this runs only when a signal is due, not per packet.
inline uint64_t codel_control_law(uint64_t t_ns, uint64_t interval_ns, uint32_t count) {
    const double spacing = static_cast<double>(interval_ns) / std::sqrt(static_cast<double>(count));
    return t_ns + static_cast<uint64_t>(spacing);
}

struct CodelVerdict {
    bool has_packet = false;
    bool marked = false;  // delivered packet carries a CoDel CE mark
};

namespace codel_detail {

template <class Queue>
bool do_dequeue(CodelState& state, const CodelParams& params, Queue& queue, uint64_t now_ns,
                Packet& out, bool& ok_to_drop) {
    ok_to_drop = false;
    if (!queue.pop(out)) {
        state.first_above_ns = 0;
        return false;
    }
    const uint64_t sojourn_ns = now_ns - out.arrival_ns;
    if (sojourn_ns < params.target_ns || queue.backlog_bytes() <= params.max_packet_bytes) {
        state.first_above_ns = 0;
    } else if (state.first_above_ns == 0) {
        state.first_above_ns = now_ns + params.interval_ns;
    } else if (now_ns >= state.first_above_ns) {
        ok_to_drop = true;
    }
    return true;
}

}  // namespace codel_detail

template <class Queue>
CodelVerdict codel_dequeue(CodelState& state, const CodelParams& params, Queue& queue,
                           uint64_t now_ns, Packet& out) {
    bool ok_to_drop = false;
    if (!codel_detail::do_dequeue(state, params, queue, now_ns, out, ok_to_drop)) {
        state.dropping = false;
        return {};
    }
    if (state.dropping) {
        if (!ok_to_drop) {
            state.dropping = false;
            return {true, false};
        }
        while (now_ns >= state.drop_next_ns && state.dropping) {
            ++state.count;
            if (params.ecn && queue.mark(out)) {
                state.drop_next_ns =
                    codel_control_law(state.drop_next_ns, params.interval_ns, state.count);
                return {true, true};
            }
            if (!queue.drop(out)) return {true, false};
            if (!codel_detail::do_dequeue(state, params, queue, now_ns, out, ok_to_drop)) {
                state.dropping = false;
                return {};
            }
            if (!ok_to_drop) {
                state.dropping = false;
            } else {
                state.drop_next_ns =
                    codel_control_law(state.drop_next_ns, params.interval_ns, state.count);
            }
        }
        return {true, false};
    }
    if (!ok_to_drop) return {true, false};

    // Entering the dropping state: signal this packet, then decide the next signal time.
    bool marked = false;
    bool has_packet = true;
    if (params.ecn && queue.mark(out)) {
        marked = true;
    } else if (queue.drop(out)) {
        has_packet = codel_detail::do_dequeue(state, params, queue, now_ns, out, ok_to_drop);
    }
    state.dropping = true;
    // Resume near the previous drop rate if the last dropping episode ended recently.
    const uint32_t delta = state.count - state.last_count;
    state.count = 1;
    if (delta > 1 && now_ns - state.drop_next_ns < 16 * params.interval_ns) state.count = delta;
    state.drop_next_ns = codel_control_law(now_ns, params.interval_ns, state.count);
    state.last_count = state.count;
    if (!has_packet) state.dropping = false;
    return {has_packet, marked};
}

}  // namespace twinlane::sched
