// The `twinlane` binary: one entry point whose subcommands are the product's jobs.
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <new>

#include "conf/check_command.h"
#include "dataplane/replay_command.h"
#include "dataplane/run_command.h"
#include "dataplane/send_command.h"
#include "dataplane/version.h"
#include "replay/gen_command.h"

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
    app.parse_complete_callback(
        [&log_level]() { spdlog::set_level(spdlog::level::from_str(log_level)); });

    int exit_code = 0;
    app.add_subcommand("version", "Print the version")->callback([]() {
        std::printf("twinlane %s\n", twinlane::kVersion);
    });
    twinlane::dataplane::add_run_command(app, exit_code);
    twinlane::conf::add_check_command(app);
    twinlane::replay::add_gen_command(app);
    twinlane::dataplane::add_replay_command(app, exit_code);
    twinlane::dataplane::add_send_command(app, exit_code);

    // Memory is sized from the policy and checked against the machine where it is known up
    // front (flow tables, scheduler pools); whatever still fails to allocate ends with an error
    // line and exit 2, not an abort.
    try {
        CLI11_PARSE(app, argc, argv);
    } catch (const std::bad_alloc&) {
        spdlog::critical("out of memory (a policy sized beyond this machine?)");
        return 2;
    }
    return exit_code;
}
