// MetricsServer: serves control/metrics_text.h over HTTP (cpp-httplib) at GET /metrics, on
// policy metrics.listen:metrics.port (127.0.0.1:9464 by default: local unless the policy says
// otherwise). Any other path is 404, other methods 405; request bodies are refused (payload
// limit 0). Each scrape pulls fresh numbers through DaemonApi.
//
// Thread-safety: start()/stop() from one owning thread; the HTTP thread(s) call the DaemonApi.
// No exception leaves those threads (handler errors become HTTP 500).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "control/daemon_api.h"

namespace httplib {
class Server;
}

namespace twinlane::control {

class MetricsServer {
public:
    MetricsServer(DaemonApi& api, std::string listen_address, uint16_t port);
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
    uint16_t bound_port_ = 0;
    std::unique_ptr<httplib::Server> server_;
    std::atomic<bool> listen_returned_{false};
    std::thread thread_;
};

}  // namespace twinlane::control
