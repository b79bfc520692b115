// The Daemon: one `twinlane run -c POLICY`, from policy file to exit code, in three steps.
//
//   open()    load + validate the policy → EAL (policy PCI devices added as -a) → mbuf dynfield
//             → ports resolved by device name (vdevs hot-plugged, device_probe.h) → policy
//             compiled with their DPDK port ids → lcore roles (lcore_plan.h) → the pipeline
//             (pipeline_setup.h: pools, ports started, schedulers, lane rings, classifiers) →
//             control surfaces (control_surfaces.h: socket, metrics, DPDK telemetry)
//   serve()   launch the lcores (pipeline.h runs on each) with the monitor beside them
//             (run_monitor.h: links, periodic stats, end of input, duration) until a stop is
//             requested (SIGINT/SIGTERM, end of input, --duration); lcores drain and return;
//             control surfaces stop
//   report()  NIC and pipeline counters, the report (run_report.h), accounting (rx = tx +
//             dropped + queued) and mbuf-leak checks → the exit code
//
// Exit codes: 0 ok, 1 accounting mismatch or mbuf leak, 2 set-up error (the message names the
// port or policy field and the reason; also a control socket or metrics port that cannot be
// served). Members are destroyed in reverse order: control surfaces, the pipeline (ports
// stopped, pools and rings freed), then the EAL.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dataplane/control_surfaces.h"
#include "dataplane/daemon_options.h"
#include "dataplane/eal.h"
#include "dataplane/lcore_plan.h"
#include "dataplane/pipeline_setup.h"

namespace twinlane::dataplane {

class Daemon {
  public:
    // Nullptr after logging why, when the run cannot start (exit code 2).
    static std::unique_ptr<Daemon> open(const DaemonOptions& options);
    void serve();
    int report();

  private:
    explicit Daemon(const DaemonOptions& options) : options_(options) {}
    bool start_eal(std::shared_ptr<const conf::Policy> policy);
    bool resolve_and_compile();
    std::optional<LcorePlan> plan_roles() const;
    bool build(const LcorePlan& plan);
    void launch_and_wait();

    const DaemonOptions options_;
    std::unique_ptr<Eal> eal_;
    std::unique_ptr<Pipeline> pipeline_;  // after the EAL: freed before rte_eal_cleanup()
    ControlSurfaces surfaces_;
    std::vector<std::string> roles_;
    uint64_t mbufs_at_start_ = 0;
    uint64_t mbufs_held_by_af_xdp_ = 0;
    double served_s_ = 0;
};

// open(), serve(), report(): the exit code of `twinlane run -c`.
int run_daemon(const DaemonOptions& options);

}  // namespace twinlane::dataplane
