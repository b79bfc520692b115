// `twinlane run`: the realtime forwarding job on DPDK ports.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace twinlane::dataplane {

// Registers the `run` subcommand; its exit code is written to `exit_code` when it runs.
// `eal_args`: the command line's arguments after `--`, read when the command runs.
void add_run_command(CLI::App& app, const std::vector<std::string>& eal_args, int& exit_code);

}  // namespace twinlane::dataplane
