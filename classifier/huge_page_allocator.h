// HugePageAllocator: std::allocator replacement for large, long-lived tables (the flow table's
// index and entries). Allocations of 2 MiB or more are 2 MiB-aligned and advised
// MADV_HUGEPAGE before first touch, so a 1M-flow table (512 MiB) is backed by transparent huge
// pages where the kernel allows ("madvise" or "always" mode): random flow lookups then miss the
// TLB far less. Falls back silently to normal pages. Used at construction only (one madvise
// syscall per table), never per packet. Stateless; thread-safe like malloc.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <new>

namespace twinlane::classifier {

template <typename T>
struct HugePageAllocator {
    using value_type = T;
    static constexpr size_t kHugePageBytes = size_t{2} << 20;

    HugePageAllocator() = default;
    template <typename U>
    HugePageAllocator(const HugePageAllocator<U>&) {}

    T* allocate(size_t count) {
        const size_t bytes = count * sizeof(T);
        if (bytes < kHugePageBytes) return std::allocator<T>{}.allocate(count);
        const size_t rounded = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
        void* memory = std::aligned_alloc(kHugePageBytes, rounded);
        if (memory == nullptr) throw std::bad_alloc();
        madvise(memory, rounded, MADV_HUGEPAGE);  // advisory: failure just means 4 KiB pages
        return static_cast<T*>(memory);
    }

    void deallocate(T* pointer, size_t count) {
        if (count * sizeof(T) < kHugePageBytes) {
            std::allocator<T>{}.deallocate(pointer, count);
        } else {
            std::free(pointer);
        }
    }

    template <typename U>
    bool operator==(const HugePageAllocator<U>&) const {
        return true;
    }
};

}  // namespace twinlane::classifier
