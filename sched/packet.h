// The scheduler's view of one packet: a small descriptor, copied by value into preallocated
// queue slots. The scheduler never dereferences `handle`; it only touches packet bytes through
// `l3` to set ECN CE (and fix the IPv4 checksum). The dataplane fills it from the mbuf and the
// classifier's result; replay and tests fill it from their own buffers.
#pragma once

#include <cstdint>

namespace twinlane::sched {

struct Packet {
    void* handle = nullptr;     // owner's packet (rte_mbuf* in the dataplane); opaque here
    uint8_t* l3 = nullptr;      // IP header (v4 or v6, by its first nibble), for ECN marking;
                                // nullptr if not ECN-capable
    uint64_t arrival_ns = 0;    // stamped by the scheduler at enqueue (for sojourn time)
    uint32_t length_bytes = 0;  // frame length in bytes (no preamble/IFG), used by DRR/shapers
    uint32_t flow_hash = 0;     // selects the per-flow queue inside an `fq` leaf
    uint16_t leaf = 0;          // leaf queue id, resolved from the packet's class/job
    uint8_t job = 0;            // job_tag() of its job: whose share it takes in a fq_by_job leaf
    uint8_t user = 0;           // free for the owner (e.g. class id for reporting)
    uint32_t user_ns = 0;       // free for the owner too (the dataplane: ns waited before enqueue)
};
static_assert(sizeof(Packet) == 40, "user_ns fills what was padding: one slot stays 40 bytes");

// A job id as Packet::job: 8 bits of a multiplicative hash, so that jobs numbered by their
// subnets (job_by_source) differ in it as often as 256 values allow.
constexpr uint8_t job_tag(uint32_t job) {
    return static_cast<uint8_t>((job * 0x9e3779b1u) >> 24);
}

}  // namespace twinlane::sched
