// DPDK telemetry commands answered from DaemonApi, for operators who already use
// dpdk-telemetry.py:
//   /twinlane/status          version, uptime, policy source and epoch, log level
//   /twinlane/lcores          per lcore: role, busy loop passes, CPU taken by other threads
//   /twinlane/stats/classes   per class: classified and queue counters (dict per class name)
//   /twinlane/stats/ports     per port: rx/tx packets, bytes, drops, rates
//   /twinlane/stats/slo       per class and egress port: its latency SLO's windows and actions
//   /twinlane/stats/pfc       per port and priority: PFC pauses sent and honoured, storms
//
// rte_telemetry callbacks carry no user pointer, so the API they answer from is kept in one
// process-wide slot: register_telemetry(api) sets it (the API must outlive the process's
// telemetry use, or call unregister_telemetry() first, which makes the commands answer an
// error). Registering twice is harmless (DPDK refuses the duplicate names; the slot is
// updated). Thread-safety: callbacks run on DPDK's telemetry thread; the slot is atomic.
#pragma once

#include <string>

#include "control/daemon_api.h"

namespace twinlane::control {

// Returns "" on success, else why the commands could not be registered.
std::string register_telemetry(DaemonApi& api);
void unregister_telemetry();

}  // namespace twinlane::control
