#include "dataplane/policy_reload.h"

#include <fcntl.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

namespace twinlane::dataplane {
namespace {

std::atomic<bool> g_reload{false};
static_assert(std::atomic<bool>::is_always_lock_free, "must be async-signal-safe");

extern "C" void on_reload_signal(int) {
    g_reload.store(true, std::memory_order_relaxed);
}

// Editors and config managers write a file in several steps (truncate, write, rename): the
// watcher waits this long after the last event before it reads the file.
constexpr int kSettleMs = 100;
// How often the flag set by SIGHUP is looked at.
constexpr int kSignalPollMs = 50;

}  // namespace

void install_reload_handler() {
    struct sigaction sa {};
    sa.sa_handler = on_reload_signal;
    // The signal may land on an lcore blocked in a read (net_pcap on a FIFO): restarted, the read
    // completes; interrupted, libpcap would lose or split the frame it was reading.
    // (SIGTERM interrupts on purpose: stop_signal.cc.)
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGHUP, &sa, nullptr);
}

PolicyReloader::PolicyReloader(DaemonControl& control, std::string policy_path, bool watch)
    : control_(control), path_(std::move(policy_path)), watch_(watch) {
    if (watch_) {
        inotify_fd_ = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        // The directory that holds the path: a ConfigMap swaps a symlink in it, an editor
        // renames a new file over the old one; a watch on the file itself would be lost.
        const std::string dir = std::filesystem::path(path_).parent_path().empty()
                                    ? std::string(".")
                                    : std::filesystem::path(path_).parent_path().string();
        if (inotify_fd_ < 0 || inotify_add_watch(inotify_fd_, dir.c_str(),
                                                 IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE |
                                                     IN_DELETE | IN_ATTRIB) < 0) {
            spdlog::error("--watch-policy: cannot watch {}: {}; reload with SIGHUP", dir,
                          std::strerror(errno));
        } else {
            spdlog::info("watching {} for changes to {}", dir, path_);
        }
    }
    applied_ = fingerprint();
    if (auto error =
            thread_.start("policy reloader", "tl-reload", [this](int wake_fd) { run(wake_fd); })) {
        spdlog::error("policy reloader: {}; SIGHUP and --watch-policy will not reload the policy",
                      *error);
    }
}

PolicyReloader::~PolicyReloader() {
    thread_.stop();
    if (inotify_fd_ >= 0) close(inotify_fd_);
}

std::string PolicyReloader::fingerprint() const {
    std::error_code ec;
    const std::filesystem::path target = std::filesystem::canonical(path_, ec);
    std::ifstream in(path_, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return (ec ? std::string("?") : target.string()) + "\n" +
           std::to_string(std::hash<std::string>{}(text.str()));
}

void PolicyReloader::reload(const char* why) {
    const control::ApiResult result = control_.policy_load(path_);
    if (result.ok()) {
        applied_ = fingerprint();
        control_.note_reload(true, "");
        spdlog::info("policy {} reloaded ({}): epoch {}", path_, why,
                     result.value().value("policy_epoch", 0));
        return;
    }
    std::string reasons = result.error();
    for (const std::string& detail : result.details())
        reasons += "; " + detail;
    control_.note_reload(false, reasons);
    spdlog::error("policy {} reload ({}) refused, the running policy is kept: {}", path_, why,
                  result.error());
    for (const std::string& detail : result.details())
        spdlog::error("  {}", detail);
}

void PolicyReloader::run(int wake_fd) {
    bool settling = false;
    for (;;) {
        pollfd fds[2] = {{wake_fd, POLLIN, 0}, {inotify_fd_, POLLIN, 0}};
        const int ready = poll(fds, inotify_fd_ >= 0 ? 2 : 1, settling ? kSettleMs : kSignalPollMs);
        if (ready < 0 && errno != EINTR) {
            spdlog::error("policy reloader: poll: {}", std::strerror(errno));
            return;
        }
        if (fds[0].revents & POLLIN) return;
        if (g_reload.exchange(false, std::memory_order_relaxed)) reload("SIGHUP");
        if (ready > 0 && inotify_fd_ >= 0 && (fds[1].revents & POLLIN)) {
            char events[4096];
            while (read(inotify_fd_, events, sizeof events) > 0) {
            }
            settling = true;  // read the file once the writes have settled
            continue;
        }
        if (settling && ready == 0) {
            settling = false;
            // Only a change of what the file holds: a touch or an unrelated file is ignored.
            if (fingerprint() != applied_) reload("file changed");
        }
    }
}

}  // namespace twinlane::dataplane
