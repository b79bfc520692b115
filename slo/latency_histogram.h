// A latency histogram fine enough to judge a 50 us objective: log-linear buckets (16 per power
// of two, HdrHistogram's layout with 4 significant bits), so a value is placed within 1/16 of
// itself (6.25%) at any magnitude; the scheduler's log2 histogram (sched/counters.h) is off by
// up to 2x, too coarse to tell 45 us from 60 us.
//
// Values are nanoseconds; 0-15 ns are exact, values at or above 2^40 ns (18 min) share the last
// bucket. Fixed array (608 counters, 2.4 KB), no allocation; record() is a bit_width and an
// increment. clear() zeroes only the buckets used since the last clear, so a window with few
// packets costs few stores to reset.
// Thread-safety: none (the owner of the window that records into it).
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>

namespace twinlane::slo {

class LatencyHistogram {
  public:
    static constexpr uint32_t kSubBits = 4;
    static constexpr uint32_t kSub = 1u << kSubBits;  // buckets per power of two
    static constexpr uint32_t kMaxExponent = 40;      // 2^40 ns and above: the last bucket
    static constexpr uint32_t kBuckets = kSub + (kMaxExponent - kSubBits + 1) * kSub;

    static uint32_t bucket_of(uint64_t value_ns) {
        if (value_ns < kSub) return static_cast<uint32_t>(value_ns);
        const uint32_t exponent = static_cast<uint32_t>(std::bit_width(value_ns)) - 1;
        if (exponent > kMaxExponent) return kBuckets - 1;
        const uint32_t shift = exponent - kSubBits;
        const uint32_t sub = static_cast<uint32_t>(value_ns >> shift) & (kSub - 1);
        return kSub + shift * kSub + sub;
    }
    // The largest value that falls into `bucket` (the last bucket: UINT64_MAX).
    static uint64_t bucket_upper_ns(uint32_t bucket) {
        if (bucket < kSub) return bucket;
        if (bucket >= kBuckets - 1) return UINT64_MAX;
        const uint32_t shift = (bucket - kSub) / kSub;
        const uint64_t sub = (bucket - kSub) % kSub;
        return ((kSub + sub) << shift) + ((uint64_t{1} << shift) - 1);
    }

    // The bit width shared by the values in `bucket` (0 for the 0 ns bucket; 41 for the last,
    // which also holds every value from 2^41 ns up): its bucket in a log2 histogram such as the
    // scheduler's (sched/counters.h), which the metrics export.
    static uint32_t bit_width_of_bucket(uint32_t bucket) {
        if (bucket < kSub) return static_cast<uint32_t>(std::bit_width(bucket));
        return kSubBits + 1 + (bucket - kSub) / kSub;
    }

    void record(uint64_t value_ns) {
        const uint32_t b = bucket_of(value_ns);
        ++counts_[b];
        ++count_;
        low_ = std::min(low_, b);
        high_ = std::max(high_, b);
    }

    uint64_t count() const { return count_; }

    // The value at `quantile_ppm` (parts per million) by nearest rank, as the upper bound of
    // its bucket: never below the exact value, at most 6.25% above it. 0 when empty.
    uint64_t percentile_ns(uint32_t quantile_ppm) const {
        if (count_ == 0) return 0;
        const uint64_t rank = rank_of(count_, quantile_ppm);
        uint64_t seen = 0;
        for (uint32_t b = low_; b <= high_; ++b) {
            seen += counts_[b];
            if (seen >= rank) return bucket_upper_ns(b);
        }
        return bucket_upper_ns(high_);
    }

    // Nearest rank of a quantile among `count` values: ceil(q * count), at least 1.
    static uint64_t rank_of(uint64_t count, uint32_t quantile_ppm) {
        const uint64_t rank = (count * quantile_ppm + 999'999) / 1'000'000;
        return std::max<uint64_t>(rank, 1);
    }

    void clear() {
        if (count_ == 0) return;
        std::fill(counts_.begin() + low_, counts_.begin() + high_ + 1, 0u);
        count_ = 0;
        low_ = kBuckets;
        high_ = 0;
    }

  private:
    std::array<uint32_t, kBuckets> counts_{};
    uint64_t count_ = 0;
    uint32_t low_ = kBuckets;  // buckets used since the last clear: [low_, high_]
    uint32_t high_ = 0;
};

}  // namespace twinlane::slo
