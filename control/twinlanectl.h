// twinlanectl: the operator's client for the daemon's control socket (control/protocol.h).
//
//   twinlanectl [-s SOCKET] [-j] [--timeout 5s] COMMAND
//     status | stats [ports|classes|queues] | flows [--top N] | rules list|add RULE|del NAME |
//     class set CLASS KEY VALUE | policy load FILE | policy show [--format yaml|json] |
//     log level [LEVEL] | watch [--interval 1s] [--count N]
//
// Output: human tables on `out` by default, the raw JSON result with --json. Errors on `err`.
// Exit codes: 0 ok, 1 the daemon refused the command (reason and details printed), 2 usage,
// 3 daemon not running at the socket path, 4 other transport failures (timeout, closed, a
// malformed reply).
// The socket defaults to $TWINLANE_SOCKET, else /run/twinlane/twinlane.sock.
// run_twinlanectl() is the whole program, callable in-process (tests); not thread-safe.
#pragma once

#include <ostream>

namespace twinlane::control {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRefused = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitNotRunning = 3;
inline constexpr int kExitTransport = 4;

int run_twinlanectl(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace twinlane::control
