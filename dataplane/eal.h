// EAL lifetime: initialise DPDK's Environment Abstraction Layer from an argument list and
// clean it up when the owner goes out of scope. One per process; not thread-safe.
#pragma once

#include <sched.h>

#include <string>
#include <vector>

namespace twinlane::dataplane {

class Eal {
  public:
    // `args` are the EAL arguments as given after `--` on the command line; the program name
    // is prepended here. On failure, `ok()` is false and `error()` says why.
    explicit Eal(const std::vector<std::string>& args);
    ~Eal();
    Eal(const Eal&) = delete;
    Eal& operator=(const Eal&) = delete;

    bool ok() const { return ok_; }
    const std::string& error() const { return error_; }
    // The CPUs the process could use before EAL pinned this thread to the main lcore's.
    const cpu_set_t& process_cpus() const { return process_cpus_; }

  private:
    bool ok_ = false;
    cpu_set_t process_cpus_{};
    std::string error_;
};

}  // namespace twinlane::dataplane
