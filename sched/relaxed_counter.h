// A 64-bit counter with one writer and any number of concurrent readers: the owning lcore
// updates it with a relaxed load and store (on x86 a plain mov, no locked instruction), any
// other thread reads it whole with a relaxed load. Race-free in C++'s memory model (and for
// ThreadSanitizer); a read of several counters is not one snapshot, except once the writer has
// stopped.
#pragma once

#include <atomic>
#include <cstdint>

namespace twinlane::sched {

class RelaxedCounter {
  public:
    RelaxedCounter() = default;
    RelaxedCounter(const RelaxedCounter& other) : value_(other.read()) {}
    RelaxedCounter& operator=(const RelaxedCounter& other) {
        set(other.read());
        return *this;
    }

    void add(uint64_t n) { set(read() + n); }
    void subtract(uint64_t n) { set(read() - n); }
    void raise_to(uint64_t n) {
        if (n > read()) set(n);
    }
    void set(uint64_t n) { value_.store(n, std::memory_order_relaxed); }
    uint64_t read() const { return value_.load(std::memory_order_relaxed); }

  private:
    std::atomic<uint64_t> value_{0};
};

}  // namespace twinlane::sched
