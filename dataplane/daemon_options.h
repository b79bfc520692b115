// What `twinlane run -c POLICY` is asked to do (run_command.cc fills it from the command line).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dataplane/pipeline.h"

namespace twinlane::dataplane {

struct DaemonOptions {
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
    uint64_t pace_input_bps = 0;  // --pace-input: RX frames handed over at their capture timing
    bool preload_input = false;   // --preload-input: the paced captures read before the run
    uint64_t pace_max_gap_ns = 1'000'000'000;   // --pace-max-gap: longer clock jumps cut to it
    bool control = true;                        // serve the control socket
    std::optional<std::string> control_socket;  // instead of the policy's control.socket
    std::optional<uint16_t> metrics_port;       // instead of the policy's metrics.port; 0: off
    bool explicit_log_level = false;  // --log-level was given: the policy's log_level is ignored
    bool watch_policy = false;        // reload the policy file when it changes (and on SIGHUP)
};

}  // namespace twinlane::dataplane
