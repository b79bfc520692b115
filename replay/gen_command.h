// `twinlane gen`: the command-line front end of the traffic generator.
//
// Contract: add_gen_command() registers subcommand "gen" on `app`. When the subcommand is
// parsed its callback generates the trace into --output and prints a per-class summary table
// (packets, bytes, offered Gb/s and share of the link) to `out`. Invalid values fail at parse
// time as CLI::ValidationError; I/O failures surface as CLI::RuntimeError (exit code 1), so
// the caller's usual `try { app.parse(...) } catch (const CLI::Error& e) { app.exit(e); }`
// reports both. Options: -o/--output (required), --link-rate (10G, 400M, 25Gbps, bits/s),
// --duration (us, ms, s), --training-load, --inference-load, --other-load, --jobs,
// --flows-per-job, --clients, --seed, --ipv6-fraction.
// Thread-safety: call during single-threaded start-up.
#pragma once

#include <iostream>
#include <string>

#include "replay/traffic_gen.h"

namespace CLI {
class App;
}

namespace twinlane::replay {

void add_gen_command(CLI::App& app, std::ostream& out = std::cout);

// The table printed by `gen`, exposed for reuse and tests.
std::string format_gen_summary(const GenSummary& summary);

}  // namespace twinlane::replay
