// MetricsServer: serves control/metrics_text.h over HTTP/1.x at GET (and HEAD) /metrics, on
// policy metrics.listen:metrics.port (127.0.0.1:9464 by default: local unless the policy says
// otherwise). Any other path is 404, other methods 405; a request with a body is refused
// (413). Each scrape pulls fresh numbers through DaemonApi. Every response closes the
// connection (Prometheus reconnects per scrape; nothing waits between scrapes).
//
// Robustness: one thread with poll() over every connection, so no client can hold a worker.
// A connection must deliver its whole request head (at most kMaxRequestHeadBytes) within
// `request_timeout` of being accepted, however slowly it trickles bytes, and must take its
// response within `write_timeout`; otherwise it is closed. At `max_connections` open, a new
// connection closes the oldest one still sending its request (idle or trickling clients cannot
// keep a scraper out). cpp-httplib's thread pool of 2 workers had neither bound: two clients
// sending a header line every 2 s, or 200 idle connections, stopped every scrape.
//
// Thread-safety: start()/stop() from one owning thread; stop() wakes the server thread
// (control/service_thread.h) and joins it. The DaemonApi is called from the server thread only. No
// exception leaves that thread (a failing scrape is HTTP 500).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "control/daemon_api.h"
#include "control/service_thread.h"

namespace twinlane::control {

struct MetricsServerOptions {
    std::chrono::milliseconds request_timeout{5000};  // accept -> complete request head
    std::chrono::milliseconds write_timeout{5000};    // request head -> response taken
    uint32_t max_connections = 32;
};

class MetricsServer {
  public:
    static constexpr size_t kMaxRequestHeadBytes = 8192;

    MetricsServer(DaemonApi& api, std::string listen_address, uint16_t port,
                  MetricsServerOptions options = {});
    ~MetricsServer();
    MetricsServer(const MetricsServer&) = delete;
    MetricsServer& operator=(const MetricsServer&) = delete;

    // Binds and starts serving; an error message on failure. Port 0 picks a free port.
    std::optional<std::string> start();
    void stop();
    uint16_t bound_port() const { return bound_port_; }

  private:
    DaemonApi& api_;
    std::string listen_address_;
    uint16_t port_;
    MetricsServerOptions options_;
    uint16_t bound_port_ = 0;
    int listen_fd_ = -1;
    ServiceThread thread_;
};

}  // namespace twinlane::control
