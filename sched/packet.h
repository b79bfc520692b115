// The scheduler's view of one packet: a small descriptor, copied by value into preallocated
// queue slots. The scheduler never dereferences `handle`; it only touches packet bytes through
// `l3` to set ECN CE (and fix the IPv4 checksum). The dataplane fills it from the mbuf and the
// classifier's result; replay and tests fill it from their own buffers.
#pragma once

#include <cstdint>

namespace twinlane::sched {

struct Packet {
    void* handle = nullptr;     // owner's packet (rte_mbuf* in the dataplane); opaque here
    uint8_t* l3 = nullptr;      // IP header, for ECN marking; nullptr if not ECN-capable
    uint64_t arrival_ns = 0;    // stamped by the scheduler at enqueue (for sojourn time)
    uint32_t length_bytes = 0;  // frame length in bytes (no preamble/IFG), used by DRR/shapers
    uint32_t flow_hash = 0;     // selects the per-flow queue inside an `fq` leaf
    uint16_t leaf = 0;          // leaf queue id, resolved from the packet's class/job
    uint8_t ip_version = 0;     // 4 or 6 when l3 is set, else 0
    uint8_t user = 0;           // free for the owner (e.g. class id for reporting)
    uint32_t user_ns = 0;       // free for the owner too (the dataplane: ns waited before enqueue)
};
static_assert(sizeof(Packet) == 40, "user_ns fills what was padding: one slot stays 40 bytes");

}  // namespace twinlane::sched
