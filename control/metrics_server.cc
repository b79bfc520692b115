#include "control/metrics_server.h"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <exception>

#include "control/metrics_text.h"

namespace twinlane::control {

MetricsServer::MetricsServer(DaemonApi& api, std::string listen_address, uint16_t port)
    : api_(api), listen_address_(std::move(listen_address)), port_(port) {}

MetricsServer::~MetricsServer() { stop(); }

std::optional<std::string> MetricsServer::start() {
    if (thread_.joinable()) return "already running";
    server_ = std::make_unique<httplib::Server>();
    // Two workers: a scrape is cheap, and the machine's cores belong to the dataplane.
    server_->new_task_queue = [] { return new httplib::ThreadPool(2); };
    server_->set_payload_max_length(0);
    server_->set_read_timeout(5, 0);
    server_->set_write_timeout(5, 0);
    server_->set_keep_alive_max_count(16);
    server_->Get("/metrics", [this](const httplib::Request&, httplib::Response& response) {
        response.set_content(prometheus_text(api_), kPrometheusContentType);
    });
    server_->set_exception_handler(
        [](const httplib::Request&, httplib::Response& response, std::exception_ptr) {
            response.status = 500;
            response.set_content("internal error\n", "text/plain");
        });
    int bound = 0;
    if (port_ == 0) {
        bound = server_->bind_to_any_port(listen_address_);
    } else {
        bound = server_->bind_to_port(listen_address_, port_) ? port_ : -1;
    }
    if (bound <= 0) {
        server_.reset();
        return "cannot listen on " + listen_address_ + ":" + std::to_string(port_);
    }
    bound_port_ = static_cast<uint16_t>(bound);
    listen_returned_.store(false);
    try {
        thread_ = std::thread([this] {
            try {
                server_->listen_after_bind();
                listen_returned_.store(true);
            } catch (const std::exception& e) {
                spdlog::critical("metrics: server stopped: {}", e.what());
                listen_returned_.store(true);
            }
        });
    } catch (const std::exception& e) {
        server_.reset();
        return std::string("cannot start the metrics thread: ") + e.what();
    }
    spdlog::info("metrics: serving http://{}:{}/metrics", listen_address_, bound_port_);
    return std::nullopt;
}

void MetricsServer::stop() {
    if (!thread_.joinable()) return;
    // httplib's stop() is a no-op until listen_after_bind() has marked the server running.
    while (!server_->is_running() && !listen_returned_.load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    server_->stop();
    thread_.join();
    server_.reset();
    spdlog::info("metrics: stopped");
}

}  // namespace twinlane::control
