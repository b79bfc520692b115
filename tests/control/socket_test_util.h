// Helpers for control-socket tests: a private temporary directory per test and a raw client
// that sends bytes and reads reply lines with a deadline (never blocks forever).
#pragma once

#include <gtest/gtest.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace twinlane::control::testing {

class TempDir {
  public:
    // Under `base` (default: TMPDIR or /tmp).
    explicit TempDir(const std::filesystem::path& base = std::filesystem::temp_directory_path()) {
        std::string pattern = base / "twinlane-ctl-XXXXXX";
        if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
    }
    ~TempDir() {
        std::error_code ignored;
        if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
    }
    const std::string& path() const { return path_; }

  private:
    std::string path_;
};

class RawClient {
  public:
    explicit RawClient(const std::string& socket_path) {
        fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::strncpy(address.sun_path, socket_path.c_str(), sizeof(address.sun_path) - 1);
        if (connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
            close(fd_);
            fd_ = -1;
        }
    }
    ~RawClient() { close_now(); }
    bool connected() const { return fd_ >= 0; }
    void close_now() {
        if (fd_ >= 0) close(fd_);
        fd_ = -1;
    }

    bool send_all(const std::string& bytes) {
        size_t sent = 0;
        while (sent < bytes.size()) {
            const ssize_t n = send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
            if (n <= 0) return false;
            sent += static_cast<size_t>(n);
        }
        return true;
    }

    // The next reply line parsed as JSON, or nullopt after 5 s / on EOF.
    std::optional<nlohmann::json> read_reply() {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (true) {
            const size_t newline = buffer_.find('\n');
            if (newline != std::string::npos) {
                auto reply = nlohmann::json::parse(buffer_.substr(0, newline), nullptr, false);
                buffer_.erase(0, newline + 1);
                if (reply.is_discarded()) return std::nullopt;
                return reply;
            }
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0) return std::nullopt;
            pollfd pfd{fd_, POLLIN, 0};
            if (poll(&pfd, 1, static_cast<int>(left.count())) <= 0) return std::nullopt;
            char chunk[65536];
            const ssize_t got = recv(fd_, chunk, sizeof chunk, 0);
            if (got <= 0) return std::nullopt;
            buffer_.append(chunk, static_cast<size_t>(got));
        }
    }

    // True when the server closes the connection within `timeout` (anything it sends first is
    // kept for read_reply()).
    bool closed_within(std::chrono::milliseconds timeout) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (true) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0) return false;
            pollfd pfd{fd_, POLLIN, 0};
            if (poll(&pfd, 1, static_cast<int>(left.count())) <= 0) return false;
            char chunk[65536];
            const ssize_t got = recv(fd_, chunk, sizeof chunk, 0);
            if (got <= 0) return true;
            buffer_.append(chunk, static_cast<size_t>(got));
        }
    }

  private:
    int fd_ = -1;
    std::string buffer_;
};

}  // namespace twinlane::control::testing
