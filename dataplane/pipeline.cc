// The realtime packet path, top-down: rx_stage, then the scheduler stage (admit_lanes,
// transmit), then the lcore loop and its shutdown. See pipeline.h for the contract.
#include "dataplane/pipeline.h"

#include <rte_cycles.h>
#include <rte_ethdev.h>

#include <algorithm>

#include "classifier/dscp_rewrite.h"
#include "dataplane/lane_admission.h"
#include "dataplane/packet_meta.h"
#include "dataplane/stop_signal.h"

namespace twinlane::dataplane {
namespace {

// Per-class tallies kept on the stack during one burst and published once at its end. Only
// the policy's lanes are zeroed (a full zero-initialisation was 1.6% of a 64 B run).
struct LaneTally {
    explicit LaneTally(uint32_t lanes) {
        for (uint32_t l = 0; l < lanes; ++l)
            packets[l] = bytes[l] = dropped[l] = latency_sum_ns[l] = latency_max_ns[l] = 0;
    }
    std::array<uint64_t, kMaxLanes> packets;
    std::array<uint64_t, kMaxLanes> bytes;
    std::array<uint64_t, kMaxLanes> dropped;
    std::array<uint64_t, kMaxLanes> latency_sum_ns;
    std::array<uint64_t, kMaxLanes> latency_max_ns;
};

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

// ---- RX stage: receive, classify, write metadata, hand to the egress port's lanes ----------

// Frees packets the scheduler handed back, by reason (`as_shutdown`: all count as shutdown).
void free_drops(const sched::DroppedPacket* drops, uint32_t count, LcoreCounters& c,
                bool as_shutdown = false) {
    for (uint32_t i = 0; i < count; ++i) {
        const sched::DroppedPacket& d = drops[i];
        count_drop(c, as_shutdown ? DropCause::shutdown_scheduler : from_sched(d.reason), 1);
        c.lanes[d.packet.user].dropped.add(1);
        rte_pktmbuf_free(static_cast<rte_mbuf*>(d.packet.handle));
    }
}

// Resolves a lane's packets to scheduler leaves: one leaf for the whole lane unless the class
// is split by job (then ClassEntry::leaf_for_job, an out-of-line call, per packet).
struct LaneLeaf {
    LaneLeaf(const EgressTask& e, uint8_t lane)
        : entry(e.mapping.class_entries[lane]),
          fixed(entry.mode == control::JobSplit::Mode::none ? entry.leaves.front() : kPerJob) {}
    uint16_t operator()(uint32_t job) const { return fixed != kPerJob ? fixed : entry.leaf_for_job(job); }

    static constexpr uint32_t kPerJob = UINT32_MAX;
    const control::ClassEntry& entry;
    uint32_t fixed;
};

// Fills the scheduler's descriptor for a classified packet of `lane`, field by field in
// place, from the classifier's Result (run to completion) or the mbuf's PacketMeta (after a
// lane ring); both name the fields alike. Returning a Packet by value built it on the stack
// and copied it: the byte stores of `user`/`ip_version` then fed a 4-byte load of the copy, a
// failed store forward that was 81% of enqueue_lane's (now SchedulerSink::admit's) samples
// (perf, net_null 64 B).
// `waited_ns`: time from RX to this enqueue (lane ring), kept in `user_ns` for the RX->TX
// latency; kWaitInMeta when it does not fit (then TX reads the mbuf's arrival_ns).
constexpr uint32_t kWaitInMeta = UINT32_MAX;

template <typename Classified>
[[gnu::always_inline]] inline void fill_sched_packet(sched::Packet& p, const LaneLeaf& leaf,
                                                     rte_mbuf* m, const Classified& k,
                                                     uint8_t lane, uint64_t waited_ns) {
    p.handle = m;
    p.length_bytes = rte_pktmbuf_pkt_len(m);
    p.flow_hash = k.flow_hash;
    p.leaf = leaf(k.job_id);
    p.user = lane;
    p.user_ns = static_cast<uint32_t>(std::min<uint64_t>(waited_ns, kWaitInMeta));
    p.l3 = k.ecn_capable ? l3_in_first_segment(m, k.l3_offset) : nullptr;
    p.ip_version = p.l3 != nullptr ? k.ip_version : 0;
}

// The RX arrival of a dequeued packet: the scheduler stamped its enqueue time in arrival_ns.
uint64_t rx_arrival_ns(const sched::Packet& p, const PipelineShared& shared) {
    if (p.user_ns == kWaitInMeta) [[unlikely]]
        return packet_meta(static_cast<rte_mbuf*>(p.handle), shared.meta_offset)->arrival_ns;
    return p.arrival_ns - p.user_ns;
}

// Enqueues the scheduler descriptors filled in e.scratch_packets; frees and counts the drops.
void enqueue_scratch(EgressTask& e, uint32_t n, LcoreCounters& c, uint64_t now_ns) {
    sched::DroppedPacket* drops = e.scratch_drops.data();
    const uint32_t accepted = e.scheduler->enqueue(e.scratch_packets.data(), n, now_ns, drops);
    free_drops(drops, n - accepted, c);
}

static_assert(PacketMeta{}.previous_class == classifier::kNoPreviousClass);

uint8_t lane_of_class(uint8_t class_id, const PipelineShared& shared) {
    return static_cast<uint8_t>(std::min<uint32_t>(class_id, shared.lane_count - 1));
}

// A flow changed class with the packet about to be enqueued into `lane` (a reclassification,
// classifier::Result::previous_class): its packets still queued under the old class move to
// the new leaf first (sched::Scheduler::move_flow), so the flow stays in order.
void follow_reclassification(EgressTask& e, uint8_t old_class, uint32_t old_job, uint8_t lane,
                             uint32_t job, uint32_t flow_hash, const PipelineShared& shared) {
    const uint8_t old_lane = lane_of_class(old_class, shared);
    e.scheduler->move_flow(static_cast<uint16_t>(LaneLeaf(e, old_lane)(old_job)),
                           static_cast<uint16_t>(LaneLeaf(e, lane)(job)), flow_hash);
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

// Where LaneAdmission puts packets: the egress task's scheduler, descriptors filled from the
// mbuf metadata; drops freed and counted.
struct SchedulerSink {
    EgressTask& e;
    LcoreCounters& c;
    const PipelineShared& shared;
    uint64_t now_ns;

    void admit(uint8_t lane, rte_mbuf* const* m, uint32_t n) {
        sched::Packet* pkts = e.scratch_packets.data();
        const LaneLeaf leaf(e, lane);
        for (uint32_t i = 0; i < n; ++i) {
            const PacketMeta& meta = *packet_meta(m[i], shared.meta_offset);
            fill_sched_packet(pkts[i], leaf, m[i], meta, lane,
                              now_ns - std::min(now_ns, meta.arrival_ns));
        }
        enqueue_scratch(e, n, c, now_ns);
    }
    void reclassified(uint8_t lane, rte_mbuf* m) {
        const PacketMeta& meta = *packet_meta(m, shared.meta_offset);
        follow_reclassification(e, meta.previous_class, previous_job(m), lane, meta.job_id,
                                meta.flow_hash, shared);
    }
};

// Run to completion, for a burst in which a flow changed class: the packets (those not dropped
// as malformed) enter the scheduler in arrival order, a reclassified flow's queued packets
// moving to its new leaf just before the packet that changed it.
uint32_t enqueue_in_arrival_order(EgressTask& e, rte_mbuf* const* pkts,
                                  const classifier::Result* results, uint16_t n,
                                  LcoreCounters& c, const PipelineShared& shared,
                                  uint64_t now_ns) {
    uint32_t admitted = 0;
    for (uint16_t i = 0; i < n; ++i) {
        const classifier::Result& r = results[i];
        if (r.drop) continue;  // freed and counted already
        const uint8_t lane = lane_of_class(r.class_id, shared);
        if (r.previous_class != classifier::kNoPreviousClass)
            follow_reclassification(e, r.previous_class, r.previous_job, lane, r.job_id,
                                    r.flow_hash, shared);
        fill_sched_packet(e.scratch_packets[0], LaneLeaf(e, lane), pkts[i], r, lane, 0);
        enqueue_scratch(e, 1, c, now_ns);
        ++admitted;
    }
    return admitted;
}

// Across lcores, for a burst in which a flow changed class: each run of packets for one lane,
// in arrival order, goes to that lane's ring, so a reclassified flow's earlier packets are in
// the old lane's ring before the packet that names it reaches the new one (the scheduler side
// relies on it, see lane_admission.h). Returns the packets refused by full rings (freed,
// counted in `tally`).
uint64_t ring_in_arrival_order(RxTask& task, rte_mbuf** pkts, const classifier::Result* results,
                               uint16_t n, const PipelineShared& shared, LaneTally& tally) {
    uint64_t refused = 0;
    rte_mbuf* run[kBurst];
    for (uint16_t i = 0; i < n;) {
        if (results[i].drop) {
            ++i;
            continue;
        }
        const uint8_t lane = lane_of_class(results[i].class_id, shared);
        uint32_t count = 0;
        while (i < n && (results[i].drop || lane_of_class(results[i].class_id, shared) == lane)) {
            if (!results[i].drop) run[count++] = pkts[i];
            ++i;
        }
        const unsigned queued = rte_ring_enqueue_burst(
            task.lanes[lane], reinterpret_cast<void* const*>(run), count, nullptr);
        if (queued < count) {
            rte_pktmbuf_free_bulk(&run[queued], count - queued);
            refused += count - queued;
            tally.dropped[lane] += count - queued;
        }
    }
    return refused;
}

uint16_t rx_stage(LcoreContext& ctx, RxTask& task, const PipelineShared& shared, uint64_t now_ns) {
    rte_mbuf* pkts[kBurst];
    const uint16_t n = rte_eth_rx_burst(task.dpdk_port, task.queue, pkts, kBurst);
    if (n == 0) return 0;

    // The classifier reads headers from contiguous bytes: the first segment when it holds
    // them, else a copy of the first kHeaderCopyBytes into a stack buffer.
    const uint8_t* frames[kBurst];
    uint32_t header_bytes[kBurst];
    uint32_t wire_bytes[kBurst];
    alignas(64) uint8_t linear[kBurst][kHeaderCopyBytes];
    uint64_t rx_bytes = 0;
    for (uint16_t i = 0; i < n; ++i) {
        rte_mbuf* m = pkts[i];
        wire_bytes[i] = rte_pktmbuf_pkt_len(m);
        rx_bytes += wire_bytes[i];
        const uint32_t wanted = std::min(wire_bytes[i], kHeaderCopyBytes);
        if (rte_pktmbuf_data_len(m) >= wanted) {
            frames[i] = rte_pktmbuf_mtod(m, const uint8_t*);
            header_bytes[i] = rte_pktmbuf_data_len(m);
        } else {
            frames[i] = static_cast<const uint8_t*>(rte_pktmbuf_read(m, 0, wanted, linear[i]));
            header_bytes[i] = wanted;
        }
    }
    classifier::Result* results = ctx.scratch_results.data();
    ctx.classifier->classify_burst(frames, header_bytes, wire_bytes, n, task.dpdk_port, now_ns,
                                   results);

    rte_mbuf* lane_pkts[kMaxLanes][kBurst];
    uint8_t lane_results[kMaxLanes][kBurst];  // index into `results`, run to completion
    std::array<uint16_t, kMaxLanes> lane_n{};
    EgressTask* const local = task.local_egress;
    LaneTally tally(shared.lane_count);
    uint64_t malformed = 0;
    bool reclassified = false;  // a flow changed class in this burst: keep arrival order
    for (uint16_t i = 0; i < n; ++i) {
        rte_mbuf* m = pkts[i];
        const classifier::Result& r = results[i];
        const uint8_t lane = lane_of_class(r.class_id, shared);
        tally.packets[lane] += 1;
        tally.bytes[lane] += wire_bytes[i];
        if (r.drop) {
            rte_pktmbuf_free(m);
            ++malformed;
            ++tally.dropped[lane];
            continue;
        }
        // The metadata only carries the result across a lane ring; run to completion, the
        // scheduler's descriptor is filled from the result itself (below), and the mbuf's
        // second cache line is not written.
        if (local == nullptr) {
            PacketMeta* meta = packet_meta(m, shared.meta_offset);
            meta->arrival_ns = now_ns;
            meta->job_id = r.job_id;
            meta->flow_hash = r.flow_hash;
            meta->l3_offset = r.l3_offset;
            meta->class_id = lane;
            meta->ip_version = r.ip_version;
            meta->ecn_capable = r.ecn_capable ? 1 : 0;
            meta->previous_class = r.previous_class;
            meta->burst_index = static_cast<uint8_t>(i);
            if (r.previous_class != classifier::kNoPreviousClass) [[unlikely]]
                set_previous_job(m, r.previous_job);
        }
        reclassified |= r.previous_class != classifier::kNoPreviousClass;
        if (r.remark_dscp != classifier::kNoRemark && r.ip_version != 0) {
            if (uint8_t* l3 = l3_in_first_segment(m, r.l3_offset))
                classifier::rewrite_dscp(l3, r.ip_version, r.remark_dscp);
        }
        lane_results[lane][lane_n[lane]] = static_cast<uint8_t>(i);
        lane_pkts[lane][lane_n[lane]++] = m;
    }

    LcoreCounters& c = *ctx.counters;
    uint64_t ring_full = 0;
    if (reclassified) [[unlikely]] {
        // Lane by lane, a flow's packets before its reclassification (old lane) could be
        // enqueued after the one that names it: take the burst in arrival order instead.
        if (local != nullptr) {
            const uint64_t tsc = rte_rdtsc();
            const uint32_t admitted = enqueue_in_arrival_order(*local, pkts, results, n, c,
                                                               shared, now_ns);
            c.stages.sched_enqueue_cycles.add(rte_rdtsc() - tsc);
            c.stages.sched_enqueue_packets.add(admitted);
        } else {
            ring_full = ring_in_arrival_order(task, pkts, results, n, shared, tally);
        }
        lane_n.fill(0);  // nothing left for the lane rings below
    } else if (EgressTask* e = local) {
        // Run to completion: straight into the scheduler, timed as its enqueue stage.
        const uint64_t tsc = rte_rdtsc();
        uint32_t admitted = 0;
        for (uint32_t lane = 0; lane < shared.lane_count; ++lane) {
            const uint32_t count = lane_n[lane];
            if (count == 0) continue;
            const LaneLeaf leaf(*e, static_cast<uint8_t>(lane));
            for (uint32_t k = 0; k < count; ++k) {
                fill_sched_packet(e->scratch_packets[k], leaf, lane_pkts[lane][k],
                                  results[lane_results[lane][k]], static_cast<uint8_t>(lane), 0);
            }
            enqueue_scratch(*e, count, c, now_ns);
            admitted += count;
        }
        c.stages.sched_enqueue_cycles.add(rte_rdtsc() - tsc);
        c.stages.sched_enqueue_packets.add(admitted);
        lane_n.fill(0);  // nothing left for the rings below
    }
    for (uint32_t lane = 0; lane < shared.lane_count; ++lane) {
        if (lane_n[lane] == 0) continue;
        const unsigned queued = rte_ring_enqueue_burst(
            task.lanes[lane], reinterpret_cast<void* const*>(lane_pkts[lane]), lane_n[lane],
            nullptr);
        if (queued < lane_n[lane]) {
            rte_pktmbuf_free_bulk(&lane_pkts[lane][queued], lane_n[lane] - queued);
            ring_full += lane_n[lane] - queued;
            tally.dropped[lane] += lane_n[lane] - queued;
        }
    }
    for (uint32_t lane = 0; lane < shared.lane_count; ++lane) {
        if (tally.packets[lane] == 0) continue;
        c.lanes[lane].rx_packets.add(tally.packets[lane]);
        c.lanes[lane].rx_bytes.add(tally.bytes[lane]);
        if (tally.dropped[lane] != 0) c.lanes[lane].dropped.add(tally.dropped[lane]);
    }
    c.ports[task.policy_port].rx_packets.add(n);
    c.ports[task.policy_port].rx_bytes.add(rx_bytes);
    if (malformed != 0) count_drop(c, DropCause::malformed, malformed);
    if (ring_full != 0) count_drop(c, DropCause::lane_ring_full, ring_full);
    return n;
}

// ---- Scheduler stage -----------------------------------------------------------------------

// Control changes, between bursts: one relaxed load when nothing is pending.
void apply_pending_update(EgressTask& e) {
    SchedulerUpdate* update = e.updates.take();
    if (update == nullptr) return;
    if (update->replacement) {
        update->error = update->replacement->migrate_from(*e.scheduler);
        if (!update->error) {
            std::swap(e.scheduler, update->replacement);  // the old tree goes back to the poster
            std::swap(e.mapping, update->mapping);
        }
    } else if (update->params) {
        update->error = e.scheduler->apply(*update->params);
    }
    e.updates.complete(*update);
}

// Drains the lanes into the scheduler, highest-priority lane first, one burst per lane (in
// arrival order from a reclassified packet on: lane_admission.h).
uint32_t admit_lanes(EgressTask& e, LcoreCounters& c, const PipelineShared& shared,
                     uint64_t now_ns) {
    RingLanes lanes{e, shared.meta_offset};
    SchedulerSink sink{e, c, shared, now_ns};
    return LaneAdmission<rte_mbuf*, kBurst, RingLanes, SchedulerSink>(
               lanes, sink, e.lane_order, shared.lane_count, e.arrival_scratch)
        .round();
}

// Offers `count` packets to the NIC; what it refuses is kept, in order, in e.held. The TX
// tallies come from `info` (the scheduler's descriptors, or e.held_info), not from the mbufs:
// after rte_eth_tx_burst the sent mbufs belong to the PMD (net_null has already freed them),
// and reading them before it was a cache miss (56% of offer's samples, perf, net_null 64 B).
uint16_t offer(EgressTask& e, rte_mbuf** pkts, const TxInfo* info, uint16_t count,
               LcoreCounters& c, const PipelineShared& shared, uint64_t now_ns) {
    const uint16_t sent = rte_eth_tx_burst(e.dpdk_port, 0, pkts, count);
    LaneTally tally(shared.lane_count);
    uint64_t bytes = 0;
    for (uint16_t i = 0; i < sent; ++i) {
        const uint32_t len = info[i].length_bytes;
        const uint8_t lane = info[i].lane;
        const uint64_t latency = now_ns - std::min(now_ns, info[i].rx_ns);
        e.pacer.on_transmit(len);
        bytes += len;
        tally.packets[lane] += 1;
        tally.bytes[lane] += len;
        tally.latency_sum_ns[lane] += latency;
        tally.latency_max_ns[lane] = std::max(tally.latency_max_ns[lane], latency);
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
        c.ports[e.policy_port].tx_packets.add(sent);
        c.ports[e.policy_port].tx_bytes.add(bytes);
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

// Re-offers held packets first; then releases from the scheduler what the pacer allows (port
// rate and NIC backlog budget) and hands it to the NIC.
uint16_t transmit(EgressTask& e, LcoreCounters& c, const PipelineShared& shared, uint64_t now_ns) {
    if (e.held_count != 0) {
        const uint16_t sent = offer(e, e.held.data(), e.held_info.data(), e.held_count, c, shared,
                                    now_ns);
        if (e.held_count != 0) return sent;  // the NIC is still full: keep order, add nothing
    }
    const uint64_t allowance = e.pacer.allowance_bytes(now_ns);
    if (allowance == 0) return 0;
    // A packet may start while any allowance is left, so the budget is overshot by less than
    // one maximum-size frame, like a BQL limit. One tree walk per run of packets from a leaf.
    sched::Packet* pkts = e.scratch_packets.data();
    sched::DroppedPacket* drops = e.scratch_drops.data();
    const sched::DequeueResult r = e.scheduler->dequeue_burst(
        pkts, kBurst, allowance - 1 + TxPacer::wire_bytes(e.max_frame_bytes), now_ns, drops,
        kBurst, TxPacer::kWireCost);
    free_drops(drops, r.dropped, c);
    if (r.packets == 0) return 0;
    rte_mbuf* out[kBurst];
    TxInfo info[kBurst];
    for (uint32_t i = 0; i < r.packets; ++i) {
        out[i] = static_cast<rte_mbuf*>(pkts[i].handle);
        info[i].rx_ns = rx_arrival_ns(pkts[i], shared);
        info[i].length_bytes = pkts[i].length_bytes;
        info[i].lane = pkts[i].user;
    }
    return offer(e, out, info, static_cast<uint16_t>(r.packets), c, shared, now_ns);
}

// ---- Shutdown ------------------------------------------------------------------------------

bool egress_empty(const EgressTask& e) {
    if (e.held_count != 0 || e.scheduler->queued_packets() != 0) return false;
    for (rte_ring* ring : e.lanes)
        if (rte_ring_count(ring) != 0) return false;
    return true;
}

// Frees everything still inside the egress task, counting each packet by where it was.
void discard_backlog(EgressTask& e, LcoreCounters& c, uint64_t now_ns) {
    for (uint32_t lane = 0; lane < e.lanes.size(); ++lane) {
        rte_mbuf* m[kBurst];
        unsigned n = 0;
        while ((n = rte_ring_dequeue_burst(e.lanes[lane], reinterpret_cast<void**>(m), kBurst,
                                           nullptr)) != 0) {
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
        free_drops(drops, r.dropped, c, true);
        for (uint32_t i = 0; i < r.packets; ++i) {
            sched::DroppedPacket as_drop{pkts[i], sched::DropReason::queue_full_packets};
            free_drops(&as_drop, 1, c, true);
        }
    }
    for (uint16_t i = 0; i < e.held_count; ++i) {
        c.lanes[e.held_info[i].lane].dropped.add(1);
        rte_pktmbuf_free(e.held[i]);
    }
    count_drop(c, DropCause::shutdown_nic_refused, e.held_count);
    e.held_count = 0;
}

void shut_down(LcoreContext& ctx, PipelineShared& shared) {
    // This lcore's RX stages have finished their last burst: nothing more enters its lanes.
    if (!ctx.rx.empty()) shared.rx_lcores_running.fetch_sub(1, std::memory_order_release);
    LcoreCounters& c = *ctx.counters;
    const bool drain = shared.stop_mode == StopMode::drain;
    const uint64_t deadline_tsc =
        rte_rdtsc() + (drain ? shared.clock.tsc_for_ns(shared.drain_timeout_ns) : 0);
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
        discard_backlog(*e, c, now_ns);
}

}  // namespace

// ---- The lcore loop ------------------------------------------------------------------------

void run_lcore(LcoreContext& ctx, PipelineShared& shared) {
    LcoreCounters& c = *ctx.counters;
    StageCounters& stages = c.stages;
    while (!stop_requested()) {
        // One TSC read per stage: it is both the stage's clock and its cycle accounting.
        const uint64_t rx_tsc = rte_rdtsc();
        if (ClassifierUpdate* update = ctx.classifier_updates.take()) {
            ctx.classifier->use_rules(*update->rules);
            ctx.classifier_updates.complete(*update);
        }
        uint32_t received = 0;
        const uint64_t direct_enqueue_cycles = stages.sched_enqueue_cycles.read();
        for (RxTask& task : ctx.rx)
            received += rx_stage(ctx, task, shared, shared.clock.ns(rx_tsc));

        const uint64_t admit_tsc = rte_rdtsc();
        if (received != 0) {
            // Less what rx_stage spent enqueueing into a local scheduler (counted there).
            stages.rx_classify_cycles.add(admit_tsc - rx_tsc -
                                          (stages.sched_enqueue_cycles.read() -
                                           direct_enqueue_cycles));
            stages.rx_classify_packets.add(received);
        }
        uint32_t admitted = 0;
        for (EgressTask* e : ctx.egress) {
            apply_pending_update(*e);
            if (e->ring_fed) admitted += admit_lanes(*e, c, shared, shared.clock.ns(admit_tsc));
        }
        const uint64_t tx_tsc = rte_rdtsc();
        if (admitted != 0) {
            stages.sched_enqueue_cycles.add(tx_tsc - admit_tsc);
            stages.sched_enqueue_packets.add(admitted);
        }
        uint32_t sent = 0;
        for (EgressTask* e : ctx.egress)
            sent += transmit(*e, c, shared, shared.clock.ns(tx_tsc));
        if (sent != 0) {
            stages.sched_dequeue_tx_cycles.add(rte_rdtsc() - tx_tsc);
            stages.sched_dequeue_tx_packets.add(sent);
        }
    }
    shut_down(ctx, shared);
}

}  // namespace twinlane::dataplane
