#include "control/service_thread.h"

#include <pthread.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <exception>

namespace twinlane::control {

std::optional<std::string> ServiceThread::start(std::string log_name, std::string thread_name,
                                                std::function<void(int wake_fd)> loop) {
    if (running()) return "already running";
    const int wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wake_fd < 0) return std::string("eventfd: ") + std::strerror(errno);
    try {
        thread_ = std::thread(
            [log_name, thread_name = std::move(thread_name), loop = std::move(loop), wake_fd] {
                pthread_setname_np(pthread_self(), thread_name.c_str());
                try {
                    loop(wake_fd);
                } catch (const std::exception& e) {
                    spdlog::critical("{}: thread stopped: {}", log_name, e.what());
                } catch (...) {
                    spdlog::critical("{}: thread stopped by an unknown exception", log_name);
                }
            });
    } catch (const std::exception& e) {
        close(wake_fd);
        return std::string("std::thread: ") + e.what();
    }
    log_name_ = std::move(log_name);
    wake_fd_ = wake_fd;
    return std::nullopt;
}

void ServiceThread::stop() {
    if (!running()) return;
    const uint64_t one = 1;
    if (write(wake_fd_, &one, sizeof one) != sizeof one)
        spdlog::error("{}: cannot wake the thread: {}", log_name_, std::strerror(errno));
    thread_.join();
    close(wake_fd_);
    wake_fd_ = -1;
}

}  // namespace twinlane::control
