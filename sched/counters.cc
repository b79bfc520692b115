#include "sched/counters.h"

#include <algorithm>

namespace twinlane::sched {

const char* to_string(DropReason reason) {
    switch (reason) {
        case DropReason::queue_full_packets:
            return "queue_full_packets";
        case DropReason::queue_full_bytes:
            return "queue_full_bytes";
        case DropReason::pool_exhausted:
            return "pool_exhausted";
        case DropReason::red_early:
            return "red_early";
        case DropReason::codel:
            return "codel";
        case DropReason::unknown_leaf:
            return "unknown_leaf";
        case DropReason::oversize:
            return "oversize";
        case DropReason::fq_overflow:
            return "fq_overflow";
    }
    return "unknown";
}

bool is_room_drop(std::string_view reason_name) {
    for (uint32_t r = 0; r < kDropReasonCount; ++r) {
        const auto reason = static_cast<DropReason>(r);
        if (is_room_drop(reason) && reason_name == to_string(reason)) return true;
    }
    return false;
}

void QueueCounters::add(const QueueCounters& other) {
    packets_in += other.packets_in;
    bytes_in += other.bytes_in;
    packets_out += other.packets_out;
    bytes_out += other.bytes_out;
    for (uint32_t i = 0; i < kDropReasonCount; ++i) {
        drop_packets[i] += other.drop_packets[i];
        drop_bytes[i] += other.drop_bytes[i];
    }
    ecn_marked_red += other.ecn_marked_red;
    ecn_marked_codel += other.ecn_marked_codel;
    depth_packets += other.depth_packets;
    depth_bytes += other.depth_bytes;
    migrated_out_packets += other.migrated_out_packets;
    sojourn_last_ns = std::max(sojourn_last_ns, other.sojourn_last_ns);
    sojourn_max_ns = std::max(sojourn_max_ns, other.sojourn_max_ns);
    sojourn_sum_ns += other.sojourn_sum_ns;
    for (uint32_t i = 0; i < kSojournHistogramBuckets; ++i) {
        sojourn_log2_histogram[i] += other.sojourn_log2_histogram[i];
    }
}

QueueCounters LiveQueueCounters::read() const {
    QueueCounters c;
    c.packets_in = packets_in.read();
    c.bytes_in = bytes_in.read();
    c.packets_out = packets_out.read();
    c.bytes_out = bytes_out.read();
    for (uint32_t i = 0; i < kDropReasonCount; ++i) {
        c.drop_packets[i] = drop_packets[i].read();
        c.drop_bytes[i] = drop_bytes[i].read();
    }
    c.ecn_marked_red = ecn_marked_red.read();
    c.ecn_marked_codel = ecn_marked_codel.read();
    c.depth_packets = depth_packets.read();
    c.depth_bytes = depth_bytes.read();
    c.migrated_out_packets = migrated_out_packets.read();
    c.sojourn_last_ns = sojourn_last_ns.read();
    c.sojourn_max_ns = sojourn_max_ns.read();
    c.sojourn_sum_ns = sojourn_sum_ns.read();
    for (uint32_t i = 0; i < kSojournHistogramBuckets; ++i)
        c.sojourn_log2_histogram[i] = sojourn_log2_histogram[i].read();
    return c;
}

void LiveQueueCounters::reset() {
    *this = LiveQueueCounters{};
}

}  // namespace twinlane::sched
