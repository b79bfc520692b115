// Per-leaf and per-node counters, and the reasons a packet can be dropped.
//
// Leaves count on the hot path (plain increments, single writer); inner nodes' counters are
// summed from their leaves when read (Scheduler::node_counters), so enqueue/dequeue touch only
// the leaf's block. Units: packets, bytes, nanoseconds. Thread-safety: read them from the
// owning lcore, or accept torn reads of individual 64-bit values from elsewhere.
#pragma once

#include <array>
#include <cstdint>

#include "sched/packet.h"

namespace twinlane::sched {

enum class DropReason : uint8_t {
    queue_full_packets,  // leaf at limit_packets (tail drop; also ECT packets)
    queue_full_bytes,    // leaf would exceed limit_bytes (tail drop)
    pool_exhausted,      // shared descriptor pool empty (pool smaller than the sum of limits)
    red_early,           // RED signal on a Not-ECT packet with drop_non_ect
    codel,               // CoDel drop at dequeue (Not-ECT, or ECN disabled)
    unknown_leaf,        // Packet::leaf is not a leaf id of this tree
    oversize,            // length_bytes is 0 or above TreeSpec::max_packet_bytes
    fq_overflow,         // fq leaf full: a queued packet at the head of the fattest flow,
                         // dropped to admit an arrival of a smaller flow (fq_codel's rule)
};
inline constexpr uint32_t kDropReasonCount = 8;
const char* to_string(DropReason reason);

// A packet the scheduler refuses or discards; the caller owns it again and frees it.
struct DroppedPacket {
    Packet packet;
    DropReason reason = DropReason::queue_full_packets;
};

inline constexpr uint32_t kSojournHistogramBuckets = 40;  // bucket i: [2^(i-1), 2^i) ns; 0: 0

struct QueueCounters {
    uint64_t packets_in = 0;
    uint64_t bytes_in = 0;
    uint64_t packets_out = 0;
    uint64_t bytes_out = 0;
    std::array<uint64_t, kDropReasonCount> drop_packets{};
    std::array<uint64_t, kDropReasonCount> drop_bytes{};
    uint64_t ecn_marked_red = 0;    // CE set at enqueue by RED
    uint64_t ecn_marked_codel = 0;  // CE set at dequeue by CoDel
    uint64_t depth_packets = 0;
    uint64_t depth_bytes = 0;
    uint64_t migrated_out_packets = 0;  // moved to another tree by Scheduler::migrate_from
    uint64_t sojourn_last_ns = 0;
    uint64_t sojourn_max_ns = 0;
    uint64_t sojourn_sum_ns = 0;  // mean = sojourn_sum_ns / packets_out
    std::array<uint64_t, kSojournHistogramBuckets> sojourn_log2_histogram{};

    uint64_t dropped_packets() const {
        uint64_t total = 0;
        for (uint64_t d : drop_packets) total += d;
        return total;
    }
    uint64_t drops(DropReason reason) const { return drop_packets[static_cast<uint32_t>(reason)]; }

    void add(const QueueCounters& other);
};

}  // namespace twinlane::sched
