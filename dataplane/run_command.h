// `twinlane run`: the realtime forwarding job on DPDK ports.
#pragma once

namespace CLI {
class App;
}

namespace twinlane::dataplane {

// Registers the `run` subcommand; its exit code is written to `exit_code` when it runs.
void add_run_command(CLI::App& app, int& exit_code);

}  // namespace twinlane::dataplane
