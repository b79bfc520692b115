// What the kernel says of one lcore's CPU while it forwards: how long its thread was runnable
// but waiting for the CPU (taken by other threads: kernel workers, IRQ threads, other
// processes) and how often it was preempted. A poll-mode lcore should see neither; when it
// does, every packet in flight waits that long (isolcpus, nohz_full and IRQ affinity are the
// cure). Read from /proc by the thread that reports, never by the lcore in its loop: the lcore
// only records its thread id and a baseline once, before the loop. Control path.
#pragma once

#include <sys/types.h>

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string_view>

#include "sched/relaxed_counter.h"

namespace twinlane::dataplane {

struct ThreadCpu {
    uint64_t run_ns = 0;                // on the CPU
    uint64_t runqueue_wait_ns = 0;      // runnable, waiting for the CPU
    uint64_t involuntary_switches = 0;  // preempted
};

// The text of /proc/.../schedstat ("run_ns wait_ns timeslices") and of /proc/.../status
// (its nonvoluntary_ctxt_switches line); nullopt if either lacks its numbers.
std::optional<ThreadCpu> parse_thread_cpu(std::string_view schedstat, std::string_view status);

// Thread `tid` of this process; nullopt if /proc cannot say (no such thread, or a kernel
// without CONFIG_SCHED_INFO).
std::optional<ThreadCpu> read_thread_cpu(pid_t tid);

// Written once by the lcore before its loop (publish_loop_thread), read by any thread.
struct LoopThread {
    sched::RelaxedCounter tid;  // 0 until published
    sched::RelaxedCounter run_ns_at_start, runqueue_wait_ns_at_start, involuntary_at_start;
};

// On the lcore, before its loop: its thread id and its CPU times so far.
void publish_loop_thread(LoopThread& thread);

// Since the loop started: nullopt before it started or if /proc cannot say.
std::optional<ThreadCpu> loop_thread_cpu(const LoopThread& thread);

// Its fields in an lcore's JSON (the run report's `loops`, `status`'s `lcores`): run_ns,
// runqueue_wait_ns, involuntary_switches.
void add_thread_cpu(nlohmann::json& lcore, const ThreadCpu& cpu);

}  // namespace twinlane::dataplane
