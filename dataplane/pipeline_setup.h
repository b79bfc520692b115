// The pipeline a `twinlane run` owns, and its construction from a compiled policy, step by
// step (the Daemon, daemon.h, calls them in order): mbuf pools per NUMA socket, ports started,
// per egress port its scheduler, pacer and lane rings, per lcore its RX tasks, egress tasks and
// classifier. Everything is allocated here, before launch; the lcores (pipeline.h) allocate
// nothing. Control path only; each step returns false with `error` naming the port or policy
// field.
#pragma once

#include <rte_mempool.h>
#include <rte_ring.h>

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "classifier/held_flows.h"
#include "conf/compile.h"
#include "conf/policy.h"
#include "dataplane/daemon_control.h"
#include "dataplane/lcore_plan.h"
#include "dataplane/pipeline.h"
#include "dataplane/port.h"

namespace twinlane::dataplane {

struct RingDeleter {
    void operator()(rte_ring* r) const { rte_ring_free(r); }
};
// A capture file as the pool holds it: its frames, and their mbufs (chains of data rooms).
struct CaptureSize {
    std::string path;
    uint64_t frames = 0;
    uint64_t mbufs = 0;
    // Each frame's length on its wire, when the capture cut some (a snap length): the PMD
    // hands over only what was captured. Empty when every frame is whole.
    std::vector<uint32_t> wire_lengths;
};

struct PoolDeleter {
    void operator()(rte_mempool* p) const { rte_mempool_free(p); }
};

// Everything a run owns; destroyed in reverse order of construction after the lcores stop.
struct Pipeline {
    std::shared_ptr<const conf::Policy> policy;
    conf::CompiledPolicy compiled;
    std::vector<uint16_t> dpdk_ports;              // by policy port index
    std::vector<std::optional<size_t>> egress_of;  // policy port -> index into egress
    std::map<int, std::unique_ptr<rte_mempool, PoolDeleter>> pools;  // by socket
    std::vector<std::unique_ptr<rte_ring, RingDeleter>> rings;
    // The SLO governors' downgraded flows, which the RX lcores' classifiers make no elephants
    // of (classifier/held_flows.h); before egress and lcores, which point into it.
    std::unique_ptr<classifier::HeldFlows> held_flows = std::make_unique<classifier::HeldFlows>();
    std::vector<std::unique_ptr<EgressTask>> egress;  // same order as compiled.egress
    std::vector<std::unique_ptr<LcoreContext>> lcores;
    std::vector<uint16_t> started_ports;
    PipelineShared shared;
    // `--pace-input`: every RX port's frames are handed over at their capture timing,
    // serialised at this rate (paced_input.h); 0: as fast as they are read.
    uint64_t pace_input_bps = 0;
    // A jump of a paced capture's clock longer than this waits only this long (0: any).
    uint64_t pace_max_gap_ns = 0;
    // `--preload-input`: each paced input's capture is read into mbufs before the run; by
    // policy port, per RX queue (its `rx_pcap` file), what that takes (size_preloaded_inputs).
    bool preload_input = false;
    std::vector<std::vector<CaptureSize>> input_captures;
    // The preloaded inputs' shared clock: when the first of them was polled (0: not yet).
    std::atomic<uint64_t> paced_origin_tsc{0};
    int rx_timestamp_offset = -1;
    uint64_t rx_timestamp_flag = 0;

    ~Pipeline() {
        for (uint16_t port : started_ports)
            stop_port(port);
    }
};

// `--preload-input`: the frames and mbufs of every forwarding port's capture files, read from
// them before the pools are sized; refused (with `error`) for an input that is not a regular
// capture file of a pcap device.
bool size_preloaded_inputs(Pipeline& p, std::string& error);
// One pool per NUMA socket of the ports: the sum of its ports' `mempool` (conf/mbuf_demand.h)
// and of what the lane rings into its egress ports can hold (`ring_slots` frames each) where an
// RX lcore hands packets to another lcore's scheduler.
bool create_pools(Pipeline& p, const LcorePlan& plan, uint32_t ring_slots, std::string& error);
bool start_ports(Pipeline& p, std::string& error);
// Per egress port: scheduler, leaf map, pacer, lane rings (`ring_slots` each).
bool build_egress(Pipeline& p, const LcorePlan& plan, uint32_t ring_slots, std::string& error);
// Per lcore of `plan`: its RX tasks (with a classifier) and egress tasks.
bool build_lcores(Pipeline& p, const LcorePlan& plan, std::string& error);
// Priority flow control (pfc_port.h), after build_lcores: software ports' generators, receivers
// and frame rings, RX tasks' tags; `pfc: nic` ports handed to the NIC (refused where its PMD
// cannot).
bool build_pfc(Pipeline& p, std::string& error);
// `--preload-input`, last: each paced RX task reads its queue to the end (PacedInput::preload),
// and the captures share one clock from the earliest first frame among them (PacedInput::align).
bool preload_inputs(Pipeline& p, std::string& error);

// mbufs out of the pools now (the leak check compares start and end).
uint64_t pools_in_use(const Pipeline& p);
// At shutdown: frees frames waiting in RX queues that no lcore polls.
void drain_unpolled_rx(const Pipeline& p);
std::vector<const LcoreCounters*> counter_blocks(const Pipeline& p);
// "lcore 1: rx west/0 sched east", for the log and the report.
std::string describe_role(const Pipeline& p, const LcoreContext& ctx);
std::vector<DaemonLcore> daemon_roles(const Pipeline& p);
bool driver_is(uint16_t port, const char* driver);
bool every_input_is_pcap(const Pipeline& p);

}  // namespace twinlane::dataplane
