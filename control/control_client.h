// ControlClient: a blocking client for the control socket (twinlanectl, tests, scripts).
// One request at a time; every wait is bounded by the timeout given. Not thread-safe (one
// client per thread).
#pragma once

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace twinlane::control {

class ControlClient {
  public:
    struct ConnectResult {
        std::unique_ptr<ControlClient> client;  // null on error
        std::string error;                      // "connect: No such file or directory"
        bool not_running = false;               // nobody listens at the path (ENOENT, ECONNREFUSED)
    };
    static ConnectResult connect(const std::string& socket_path, std::chrono::milliseconds timeout);

    ControlClient(ControlClient&& other) noexcept;
    ControlClient& operator=(ControlClient&& other) noexcept;
    ~ControlClient();

    struct Reply {
        std::optional<nlohmann::json> message;  // the reply object, when one arrived
        std::string error;                      // transport problem otherwise
    };
    // Sends one request and waits for the reply carrying its id (or a failure with id null,
    // which the server sends when it could not read the request or has too many clients).
    Reply request(std::string_view command, const nlohmann::json& args,
                  std::chrono::milliseconds timeout);

  private:
    explicit ControlClient(int fd) : fd_(fd) {}
    int fd_ = -1;
    int64_t next_id_ = 1;
    std::string buffer_;
};

}  // namespace twinlane::control
