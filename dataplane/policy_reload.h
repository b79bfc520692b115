// Reloading the policy file as operators expect of a daemon: on SIGHUP (`systemctl reload`) and,
// with --watch-policy, whenever the file changes on disk (an editor's write-and-rename, a config
// manager's copy, the atomic `..data` symlink swap of a Kubernetes ConfigMap volume: the
// directory that holds the path is watched with inotify, and the file is applied when what it
// resolves to has new contents). A reload is `policy load` of the file: validated, applied
// hitlessly through DaemonControl, or refused with every reason logged and the running policy
// kept. Attempts and failures are counted (status, metrics).
//
// One thread, started by Daemon::serve with the lcores and stopped after them; it never touches
// the hot path. The SIGHUP handler only sets a flag (stop_signal.h's pattern).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "control/service_thread.h"
#include "dataplane/daemon_control.h"

namespace twinlane::dataplane {

// Installs the SIGHUP handler (idempotent): SIGHUP no longer ends the process.
void install_reload_handler();

class PolicyReloader {
  public:
    PolicyReloader(DaemonControl& control, std::string policy_path, bool watch);
    ~PolicyReloader();
    PolicyReloader(const PolicyReloader&) = delete;
    PolicyReloader& operator=(const PolicyReloader&) = delete;

  private:
    void run(int wake_fd);
    void reload(const char* why);
    std::string fingerprint() const;  // what the path resolves to, and its contents' hash

    DaemonControl& control_;
    const std::string path_;
    const bool watch_;
    int inotify_fd_ = -1;
    std::string applied_;            // fingerprint of the file last loaded
    control::ServiceThread thread_;  // last: starts after the fields above exist
};

}  // namespace twinlane::dataplane
