// `twinlane run -c POLICY`: brings up the realtime pipeline described by a policy file.
//
// Control path, in order: load + validate the policy → EAL (policy PCI devices added as -a) →
// mbuf dynfield → resolve ports by device name (vdevs hot-plugged with rte_dev_probe) → compile the
// policy with their DPDK port ids → one mempool per NUMA socket (sum of the ports' `mempool`) →
// start ports → lane rings per (egress port, class) → schedulers, pacers, classifiers →
// lcore roles (lcore_plan.h) → control surfaces (daemon_control.h: the control socket, the
// metrics endpoint, DPDK telemetry /twinlane/...) → launch; a monitor thread polls link status,
// prints periodic stats and detects end of input → stop → control surfaces stopped → report,
// accounting and mbuf-leak checks.
// Exit codes: 0 ok, 1 accounting mismatch or mbuf leak, 2 setup error (message names the port
// or policy field and the reason; also a control socket or metrics port that cannot be served).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dataplane/pipeline.h"

namespace twinlane::dataplane {

struct PolicyRunOptions {
    std::string policy_path;
    std::vector<std::string> eal_args;
    bool json = false;
    StopMode stop_mode = StopMode::drain;
    uint64_t drain_timeout_ns = 100'000'000;
    uint64_t idle_exit_ns = 0;       // 0: never; set by the caller ("auto": 200 ms for pcap input)
    bool idle_exit_auto = true;      // idle_exit_ns applies only if every input is net_pcap
    uint64_t duration_ns = 0;        // 0: until signalled / idle
    uint64_t stats_interval_ns = 0;  // 0: no periodic stats
    uint32_t lane_ring_slots = 1024;
    bool control = true;                        // serve the control socket
    std::optional<std::string> control_socket;  // instead of the policy's control.socket
    std::optional<uint16_t> metrics_port;       // instead of the policy's metrics.port; 0: off
    bool explicit_log_level = false;  // --log-level was given: the policy's log_level is ignored
};

int run_with_policy(const PolicyRunOptions& options);

}  // namespace twinlane::dataplane
