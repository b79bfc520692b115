// `twinlane check FILE...` (or `-c FILE`): validate policy files without touching any NIC.
//
// Prints "OK: <file>: N ports, N classes, N rules" to `out`, or every problem on its own line
// ("file:line:col: key.path: reason") to `err`. run_check() returns the exit code (0 valid,
// 1 invalid). add_check_command() registers the subcommand on a CLI11 app; it checks every
// file given and, when one is invalid, throws CLI::RuntimeError(1), so the binary's usual
// `catch (const CLI::ParseError& e) { return app.exit(e); }` returns 1 without printing more.
// The streams must outlive the app. Not thread-safe (writes to the given streams).
#pragma once

#include <CLI/CLI.hpp>
#include <iostream>
#include <string>

namespace twinlane::conf {

int run_check(const std::string& policy_path, std::ostream& out, std::ostream& err);

CLI::App* add_check_command(CLI::App& app, std::ostream& out = std::cout,
                            std::ostream& err = std::cerr);

}  // namespace twinlane::conf
