// Priority flow control in the realtime pipeline (a port's `pfc: software`; the logic is pfc/).
//
//   RX lcore       MAC control frames (EtherType 0x8808) are taken out of every RX burst before
//                  classification and never forwarded; on a PFC port they go, with their arrival
//                  time, to the port's egress task (PfcRx::received, an MP/SC ring). Packets of a
//                  lossless class with its priority are tagged (PacketMeta::pfc_tag,
//                  sched::Packet::user) and their bytes counted in (LcoreCounters::pfc).
//   TX lcore       a tagged packet's bytes are counted out where it leaves twinlane (sent,
//                  dropped, discarded at shutdown). Before each transmit, the lcore owning a PFC
//                  port's egress task (PfcPort): honours the frames received on the port
//                  (pfc::PauseReceiver: the priority's entry node in the port's tree is held,
//                  sched::Scheduler::hold, every other leaf keeps being served; the watchdog
//                  releases a storming priority and, by policy, drops its packets) and pauses the
//                  port's sender when the port's lossless bytes inside twinlane (in less out over
//                  every lcore) cross xoff (pfc::PauseGenerator), sending the frame out of the
//                  port ahead of this round's data.
//
// Everything is set up before launch; per loop a PFC port costs a few relaxed loads when
// nothing happens.
#pragma once

#include <rte_mbuf.h>
#include <rte_ring.h>

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "conf/compile.h"
#include "dataplane/pipeline_counters.h"
#include "pfc/pause_generator.h"
#include "pfc/pause_receiver.h"
#include "pfc/priority.h"
#include "sched/scheduler.h"

namespace twinlane::dataplane {

// What an RX task needs: where to hand the MAC control frames its port receives, and how to tag
// the lossless packets it admits.
struct PfcRx {
    rte_ring* received = nullptr;  // the port's egress task's; null: frames are freed
    const pfc::DscpPriorityMap* dscp_priority = nullptr;
    uint32_t lossless_lanes = 0;  // bit l: lane l's class is lossless on the egress tree
    std::array<uint8_t, 16> lane_priority{};  // its bound priority
    std::array<uint8_t, 16> lane_tag{};       // this ingress port's account tag for that lane
};

// A PFC port as its egress task's lcore runs it.
struct PfcPort {
    bool enabled = false;  // pfc: software
    uint16_t dpdk_port = 0;
    uint16_t policy_port = 0;
    uint64_t rate_bits_per_sec = 0;
    std::array<uint8_t, 6> mac{};
    rte_mempool* pool = nullptr;  // PFC frames to send come from here
    int meta_offset = -1;

    // Sending: this port as the ingress of lossless traffic.
    pfc::PauseGenerator generator;
    std::array<uint64_t, pfc::kPriorities> tx_paused_since{};  // 0: not asking for a pause
    std::array<uint64_t, pfc::kPriorities> tx_paused_ns{};
    // Honouring: this port as egress.
    pfc::PauseReceiver receiver;
    rte_ring* received = nullptr;  // owned by the pipeline (PfcRx::received of its RX tasks)
    std::array<int32_t, pfc::kPriorities> pause_node{};  // in the port's egress tree; -1 none
    uint32_t storm_drop_lanes = 0;  // lanes whose priority storms, watchdog action drop
    std::array<uint8_t, 16> lane_priority{};
};

// The accounts of one egress tree (conf::CompiledEgress::pfc_accounts), by tag - 1.
struct PfcAccounts {
    std::array<uint16_t, conf::kMaxPfcAccounts> ingress_port{};
    std::array<uint8_t, conf::kMaxPfcAccounts> priority{};
    uint32_t count = 0;
};

// Bytes of tagged packets leaving twinlane, tallied per tag over a burst and published once.
struct PfcTally {
    std::array<uint64_t, conf::kMaxPfcAccounts + 1> bytes{};  // by tag; [0] unused
    bool any = false;
    void add(uint8_t tag, uint64_t length) {
        if (tag == 0) return;
        bytes[tag] += length;
        any = true;
    }
    // Adds the tallies to `in` or `out` of `c`, then clears them.
    void publish_out(const PfcAccounts& accounts, LcoreCounters& c);
    void publish_in(const PfcAccounts& accounts, LcoreCounters& c);
};

// Takes the MAC control frames out of `pkts[0..n)` (compacting the rest, in order, and
// `arrival_ns` with them when given); hands them to `rx.received` stamped with `now_ns`, or
// frees them; counts them received on `port` and consumed. Returns the packets left.
uint16_t take_mac_control(rte_mbuf** pkts, uint16_t n, const PfcRx& rx, int meta_offset,
                          uint64_t now_ns, PortCounters& port, LcoreCounters& c,
                          uint64_t* arrival_ns = nullptr);

// The tag of a packet admitted from this RX task into `lane` (0: not counted).
inline uint8_t pfc_tag_of(const PfcRx& rx, uint8_t lane, const uint8_t* frame, uint32_t readable) {
    if (((rx.lossless_lanes >> lane) & 1) == 0) [[likely]]
        return 0;
    const uint8_t priority = pfc::packet_priority(frame, readable, *rx.dscp_priority);
    return priority == rx.lane_priority[lane] ? rx.lane_tag[lane] : 0;
}

// Before the round's transmit: honour what the port received, pause its sender if it must.
void pfc_round(PfcPort& port, sched::Scheduler& scheduler,
               const std::vector<const LcoreCounters*>& all_lcores, LcoreCounters& c,
               uint64_t now_ns);

// Re-applies the holds after the egress tree was rebuilt (a new tree starts without them).
void pfc_reapply_holds(PfcPort& port, sched::Scheduler& scheduler);

}  // namespace twinlane::dataplane
