// A one-slot mailbox through which a control thread hands a change to the lcore that owns the
// state it changes (a scheduler tree, a classifier's rule table), to be applied between bursts.
//
// The owner polls `take()` once per burst: one relaxed-then-acquire load of a pointer, no lock,
// no syscall. The poster keeps the request object alive until `done()` is true, then reads the
// outcome the owner wrote into it (and frees whatever the owner handed back, off the hot
// path). One request in flight at a time: post() refuses a second one.
// Thread-safety: post/done from any one control thread; take/complete from the owner lcore.
#pragma once

#include <atomic>

namespace twinlane::dataplane {

template <typename Request>
class UpdateMailbox {
  public:
    // Control thread: offers `request`; false if another request is still pending.
    bool post(Request& request) {
        request.completed.store(false, std::memory_order_relaxed);
        Request* expected = nullptr;
        return slot_.compare_exchange_strong(expected, &request, std::memory_order_release,
                                             std::memory_order_relaxed);
    }

    // Owner lcore, between bursts: the pending request or nullptr. The common case (nothing
    // pending) is a single relaxed load.
    Request* take() {
        if (slot_.load(std::memory_order_relaxed) == nullptr) return nullptr;
        return slot_.load(std::memory_order_acquire);
    }

    // Owner lcore: the request has been applied (its outcome written); frees the slot.
    void complete(Request& request) {
        slot_.store(nullptr, std::memory_order_relaxed);
        request.completed.store(true, std::memory_order_release);
    }

    // Control thread: whether the owner has applied `request`.
    static bool done(const Request& request) {
        return request.completed.load(std::memory_order_acquire);
    }

  private:
    std::atomic<Request*> slot_{nullptr};
};

}  // namespace twinlane::dataplane
