// Converts TSC readings to the monotonic nanoseconds the classifier, scheduler and pacer take.
// Built once from the TSC frequency; conversion is one subtraction and one multiplication, so
// a stage can read the TSC once per burst and derive its `now_ns` from it. Pure; thread-safe
// (const after construction).
#pragma once

#include <cstdint>

namespace twinlane::dataplane {

class TscClock {
  public:
    TscClock(uint64_t start_tsc, uint64_t tsc_hz)
        : start_tsc_(start_tsc),
          ns_per_tsc_(1e9 / static_cast<double>(tsc_hz)),
          tsc_per_ns_(static_cast<double>(tsc_hz) / 1e9) {}

    // Nanoseconds since start_tsc (0 for readings before it). A double keeps 52 bits of
    // mantissa: exact to the nanosecond for about 52 days of uptime, far beyond a run.
    uint64_t ns(uint64_t tsc) const {
        return tsc <= start_tsc_
                   ? 0
                   : static_cast<uint64_t>(static_cast<double>(tsc - start_tsc_) * ns_per_tsc_);
    }
    uint64_t tsc_for_ns(uint64_t ns) const {
        return static_cast<uint64_t>(static_cast<double>(ns) * tsc_per_ns_);
    }
    uint64_t start_tsc() const { return start_tsc_; }

  private:
    uint64_t start_tsc_;
    double ns_per_tsc_;
    double tsc_per_ns_;
};

}  // namespace twinlane::dataplane
