#include "control/metrics_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <exception>
#include <string_view>
#include <vector>

#include "control/metrics_text.h"

namespace twinlane::control {
namespace {

using Clock = std::chrono::steady_clock;

std::string errno_text(int error) {
    return std::strerror(error);
}

struct Connection {
    int fd = -1;
    Clock::time_point deadline;  // of the request head, then of the response
    std::string input;
    std::string output;
    size_t output_sent = 0;
    bool responding = false;  // writing the response
    bool lingering = false;   // response sent and FIN sent; reading until the client closes
    bool done = false;
};

std::string response(int status, std::string_view reason, std::string_view content_type,
                     const std::string& body, bool head_only, std::string_view extra = {}) {
    std::string text = "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason) + "\r\n";
    text += "Content-Type: " + std::string(content_type) + "\r\n";
    text += "Content-Length: " + std::to_string(body.size()) + "\r\n";
    text += extra;
    text += "Connection: close\r\n\r\n";
    if (!head_only) text += body;
    return text;
}

std::string plain(int status, std::string_view reason, std::string_view extra = {}) {
    return response(status, reason, "text/plain", std::string(reason) + "\n", false, extra);
}

bool equals_ignoring_case(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) ==
                      std::tolower(static_cast<unsigned char>(y));
           });
}

std::string_view trim(std::string_view text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
        text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r'))
        text.remove_suffix(1);
    return text;
}

// The response to one complete request head (request line and header lines, no blank line).
std::string answer(DaemonApi& api, std::string_view head) {
    const size_t line_end = head.find('\n');
    const std::string_view request_line = trim(head.substr(0, line_end));
    const size_t first_space = request_line.find(' ');
    const size_t last_space = request_line.rfind(' ');
    if (first_space == std::string_view::npos || first_space == last_space)
        return plain(400, "Bad Request");
    const std::string_view method = request_line.substr(0, first_space);
    const std::string_view target =
        request_line.substr(first_space + 1, last_space - first_space - 1);
    const std::string_view version = request_line.substr(last_space + 1);
    if (version.substr(0, 7) != "HTTP/1.") return plain(400, "Bad Request");
    // The endpoint takes no body: one announced is refused instead of read.
    for (size_t at = line_end; at != std::string_view::npos && at + 1 < head.size();) {
        const size_t next = head.find('\n', at + 1);
        const std::string_view line = head.substr(
            at + 1, next == std::string_view::npos ? std::string_view::npos : next - at - 1);
        at = next;
        const size_t colon = line.find(':');
        if (colon == std::string_view::npos) continue;
        const std::string_view name = trim(line.substr(0, colon));
        const std::string_view value = trim(line.substr(colon + 1));
        if (equals_ignoring_case(name, "transfer-encoding") ||
            (equals_ignoring_case(name, "content-length") && value != "0")) {
            return plain(413, "Payload Too Large");
        }
    }
    const bool head_only = method == "HEAD";
    if (method != "GET" && !head_only)
        return plain(405, "Method Not Allowed", "Allow: GET, HEAD\r\n");
    if (target.substr(0, target.find('?')) != "/metrics") {
        return response(404, "Not Found", "text/plain", "Not Found\n", head_only);
    }
    try {
        return response(200, "OK", kPrometheusContentType, prometheus_text(api), head_only);
    } catch (const std::exception& e) {
        spdlog::warn("metrics: scrape failed: {}", e.what());
    } catch (...) {
        spdlog::warn("metrics: scrape failed");
    }
    return response(500, "Internal Server Error", "text/plain", "internal error\n", head_only);
}

class Connections {
  public:
    Connections(DaemonApi& api, const MetricsServerOptions& options)
        : api_(api), options_(options) {}
    ~Connections() {
        for (const Connection& connection : connections_)
            close(connection.fd);
    }

    void run(int listen_fd, int wake_fd) {
        std::vector<pollfd> fds;
        while (true) {
            fds.clear();
            fds.push_back({wake_fd, POLLIN, 0});
            fds.push_back({listen_fd, POLLIN, 0});
            for (const Connection& connection : connections_) {
                fds.push_back(
                    {connection.fd,
                     static_cast<short>(connection.responding && !connection.lingering ? POLLOUT
                                                                                       : POLLIN),
                     0});
            }
            if (poll(fds.data(), fds.size(), poll_timeout_ms()) < 0) {
                if (errno == EINTR) continue;
                spdlog::error("metrics: poll: {}", errno_text(errno));
                return;
            }
            if (fds[0].revents != 0) return;  // stop() was called
            // Connections first: accepting below may grow connections_, which fds does not
            // describe.
            for (size_t i = 0; i < connections_.size(); ++i) {
                const short revents = fds[i + 2].revents;
                Connection& connection = connections_[i];
                if (revents == 0) continue;
                if (connection.lingering) {
                    discard_input(connection);
                } else if (connection.responding) {
                    write_to(connection);
                } else {
                    read_from(connection);
                }
            }
            close_expired();
            if (fds[1].revents & POLLIN) accept_from(listen_fd);
        }
    }

  private:
    int poll_timeout_ms() const {
        if (connections_.empty()) return -1;
        Clock::time_point first = Clock::time_point::max();
        for (const Connection& connection : connections_)
            first = std::min(first, connection.deadline);
        const auto ms = std::chrono::ceil<std::chrono::milliseconds>(first - Clock::now()).count();
        return static_cast<int>(std::clamp<int64_t>(ms, 0, 60'000));
    }

    void accept_from(int listen_fd) {
        // Several per wake-up: a burst of connections must not wait one poll() each.
        for (int i = 0; i < 64; ++i) {
            const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (fd < 0) {
                if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
                    errno != ECONNABORTED) {
                    spdlog::warn("metrics: accept: {}", errno_text(errno));
                }
                return;
            }
            if (connections_.size() >= options_.max_connections && !evict_oldest_request()) {
                close(fd);  // every slot is sending a response: those finish first
                continue;
            }
            Connection connection;
            connection.fd = fd;
            connection.deadline = Clock::now() + options_.request_timeout;
            connections_.push_back(std::move(connection));
        }
    }

    // The oldest connection (connections_ is in accept order) still sending its request, or
    // already answered, makes room for a new one: a scraper sends its request at once, so only
    // idle or trickling clients lose their slot.
    bool evict_oldest_request() {
        const auto oldest =
            std::find_if(connections_.begin(), connections_.end(),
                         [](const Connection& c) { return !c.responding || c.lingering; });
        if (oldest == connections_.end()) return false;
        if (!evicted_warned_) {
            spdlog::warn(
                "metrics: {} connections open (the limit): closing the oldest one "
                "without a complete request for each new one",
                options_.max_connections);
            evicted_warned_ = true;
        }
        close(oldest->fd);
        connections_.erase(oldest);
        return true;
    }

    void read_from(Connection& connection) {
        char buffer[4096];
        const ssize_t got = recv(connection.fd, buffer, sizeof buffer, MSG_DONTWAIT);
        if (got < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) connection.done = true;
            return;
        }
        if (got == 0) {
            connection.done = true;  // closed before its request was complete
            return;
        }
        connection.input.append(buffer, static_cast<size_t>(got));
        // A head ends at an empty line; bare LF line ends are accepted as RFC 9112 allows.
        size_t end = connection.input.find("\r\n\r\n");
        size_t head_bytes = end == std::string::npos ? end : end + 2;
        if (end == std::string::npos) {
            end = connection.input.find("\n\n");
            head_bytes = end == std::string::npos ? end : end + 1;
        }
        if (head_bytes == std::string::npos || head_bytes > kHeadLimit) {
            if (connection.input.size() > kHeadLimit) {
                respond(connection, plain(431, "Request Header Fields Too Large"));
            }
            return;
        }
        respond(connection, answer(api_, std::string_view(connection.input).substr(0, head_bytes)));
    }

    void respond(Connection& connection, std::string text) {
        connection.input.clear();
        connection.output = std::move(text);
        connection.responding = true;
        connection.deadline = Clock::now() + options_.write_timeout;
        write_to(connection);
    }

    void write_to(Connection& connection) {
        while (connection.output_sent < connection.output.size()) {
            const ssize_t sent = send(
                connection.fd, connection.output.data() + connection.output_sent,
                connection.output.size() - connection.output_sent, MSG_DONTWAIT | MSG_NOSIGNAL);
            if (sent < 0) {
                if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                    connection.done = true;
                return;
            }
            connection.output_sent += static_cast<size_t>(sent);
        }
        // Closing with unread request bytes (a body, pipelined requests) would send a reset,
        // which can destroy the response before the client reads it: send FIN, then read
        // until the client closes or the deadline passes (a lingering close).
        shutdown(connection.fd, SHUT_WR);
        connection.lingering = true;
        discard_input(connection);
    }

    // A bounded amount per wake-up: a client that keeps sending cannot hold the thread (its
    // deadline still ends it).
    void discard_input(Connection& connection) {
        char buffer[4096];
        for (int chunk = 0; chunk < 16; ++chunk) {
            const ssize_t got = recv(connection.fd, buffer, sizeof buffer, MSG_DONTWAIT);
            if (got > 0) continue;
            if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
                connection.done = true;
            return;
        }
    }

    void close_expired() {
        const Clock::time_point now = Clock::now();
        std::erase_if(connections_, [&](const Connection& connection) {
            const bool expired = !connection.done && now >= connection.deadline;
            if (expired && !connection.responding && !connection.input.empty()) {
                // Best effort, never blocks: the client may not be reading at all.
                const std::string reply = plain(408, "Request Timeout");
                const ssize_t sent =
                    send(connection.fd, reply.data(), reply.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
                if (sent < 0) spdlog::debug("metrics: 408 not sent: {}", errno_text(errno));
            }
            if (connection.done || expired) close(connection.fd);
            return connection.done || expired;
        });
    }

    static constexpr size_t kHeadLimit = MetricsServer::kMaxRequestHeadBytes;
    DaemonApi& api_;
    const MetricsServerOptions options_;
    std::vector<Connection> connections_;
    bool evicted_warned_ = false;
};

}  // namespace

MetricsServer::MetricsServer(DaemonApi& api, std::string listen_address, uint16_t port,
                             MetricsServerOptions options)
    : api_(api), listen_address_(std::move(listen_address)), port_(port), options_(options) {}

MetricsServer::~MetricsServer() {
    stop();
}

std::optional<std::string> MetricsServer::start() {
    if (thread_.running()) return "already running";
    if (options_.max_connections == 0) return "max_connections must be > 0";
    sockaddr_storage address{};
    socklen_t address_size = 0;
    auto* v4 = reinterpret_cast<sockaddr_in*>(&address);
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&address);
    if (inet_pton(AF_INET, listen_address_.c_str(), &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port_);
        address_size = sizeof(sockaddr_in);
    } else if (inet_pton(AF_INET6, listen_address_.c_str(), &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(port_);
        address_size = sizeof(sockaddr_in6);
    } else {
        return "'" + listen_address_ + "' is not an IPv4 or IPv6 address";
    }
    listen_fd_ = socket(address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (listen_fd_ < 0) return "socket: " + errno_text(errno);
    auto fail = [&](const std::string& what) {
        const std::string message = what + ": " + errno_text(errno);
        close(listen_fd_);
        listen_fd_ = -1;
        return message;
    };
    const int one = 1;
    if (setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0)
        return fail("setsockopt SO_REUSEADDR");
    if (bind(listen_fd_, reinterpret_cast<const sockaddr*>(&address), address_size) != 0)
        return fail("bind");
    // A deep backlog: a burst of connections waits there for accept() instead of losing
    // SYNs (each lost SYN costs its client a 1 s retransmission, a scraper too).
    if (listen(listen_fd_, 1024) != 0) return fail("listen");
    sockaddr_storage bound{};
    socklen_t bound_size = sizeof bound;
    if (getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &bound_size) != 0)
        return fail("getsockname");
    bound_port_ = ntohs(bound.ss_family == AF_INET
                            ? reinterpret_cast<const sockaddr_in*>(&bound)->sin_port
                            : reinterpret_cast<const sockaddr_in6*>(&bound)->sin6_port);
    const auto serve = [this](int wake_fd) {
        Connections connections(api_, options_);
        connections.run(listen_fd_, wake_fd);
    };
    if (auto error = thread_.start("metrics", "tl-metrics", serve)) {
        close(listen_fd_);
        listen_fd_ = -1;
        return "cannot start the metrics thread: " + *error;
    }
    spdlog::info("metrics: serving http://{}:{}/metrics", listen_address_, bound_port_);
    return std::nullopt;
}

void MetricsServer::stop() {
    if (!thread_.running()) return;
    thread_.stop();
    close(listen_fd_);
    listen_fd_ = -1;
    spdlog::info("metrics: stopped");
}

}  // namespace twinlane::control
