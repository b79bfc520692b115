// The realtime packet path, top-down: rx_stage, then the scheduler stage (admit_lanes,
// transmit), then the lcore loop and its shutdown. See pipeline.h for the contract.
#include "dataplane/pipeline.h"

#include <rte_cycles.h>
#include <rte_ethdev.h>

#include <algorithm>

#include "admission/classified_burst.h"
#include "admission/scheduler_admission.h"
#include "classifier/dscp_rewrite.h"
#include "dataplane/lane_admission.h"
#include "dataplane/packet_meta.h"
#include "dataplane/stop_signal.h"
#include "sched/ethernet_wire.h"

namespace twinlane::dataplane {
namespace {

using Burst = admission::ClassifiedBurst<kBurst>;

// Per-class TX tallies kept on the stack during one burst and published once at its end. Only
// the policy's lanes are zeroed (a full zero-initialisation was 1.6% of a 64 B run).
struct TxTally {
    explicit TxTally(uint32_t lanes) {
        for (uint32_t l = 0; l < lanes; ++l)
            packets[l] = bytes[l] = latency_sum_ns[l] = latency_max_ns[l] = 0;
    }
    void add(uint8_t lane, uint32_t length_bytes, uint64_t latency_ns) {
        packets[lane] += 1;
        bytes[lane] += length_bytes;
        latency_sum_ns[lane] += latency_ns;
        latency_max_ns[lane] = std::max(latency_max_ns[lane], latency_ns);
        const uint16_t bucket = static_cast<uint16_t>(LatencyLayout::bucket_of(latency_ns));
        if (latency_runs != 0) {
            LatencyRun& last = latency_run[latency_runs - 1];
            if (last.lane == lane && last.bucket == bucket) {
                ++last.packets;
                return;
            }
        }
        latency_run[latency_runs++] = {bucket, lane, 1};
    }
    std::array<uint64_t, kMaxLanes> packets;
    std::array<uint64_t, kMaxLanes> bytes;
    std::array<uint64_t, kMaxLanes> latency_sum_ns;
    std::array<uint64_t, kMaxLanes> latency_max_ns;
    // The burst's latencies as runs of equal (lane, bucket): a burst's packets mostly share
    // both (they were sent at one time; run to completion, they arrived in one RX burst too),
    // so publishing costs one counter update per run rather than per packet.
    struct LatencyRun {
        uint16_t bucket;
        uint8_t lane;
        uint8_t packets;
    };
    std::array<LatencyRun, kBurst> latency_run;
    uint32_t latency_runs = 0;
};
static_assert(kBurst <= UINT8_MAX, "a latency run counts at most one burst in a uint8_t");
static_assert(kLatencyBuckets <= UINT16_MAX + 1, "a latency run names its bucket in a uint16_t");

constexpr uint32_t kMinIpHeaderBytes = 40;  // an IPv6 header; IPv4's is shorter

// The IP header inside the first segment, writable (ECN marking, DSCP rewrite), or nullptr.
uint8_t* l3_in_first_segment(rte_mbuf* m, uint16_t l3_offset) {
    if (rte_pktmbuf_data_len(m) < uint32_t{l3_offset} + kMinIpHeaderBytes &&
        rte_pktmbuf_data_len(m) != rte_pktmbuf_pkt_len(m))
        return nullptr;
    return rte_pktmbuf_mtod_offset(m, uint8_t*, l3_offset);
}

void count_drop(LcoreCounters& c, DropCause cause, uint64_t packets) {
    c.drops[static_cast<uint32_t>(cause)].add(packets);
}

// Why the scheduler dropped a packet, for the pipeline's counters: a lossless packet that met a
// full leaf (its sender ignored PFC, or the headroom is short) has its own reason.
DropCause drop_cause(const sched::DroppedPacket& d) {
    if (admission::user_pfc_tag(d.packet.user) != 0 && sched::is_room_drop(d.reason)) [[unlikely]]
        return DropCause::lossless_overflow;
    return from_sched(d.reason);
}

// Frees packets the scheduler handed back, by reason (`as_shutdown`: all count as shutdown).
void free_drops(const sched::DroppedPacket* drops, uint32_t count, LcoreCounters& c,
                const PfcAccounts& accounts, bool as_shutdown = false) {
    PfcTally out;
    for (uint32_t i = 0; i < count; ++i) {
        const sched::DroppedPacket& d = drops[i];
        count_drop(c, as_shutdown ? DropCause::shutdown_scheduler : drop_cause(d), 1);
        c.lanes[admission::user_lane(d.packet.user)].dropped.add(1);
        out.add(admission::user_pfc_tag(d.packet.user), d.packet.length_bytes);
        rte_pktmbuf_free(static_cast<rte_mbuf*>(d.packet.handle));
    }
    out.publish_out(accounts, c);
}

// The SLO governor's own drops (a downgraded flow's queued packets that do not fit the lower
// class), freed and counted like the scheduler's, by the lcore that owns the tree.
struct GovernorDrops final : slo::DropHandler {
    GovernorDrops(EgressTask& egress, LcoreCounters& counters) : e(egress), c(counters) {}
    void dropped(const sched::DroppedPacket* drops, uint32_t n) override {
        free_drops(drops, n, c, e.pfc_accounts);
    }
    EgressTask& e;
    LcoreCounters& c;
};

// `user_ns` of a scheduler descriptor: the time from RX to its enqueue (a lane ring's wait),
// for the RX->TX latency; kWaitInMeta when it does not fit (TX then reads the mbuf's
// arrival_ns).
constexpr uint32_t kWaitInMeta = UINT32_MAX;

// The RX arrival of a dequeued packet: the scheduler stamped its enqueue time in arrival_ns.
uint64_t rx_arrival_ns(const sched::Packet& p, const PipelineShared& shared) {
    if (p.user_ns == kWaitInMeta) [[unlikely]]
        return packet_meta(static_cast<rte_mbuf*>(p.handle), shared.meta_offset)->arrival_ns;
    return p.arrival_ns - p.user_ns;
}

// What the scheduler admission needs of a packet straight from RX (run to completion): it is
// a position in the burst, its classification the classifier's result.
struct BurstSource {
    using Item = uint8_t;
    rte_mbuf* const* pkts;
    const classifier::Result* results;
    const uint8_t* pfc_tags;
    const PfcAccounts& accounts;
    LcoreCounters& c;
    uint64_t now_ns;
    const uint64_t* arrival_ns;  // by position; nullptr: every packet arrived at now_ns

    const classifier::Result& classified(Item i) const { return results[i]; }
    uint32_t previous_job(Item i) const { return results[i].previous_job; }
    void describe(sched::Packet& p, Item i) const {
        rte_mbuf* m = pkts[i];
        const classifier::Result& r = results[i];
        p.handle = m;
        p.length_bytes = rte_pktmbuf_pkt_len(m);
        // A paced input's frame waited on the modelled wire since its own arrival (the mbuf's
        // metadata is not written here: kWaitInMeta is out of reach, and 4 s more than enough).
        p.user_ns = arrival_ns == nullptr
                        ? 0
                        : static_cast<uint32_t>(std::min<uint64_t>(
                              now_ns - std::min(now_ns, arrival_ns[i]), kWaitInMeta - 1));
        p.l3 = r.ecn_capable ? l3_in_first_segment(m, r.l3_offset) : nullptr;
    }
    uint8_t pfc_tag(Item i) const { return pfc_tags[i]; }
    void dropped(const sched::DroppedPacket* drops, uint32_t n) {
        free_drops(drops, n, c, accounts);
    }
};

// The same for a packet taken from a lane ring: its classification is in the mbuf metadata.
struct RingSource {
    using Item = rte_mbuf*;
    int meta_offset;
    uint64_t now_ns;
    const PfcAccounts& accounts;
    LcoreCounters& c;

    const PacketMeta& classified(Item m) const { return *packet_meta(m, meta_offset); }
    uint32_t previous_job(Item m) const { return dataplane::previous_job(m); }
    void describe(sched::Packet& p, Item m) const {
        const PacketMeta& meta = classified(m);
        p.handle = m;
        p.length_bytes = rte_pktmbuf_pkt_len(m);
        const uint64_t waited = now_ns - std::min(now_ns, meta.arrival_ns);
        p.user_ns = static_cast<uint32_t>(std::min<uint64_t>(waited, kWaitInMeta));
        p.l3 = meta.ecn_capable ? l3_in_first_segment(m, meta.l3_offset) : nullptr;
    }
    uint8_t pfc_tag(Item m) const { return classified(m).pfc_tag; }
    void dropped(const sched::DroppedPacket* drops, uint32_t n) {
        free_drops(drops, n, c, accounts);
    }
};

static_assert(PacketMeta{}.previous_class == classifier::kNoPreviousClass);

// ---- RX stage: receive, classify, stamp and bucket by lane, admit, publish tallies --------

// The classifier reads headers from contiguous bytes: the first segment when it holds them,
// else a copy of the first kHeaderCopyBytes into `linear`.
struct RxHeaders {
    const uint8_t* frames[kBurst];
    uint32_t header_bytes[kBurst];
    uint32_t wire_bytes[kBurst];
    alignas(64) uint8_t linear[kBurst][kHeaderCopyBytes];
};

// Returns the burst's bytes.
uint64_t linearise_headers(rte_mbuf* const* pkts, uint16_t n, RxHeaders& h) {
    uint64_t rx_bytes = 0;
    for (uint16_t i = 0; i < n; ++i) {
        rte_mbuf* m = pkts[i];
        h.wire_bytes[i] = rte_pktmbuf_pkt_len(m);
        rx_bytes += h.wire_bytes[i];
        const uint32_t wanted = std::min(h.wire_bytes[i], kHeaderCopyBytes);
        if (rte_pktmbuf_data_len(m) >= wanted) {
            h.frames[i] = rte_pktmbuf_mtod(m, const uint8_t*);
            h.header_bytes[i] = rte_pktmbuf_data_len(m);
        } else {
            h.frames[i] = static_cast<const uint8_t*>(rte_pktmbuf_read(m, 0, wanted, h.linear[i]));
            h.header_bytes[i] = wanted;
        }
    }
    return rx_bytes;
}

// Per packet, as it is bucketed: the DSCP remark, the PFC tag of a lossless packet (its bytes
// counted in), and, when it crosses a lane ring, the metadata the scheduler lcore reads (run to
// completion the scheduler's descriptor is filled from the result itself, and the mbuf's second
// cache line is not written).
struct Stamp {
    rte_mbuf* const* pkts;
    const RxHeaders& headers;
    const PfcRx& pfc;
    int meta_offset;  // -1: no lane ring on the way
    uint64_t now_ns;
    const uint64_t* arrival_ns;  // by position; nullptr: every packet arrived at now_ns
    uint8_t* pfc_tags;           // by position
    PfcTally& pfc_in;

    void operator()(uint8_t i, const classifier::Result& r, uint8_t lane) const {
        rte_mbuf* m = pkts[i];
        const uint8_t tag = pfc_tag_of(pfc, lane, headers.frames[i], headers.header_bytes[i]);
        pfc_tags[i] = tag;
        pfc_in.add(tag, headers.wire_bytes[i]);
        if (meta_offset >= 0) {
            PacketMeta* meta = packet_meta(m, meta_offset);
            meta->arrival_ns = arrival_ns != nullptr ? arrival_ns[i] : now_ns;
            meta->job_id = r.job_id;
            meta->flow_hash = r.flow_hash;
            meta->l3_offset = r.l3_offset;
            meta->class_id = lane;
            meta->ip_version = r.ip_version;
            meta->ecn_capable = r.ecn_capable ? 1 : 0;
            meta->previous_class = r.previous_class;
            meta->burst_index = i;
            meta->pfc_tag = tag;
            if (r.previous_class != classifier::kNoPreviousClass) [[unlikely]]
                set_previous_job(m, r.previous_job);
        }
        if (classifier::wants_remark(r)) [[unlikely]] {
            if (uint8_t* l3 = l3_in_first_segment(m, r.l3_offset))
                classifier::rewrite_dscp(l3, r.ip_version, r.remark_dscp);
        }
    }
};

// Admits a burst's lanes into the egress port's lane rings (the scheduler lcore follows
// reclassifications from the metadata: lane_admission.h). Full rings drop, counted.
struct RingAdmitter {
    const RxTask& task;
    rte_mbuf* const* pkts;
    const uint8_t* pfc_tags;
    PfcTally& pfc_out;
    uint64_t refused = 0;
    std::array<uint32_t, kMaxLanes> refused_by_lane{};

    void admit(uint8_t lane, const uint8_t* positions, uint32_t n) {
        rte_mbuf* run[kBurst];
        for (uint32_t k = 0; k < n; ++k)
            run[k] = pkts[positions[k]];
        const unsigned queued = rte_ring_enqueue_burst(
            task.lanes[lane], reinterpret_cast<void* const*>(run), n, nullptr);
        if (queued < n) [[unlikely]] {
            for (uint32_t k = queued; k < n; ++k)
                pfc_out.add(pfc_tags[positions[k]], rte_pktmbuf_pkt_len(run[k]));
            rte_pktmbuf_free_bulk(&run[queued], n - queued);
            refused += n - queued;
            refused_by_lane[lane] += n - queued;
        }
    }
    void reclassified(uint8_t, uint8_t) {}
};

// Run to completion: straight into the scheduler, timed as its enqueue stage.
void admit_local(EgressTask& e, const Burst& burst, rte_mbuf* const* pkts,
                 const classifier::Result* results, const uint8_t* pfc_tags,
                 const uint64_t* arrival_ns, LcoreCounters& c, const PipelineShared& shared,
                 uint64_t now_ns) {
    const uint64_t tsc = rte_rdtsc();
    BurstSource source{pkts, results, pfc_tags, e.pfc_accounts, c, now_ns, arrival_ns};
    admission::SchedulerAdmission<BurstSource> admission(*e.scheduler, e.leaves, shared.lane_count,
                                                         source, e.scratch_packets, e.scratch_drops,
                                                         now_ns, e.governor.get());
    const uint32_t admitted = burst.admit(admission);
    e.admitted_in_pass += admitted;
    c.stages.sched_enqueue_cycles.add(rte_rdtsc() - tsc);
    c.stages.sched_enqueue_packets.add(admitted);
}

void publish_rx(const RxTask& task, const Burst& burst, uint16_t n, uint64_t rx_bytes,
                const RingAdmitter* rings, LcoreCounters& c) {
    uint64_t malformed = 0;
    for (uint32_t lane = 0; lane < burst.lane_count(); ++lane) {
        if (burst.packets(lane) == 0) continue;
        LaneCounters& l = c.lanes[lane];
        l.rx_packets.add(burst.packets(lane));
        l.rx_bytes.add(burst.bytes(lane));
        const uint64_t dropped =
            burst.dropped(lane) + (rings != nullptr ? rings->refused_by_lane[lane] : 0);
        if (dropped != 0) l.dropped.add(dropped);
        malformed += burst.dropped(lane);
    }
    c.ports[task.policy_port].rx_packets.add(n);
    c.ports[task.policy_port].rx_bytes.add(rx_bytes);
    if (malformed != 0) count_drop(c, DropCause::malformed, malformed);
    if (rings != nullptr && rings->refused != 0)
        count_drop(c, DropCause::lane_ring_full, rings->refused);
}

uint16_t rx_stage(LcoreContext& ctx, RxTask& task, const PipelineShared& shared) {
    rte_mbuf* pkts[kBurst];
    uint16_t received = 0;
    uint64_t rx_tsc = 0;
    uint64_t paced_arrival_ns[kBurst];
    uint64_t* arrival_ns = nullptr;  // a paced input's, per frame
    if (task.paced) [[unlikely]] {
        // Handed over now; each frame timed from when it arrived on the modelled wire.
        uint64_t arrival_tsc[kBurst];
        received = task.paced->receive(task.dpdk_port, task.queue, task.rx_burst, pkts, kBurst,
                                       arrival_tsc);
        if (received == 0) return 0;
        rx_tsc = rte_rdtsc();
        for (uint16_t i = 0; i < received; ++i)
            paced_arrival_ns[i] = shared.clock.ns(arrival_tsc[i]);
        arrival_ns = paced_arrival_ns;
    } else {
        const uint64_t call_tsc = task.rx_burst.enabled() ? rte_rdtsc() : 0;
        received = rte_eth_rx_burst(task.dpdk_port, task.queue, pkts, task.rx_burst.size());
        if (received == 0) return 0;
        // The burst arrived when the PMD handed it over. The pass's clock, read before
        // rx_burst, charged every packet with the PMD's own time to fetch the burst (net_pcap
        // reading 32 frames from a file: inference p99 RX->TX 245-458 us run to completion,
        // with the clock read here ...), and a second RX task's packets with the first task's
        // whole burst.
        rx_tsc = rte_rdtsc();
        task.rx_burst.record(rx_tsc - call_tsc, received);
    }
    const uint64_t now_ns = shared.clock.ns(rx_tsc);
    LcoreCounters& c = *ctx.counters;
    // MAC control frames (PFC) are the PFC port's, never forwarded (counted received there).
    const uint16_t n = take_mac_control(pkts, received, task.pfc, shared.meta_offset, now_ns,
                                        c.ports[task.policy_port], c, arrival_ns);
    if (n == 0) [[unlikely]]
        return received;
    RxHeaders headers;
    const uint64_t rx_bytes = linearise_headers(pkts, n, headers);
    classifier::Result* results = ctx.scratch_results.data();
    ctx.classifier->classify_burst(headers.frames, headers.header_bytes, headers.wire_bytes, n,
                                   task.dpdk_port, now_ns, results);

    EgressTask* const local = task.local_egress;
    Burst burst(shared.lane_count);
    uint8_t pfc_tags[kBurst];
    PfcTally pfc_in, pfc_out;
    burst.bucket(results, headers.wire_bytes, n,
                 Stamp{pkts, headers, task.pfc, local != nullptr ? -1 : shared.meta_offset, now_ns,
                       arrival_ns, pfc_tags, pfc_in},
                 [&](uint8_t i) { rte_pktmbuf_free(pkts[i]); });
    // Counted in before any of them can leave (and be counted out) on another lcore.
    if (pfc_in.any) [[unlikely]]
        pfc_in.publish_in(*task.pfc_accounts, c);
    if (local != nullptr) {
        admit_local(*local, burst, pkts, results, pfc_tags, arrival_ns, c, shared, now_ns);
        publish_rx(task, burst, n, rx_bytes, nullptr, c);
    } else {
        RingAdmitter rings{task, pkts, pfc_tags, pfc_out};
        burst.admit(rings);
        pfc_out.publish_out(*task.pfc_accounts, c);
        publish_rx(task, burst, n, rx_bytes, &rings, c);
    }
    return received;
}

// ---- Scheduler stage -----------------------------------------------------------------------

// Control changes, between bursts: one relaxed load when nothing is pending.
void apply_pending_update(EgressTask& e, uint64_t now_ns) {
    SchedulerUpdate* update = e.updates.take();
    if (update == nullptr) return;
    if (update->replacement) {
        update->error = update->replacement->migrate_from(*e.scheduler, now_ns);
        if (!update->error) {
            // Jobs keep the leaves their packets moved to (no flow overtakes its queued packets).
            update->leaves.adopt(e.leaves, *e.scheduler, *update->replacement);
            std::swap(e.scheduler, update->replacement);  // the old tree goes back to the poster
            std::swap(e.leaves, update->leaves);
            pfc_reapply_holds(e.pfc, *e.scheduler);
        }
    } else if (update->params) {
        update->error = e.scheduler->apply(*update->params, now_ns);
    }
    // The SLO caps follow the tree: a changed shaper rate is where the controller goes on from.
    if (!update->error && e.governor) e.governor->bind(e.scheduler.get(), &e.leaves);
    e.updates.complete(*update);
}

// The egress task's lane rings, as LaneAdmission (lane_admission.h) reads them.
struct RingLanes {
    EgressTask& e;
    int meta_offset;

    uint32_t count(uint8_t lane) const { return rte_ring_count(e.lanes[lane]); }
    uint32_t dequeue(uint8_t lane, rte_mbuf** out, uint32_t n) {
        return rte_ring_dequeue_burst(e.lanes[lane], reinterpret_cast<void**>(out), n, nullptr);
    }
    const PacketMeta& meta(rte_mbuf* m) const { return *packet_meta(m, meta_offset); }
};

// Drains the lanes into the scheduler, highest-priority lane first, one burst per lane (in
// arrival order from a reclassified packet on: lane_admission.h).
uint32_t admit_lanes(EgressTask& e, LcoreCounters& c, const PipelineShared& shared,
                     uint64_t now_ns) {
    using Admission = admission::SchedulerAdmission<RingSource>;
    RingLanes lanes{e, shared.meta_offset};
    RingSource source{shared.meta_offset, now_ns, e.pfc_accounts, c};
    Admission sink(*e.scheduler, e.leaves, shared.lane_count, source, e.scratch_packets,
                   e.scratch_drops, now_ns, e.governor.get());
    const uint32_t admitted = LaneAdmission<rte_mbuf*, kBurst, RingLanes, Admission>(
                                  lanes, sink, e.lane_order, shared.lane_count, e.arrival_scratch)
                                  .round();
    e.admitted_in_pass += admitted;
    return admitted;
}

// Offers `count` packets to the NIC; what it refuses is kept, in order, in e.held. The TX
// tallies come from `info` (the scheduler's descriptors, or e.held_info), not from the mbufs:
// after rte_eth_tx_burst the sent mbufs belong to the PMD (net_null has already freed them),
// and reading them before it was a cache miss (56% of offer's samples, perf, net_null 64 B).
uint16_t offer(EgressTask& e, rte_mbuf** pkts, const TxInfo* info, uint16_t count, LcoreCounters& c,
               const PipelineShared& shared, uint64_t now_ns) {
    const uint16_t sent = rte_eth_tx_burst(e.dpdk_port, 0, pkts, count);
    TxTally tally(shared.lane_count);
    PfcTally pfc_out;
    uint64_t bytes = 0;
    for (uint16_t i = 0; i < sent; ++i) {
        const uint32_t len = info[i].length_bytes;
        const uint8_t lane = info[i].lane;
        const uint64_t latency = now_ns - std::min(now_ns, info[i].rx_ns);
        e.pacer.on_transmit(len);
        pfc_out.add(info[i].pfc_tag, len);
        bytes += len;
        tally.add(lane, len, latency);
    }
    if (sent != 0) {
        for (uint32_t lane = 0; lane < shared.lane_count; ++lane) {
            if (tally.packets[lane] == 0) continue;
            LaneCounters& l = c.lanes[lane];
            l.tx_packets.add(tally.packets[lane]);
            l.tx_bytes.add(tally.bytes[lane]);
            l.latency_sum_ns.add(tally.latency_sum_ns[lane]);
            l.latency_max_ns.raise_to(tally.latency_max_ns[lane]);
        }
        for (uint32_t r = 0; r < tally.latency_runs; ++r) {
            const TxTally::LatencyRun& run = tally.latency_run[r];
            c.lane_latency[run.lane][run.bucket].add(run.packets);
        }
        c.ports[e.policy_port].tx_packets.add(sent);
        c.ports[e.policy_port].tx_bytes.add(bytes);
        pfc_out.publish_out(e.pfc_accounts, c);
    }
    const uint16_t refused = count - sent;
    if (refused != 0) {
        // Packets, not attempts: a held packet the NIC refuses again was counted already (a
        // full ring is re-offered every loop, millions of times a second).
        if (pkts != e.held.data()) c.ports[e.policy_port].tx_refused.add(refused);
        // memmove semantics: the arrays may be e.held and e.held_info themselves.
        std::copy(pkts + sent, pkts + count, e.held.begin());
        std::copy(info + sent, info + count, e.held_info.begin());
    }
    e.held_count = refused;
    return sent;
}

// PFC watchdog, action drop: a packet of a storming lossless priority, taken from the tree now
// that its pause is ignored, is dropped rather than sent to a peer that cannot take it.
void drop_in_storm(EgressTask& e, const sched::Packet& p, LcoreCounters& c) {
    count_drop(c, DropCause::pfc_storm, 1);
    c.lanes[admission::user_lane(p.user)].dropped.add(1);
    PfcTally out;
    out.add(admission::user_pfc_tag(p.user), p.length_bytes);
    out.publish_out(e.pfc_accounts, c);
    rte_pktmbuf_free(static_cast<rte_mbuf*>(p.handle));
}

// Re-offers held packets first; then releases from the scheduler what the pacer allows (port
// rate and NIC backlog budget) and hands it to the NIC.
uint16_t transmit(EgressTask& e, LcoreCounters& c, const PipelineShared& shared, uint64_t now_ns) {
    if (e.held_count != 0) {
        const uint16_t sent =
            offer(e, e.held.data(), e.held_info.data(), e.held_count, c, shared, now_ns);
        if (e.held_count != 0) return sent;  // the NIC is still full: keep order, add nothing
    }
    const uint64_t allowance = e.pacer.allowance_bytes(now_ns);
    if (allowance == 0) return 0;
    // A packet may start while any allowance is left, so the budget is overshot by less than
    // one maximum-size frame, like a BQL limit. One tree walk per run of packets from a leaf.
    sched::Packet* pkts = e.scratch_packets.data();
    sched::DroppedPacket* drops = e.scratch_drops.data();
    const sched::DequeueResult r = e.scheduler->dequeue_burst(
        pkts, kBurst, allowance - 1 + sched::wire_bytes(e.max_frame_bytes), now_ns, drops, kBurst,
        TxPacer::kWireCost);
    if (e.governor != nullptr && r.dropped != 0) [[unlikely]]
        e.governor->dropped(drops, r.dropped);
    free_drops(drops, r.dropped, c, e.pfc_accounts);
    if (r.packets == 0) return 0;
    rte_mbuf* out[kBurst];
    TxInfo info[kBurst];
    uint32_t n = 0;
    for (uint32_t i = 0; i < r.packets; ++i) {
        const uint8_t lane = admission::user_lane(pkts[i].user);
        if ((e.pfc.storm_drop_lanes >> lane) & 1) [[unlikely]] {
            if (e.governor != nullptr) {
                const sched::DroppedPacket dropped{pkts[i], sched::DropReason::queue_full_packets};
                e.governor->dropped(&dropped, 1);
            }
            drop_in_storm(e, pkts[i], c);
            continue;
        }
        out[n] = static_cast<rte_mbuf*>(pkts[i].handle);
        info[n].rx_ns = rx_arrival_ns(pkts[i], shared);
        info[n].length_bytes = pkts[i].length_bytes;
        info[n].lane = lane;
        info[n].pfc_tag = admission::user_pfc_tag(pkts[i].user);
        ++n;
    }
    if (n == 0) return 0;
    // SLO latency: from RX to leaving the scheduler, as the TX tallies count it (less the wait
    // of a packet the NIC refuses, which is rare and bounded by the TX budget).
    if (e.governor != nullptr) [[unlikely]] {
        for (uint32_t i = 0; i < r.packets; ++i) {
            const sched::Packet& p = pkts[i];
            if ((e.pfc.storm_drop_lanes >> admission::user_lane(p.user)) & 1) continue;
            const uint64_t rx_ns = rx_arrival_ns(p, shared);
            e.governor->depart(p.user, now_ns - std::min(now_ns, rx_ns), p.length_bytes,
                               p.flow_hash, now_ns);
        }
    }
    return offer(e, out, info, static_cast<uint16_t>(n), c, shared, now_ns);
}

// Adds the time since the last TX pass to the port's link-bound time if that pass ended
// link-bound (each pass, so readers see it grow while a port stays bound for hours).
void close_link_bound_interval(EgressTask& e, LcoreCounters& c, uint64_t now_ns) {
    if (e.link_bound) c.ports[e.policy_port].tx_link_bound_ns.add(now_ns - e.link_bound_since_ns);
    e.link_bound = false;
}

// One loop pass's TX for a port: bursts until as many packets have left as the pass admitted
// (at least one burst), or the pacer's allowance, the tree or the NIC's ring runs out. A pass
// admits up to a burst per lane ring: sending only one burst back would, under overload, fill
// the leaves and spend the lcore on admitting packets only to drop them at full leaves (cold
// by then), instead of sending; the excess then waits in the lane rings, and the RX lcore
// drops it there when they are full.
uint32_t transmit_pass(EgressTask& e, LcoreCounters& c, const PipelineShared& shared,
                       uint64_t now_ns) {
    const uint32_t target = e.admitted_in_pass;
    e.admitted_in_pass = 0;
    uint32_t sent = 0;
    for (;;) {
        const uint16_t burst = transmit(e, c, shared, now_ns);
        sent += burst;
        if (burst < kBurst || sent >= target || e.held_count != 0) break;
    }
    // Link-bound: the pacer's allowance is spent (a dequeue that runs out of it overshoots by
    // part of a frame, so it reads 0) with packets left in the tree; not when the NIC refused
    // (tx_refused), the tree emptied or only shapers hold it back. transmit called
    // allowance_bytes at this `now_ns` already (no held packet is left), so this call changes
    // nothing in the pacer.
    close_link_bound_interval(e, c, now_ns);
    e.link_bound = e.held_count == 0 && e.scheduler->queued_packets() != 0 &&
                   e.pacer.allowance_bytes(now_ns) == 0;
    e.link_bound_since_ns = now_ns;
    return sent;
}

// ---- The loop's own time ------------------------------------------------------------------

void count_busy_pass(LoopCounters& loop, uint64_t pass_ns) {
    loop.busy_passes.add(1);
    loop.busy_pass_sum_ns.add(pass_ns);
    loop.busy_pass_max_ns.raise_to(pass_ns);
    loop.busy_pass_ns[LatencyLayout::bucket_of(pass_ns)].add(1);
}

// ---- Shutdown ------------------------------------------------------------------------------

bool egress_empty(const EgressTask& e) {
    if (e.held_count != 0 || e.scheduler->queued_packets() != 0) return false;
    for (rte_ring* ring : e.lanes)
        if (rte_ring_count(ring) != 0) return false;
    return true;
}

// Frees everything still inside the egress task, counting each packet by where it was.
void discard_backlog(EgressTask& e, LcoreCounters& c, const PipelineShared& shared,
                     uint64_t now_ns) {
    PfcTally out;
    for (uint32_t lane = 0; lane < e.lanes.size(); ++lane) {
        rte_mbuf* m[kBurst];
        unsigned n = 0;
        while ((n = rte_ring_dequeue_burst(e.lanes[lane], reinterpret_cast<void**>(m), kBurst,
                                           nullptr)) != 0) {
            for (unsigned i = 0; i < n; ++i)
                out.add(packet_meta(m[i], shared.meta_offset)->pfc_tag, rte_pktmbuf_pkt_len(m[i]));
            rte_pktmbuf_free_bulk(m, n);
            count_drop(c, DropCause::shutdown_lane_ring, n);
            c.lanes[lane].dropped.add(n);
        }
    }
    // Shapers would hold packets back: advance the scheduler's clock to each next release.
    while (e.scheduler->queued_packets() != 0) {
        now_ns = std::max(now_ns, e.scheduler->next_eligible_ns(now_ns));
        sched::Packet pkts[kBurst];
        sched::DroppedPacket drops[kBurst];
        const sched::DequeueResult r = e.scheduler->dequeue(pkts, kBurst, now_ns, drops, kBurst);
        free_drops(drops, r.dropped, c, e.pfc_accounts, true);
        for (uint32_t i = 0; i < r.packets; ++i) {
            sched::DroppedPacket as_drop{pkts[i], sched::DropReason::queue_full_packets};
            free_drops(&as_drop, 1, c, e.pfc_accounts, true);
        }
    }
    for (uint16_t i = 0; i < e.held_count; ++i) {
        c.lanes[e.held_info[i].lane].dropped.add(1);
        out.add(e.held_info[i].pfc_tag, e.held_info[i].length_bytes);
        rte_pktmbuf_free(e.held[i]);
    }
    out.publish_out(e.pfc_accounts, c);
    count_drop(c, DropCause::shutdown_nic_refused, e.held_count);
    e.held_count = 0;
}

void shut_down(LcoreContext& ctx, PipelineShared& shared) {
    // This lcore's RX stages have finished their last burst: nothing more enters its lanes.
    if (!ctx.rx.empty()) shared.rx_lcores_running.fetch_sub(1, std::memory_order_release);
    for (RxTask& task : ctx.rx)
        if (task.paced) task.paced->free_staged();  // still on the modelled wire: never arrived
    LcoreCounters& c = *ctx.counters;
    const bool drain = shared.stop_mode == StopMode::drain;
    const uint64_t stop_tsc = rte_rdtsc();
    const uint64_t deadline_tsc =
        stop_tsc + (drain ? shared.clock.tsc_for_ns(shared.drain_timeout_ns) : 0);
    // Link-bound time runs until the loop stopped; the drain is not counted.
    for (EgressTask* e : ctx.egress)
        close_link_bound_interval(*e, c, shared.clock.ns(stop_tsc));
    for (;;) {
        const bool rx_done = shared.rx_lcores_running.load(std::memory_order_acquire) == 0;
        const uint64_t tsc = rte_rdtsc();
        bool empty = true;
        for (EgressTask* e : ctx.egress) {
            if (drain) {
                admit_lanes(*e, c, shared, shared.clock.ns(tsc));
                transmit(*e, c, shared, shared.clock.ns(tsc));
            }
            empty = empty && egress_empty(*e);
        }
        if (rx_done && (empty || tsc >= deadline_tsc)) break;
    }
    const uint64_t now_ns = shared.clock.ns(rte_rdtsc());
    for (EgressTask* e : ctx.egress)
        discard_backlog(*e, c, shared, now_ns);
}

}  // namespace

// ---- The lcore loop ------------------------------------------------------------------------

void run_lcore(LcoreContext& ctx, PipelineShared& shared) {
    LcoreCounters& c = *ctx.counters;
    StageCounters& stages = c.stages;
    publish_loop_thread(c.loop.thread);
    // Before the loop: the governors' drops are this lcore's to free and count.
    std::vector<std::unique_ptr<GovernorDrops>> slo_drops;
    for (EgressTask* e : ctx.egress) {
        if (!e->governor) continue;
        slo_drops.push_back(std::make_unique<GovernorDrops>(*e, c));
        e->governor->set_drop_handler(slo_drops.back().get());
    }
    // The longest gap between passes' starts, in cycles here (a compare per pass), published in
    // ns only when it grows: LoopCounters::poll_gap_max_ns.
    uint64_t pass_start_tsc = rte_rdtsc();
    uint64_t poll_gap_max_cycles = 0;
    while (!stop_requested()) {
        // One TSC read per stage: it is both the stage's clock and its cycle accounting (RX
        // bursts are stamped when the PMD returns them: rx_stage).
        const uint64_t rx_tsc = rte_rdtsc();
        if (rx_tsc - pass_start_tsc > poll_gap_max_cycles) [[unlikely]] {
            poll_gap_max_cycles = rx_tsc - pass_start_tsc;
            c.loop.poll_gap_max_ns.raise_to(shared.clock.ns(rx_tsc) -
                                            shared.clock.ns(pass_start_tsc));
        }
        pass_start_tsc = rx_tsc;
        if (ClassifierUpdate* update = ctx.classifier_updates.take()) {
            ctx.classifier->use_rules(*update->rules);
            ctx.classifier_updates.complete(*update);
        }
        uint32_t received = 0;
        const uint64_t direct_enqueue_cycles = stages.sched_enqueue_cycles.read();
        for (RxTask& task : ctx.rx)
            received += rx_stage(ctx, task, shared);

        const uint64_t admit_tsc = rte_rdtsc();
        if (received != 0) {
            // Less what rx_stage spent enqueueing into a local scheduler (counted there).
            stages.rx_classify_cycles.add(
                admit_tsc - rx_tsc - (stages.sched_enqueue_cycles.read() - direct_enqueue_cycles));
            stages.rx_classify_packets.add(received);
        }
        uint32_t admitted = 0;
        const uint64_t admit_ns = shared.clock.ns(admit_tsc);
        for (EgressTask* e : ctx.egress) {
            apply_pending_update(*e, admit_ns);
            if (e->governor) e->governor->tick(admit_ns);
            if (e->ring_fed) admitted += admit_lanes(*e, c, shared, admit_ns);
        }
        const uint64_t tx_tsc = rte_rdtsc();
        if (admitted != 0) {
            stages.sched_enqueue_cycles.add(tx_tsc - admit_tsc);
            stages.sched_enqueue_packets.add(admitted);
        }
        uint32_t sent = 0;
        for (EgressTask* e : ctx.egress) {
            const uint64_t now_ns = shared.clock.ns(tx_tsc);
            if (e->pfc.enabled) [[unlikely]]
                pfc_round(e->pfc, *e->scheduler, shared.all_counters, c, now_ns);
            sent += transmit_pass(*e, c, shared, now_ns);
        }
        if ((received | admitted | sent) != 0) {
            const uint64_t end_tsc = rte_rdtsc();
            if (sent != 0) {
                stages.sched_dequeue_tx_cycles.add(end_tsc - tx_tsc);
                stages.sched_dequeue_tx_packets.add(sent);
            }
            count_busy_pass(c.loop, shared.clock.ns(end_tsc) - shared.clock.ns(rx_tsc));
        }
    }
    shut_down(ctx, shared);
    for (EgressTask* e : ctx.egress)
        if (e->governor) e->governor->set_drop_handler(nullptr);
}

}  // namespace twinlane::dataplane
