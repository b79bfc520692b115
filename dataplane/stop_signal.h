// Process-wide stop request, set from SIGINT/SIGTERM handlers and polled by lcore loops
// between bursts. A signal handler can only reach global state, hence the one global here.
#pragma once

#include <atomic>

namespace twinlane::dataplane {

// Installs SIGINT/SIGTERM handlers that set the stop flag (idempotent).
void install_stop_handlers();
bool stop_requested();
void request_stop();

}  // namespace twinlane::dataplane
