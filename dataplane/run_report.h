// Final statistics of a policy run: a human table or one JSON object with totals, drops by
// cause, per-port and per-class counters, the classifiers' counters (malformed by reason), lcore
// roles and the time of their busy loop passes, cycles per packet per stage, and the mbuf pools'
// in-use counts at start and end. Control path; not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "classifier/classifier.h"
#include "dataplane/pipeline_counters.h"

namespace twinlane::dataplane {

// What the NIC (PMD) counted itself, from rte_eth_stats at the end of the run: packets lost
// before rte_eth_rx_burst handed them to twinlane (so outside rx = tx + dropped + queued), and
// TX errors inside the PMD. `known`: the PMD answered.
struct NicCounters {
    bool known = false;
    uint64_t rx_missed = 0;  // imissed: the RX ring was full (twinlane did not poll fast enough)
    uint64_t rx_errors = 0;  // ierrors: bad frames, or frames the PMD could not store
    uint64_t rx_nombuf = 0;  // no mbuf for a received frame (pool too small)
    uint64_t tx_errors = 0;  // oerrors
};

struct RunReport {
    std::vector<std::string> port_names;  // policy names, by policy port index
    std::vector<std::string> port_devices;
    std::vector<NicCounters> port_nic;     // by policy port index
    std::vector<std::string> class_names;  // by class id
    struct Lcore {
        uint32_t id = 0;
        std::string role;   // e.g. "lcore 1: rx west/0; sched east"
        LoopSnapshot loop;  // its busy passes
    };
    std::vector<Lcore> lcores;
    CounterSnapshot counters;
    classifier::ClassifierCounters classifier;  // the RX lcores' classifiers summed
    uint64_t queued = 0;  // still inside the pipeline after shutdown (0 when it completed)
    double elapsed_s = 0;
    uint64_t tsc_hz = 1;
    uint64_t mbufs_in_use_start = 0;
    uint64_t mbufs_in_use_end = 0;
    // Mbufs DPDK 22.11's af_xdp PMD may keep at close (fill ring and unreaped TX completions,
    // not returned to the pool); the leak check allows at most this many more at exit.
    uint64_t mbufs_held_by_af_xdp = 0;
};

void print_report(const RunReport& report, bool json);

}  // namespace twinlane::dataplane
