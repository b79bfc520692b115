// The run's monitor thread, off the hot path: link status changes (logged), periodic stats,
// the SLO governors' events (logged, with their reasons), the first frames dropped for their
// size (logged once, with the egress ports' largest frames), end of input (every input idle with
// nothing queued and no paced frame still to arrive) and the duration limit, both of which request
// the stop. Reads the lcores' counters with relaxed loads while they run. Lives from just before
// the lcores launch until they have returned.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "dataplane/daemon_options.h"
#include "dataplane/pipeline_setup.h"

namespace twinlane::dataplane {

class Monitor {
  public:
    Monitor(const Pipeline& p, const DaemonOptions& options, bool idle_exit)
        : pipeline_(p), options_(options), idle_exit_(idle_exit), thread_([this] { run(); }) {}
    ~Monitor();

  private:
    using Clock = std::chrono::steady_clock;

    void run();
    void poll_links(std::vector<int>& link_up);
    void log_slo_events();
    void warn_oversize(const CounterSnapshot& s);
    bool paced_frames_waiting() const;

    const Pipeline& pipeline_;
    const DaemonOptions& options_;
    const bool idle_exit_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool done_ = false;
    std::vector<uint64_t> slo_events_dropped_;  // per egress task, as logged so far
    bool oversize_warned_ = false;
    std::thread thread_;  // last: starts after the fields above exist
};

}  // namespace twinlane::dataplane
