// ControlServer: the daemon's control socket. A Unix stream socket speaking control/protocol.h,
// served by one thread with poll(): several clients at once, requests handled in arrival order
// per client, replies written without blocking the other clients.
//
// Local by default and by construction: a filesystem socket (no network), its directory
// created 0750 if missing, the socket chmod'ed to `socket_mode` (policy control.mode, 0660)
// before it accepts anyone. A stale socket file (nobody listening) is replaced; a live one
// (another daemon) or a non-socket file at the path is an error, never overwritten.
//
// Robustness: a request line is bounded (kMaxRequestBytes); an oversize line gets one error
// reply and is skipped up to its newline; malformed JSON, wrong version, unknown commands and
// bad args get error replies; the connection stays usable. A client that stops reading is
// not read from while it has more than kMaxPendingReplyBytes queued, and is dropped when a
// single reply would overflow kMaxQueuedReplyBytes. A client with no complete request and no
// reply bytes taken for `idle_timeout` is dropped (idle or trickling clients would otherwise
// hold every slot forever). A connection beyond `max_clients` is accepted, sent one error
// reply ("too many clients") and closed. No exception leaves the thread.
//
// Thread-safety: start()/stop() from one owning thread; stop() wakes the server thread
// (control/service_thread.h) and joins it. The DaemonApi is called from the server thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "control/daemon_api.h"
#include "control/protocol.h"
#include "control/service_thread.h"

namespace twinlane::control {

struct ControlServerOptions {
    std::string socket_path = "/run/twinlane/twinlane.sock";
    uint32_t socket_mode = 0660;
    uint32_t max_clients = 64;
    std::chrono::milliseconds idle_timeout = kClientIdleTimeout;
};

class ControlServer {
  public:
    static constexpr size_t kMaxPendingReplyBytes = 1 << 20;
    static constexpr size_t kMaxQueuedReplyBytes = 64 << 20;

    ControlServer(DaemonApi& api, ControlServerOptions options);
    ~ControlServer();
    ControlServer(const ControlServer&) = delete;
    ControlServer& operator=(const ControlServer&) = delete;

    // Binds, listens and starts the thread. Returns an error message on failure.
    std::optional<std::string> start();
    // Wakes and joins the thread, closes every connection, removes the socket file.
    void stop();
    bool running() const { return thread_.running(); }
    const std::string& socket_path() const { return options_.socket_path; }

  private:
    DaemonApi& api_;
    ControlServerOptions options_;
    int listen_fd_ = -1;
    ServiceThread thread_;
};

}  // namespace twinlane::control
