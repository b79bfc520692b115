// Deterministic pseudo-random numbers for the traffic generator.
//
// Contract: xoshiro256** seeded through splitmix64. The same (seed, stream) gives the same
// sequence on every platform and standard library, which std::*_distribution does not
// promise; generated traces must be byte-identical for a seed. Copying a Prng forks an
// identical sequence, which the generator uses to look ahead without storing draws.
// Thread-safety: none; one Prng per owner.
#pragma once

#include <cmath>
#include <cstdint>

namespace twinlane::replay {

class Prng {
  public:
    // `stream` separates independent sequences derived from one user seed.
    explicit Prng(uint64_t seed, uint64_t stream = 0) {
        uint64_t mix = seed ^ (stream * 0xD1B54A32D192ED03ULL);
        for (auto& word : state_)
            word = splitmix64(mix);
    }

    uint64_t next_u64() {
        const uint64_t result = rotl(state_[1] * 5, 7) * 9;
        const uint64_t shifted = state_[1] << 17;
        state_[2] ^= state_[0];
        state_[3] ^= state_[1];
        state_[1] ^= state_[2];
        state_[0] ^= state_[3];
        state_[2] ^= shifted;
        state_[3] = rotl(state_[3], 45);
        return result;
    }

    // Uniform in [0, 1) with 53 random bits.
    double uniform01() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

    // Uniform integer in [low, high] (inclusive). The modulo bias is below span / 2^64, far
    // under anything a trace could show for the small spans the generator uses.
    uint64_t uniform_int(uint64_t low, uint64_t high) {
        const uint64_t span = high - low + 1;
        return span == 0 ? next_u64() : low + next_u64() % span;
    }

    // Exponential with the given mean; log1p(-u) is finite because u < 1.
    double exponential(double mean) { return -mean * std::log1p(-uniform01()); }

  private:
    static uint64_t rotl(uint64_t value, int bits) {
        return (value << bits) | (value >> (64 - bits));
    }
    static uint64_t splitmix64(uint64_t& x) {
        uint64_t z = (x += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
    }

    uint64_t state_[4];
};

}  // namespace twinlane::replay
