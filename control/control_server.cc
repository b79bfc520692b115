#include "control/control_server.h"

#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <optional>
#include <vector>

#include "control/protocol.h"

namespace twinlane::control {
namespace {

constexpr size_t kReadChunkBytes = 64 * 1024;

using Clock = std::chrono::steady_clock;

std::string errno_text(int error) {
    return std::strerror(error);
}

std::optional<sockaddr_un> socket_address(const std::string& path) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (path.empty() || path.size() >= sizeof(address.sun_path)) return std::nullopt;
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
    return address;
}

// Creates the missing directories above `path`, each 0750 (group may reach the socket, others
// may not even list the directory).
std::optional<std::string> make_parent_directories(const std::string& path) {
    const size_t slash = path.rfind('/');
    if (slash == std::string::npos || slash == 0) return std::nullopt;
    const std::string directory = path.substr(0, slash);
    struct stat info {};
    if (stat(directory.c_str(), &info) == 0) {
        if (!S_ISDIR(info.st_mode)) return directory + " is not a directory";
        return std::nullopt;
    }
    if (auto error = make_parent_directories(directory)) return error;
    if (mkdir(directory.c_str(), 0750) != 0 && errno != EEXIST) {
        return "cannot create " + directory + ": " + errno_text(errno);
    }
    return std::nullopt;
}

// A socket file nobody listens on is left over from a crash: remove it. Anything else at the
// path is someone else's and stays.
std::optional<std::string> clear_stale_socket(const std::string& path, const sockaddr_un& address) {
    struct stat info {};
    if (lstat(path.c_str(), &info) != 0) {
        if (errno == ENOENT) return std::nullopt;
        return "cannot stat " + path + ": " + errno_text(errno);
    }
    if (!S_ISSOCK(info.st_mode)) return path + " exists and is not a socket; not replacing it";
    const int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (probe < 0) return "socket: " + errno_text(errno);
    const int connected =
        connect(probe, reinterpret_cast<const sockaddr*>(&address), sizeof(address));
    close(probe);
    if (connected == 0) return "another process is serving " + path;
    if (unlink(path.c_str()) != 0 && errno != ENOENT) {
        return "cannot remove stale socket " + path + ": " + errno_text(errno);
    }
    spdlog::info("control: removed stale socket {}", path);
    return std::nullopt;
}

struct Client {
    int fd = -1;
    uint64_t number = 0;
    std::string input;
    std::string output;
    size_t output_sent = 0;
    bool discarding = false;             // skipping the rest of an oversize line
    bool read_closed = false;            // peer sent EOF: flush replies, then close
    bool failed = false;                 // close now
    Clock::time_point last_progress;     // connected, completed a request or took reply bytes
    std::optional<Requester> requester;  // peer credentials, when the kernel gave them

    size_t pending() const { return output.size() - output_sent; }
};

class Connections {
  public:
    Connections(DaemonApi& api, uint32_t max_clients, std::chrono::milliseconds idle_timeout)
        : api_(api), max_clients_(max_clients), idle_timeout_(idle_timeout) {}
    ~Connections() {
        for (Client& client : clients_)
            close(client.fd);
    }

    void run(int listen_fd, int wake_fd) {
        std::vector<pollfd> fds;
        while (true) {
            fds.clear();
            fds.push_back({wake_fd, POLLIN, 0});
            // Always accepting: a client over the limit is told so instead of left hanging.
            fds.push_back({listen_fd, POLLIN, 0});
            for (const Client& client : clients_) {
                short events = 0;
                if (!client.read_closed && client.pending() < ControlServer::kMaxPendingReplyBytes)
                    events |= POLLIN;
                if (client.pending() > 0) events |= POLLOUT;
                fds.push_back({client.fd, events, 0});
            }
            if (poll(fds.data(), fds.size(), poll_timeout_ms()) < 0) {
                if (errno == EINTR) continue;
                spdlog::error("control: poll: {}", errno_text(errno));
                return;
            }
            if (fds[0].revents != 0) return;  // stop() was called
            // Clients first: accept() below may grow clients_, which fds does not describe.
            for (size_t i = 0; i < clients_.size(); ++i) {
                const short revents = fds[i + 2].revents;
                Client& client = clients_[i];
                if (revents & (POLLIN | POLLHUP | POLLERR)) read_from(client);
                if (!client.failed && client.pending() > 0) write_to(client);
            }
            drop_idle();
            close_finished();
            if (fds[1].revents & POLLIN) accept_from(listen_fd);
        }
    }

  private:
    // Until the first client falls idle, rounded up so the wake-up finds it idle; -1: none.
    int poll_timeout_ms() const {
        if (clients_.empty()) return -1;
        Clock::time_point first = Clock::time_point::max();
        for (const Client& client : clients_)
            first = std::min(first, client.last_progress);
        const auto left = first + idle_timeout_ - Clock::now();
        const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
        return static_cast<int>(std::clamp<int64_t>(ms, 0, 60'000));
    }

    void drop_idle() {
        const Clock::time_point now = Clock::now();
        for (Client& client : clients_) {
            if (!client.failed && now - client.last_progress >= idle_timeout_) {
                spdlog::info("control: client {} sent no complete request for {} ms; disconnecting",
                             client.number, idle_timeout_.count());
                client.failed = true;
            }
        }
    }

    void accept_from(int listen_fd) {
        const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) {
                spdlog::warn("control: accept: {}", errno_text(errno));
            }
            return;
        }
        if (clients_.size() >= max_clients_) {
            // One error reply into the empty socket buffer (never blocks), then close.
            const std::string reply =
                format_error(nullptr, "too many clients (" + std::to_string(max_clients_) +
                                          " connected); try again later");
            if (send(fd, reply.data(), reply.size(), MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
                spdlog::debug("control: cannot tell a client over the limit: {}",
                              errno_text(errno));
            }
            close(fd);
            spdlog::warn("control: refused a client: {} connected, the limit", max_clients_);
            return;
        }
        Client client;
        client.fd = fd;
        client.number = ++accepted_;
        client.last_progress = Clock::now();
        ucred peer{};
        socklen_t peer_size = sizeof(peer);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &peer_size) == 0) {
            client.requester = Requester{peer.uid, peer.gid};
        }
        // Debug: a liveness probe or a monitoring script connects every few seconds; changes
        // are logged when applied or rejected.
        spdlog::debug("control: client {} connected", client.number);
        clients_.push_back(std::move(client));
    }

    void read_from(Client& client) {
        char buffer[kReadChunkBytes];
        const ssize_t got = recv(client.fd, buffer, sizeof buffer, MSG_DONTWAIT);
        if (got < 0) {
            if (errno != EAGAIN && errno != EINTR) client.failed = true;
            return;
        }
        if (got == 0) {
            if (!client.input.empty() && !client.discarding) {
                spdlog::info("control: client {} closed mid-request ({} bytes dropped)",
                             client.number, client.input.size());
            }
            client.input.clear();
            client.read_closed = true;
            return;
        }
        client.input.append(buffer, static_cast<size_t>(got));
        handle_lines(client);
    }

    void handle_lines(Client& client) {
        size_t start = 0;
        while (!client.failed) {
            const size_t newline = client.input.find('\n', start);
            if (newline == std::string::npos) break;
            client.last_progress = Clock::now();
            if (client.discarding) {
                client.discarding = false;
            } else {
                std::string_view line(client.input.data() + start, newline - start);
                if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
                handle_request(client, line);
            }
            start = newline + 1;
        }
        client.input.erase(0, start);
        if (client.discarding) {
            client.input.clear();
        } else if (client.input.size() > kMaxRequestBytes) {
            spdlog::warn("control: client {}: request line over {} bytes", client.number,
                         kMaxRequestBytes);
            queue(client, format_error(nullptr, "request line exceeds " +
                                                    std::to_string(kMaxRequestBytes) + " bytes"));
            client.input.clear();
            client.discarding = true;
        }
    }

    void handle_request(Client& client, std::string_view line) {
        if (line.find_first_not_of(" \t") == std::string_view::npos) return;  // blank line
        auto parsed = parse_request(line);
        if (auto* error = std::get_if<RequestError>(&parsed)) {
            spdlog::warn("control: client {}: bad request: {}", client.number, error->message);
            queue(client, format_error(error->id, error->message));
            return;
        }
        const Request& request = std::get<Request>(parsed);
        const ApiResult result = dispatch(api_, request, client.requester);
        if (is_change(request.command)) {
            if (result.ok()) {
                spdlog::info("control: client {}: {} applied", client.number, request.command);
            } else {
                spdlog::warn("control: client {}: {} rejected: {}", client.number, request.command,
                             result.error());
            }
        } else if (!result.ok()) {
            spdlog::debug("control: client {}: {} failed: {}", client.number, request.command,
                          result.error());
        }
        queue(client, format_reply(request.id, result));
    }

    void queue(Client& client, const std::string& reply) {
        if (client.pending() + reply.size() > ControlServer::kMaxQueuedReplyBytes) {
            spdlog::warn("control: client {} does not read its replies; disconnecting",
                         client.number);
            client.failed = true;
            return;
        }
        if (client.output_sent > 0) {
            client.output.erase(0, client.output_sent);
            client.output_sent = 0;
        }
        client.output += reply;
    }

    void write_to(Client& client) {
        while (client.pending() > 0) {
            const ssize_t sent = send(client.fd, client.output.data() + client.output_sent,
                                      client.pending(), MSG_DONTWAIT | MSG_NOSIGNAL);
            if (sent < 0) {
                if (errno != EAGAIN && errno != EINTR) client.failed = true;
                return;
            }
            client.output_sent += static_cast<size_t>(sent);
            client.last_progress = Clock::now();
        }
        client.output.clear();
        client.output_sent = 0;
    }

    void close_finished() {
        std::erase_if(clients_, [](Client& client) {
            const bool done = client.failed || (client.read_closed && client.pending() == 0);
            if (done) {
                close(client.fd);
                spdlog::debug("control: client {} disconnected", client.number);
            }
            return done;
        });
    }

    DaemonApi& api_;
    const uint32_t max_clients_;
    const std::chrono::milliseconds idle_timeout_;
    uint64_t accepted_ = 0;
    std::vector<Client> clients_;
};

}  // namespace

ControlServer::ControlServer(DaemonApi& api, ControlServerOptions options)
    : api_(api), options_(std::move(options)) {}

ControlServer::~ControlServer() {
    stop();
}

std::optional<std::string> ControlServer::start() {
    if (running()) return "already running";
    const std::string& path = options_.socket_path;
    const auto address = socket_address(path);
    if (!address) return "socket path must be 1-107 bytes: " + path;
    if (options_.socket_mode > 0777) return "socket mode above 0777";
    if (auto error = make_parent_directories(path)) return error;
    if (auto error = clear_stale_socket(path, *address)) return error;

    listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (listen_fd_ < 0) return "socket: " + errno_text(errno);
    auto fail = [&](const std::string& what) {
        const std::string message = what + ": " + errno_text(errno);
        close(listen_fd_);
        listen_fd_ = -1;
        return message;
    };
    if (bind(listen_fd_, reinterpret_cast<const sockaddr*>(&*address), sizeof(*address)) != 0) {
        return fail("bind " + path);
    }
    // Nobody can connect before listen(), so the mode is in place before the first client.
    if (chmod(path.c_str(), options_.socket_mode) != 0) {
        unlink(path.c_str());
        return fail("chmod " + path);
    }
    if (listen(listen_fd_, 16) != 0) {
        unlink(path.c_str());
        return fail("listen " + path);
    }
    const auto serve = [this](int wake_fd) {
        Connections connections(api_, options_.max_clients, options_.idle_timeout);
        connections.run(listen_fd_, wake_fd);
    };
    if (auto error = thread_.start("control", "tl-control", serve)) {
        unlink(path.c_str());
        close(listen_fd_);
        listen_fd_ = -1;
        return "cannot start the control thread: " + *error;
    }
    spdlog::info("control: listening on {} (mode {:04o})", path, options_.socket_mode);
    return std::nullopt;
}

void ControlServer::stop() {
    if (!running()) return;
    thread_.stop();
    close(listen_fd_);
    listen_fd_ = -1;
    unlink(options_.socket_path.c_str());
    spdlog::info("control: stopped");
}

}  // namespace twinlane::control
