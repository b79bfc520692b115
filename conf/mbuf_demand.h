// How many mbufs a port's share of the pool must hold so that the pool never runs dry while
// every queue is within its limits. A dry pool stops RX for every class at once (a NIC then
// drops at its RX ring before anything is classified), so one class's backlog would cost
// another class its packets: the isolation the scheduler exists for. Pure; used by the loader
// (auto size, validation of an explicit `mempool`), by live reloads and by the pool's creation.
#pragma once

#include <cstdint>

#include "conf/policy.h"

namespace twinlane::conf {

// The data room of one pool mbuf (DPDK's RTE_MBUF_DEFAULT_DATAROOM; dataplane/ checks they are
// equal): a larger frame is received as a chain of mbufs.
inline constexpr uint32_t kMbufDataRoomBytes = 2048;
// Memory one pool mbuf takes: DPDK's 2176-byte buffer (headroom + data room), the 128-byte
// mbuf header and the mempool's own object header (dataplane/ checks the buffer size).
inline constexpr uint64_t kMbufFootprintBytes = 2176 + 128 + 64;

constexpr uint64_t mbufs_mib(uint64_t mbufs) {
    return (mbufs * kMbufFootprintBytes + (1 << 20) - 1) >> 20;
}

// The pool size of a port whose policy gives none and whose queues need less.
inline constexpr uint32_t kMinAutoMempoolMbufs = 8191;

constexpr uint64_t mbufs_per_frame(uint64_t frame_bytes) {
    return frame_bytes == 0 ? 1 : (frame_bytes + kMbufDataRoomBytes - 1) / kMbufDataRoomBytes;
}

// The most mbufs a leaf within its limits can hold, frames up to `max_frame_bytes`: each frame
// takes ceil(len / room) <= len / room + 1 mbufs, so at most limit_bytes / room + limit_packets,
// and never more than limit_packets frames of the largest size.
uint64_t leaf_mbufs(const TreeNode& leaf, uint32_t max_frame_bytes);

// The largest frame any port of the policy receives: what a queued packet may be.
uint32_t largest_frame_bytes(const Policy& policy);

struct PortMbufDemand {
    uint64_t descriptors = 0;  // RX and TX descriptor rings, each slot one mbuf (a segment)
    uint64_t queues = 0;       // every leaf of the port's egress tree full (0: not an egress)

    uint64_t total() const { return descriptors + queues; }
};

PortMbufDemand port_mbuf_demand(const Policy& policy, size_t port);

// The size a port's pool share gets when the policy gives none: the demand rounded up to
// 2^n - 1 (DPDK's optimum pool size), which leaves a live change room to raise limits, and at
// least kMinAutoMempoolMbufs.
uint32_t auto_mempool_mbufs(const PortMbufDemand& demand);

}  // namespace twinlane::conf
