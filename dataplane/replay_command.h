// `twinlane replay`: a pcap through the real classifier and scheduler in virtual time, with
// FIFO and DPDK rte_sched baselines side by side.
#pragma once

namespace CLI {
class App;
}

namespace twinlane::dataplane {

void add_replay_command(CLI::App& app, int& exit_code);

}  // namespace twinlane::dataplane
