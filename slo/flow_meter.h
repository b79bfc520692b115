// Bytes per flow of one class in the current window, to name its heaviest flows, and in the
// last two ticks (a tick is a fraction of the window: what a flow sends right now): a bounded,
// preallocated table keyed by flow hash (linear probing, at most kProbes slots per lookup),
// reset lazily by window epoch, so a new window costs nothing until a flow arrives in it.
//
// Within one epoch no entry is ever removed, so a flow's entry is always found before the
// first stale or free slot of its probe sequence (the invariant of linear probing without
// deletion). A flow that finds no slot within kProbes is counted in untracked_bytes: the table
// holds kSlots / 2 flows comfortably; the heaviest are what matters, and a heavy flow arrives
// early and often. 32 bytes per slot (32 KiB).
// Thread-safety: none (the owner lcore).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>

#include "classifier/hash_slot.h"

namespace twinlane::slo {

struct FlowLoad {
    uint32_t flow_hash = 0;
    uint32_t job = 0;
    uint64_t bytes = 0;
    bool operator==(const FlowLoad&) const = default;
};

class FlowMeter {
  public:
    static constexpr uint32_t kSlotBits = 10;
    static constexpr uint32_t kSlots = uint32_t{1} << kSlotBits;
    static constexpr uint32_t kProbes = 16;

    // A new window: every entry becomes stale at once.
    void start_window() {
        ++epoch_;
        bytes_ = 0;
        flows_ = 0;
        untracked_bytes_ = 0;
    }

    // Adds `bytes` to the flow in tick `tick` (ticks only move forward); returns its bytes in
    // this window so far and in the last two ticks (0 if untracked).
    struct Added {
        uint64_t window_bytes = 0;
        uint64_t recent_bytes = 0;
    };
    Added add(uint32_t flow_hash, uint32_t job, uint32_t bytes, uint32_t tick = 0) {
        bytes_ += bytes;
        uint32_t at = home(flow_hash);
        for (uint32_t probe = 0; probe < kProbes; ++probe, at = (at + 1) & (kSlots - 1)) {
            Slot& s = slots_[at];
            if (s.epoch != epoch_) {
                // The same flow's ticks carry over into a new window; another flow's do not.
                if (s.flow_hash != flow_hash || s.epoch == 0)
                    s.tick_bytes = s.previous_tick_bytes = 0;
                s.flow_hash = flow_hash;
                s.job = job;
                s.bytes = 0;
                s.epoch = epoch_;
                ++flows_;
            } else if (s.flow_hash != flow_hash) {
                continue;
            }
            s.bytes = s.bytes + bytes < s.bytes ? UINT32_MAX : s.bytes + bytes;
            roll(s, tick);
            s.tick_bytes = s.tick_bytes + bytes < s.tick_bytes ? UINT32_MAX : s.tick_bytes + bytes;
            return {s.bytes, uint64_t{s.tick_bytes} + s.previous_tick_bytes};
        }
        untracked_bytes_ += bytes;
        return {};
    }

    // The flow's bytes in tick `tick` and the one before (0 if none or untracked).
    uint64_t recent_bytes(uint32_t flow_hash, uint32_t tick) const {
        uint32_t at = home(flow_hash);
        for (uint32_t probe = 0; probe < kProbes; ++probe, at = (at + 1) & (kSlots - 1)) {
            const Slot& s = slots_[at];
            if (s.epoch != epoch_) return 0;
            if (s.flow_hash != flow_hash) continue;
            if (s.tick == tick) return uint64_t{s.tick_bytes} + s.previous_tick_bytes;
            return s.tick + 1 == tick ? s.tick_bytes : 0;
        }
        return 0;
    }

    // The flow's bytes in this window (0 if it has sent none or is untracked).
    uint64_t bytes_of(uint32_t flow_hash) const {
        uint32_t at = home(flow_hash);
        for (uint32_t probe = 0; probe < kProbes; ++probe, at = (at + 1) & (kSlots - 1)) {
            const Slot& s = slots_[at];
            if (s.epoch != epoch_) return 0;
            if (s.flow_hash == flow_hash) return s.bytes;
        }
        return 0;
    }

    // The job recorded with the flow this window (0 if absent).
    uint32_t job_of(uint32_t flow_hash) const {
        uint32_t at = home(flow_hash);
        for (uint32_t probe = 0; probe < kProbes; ++probe, at = (at + 1) & (kSlots - 1)) {
            const Slot& s = slots_[at];
            if (s.epoch != epoch_) return 0;
            if (s.flow_hash == flow_hash) return s.job;
        }
        return 0;
    }

    uint64_t bytes() const { return bytes_; }  // every flow's, untracked included
    uint32_t flows() const { return flows_; }  // tracked flows seen this window
    uint64_t untracked_bytes() const { return untracked_bytes_; }
    // Mean bytes of a tracked flow this window (0 when none).
    uint64_t mean_flow_bytes() const {
        return flows_ == 0 ? 0 : (bytes_ - untracked_bytes_) / flows_;
    }

    // The heaviest flows of this window for which `keep(flow_hash)` is true, heaviest first,
    // into `out`; returns how many were written. O(slots * log(out.size())).
    template <typename Keep>
    uint32_t heaviest(std::span<FlowLoad> out, Keep keep) const {
        const auto lighter = [](const FlowLoad& a, const FlowLoad& b) { return a.bytes > b.bytes; };
        uint32_t n = 0;
        const uint32_t capacity = static_cast<uint32_t>(out.size());
        if (capacity == 0) return 0;
        for (const Slot& s : slots_) {
            if (s.epoch != epoch_ || !keep(s.flow_hash)) continue;
            const FlowLoad load{s.flow_hash, s.job, s.bytes};
            if (n < capacity) {
                out[n++] = load;
                std::push_heap(out.begin(), out.begin() + n, lighter);
            } else if (load.bytes > out[0].bytes) {
                std::pop_heap(out.begin(), out.begin() + n, lighter);
                out[n - 1] = load;
                std::push_heap(out.begin(), out.begin() + n, lighter);
            }
        }
        std::sort_heap(out.begin(), out.begin() + n, lighter);
        return n;
    }

  private:
    struct Slot {
        uint32_t flow_hash = 0;
        uint32_t job = 0;
        uint32_t bytes = 0;  // saturating: a window of a flow above 4 GiB reads as 4 GiB
        uint32_t epoch = 0;  // 0: never used (epoch_ starts at 1)
        uint32_t tick = 0;   // the tick tick_bytes counts
        uint32_t tick_bytes = 0;
        uint32_t previous_tick_bytes = 0;  // of tick - 1
        uint32_t unused = 0;
    };
    static void roll(Slot& s, uint32_t tick) {
        if (s.tick == tick) return;
        s.previous_tick_bytes = s.tick + 1 == tick ? s.tick_bytes : 0;
        s.tick_bytes = 0;
        s.tick = tick;
    }
    static uint32_t home(uint32_t flow_hash) { return classifier::hash_slot(flow_hash, kSlotBits); }

    std::array<Slot, kSlots> slots_{};
    uint32_t epoch_ = 1;
    uint64_t bytes_ = 0;
    uint32_t flows_ = 0;
    uint64_t untracked_bytes_ = 0;
};

}  // namespace twinlane::slo
