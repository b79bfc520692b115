// Per-packet metadata carried in the mbuf between the RX and scheduler stages, in a
// registered dynamic field (rte_mbuf_dynfield_register): written once by the classifier stage,
// read by the scheduler stage of the egress port, only for packets that cross a lane ring (run
// to completion, the scheduler's descriptor is filled from the classifier's result and carries
// class and arrival on to TX). 24 bytes, 8-byte aligned.
//
// register_packet_meta() runs once after EAL init (control path); packet_meta() is a pointer
// addition on the hot path. Thread-safety: a packet's metadata belongs to the lcore that
// holds the packet.
#pragma once

#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>

#include <cstdint>
#include <string>

namespace twinlane::dataplane {

struct PacketMeta {
    uint64_t arrival_ns = 0;  // RX burst time (TscClock ns)
    uint32_t job_id = 0;
    uint32_t flow_hash = 0;
    uint16_t l3_offset = 0;  // outer IP header offset in the frame
    uint8_t class_id = 0;
    uint8_t ip_version = 0;   // 4, 6, or 0 (not IP)
    uint8_t ecn_capable = 0;  // 1: the scheduler may set CE at l3_offset
    // The flow was reclassified with this packet (classifier::Result::previous_class): the
    // class its earlier packets got, classifier::kNoPreviousClass otherwise. Their job is in
    // the mbuf's scheduler field, hash.sched.queue_id (previous_job()): the dynfield area is
    // 36 bytes and the pcap PMD needs 8 of them for its RX timestamp.
    uint8_t previous_class = 0xFF;
    // Position in its RX burst: with arrival_ns, the packet's place in its RX queue's arrival
    // order (lane_admission.h sorts by both when a flow changes class).
    uint8_t burst_index = 0;
    // The packet's PFC account while it is inside twinlane (dataplane/pfc_port.h); 0: none.
    uint8_t pfc_tag = 0;
};
static_assert(sizeof(PacketMeta) == 24);

inline void set_previous_job(rte_mbuf* m, uint32_t job) {
    m->hash.sched.queue_id = job;
}
inline uint32_t previous_job(const rte_mbuf* m) {
    return m->hash.sched.queue_id;
}

// Registers the dynfield (idempotent: the same name gives the same offset) and returns its
// byte offset in the mbuf, or -1 with `error` filled.
int register_packet_meta(std::string& error);

// `offset` comes from register_packet_meta(); the stages keep it in their context.
inline PacketMeta* packet_meta(rte_mbuf* m, int offset) {
    return RTE_MBUF_DYNFIELD(m, offset, PacketMeta*);
}

}  // namespace twinlane::dataplane
