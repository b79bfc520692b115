// RED/ECN congestion signal on instantaneous queue bytes, with a deterministic PRNG.
//
// DCQCN-switch semantics (see RedSpec in tree_spec.h): probability 0 below kmin, linear to pmax
// at kmax, 1 at or above kmax. Probabilities are Q32 fixed point (pmax 1.0 == 2^32) so the hot
// path is integer-only. The PRNG is xorshift64*, seeded from TreeSpec::random_seed, so the same
// input gives the same marks. Thread-safety: none (single writer). O(1), no allocation.
#pragma once

#include <cstdint>

namespace twinlane::sched {

class DeterministicRng {
  public:
    explicit DeterministicRng(uint64_t seed = 1)
        : state_(seed == 0 ? 0x9e3779b97f4a7c15ull : seed) {}
    uint32_t next_u32() {
        state_ ^= state_ >> 12;
        state_ ^= state_ << 25;
        state_ ^= state_ >> 27;
        return static_cast<uint32_t>((state_ * 0x2545f4914f6cdd1dull) >> 32);
    }

  private:
    uint64_t state_;
};

struct RedParams {
    bool enabled = false;
    uint64_t kmin_bytes = 0;
    uint64_t kmax_bytes = 0;  // > kmin_bytes, < 2^32
    uint64_t pmax_q32 = 0;    // probability at kmax, 2^32 == 1.0
    bool drop_non_ect = true;
};

// True when the arriving packet should get a congestion signal (mark or drop).
inline bool red_signal(const RedParams& params, uint64_t queue_bytes, DeterministicRng& rng) {
    if (!params.enabled || queue_bytes < params.kmin_bytes) return false;
    if (queue_bytes >= params.kmax_bytes) return true;
    // (q - kmin) < 2^32 and pmax_q32 <= 2^32, so the product fits in 64 bits.
    const uint64_t probability_q32 = params.pmax_q32 * (queue_bytes - params.kmin_bytes) /
                                     (params.kmax_bytes - params.kmin_bytes);
    return rng.next_u32() < probability_q32;
}

}  // namespace twinlane::sched
