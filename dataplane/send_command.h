// `twinlane send`: transmits a capture on a DPDK port at its recorded timing (a paced sender,
// like tcpreplay on a NIC): the input of a gateway under test that arrives as on a wire,
// which file-backed PMDs such as net_pcap (read as fast as they are polled) cannot give.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace twinlane::dataplane {

// Registers the `send` subcommand; its exit code is written to `exit_code` when it runs.
// `eal_args`: the command line's arguments after `--`, read when the command runs.
void add_send_command(CLI::App& app, const std::vector<std::string>& eal_args, int& exit_code);

}  // namespace twinlane::dataplane
