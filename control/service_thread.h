// ServiceThread: a named background thread running a poll() loop until stop() wakes it through
// an eventfd. The daemon's control server, metrics server and policy reloader each run one.
//
// The loop is given the eventfd and polls it with its own descriptors; it returns once the
// eventfd is readable (or earlier, on its own). An exception that escapes the loop is logged
// and ends the thread, never the process: the dataplane goes on without that service.
//
// Thread-safety: start()/stop() from one owning thread; stop() writes the eventfd, joins the
// thread and closes the eventfd.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <thread>

namespace twinlane::control {

class ServiceThread {
  public:
    ServiceThread() = default;
    ~ServiceThread() { stop(); }
    ServiceThread(const ServiceThread&) = delete;
    ServiceThread& operator=(const ServiceThread&) = delete;

    // Starts `loop(wake_fd)` on a thread named `thread_name` (what `top -H` shows; at most 15
    // characters); `log_name` prefixes its log lines. Returns an error message, and starts
    // nothing, when it is already running or no eventfd or thread can be made.
    std::optional<std::string> start(std::string log_name, std::string thread_name,
                                     std::function<void(int wake_fd)> loop);
    // Wakes the loop and joins the thread; nothing when it is not running.
    void stop();
    bool running() const { return thread_.joinable(); }

  private:
    std::string log_name_;
    int wake_fd_ = -1;
    std::thread thread_;
};

}  // namespace twinlane::control
