// The daemon's control surfaces around the running pipeline: the DaemonApi (DaemonControl),
// the control socket, the Prometheus endpoint and the DPDK telemetry commands. Started before
// the lcores launch, stopped after they return (before the pipeline they read is torn down).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "control/control_server.h"
#include "dataplane/daemon_control.h"
#include "dataplane/daemon_options.h"
#include "dataplane/pipeline_setup.h"

namespace twinlane::control {
class MetricsServer;
}

namespace twinlane::dataplane {

class ControlSurfaces {
  public:
    ControlSurfaces();
    ~ControlSurfaces();

    // False with `error` when a surface cannot be served (socket in use, port taken).
    bool start(const Pipeline& p, const DaemonOptions& options,
               const std::vector<DaemonLcore>& roles, std::string& error);
    // After the lcores have returned; idempotent.
    void stop();
    DaemonControl* api() { return api_.get(); }

  private:
    std::unique_ptr<DaemonControl> api_;
    std::unique_ptr<control::ControlServer> server_;
    std::unique_ptr<control::MetricsServer> metrics_;
    bool telemetry_ = false;
};

}  // namespace twinlane::dataplane
