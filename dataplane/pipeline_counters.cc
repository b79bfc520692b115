#include "dataplane/pipeline_counters.h"

#include <algorithm>

namespace twinlane::dataplane {

const char* to_string(DropCause cause) {
    switch (cause) {
        case DropCause::malformed:
            return "malformed";
        case DropCause::lane_ring_full:
            return "lane_ring_full";
        case DropCause::sched_queue_full_packets:
            return "sched_queue_full_packets";
        case DropCause::sched_queue_full_bytes:
            return "sched_queue_full_bytes";
        case DropCause::sched_pool_exhausted:
            return "sched_pool_exhausted";
        case DropCause::sched_red_early:
            return "sched_red_early";
        case DropCause::sched_codel:
            return "sched_codel";
        case DropCause::sched_unknown_leaf:
            return "sched_unknown_leaf";
        case DropCause::sched_oversize:
            return "sched_oversize";
        case DropCause::shutdown_lane_ring:
            return "shutdown_lane_ring";
        case DropCause::shutdown_scheduler:
            return "shutdown_scheduler";
        case DropCause::shutdown_nic_refused:
            return "shutdown_nic_refused";
        case DropCause::sched_fq_overflow:
            return "sched_fq_overflow";
        case DropCause::mac_control:
            return "mac_control";
        case DropCause::lossless_overflow:
            return "lossless_overflow";
        case DropCause::pfc_storm:
            return "pfc_storm";
    }
    return "unknown";
}

DropCause from_sched(sched::DropReason reason) {
    switch (reason) {
        case sched::DropReason::queue_full_packets:
            return DropCause::sched_queue_full_packets;
        case sched::DropReason::queue_full_bytes:
            return DropCause::sched_queue_full_bytes;
        case sched::DropReason::pool_exhausted:
            return DropCause::sched_pool_exhausted;
        case sched::DropReason::red_early:
            return DropCause::sched_red_early;
        case sched::DropReason::codel:
            return DropCause::sched_codel;
        case sched::DropReason::unknown_leaf:
            return DropCause::sched_unknown_leaf;
        case sched::DropReason::oversize:
            return DropCause::sched_oversize;
        case sched::DropReason::fq_overflow:
            return DropCause::sched_fq_overflow;
    }
    return DropCause::sched_unknown_leaf;
}

namespace {
template <typename F>
uint64_t sum(const std::vector<CounterSnapshot::Port>& ports, F field) {
    uint64_t total = 0;
    for (const auto& p : ports)
        total += field(p);
    return total;
}
}  // namespace

uint64_t CounterSnapshot::Lane::latency_mean_ns() const {
    return tx_packets == 0 ? 0 : latency_sum_ns / tx_packets;
}

uint64_t bucket_percentile_ns(const std::array<uint64_t, kLatencyBuckets>& buckets, uint64_t max_ns,
                              uint32_t quantile_ppm) {
    // Counted from the buckets, not a separate total: while the pipeline runs the two are read
    // at different moments.
    uint64_t count = 0;
    for (uint64_t n : buckets)
        count += n;
    if (count == 0) return 0;
    const uint64_t rank = LatencyLayout::rank_of(count, quantile_ppm);
    uint64_t seen = 0;
    uint32_t b = 0;
    for (; b < kLatencyBuckets - 1; ++b) {
        seen += buckets[b];
        if (seen >= rank) break;
    }
    return std::min(LatencyLayout::bucket_upper_ns(b), max_ns);
}

uint64_t CounterSnapshot::Lane::latency_percentile_ns(uint32_t quantile_ppm) const {
    return bucket_percentile_ns(latency_buckets, latency_max_ns, quantile_ppm);
}

Log2Histogram log2_histogram(const std::array<uint64_t, kLatencyBuckets>& buckets) {
    Log2Histogram out{};
    for (uint32_t b = 0; b < kLatencyBuckets; ++b) {
        const uint32_t i =
            std::min(LatencyLayout::bit_width_of_bucket(b), sched::kSojournHistogramBuckets - 1);
        out[i] += buckets[b];
    }
    return out;
}

LoopSnapshot loop_snapshot(const LcoreCounters& lcore) {
    LoopSnapshot s;
    s.busy_passes = lcore.loop.busy_passes.read();
    s.sum_ns = lcore.loop.busy_pass_sum_ns.read();
    s.max_ns = lcore.loop.busy_pass_max_ns.read();
    for (uint32_t b = 0; b < kLatencyBuckets; ++b)
        s.buckets[b] = lcore.loop.busy_pass_ns[b].read();
    s.poll_gap_max_ns = lcore.loop.poll_gap_max_ns.read();
    s.cpu = loop_thread_cpu(lcore.loop.thread);
    return s;
}

uint64_t CounterSnapshot::rx_packets() const {
    return sum(ports, [](const Port& p) { return p.rx_packets; });
}
uint64_t CounterSnapshot::rx_bytes() const {
    return sum(ports, [](const Port& p) { return p.rx_bytes; });
}
uint64_t CounterSnapshot::tx_packets() const {
    return sum(ports, [](const Port& p) { return p.tx_packets; });
}
uint64_t CounterSnapshot::tx_bytes() const {
    return sum(ports, [](const Port& p) { return p.tx_bytes; });
}
uint64_t CounterSnapshot::dropped() const {
    uint64_t total = 0;
    for (uint64_t d : drops)
        total += d;
    return total;
}

CounterSnapshot snapshot_totals(const std::vector<const LcoreCounters*>& lcores,
                                uint32_t port_count) {
    CounterSnapshot s;
    s.ports.resize(port_count);
    for (const LcoreCounters* c : lcores) {
        for (uint32_t p = 0; p < port_count; ++p) {
            s.ports[p].rx_packets += c->ports[p].rx_packets.read();
            s.ports[p].rx_bytes += c->ports[p].rx_bytes.read();
            s.ports[p].tx_packets += c->ports[p].tx_packets.read();
            s.ports[p].tx_bytes += c->ports[p].tx_bytes.read();
            s.ports[p].tx_refused += c->ports[p].tx_refused.read();
            s.ports[p].tx_link_bound_ns += c->ports[p].tx_link_bound_ns.read();
        }
        for (uint32_t d = 0; d < kDropCauseCount; ++d)
            s.drops[d] += c->drops[d].read();
    }
    return s;
}

CounterSnapshot snapshot(const std::vector<const LcoreCounters*>& lcores, uint32_t port_count,
                         uint32_t lane_count) {
    CounterSnapshot s = snapshot_totals(lcores, port_count);
    s.lanes.resize(lane_count);
    s.pfc.resize(port_count);
    for (const LcoreCounters* c : lcores) {
        for (uint32_t p = 0; p < port_count; ++p) {
            const PfcCounters& in = c->pfc[p];
            CounterSnapshot::Pfc& out = s.pfc[p];
            for (uint32_t q = 0; q < 8; ++q) {
                out.tx_frames[q] += in.tx_frames[q].read();
                out.tx_pause_ns[q] += in.tx_pause_ns[q].read();
                out.rx_frames[q] += in.rx_frames[q].read();
                out.rx_pause_ns[q] += in.rx_pause_ns[q].read();
                out.storms[q] += in.storms[q].read();
            }
        }
        for (uint32_t l = 0; l < lane_count; ++l) {
            const LaneCounters& in = c->lanes[l];
            CounterSnapshot::Lane& out = s.lanes[l];
            out.rx_packets += in.rx_packets.read();
            out.rx_bytes += in.rx_bytes.read();
            out.tx_packets += in.tx_packets.read();
            out.tx_bytes += in.tx_bytes.read();
            out.dropped += in.dropped.read();
            out.latency_sum_ns += in.latency_sum_ns.read();
            out.latency_max_ns = std::max(out.latency_max_ns, in.latency_max_ns.read());
            const LatencyBuckets& buckets = c->lane_latency[l];
            for (uint32_t b = 0; b < kLatencyBuckets; ++b)
                out.latency_buckets[b] += buckets[b].read();
        }
        const StageCounters& st = c->stages;
        const RelaxedCounter* fields[] = {
            &st.rx_classify_cycles,    &st.rx_classify_packets,     &st.sched_enqueue_cycles,
            &st.sched_enqueue_packets, &st.sched_dequeue_tx_cycles, &st.sched_dequeue_tx_packets};
        for (size_t i = 0; i < s.stages.size(); ++i)
            s.stages[i] += fields[i]->read();
    }
    for (uint32_t p = 0; p < port_count; ++p)
        for (uint32_t q = 0; q < 8; ++q)
            s.pfc[p].queued_bytes[q] = pfc_queued_bytes(lcores, p, q);
    return s;
}

uint64_t pfc_queued_bytes(const std::vector<const LcoreCounters*>& lcores, uint32_t port,
                          uint32_t priority) {
    // Every out first, then every in: a packet's in is counted before its out, so what the
    // outs read has all been counted in by the time the ins are read. The result may count a
    // packet that left meanwhile (a pause a moment early), never miss one still inside.
    uint64_t out = 0, in = 0;
    for (const LcoreCounters* c : lcores)
        out += c->pfc[port].out_bytes[priority].read();
    for (const LcoreCounters* c : lcores)
        in += c->pfc[port].in_bytes[priority].read();
    return in > out ? in - out : 0;
}

}  // namespace twinlane::dataplane
