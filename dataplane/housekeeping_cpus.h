// Where the daemon's own threads run: the monitor, the policy reloader, the control and
// metrics servers and the rate sampler wake every few milliseconds, and a thread started by
// the main thread inherits its CPUs, which EAL has pinned to the main lcore's: there each
// wake-up would preempt the forwarding loop, and every packet in flight waits for it. Like
// DPDK's own control threads, they run on the CPUs the process may use that no lcore does,
// else on the main lcore's. Control path.
#pragma once

#include <sched.h>

#include <string>

namespace twinlane::dataplane {

// The CPUs of `process` (the process's affinity before EAL pinned the main thread) that no
// enabled lcore uses; the main lcore's CPUs if every one is taken. After EAL init.
cpu_set_t housekeeping_cpus(const cpu_set_t& process);

// Moves the calling thread to `cpus`: every thread it starts afterwards runs there too.
// False with `error` if the kernel refuses.
bool move_calling_thread(const cpu_set_t& cpus, std::string& error);

// The calling thread back on the main lcore's CPUs, before it forwards as that lcore.
void pin_to_main_lcore();

// "0,2-3".
std::string cpu_list(const cpu_set_t& cpus);

}  // namespace twinlane::dataplane
