#include "dataplane/stop_signal.h"

#include <csignal>

namespace twinlane::dataplane {
namespace {
std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free, "must be async-signal-safe");

extern "C" void on_stop_signal(int) {
    g_stop.store(true, std::memory_order_relaxed);
}
}  // namespace

void install_stop_handlers() {
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    // No SA_RESTART: a stop must also wake an lcore blocked in a read (net_pcap on an idle
    // FIFO). SIGHUP, which must not disturb the dataplane, restarts (policy_reload.cc).
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
}

bool stop_requested() {
    return g_stop.load(std::memory_order_relaxed);
}
void request_stop() {
    g_stop.store(true, std::memory_order_relaxed);
}

}  // namespace twinlane::dataplane
