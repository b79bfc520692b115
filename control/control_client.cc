#include "control/control_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "control/protocol.h"

namespace twinlane::control {
namespace {

// Replies can be large (policy.show, stats queues on big trees) but not unbounded.
constexpr size_t kMaxReplyBytes = 256 << 20;

using Clock = std::chrono::steady_clock;

int remaining_ms(Clock::time_point deadline) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

}  // namespace

ControlClient::ConnectResult ControlClient::connect(const std::string& socket_path,
                                                    std::chrono::milliseconds timeout) {
    ConnectResult result;
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (socket_path.empty() || socket_path.size() >= sizeof(address.sun_path)) {
        result.error = "socket path must be 1-107 bytes";
        return result;
    }
    std::memcpy(address.sun_path, socket_path.c_str(), socket_path.size() + 1);
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        result.error = std::string("socket: ") + std::strerror(errno);
        return result;
    }
    // A full backlog (EAGAIN) clears as the server accepts: retry until the deadline.
    const auto deadline = Clock::now() + timeout;
    while (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
        const int error = errno;
        if ((error == EAGAIN || error == EINTR) && remaining_ms(deadline) > 0) {
            poll(nullptr, 0, 10);
            continue;
        }
        result.error = std::string("connect: ") + std::strerror(error);
        result.not_running = error == ENOENT || error == ECONNREFUSED;
        close(fd);
        return result;
    }
    result.client.reset(new ControlClient(fd));
    return result;
}

ControlClient::ControlClient(ControlClient&& other) noexcept
    : fd_(other.fd_), next_id_(other.next_id_), buffer_(std::move(other.buffer_)) {
    other.fd_ = -1;
}

ControlClient& ControlClient::operator=(ControlClient&& other) noexcept {
    if (this != &other) {
        if (fd_ >= 0) close(fd_);
        fd_ = other.fd_;
        next_id_ = other.next_id_;
        buffer_ = std::move(other.buffer_);
        other.fd_ = -1;
    }
    return *this;
}

ControlClient::~ControlClient() {
    if (fd_ >= 0) close(fd_);
}

ControlClient::Reply ControlClient::request(std::string_view command, const nlohmann::json& args,
                                            std::chrono::milliseconds timeout) {
    Reply reply;
    const auto deadline = Clock::now() + timeout;
    const int64_t id = next_id_++;
    const std::string line = format_request(id, command, args);
    if (line.size() > kMaxRequestBytes + 1) {
        reply.error = "request exceeds " + std::to_string(kMaxRequestBytes) + " bytes";
        return reply;
    }
    size_t sent = 0;
    std::string send_error;
    while (sent < line.size()) {
        const ssize_t n = send(fd_, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
        if (n > 0) {
            sent += static_cast<size_t>(n);
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            pollfd pfd{fd_, POLLOUT, 0};
            if (poll(&pfd, 1, remaining_ms(deadline)) <= 0) {
                reply.error = "timed out sending the request";
                return reply;
            }
            continue;
        }
        reply.error = std::string("send: ") + std::strerror(errno);
        // A server refusing a client (too many) replies and closes before reading: the reply
        // is still there to read. Without one, the daemon has gone (stopped, or restarted
        // under `watch`), which "send: Broken pipe" did not say.
        if (errno != EPIPE && errno != ECONNRESET) return reply;
        send_error = "the daemon closed the connection";
        break;
    }
    while (true) {
        const size_t newline = buffer_.find('\n');
        if (newline != std::string::npos) {
            auto message = nlohmann::json::parse(buffer_.substr(0, newline), nullptr, false);
            buffer_.erase(0, newline + 1);
            if (message.is_discarded() || !message.is_object()) {
                reply.error = "the daemon sent a malformed reply";
                return reply;
            }
            const nlohmann::json reply_id = message.value("id", nlohmann::json());
            // A failure with id null answers a request the server could not read or refused
            // unread (too many clients): with one request in flight, this one.
            const bool unattributed_failure =
                reply_id.is_null() && message.contains("ok") && message["ok"] == false;
            if (reply_id != id && !unattributed_failure) continue;  // an older reply
            reply.message = std::move(message);
            return reply;
        }
        if (buffer_.size() > kMaxReplyBytes) {
            reply.error = "reply too large";
            return reply;
        }
        pollfd pfd{fd_, POLLIN, 0};
        const int ready = poll(&pfd, 1, remaining_ms(deadline));
        if (ready == 0) {
            reply.error = "timed out waiting for the daemon's reply";
            return reply;
        }
        if (ready < 0) {
            if (errno == EINTR) continue;
            reply.error = std::string("poll: ") + std::strerror(errno);
            return reply;
        }
        char chunk[65536];
        const ssize_t got = recv(fd_, chunk, sizeof chunk, 0);
        if (got == 0) {
            reply.error = send_error.empty() ? "the daemon closed the connection" : send_error;
            return reply;
        }
        if (got < 0) {
            if (errno == EAGAIN || errno == EINTR) continue;
            reply.error =
                send_error.empty() ? std::string("recv: ") + std::strerror(errno) : send_error;
            return reply;
        }
        buffer_.append(chunk, static_cast<size_t>(got));
    }
}

}  // namespace twinlane::control
