#include "dataplane/pfc_port.h"

#include <rte_ethdev.h>

#include "dataplane/packet_meta.h"
#include "pfc/frame.h"

namespace twinlane::dataplane {
namespace {

void publish(const PfcAccounts& accounts, LcoreCounters& c, PfcTally& tally, bool in) {
    if (!tally.any) return;
    for (uint32_t tag = 1; tag <= accounts.count; ++tag) {
        if (tally.bytes[tag] == 0) continue;
        PfcCounters& counters = c.pfc[accounts.ingress_port[tag - 1]];
        RelaxedCounter& counter = in ? counters.in_bytes[accounts.priority[tag - 1]]
                                     : counters.out_bytes[accounts.priority[tag - 1]];
        counter.add(tally.bytes[tag]);
        tally.bytes[tag] = 0;
    }
    tally.any = false;
}

// The frames received on the port since the last round, in arrival order.
bool take_received(PfcPort& port, LcoreCounters& c) {
    rte_mbuf* frames[32];
    bool any = false;
    unsigned n = 0;
    while ((n = rte_ring_dequeue_burst(port.received, reinterpret_cast<void**>(frames), 32,
                                       nullptr)) != 0) {
        for (unsigned i = 0; i < n; ++i) {
            rte_mbuf* m = frames[i];
            const auto frame =
                pfc::decode(rte_pktmbuf_mtod(m, const uint8_t*), rte_pktmbuf_data_len(m));
            if (frame) {
                port.receiver.on_frame(*frame, packet_meta(m, port.meta_offset)->arrival_ns);
                for (uint32_t p = 0; p < pfc::kPriorities; ++p)
                    if (frame->speaks_for(p)) c.pfc[port.policy_port].rx_frames[p].add(1);
                any = true;
            }
            rte_pktmbuf_free(m);
        }
    }
    return any;
}

void apply_holds(PfcPort& port, sched::Scheduler& scheduler) {
    port.storm_drop_lanes = 0;
    for (uint32_t p = 0; p < pfc::kPriorities; ++p) {
        if (port.pause_node[p] < 0) continue;
        const bool storm = port.receiver.storm(p);
        scheduler.hold(static_cast<uint32_t>(port.pause_node[p]),
                       storm ? 0 : port.receiver.paused_until(p));
        if (storm && port.receiver.watchdog().action == pfc::StormAction::drop) {
            for (uint32_t lane = 0; lane < port.lane_priority.size(); ++lane)
                if (port.lane_priority[lane] == p) port.storm_drop_lanes |= 1u << lane;
        }
    }
}

// Sends `frame` out of the port ahead of the round's data; false if the NIC took nothing.
bool send(PfcPort& port, const pfc::PauseFrame& frame) {
    rte_mbuf* m = rte_pktmbuf_alloc(port.pool);
    if (m == nullptr) return false;
    uint8_t* data = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, pfc::kFrameBytes));
    if (data == nullptr) {
        rte_pktmbuf_free(m);
        return false;
    }
    pfc::encode(frame, port.mac, data);
    if (rte_eth_tx_burst(port.dpdk_port, 0, &m, 1) == 1) return true;
    rte_pktmbuf_free(m);
    return false;
}

void pause_senders(PfcPort& port, const std::vector<const LcoreCounters*>& all_lcores,
                   LcoreCounters& c, uint64_t now_ns) {
    std::array<uint64_t, pfc::kPriorities> occupancy{};
    for (uint32_t p = 0; p < pfc::kPriorities; ++p) {
        if (port.generator.lossless(p))
            occupancy[p] = pfc_queued_bytes(all_lcores, port.policy_port, p);
    }
    const std::optional<pfc::PauseFrame> frame = port.generator.update(occupancy, now_ns);
    if (!frame) return;
    if (!send(port, *frame)) {  // asked for again next round
        port.generator.unsent(*frame);
        return;
    }
    PfcCounters& counters = c.pfc[port.policy_port];
    for (uint32_t p = 0; p < pfc::kPriorities; ++p) {
        if (!frame->speaks_for(p)) continue;
        counters.tx_frames[p].add(1);
        if (frame->quanta[p] != 0 && port.tx_paused_since[p] == 0) {
            port.tx_paused_since[p] = now_ns;
        } else if (frame->quanta[p] == 0 && port.tx_paused_since[p] != 0) {
            port.tx_paused_ns[p] += now_ns - port.tx_paused_since[p];
            port.tx_paused_since[p] = 0;
        }
    }
}

void publish_pause_times(PfcPort& port, LcoreCounters& c, uint64_t now_ns) {
    PfcCounters& counters = c.pfc[port.policy_port];
    for (uint32_t p = 0; p < pfc::kPriorities; ++p) {
        if (port.pause_node[p] >= 0) {
            counters.rx_pause_ns[p].set(port.receiver.paused_ns(p, now_ns));
            counters.storms[p].set(port.receiver.storms(p));
        }
        const uint64_t open = port.tx_paused_since[p] != 0 ? now_ns - port.tx_paused_since[p] : 0;
        if (open != 0 || port.tx_paused_ns[p] != 0)
            counters.tx_pause_ns[p].set(port.tx_paused_ns[p] + open);
    }
}

}  // namespace

void PfcTally::publish_out(const PfcAccounts& accounts, LcoreCounters& c) {
    publish(accounts, c, *this, false);
}
void PfcTally::publish_in(const PfcAccounts& accounts, LcoreCounters& c) {
    publish(accounts, c, *this, true);
}

uint16_t take_mac_control(rte_mbuf** pkts, uint16_t n, const PfcRx& rx, int meta_offset,
                          uint64_t now_ns, PortCounters& port, LcoreCounters& c,
                          uint64_t* arrival_ns) {
    uint16_t kept = 0;
    uint64_t consumed = 0;
    uint64_t consumed_bytes = 0;
    for (uint16_t i = 0; i < n; ++i) {
        rte_mbuf* m = pkts[i];
        if (!pfc::is_mac_control(rte_pktmbuf_mtod(m, const uint8_t*), rte_pktmbuf_data_len(m)))
            [[likely]] {
            if (arrival_ns != nullptr) arrival_ns[kept] = arrival_ns[i];
            pkts[kept++] = m;
            continue;
        }
        ++consumed;
        consumed_bytes += rte_pktmbuf_pkt_len(m);
        if (rx.received != nullptr) {
            packet_meta(m, meta_offset)->arrival_ns = now_ns;
            if (rte_ring_enqueue(rx.received, m) == 0) continue;
        }
        rte_pktmbuf_free(m);
    }
    if (consumed != 0) [[unlikely]] {
        c.drops[static_cast<uint32_t>(DropCause::mac_control)].add(consumed);
        port.rx_packets.add(consumed);
        port.rx_bytes.add(consumed_bytes);
    }
    return kept;
}

void pfc_round(PfcPort& port, sched::Scheduler& scheduler,
               const std::vector<const LcoreCounters*>& all_lcores, LcoreCounters& c,
               uint64_t now_ns) {
    const bool received = rte_ring_count(port.received) != 0 && take_received(port, c);
    if (port.receiver.tick(now_ns) || received) apply_holds(port, scheduler);
    if (port.generator.enabled()) pause_senders(port, all_lcores, c, now_ns);
    publish_pause_times(port, c, now_ns);
}

void pfc_reapply_holds(PfcPort& port, sched::Scheduler& scheduler) {
    if (port.enabled) apply_holds(port, scheduler);
}

}  // namespace twinlane::dataplane
