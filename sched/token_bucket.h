// Integer token bucket (shaper) with explicit time.
//
// Tokens are kept in units of 1e-9 bit, so refill is `elapsed_ns * rate_bits_per_sec` and a
// packet costs `bytes * 8e9`: both exact integers, hence no drift however small the steps.
// The bucket conforms while tokens >= 0 and a conforming packet may drive it negative; the
// debt delays the next packet, so the long-run rate is exact and any packet size passes.
// Limits: rate <= 10 Tb/s, burst <= 256 MiB (see tree_spec.h) keep every product in int64.
// A bucket may also be held until a time (a PFC pause of the node, Scheduler::hold): it does not
// conform before then, whatever its tokens, and a held bucket counts as enabled even at rate 0,
// so every check that skips a non-conforming shaper skips a paused node too.
// Thread-safety: none; owned by the scheduler's single writer. O(1), no allocation.
#pragma once

#include <cstdint>

namespace twinlane::sched {

class TokenBucket {
  public:
    static constexpr int64_t kUnitsPerByte = 8'000'000'000;  // 8 bits * 1e9
    static constexpr uint64_t kNever = UINT64_MAX;

    TokenBucket() = default;

    // rate 0 disables shaping. Keeps accumulated tokens (clamped to the new burst) so that a
    // runtime change neither grants a free burst nor loses debt.
    void configure(uint64_t rate_bits_per_sec, uint32_t burst_bytes) {
        rate_bits_per_sec_ = rate_bits_per_sec;
        capacity_units_ = static_cast<int64_t>(burst_bytes) * kUnitsPerByte;
        if (!configured_) {
            tokens_units_ = capacity_units_;
            configured_ = true;
        }
        if (tokens_units_ > capacity_units_) tokens_units_ = capacity_units_;
    }

    bool enabled() const { return rate_bits_per_sec_ != 0 || hold_until_ns_ != 0; }
    uint64_t rate_bits_per_sec() const { return rate_bits_per_sec_; }

    void refill(uint64_t now_ns) {
        if (now_ns <= last_ns_) return;  // time never runs backwards for the bucket
        const uint64_t elapsed_ns = now_ns - last_ns_;
        last_ns_ = now_ns;
        if (rate_bits_per_sec_ == 0) return;
        const uint64_t room = static_cast<uint64_t>(capacity_units_ - tokens_units_);
        // An overflowing product is certainly more than the room: no 64-bit division (tens of
        // cycles) per refill.
        uint64_t added = 0;
        if (__builtin_mul_overflow(elapsed_ns, rate_bits_per_sec_, &added) || added >= room) {
            tokens_units_ = capacity_units_;
        } else {
            tokens_units_ += static_cast<int64_t>(added);
        }
    }

    bool conforms(uint64_t now_ns) {
        refill(now_ns);
        if (hold_until_ns_ != 0) [[unlikely]] {
            if (now_ns < hold_until_ns_) return false;
            hold_until_ns_ = 0;
        }
        return rate_bits_per_sec_ == 0 || tokens_units_ >= 0;
    }

    // Takes over `old`'s tokens or debt at `now_ns` (a node carried into a replacement tree),
    // clamped to this bucket's depth; this bucket's rate applies from then on.
    void take_over(TokenBucket& old, uint64_t now_ns) {
        old.refill(now_ns);
        last_ns_ = now_ns > last_ns_ ? now_ns : last_ns_;
        if (rate_bits_per_sec_ == 0 || old.rate_bits_per_sec_ == 0) return;
        tokens_units_ = old.tokens_units_ < capacity_units_ ? old.tokens_units_ : capacity_units_;
    }

    // Not conforming before `until_ns` (0: released at once).
    void hold_until(uint64_t until_ns) { hold_until_ns_ = until_ns; }
    uint64_t held_until_ns() const { return hold_until_ns_; }

    void consume(uint64_t bytes) {
        if (rate_bits_per_sec_ != 0) tokens_units_ -= static_cast<int64_t>(bytes) * kUnitsPerByte;
    }

    // Earliest time >= now at which the bucket conforms (after refill(now)).
    uint64_t conform_time_ns(uint64_t now_ns) {
        refill(now_ns);
        const uint64_t held = hold_until_ns_ > now_ns ? hold_until_ns_ : now_ns;
        if (rate_bits_per_sec_ == 0 || tokens_units_ >= 0) return held;
        const uint64_t debt = static_cast<uint64_t>(-tokens_units_);
        const uint64_t refilled = now_ns + (debt + rate_bits_per_sec_ - 1) / rate_bits_per_sec_;
        return refilled > held ? refilled : held;
    }

    int64_t tokens_units() const { return tokens_units_; }

  private:
    uint64_t rate_bits_per_sec_ = 0;
    int64_t capacity_units_ = 0;
    int64_t tokens_units_ = 0;
    uint64_t last_ns_ = 0;
    uint64_t hold_until_ns_ = 0;
    bool configured_ = false;
};

}  // namespace twinlane::sched
