// Counters of the realtime pipeline, and the reasons it drops packets.
//
// Each lcore owns one LcoreCounters block and is its only writer; it publishes once per burst
// (a relaxed load + store per counter: on x86 a plain mov, no locked instruction). Any other
// thread (the monitor, a control server) may read them at any time with relaxed loads: each
// 64-bit value is read whole, and a snapshot across counters is consistent only once the
// pipeline has stopped. Totals are sums over lcores (snapshot()).
//
// RX->TX latency is also counted per lane in slo::LatencyHistogram's log-linear buckets (each
// value placed within 6.25% of itself), so a reader can give percentiles; the lcore publishes a
// burst's latencies once per run of equal (lane, bucket), like the other counters.
//
// Conservation, checked at exit: rx = tx + sum(drops) + queued, where queued is what is still
// in lane rings, schedulers and NIC-refused holds (0 after a completed shutdown).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <vector>

#include "admission/lanes.h"
#include "conf/policy.h"
#include "dataplane/thread_cpu.h"
#include "sched/counters.h"
#include "sched/relaxed_counter.h"
#include "slo/latency_histogram.h"

namespace twinlane::dataplane {

using admission::kMaxLanes;
using sched::RelaxedCounter;
inline constexpr uint32_t kMaxPolicyPorts = conf::kMaxPorts;
// The project's one latency bucket layout (slo/latency_histogram.h), counted in RelaxedCounters
// here because a reader loads them while the owning lcore writes.
using LatencyLayout = slo::LatencyHistogram;
inline constexpr uint32_t kLatencyBuckets = LatencyLayout::kBuckets;
using LatencyBuckets = std::array<RelaxedCounter, kLatencyBuckets>;
// The quantiles the run report and the daemon's stats give, parts per million.
inline constexpr uint32_t kP50Ppm = 500'000, kP99Ppm = 990'000, kP999Ppm = 999'000;

enum class DropCause : uint8_t {
    malformed,       // classifier verdict `drop` (malformed packet, policy says drop)
    lane_ring_full,  // the (egress, class) ring between RX and scheduler lcore was full
    sched_queue_full_packets,
    sched_queue_full_bytes,
    sched_pool_exhausted,
    sched_red_early,
    sched_codel,
    sched_unknown_leaf,
    sched_oversize,
    shutdown_lane_ring,    // still in a lane ring when the pipeline stopped
    shutdown_scheduler,    // still queued in a scheduler when the pipeline stopped
    shutdown_nic_refused,  // refused by the NIC and still held when the pipeline stopped
    sched_fq_overflow,
    mac_control,        // a MAC control frame (PFC, PAUSE): consumed, never forwarded
    lossless_overflow,  // a lossless packet met a full leaf: its sender ignored PFC (headroom)
    pfc_storm,          // a lossless priority in a PFC storm (watchdog action drop)
};
inline constexpr uint32_t kDropCauseCount = 16;
const char* to_string(DropCause cause);
DropCause from_sched(sched::DropReason reason);

struct PortCounters {
    RelaxedCounter rx_packets, rx_bytes;
    RelaxedCounter tx_packets, tx_bytes;
    RelaxedCounter tx_refused;  // packets the NIC refused at least once (held, re-offered)
    // Time the port's rate held back packets queued in its tree: from each loop pass that ended
    // with the pacer's allowance spent and packets left to the next (the link set the pace).
    RelaxedCounter tx_link_bound_ns;
};

struct LaneCounters {  // per class
    RelaxedCounter rx_packets, rx_bytes;
    RelaxedCounter tx_packets, tx_bytes;
    RelaxedCounter dropped;
    RelaxedCounter latency_sum_ns;  // RX burst -> accepted by tx_burst
    RelaxedCounter latency_max_ns;
};  // the latency distribution is LcoreCounters::lane_latency (kept apart: 4.9 KB per lane)

// Priority flow control on one port, per priority. in/out: bytes of lossless packets from this
// port (as ingress) entering and leaving twinlane, each lcore its share (occupancy: the sum of
// in less the sum of out over lcores). The others belong to the lcore transmitting on the port.
struct PfcCounters {
    std::array<RelaxedCounter, 8> in_bytes, out_bytes;
    std::array<RelaxedCounter, 8> tx_frames;    // pause frames sent (XOFF, refresh, XON)
    std::array<RelaxedCounter, 8> tx_pause_ns;  // time the peer was asked to hold its sending
    std::array<RelaxedCounter, 8> rx_frames;    // pause frames received
    std::array<RelaxedCounter, 8> rx_pause_ns;  // time this port's priority was held
    std::array<RelaxedCounter, 8> storms;       // watchdog storm detections
};

// TSC cycles spent in each stage, and the packets they handled (cycles per packet = ratio).
struct StageCounters {
    RelaxedCounter rx_classify_cycles, rx_classify_packets;
    RelaxedCounter sched_enqueue_cycles, sched_enqueue_packets;
    RelaxedCounter sched_dequeue_tx_cycles, sched_dequeue_tx_packets;
};

// One lcore's loop: its busy passes (those that received, admitted or sent a packet), timed
// from the pass's first TSC read to its last. A packet that arrives while a pass runs waits for
// the rest of it, so this is the loop's own share of the RX->TX latency (burst sizes, slow
// driver calls, time slices lost to other threads of the CPU: `thread` says how much).
// `poll_gap_max_ns` is the longest time from one pass's start to the next's, idle passes
// included: the longest the lcore's inputs (RX queues, lane rings) went unpolled. A stall in an
// idle pass (a preemption, an interrupt, the hypervisor) shows only there, and a packet that
// waits in an RX ring for it is not in the RX->TX latency (stamped when the PMD returns it).
struct LoopCounters {
    RelaxedCounter busy_passes;
    RelaxedCounter busy_pass_sum_ns;
    RelaxedCounter busy_pass_max_ns;
    LatencyBuckets busy_pass_ns;
    RelaxedCounter poll_gap_max_ns;
    LoopThread thread;
};

struct alignas(64) LcoreCounters {
    std::array<PortCounters, kMaxPolicyPorts> ports;
    std::array<LaneCounters, kMaxLanes> lanes;
    std::array<RelaxedCounter, kDropCauseCount> drops;
    StageCounters stages;
    std::array<PfcCounters, kMaxPolicyPorts> pfc;
    std::array<LatencyBuckets, kMaxLanes> lane_latency;  // RX->TX, as latency_sum_ns
    LoopCounters loop;
};

// The value at `quantile_ppm` of a histogram in LatencyLayout's buckets, by nearest rank, as
// the upper bound of its bucket (at most 6.25% above the exact value) but never above `max_ns`.
// 0 when the histogram is empty.
uint64_t bucket_percentile_ns(const std::array<uint64_t, kLatencyBuckets>& buckets, uint64_t max_ns,
                              uint32_t quantile_ppm);

// A histogram in LatencyLayout's buckets folded into the scheduler's log2 layout (bucket i:
// [2^(i-1), 2^i) ns, the last one everything above), exact because a log-linear bucket never
// straddles a power of two. The layout the metrics export every latency histogram in.
using Log2Histogram = std::array<uint64_t, sched::kSojournHistogramBuckets>;
Log2Histogram log2_histogram(const std::array<uint64_t, kLatencyBuckets>& buckets);

// One lcore's LoopCounters, read.
struct LoopSnapshot {
    uint64_t busy_passes = 0;
    uint64_t sum_ns = 0;
    uint64_t max_ns = 0;
    std::array<uint64_t, kLatencyBuckets> buckets{};
    uint64_t poll_gap_max_ns = 0;
    std::optional<ThreadCpu> cpu;  // since the loop started; nullopt where /proc cannot say

    uint64_t percentile_ns(uint32_t quantile_ppm) const {
        return bucket_percentile_ns(buckets, max_ns, quantile_ppm);
    }
};
LoopSnapshot loop_snapshot(const LcoreCounters& lcore);

// Plain totals read from a set of LcoreCounters.
struct CounterSnapshot {
    struct Port {
        uint64_t rx_packets = 0, rx_bytes = 0, tx_packets = 0, tx_bytes = 0, tx_refused = 0;
        uint64_t tx_link_bound_ns = 0;
    };
    struct Lane {
        uint64_t rx_packets = 0, rx_bytes = 0, tx_packets = 0, tx_bytes = 0, dropped = 0;
        uint64_t latency_sum_ns = 0, latency_max_ns = 0;
        std::array<uint64_t, kLatencyBuckets> latency_buckets{};  // summed over lcores

        uint64_t latency_mean_ns() const;
        // The RX->TX latency at `quantile_ppm` (parts per million) by nearest rank over the
        // buckets, as the upper bound of its bucket (at most 6.25% above the exact value) but
        // never above latency_max_ns. 0 when no packet was sent.
        uint64_t latency_percentile_ns(uint32_t quantile_ppm) const;
    };
    struct Pfc {
        std::array<uint64_t, 8> tx_frames{}, tx_pause_ns{}, rx_frames{}, rx_pause_ns{}, storms{};
        std::array<uint64_t, 8> queued_bytes{};  // lossless bytes of the port inside twinlane
    };
    std::vector<Port> ports;
    std::vector<Lane> lanes;
    std::vector<Pfc> pfc;  // by port
    std::array<uint64_t, kDropCauseCount> drops{};
    std::array<uint64_t, 6> stages{};  // StageCounters in declaration order

    uint64_t rx_packets() const;
    uint64_t rx_bytes() const;
    uint64_t tx_packets() const;
    uint64_t tx_bytes() const;
    uint64_t dropped() const;
};

CounterSnapshot snapshot(const std::vector<const LcoreCounters*>& lcores, uint32_t port_count,
                         uint32_t lane_count);
// Ports and drop causes only, what rx_packets/tx_packets/dropped read (lanes, PFC and stages
// left empty): the monitor's check every 10 ms, which leaves the lanes' latency histograms
// (4.9 KB per lane and lcore, written per packet) in the lcores' caches.
CounterSnapshot snapshot_totals(const std::vector<const LcoreCounters*>& lcores,
                                uint32_t port_count);

// Lossless bytes from ingress `port` of `priority` inside twinlane now (PfcCounters).
uint64_t pfc_queued_bytes(const std::vector<const LcoreCounters*>& lcores, uint32_t port,
                          uint32_t priority);

}  // namespace twinlane::dataplane
