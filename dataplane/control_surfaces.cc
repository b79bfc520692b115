#include "dataplane/control_surfaces.h"

#include <spdlog/spdlog.h>

#include "control/metrics_server.h"
#include "control/telemetry.h"

namespace twinlane::dataplane {

ControlSurfaces::ControlSurfaces() = default;
ControlSurfaces::~ControlSurfaces() {
    stop();
}

bool ControlSurfaces::start(const Pipeline& p, const DaemonOptions& options,
                            const std::vector<DaemonLcore>& roles, std::string& error) {
    DaemonPipeline view;
    view.dpdk_ports = p.dpdk_ports;
    for (const auto& e : p.egress)
        view.egress.push_back(e.get());
    for (const auto& ctx : p.lcores)
        view.lcores.push_back(ctx.get());
    view.roles = roles;
    DaemonControlOptions daemon_options;
    daemon_options.explicit_log_level = options.explicit_log_level;
    auto created = DaemonControl::create(p.policy, std::move(view), daemon_options);
    if (!created.control) {
        error = "control: ";
        for (const std::string& e : created.errors)
            error += e + "; ";
        return false;
    }
    api_ = std::move(created.control);

    const conf::Policy& policy = *p.policy;
    if (options.control) {
        control::ControlServerOptions server_options;
        server_options.socket_path = options.control_socket.value_or(policy.control.socket_path);
        server_options.socket_mode = policy.control.socket_mode;
        server_ = std::make_unique<control::ControlServer>(*api_, server_options);
        if (auto problem = server_->start()) {
            error = "control socket " + server_options.socket_path + ": " + *problem +
                    " (--control-socket PATH to use another, --no-control for none)";
            return false;
        }
    }
    const uint16_t metrics_port = options.metrics_port.value_or(policy.metrics.port);
    if (policy.metrics.enabled && metrics_port != 0) {
        metrics_ = std::make_unique<control::MetricsServer>(*api_, policy.metrics.listen_address,
                                                            metrics_port);
        if (auto problem = metrics_->start()) {
            error = "metrics on " + policy.metrics.listen_address + ":" +
                    std::to_string(metrics_port) + ": " + *problem +
                    " (--metrics-port N to use another, 0 for none)";
            return false;
        }
    }
    const std::string telemetry = control::register_telemetry(*api_);
    if (telemetry.empty())
        telemetry_ = true;
    else
        spdlog::warn("DPDK telemetry /twinlane/...: {}", telemetry);
    return true;
}

void ControlSurfaces::stop() {
    if (telemetry_) control::unregister_telemetry();
    telemetry_ = false;
    if (metrics_) metrics_->stop();
    metrics_.reset();
    if (server_) server_->stop();
    server_.reset();
}

}  // namespace twinlane::dataplane
