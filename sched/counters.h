// Per-leaf and per-node counters, and the reasons a packet can be dropped.
//
// Leaves count on the hot path (LiveQueueCounters: one writer, relaxed atomics, so another
// thread may read them while the owning lcore runs); inner nodes' counters are summed from their
// leaves when read (Scheduler::node_counters), so enqueue/dequeue touch only the leaf's block.
// QueueCounters is the plain value a read returns. Units: packets, bytes, nanoseconds. Read from
// another thread, each value is whole; a set of them is not one snapshot while traffic flows.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "sched/packet.h"
#include "sched/relaxed_counter.h"

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

// A drop for want of room (limits, pool, a full fq leaf), as opposed to AQM or a bad packet: for a
// lossless packet, the sign that its sender ignored PFC or the headroom is short.
inline bool is_room_drop(DropReason reason) {
    return reason == DropReason::queue_full_packets || reason == DropReason::queue_full_bytes ||
           reason == DropReason::pool_exhausted || reason == DropReason::fq_overflow;
}
// The same for a reason named by to_string() (replay's disciplines hand back names).
bool is_room_drop(std::string_view reason_name);

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
        for (uint64_t d : drop_packets)
            total += d;
        return total;
    }
    uint64_t drops(DropReason reason) const { return drop_packets[static_cast<uint32_t>(reason)]; }

    void add(const QueueCounters& other);
};

// The owning lcore's side of QueueCounters.
struct LiveQueueCounters {
    RelaxedCounter packets_in, bytes_in, packets_out, bytes_out;
    std::array<RelaxedCounter, kDropReasonCount> drop_packets, drop_bytes;
    RelaxedCounter ecn_marked_red, ecn_marked_codel;
    RelaxedCounter depth_packets, depth_bytes;  // published with every change of the leaf's depth
    RelaxedCounter migrated_out_packets;
    RelaxedCounter sojourn_last_ns, sojourn_max_ns, sojourn_sum_ns;
    std::array<RelaxedCounter, kSojournHistogramBuckets> sojourn_log2_histogram;

    void count_drop(DropReason reason, uint32_t length_bytes) {
        drop_packets[static_cast<uint32_t>(reason)].add(1);
        drop_bytes[static_cast<uint32_t>(reason)].add(length_bytes);
    }
    QueueCounters read() const;
    void reset();
};

}  // namespace twinlane::sched
