// The `twinlane` binary: one entry point whose subcommands are the product's jobs.
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <new>
#include <string>
#include <vector>

#include "conf/check_command.h"
#include "dataplane/replay_command.h"
#include "dataplane/run_command.h"
#include "dataplane/send_command.h"
#include "dataplane/version.h"
#include "replay/gen_command.h"

namespace {

// Everything after the first `--` is DPDK's EAL arguments (of `run` and `send`); CLI11 is handed
// only what comes before. Left to CLI11, an option mistyped before `--` took its value as the
// first EAL argument and the real ones were reported "not expected", the mistyped one unnamed.
int split_at_eal_separator(int argc, char** argv, std::vector<std::string>& eal_args) {
    for (int i = 1; i < argc; ++i) {
        if (std::string(argv[i]) != "--") continue;
        eal_args.assign(argv + i + 1, argv + argc);
        return i;
    }
    return argc;
}

}  // namespace

int main(int argc, char** argv) {
    // One event per line on stderr, without colour: friendly to journald and to log files.
    auto logger = spdlog::stderr_logger_mt("twinlane");
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %l %v");
    spdlog::set_default_logger(logger);

    CLI::App app{
        "twinlane: a DPDK traffic scheduler that keeps AI inference fast while "
        "training saturates the link"};
    app.require_subcommand(1);
    std::string log_level = "info";
    app.add_option("--log-level", log_level, "trace, debug, info, warn, error, critical, off")
        ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}))
        ->capture_default_str();
    std::vector<std::string> eal_args;
    const int cli_argc = split_at_eal_separator(argc, argv, eal_args);
    const bool eal_separator = cli_argc < argc;
    app.parse_complete_callback([&]() {
        spdlog::set_level(spdlog::level::from_str(log_level));
        if (eal_separator && !app.got_subcommand("run") && !app.got_subcommand("send"))
            throw CLI::ExtrasError(
                "arguments after -- are DPDK EAL arguments, which only run and send take",
                static_cast<int>(CLI::ExitCodes::ExtrasError));
    });

    int exit_code = 0;
    app.add_subcommand("version", "Print the version")->callback([]() {
        std::printf("twinlane %s\n", twinlane::kVersion);
    });
    twinlane::dataplane::add_run_command(app, eal_args, exit_code);
    twinlane::conf::add_check_command(app);
    twinlane::replay::add_gen_command(app);
    twinlane::dataplane::add_replay_command(app, exit_code);
    twinlane::dataplane::add_send_command(app, eal_args, exit_code);

    // Memory is sized from the policy and checked against the machine where it is known up
    // front (flow tables, scheduler pools); whatever still fails to allocate ends with an error
    // line and exit 2, not an abort.
    try {
        CLI11_PARSE(app, cli_argc, argv);
    } catch (const std::bad_alloc&) {
        spdlog::critical("out of memory (a policy sized beyond this machine?)");
        return 2;
    }
    return exit_code;
}
