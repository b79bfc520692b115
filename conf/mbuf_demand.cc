#include "conf/mbuf_demand.h"

#include <algorithm>
#include <bit>

namespace twinlane::conf {
namespace {

uint64_t tree_mbufs(const TreeNode& node, uint32_t max_frame_bytes) {
    if (node.is_leaf()) return leaf_mbufs(node, max_frame_bytes);
    uint64_t total = 0;
    for (const TreeNode& child : node.children)
        total += tree_mbufs(child, max_frame_bytes);
    return total;
}

}  // namespace

uint64_t leaf_mbufs(const TreeNode& leaf, uint32_t max_frame_bytes) {
    const uint64_t by_bytes = leaf.limit_bytes / kMbufDataRoomBytes + leaf.limit_packets;
    const uint64_t by_packets = uint64_t{leaf.limit_packets} * mbufs_per_frame(max_frame_bytes);
    return std::min(by_bytes, by_packets);
}

uint32_t largest_frame_bytes(const Policy& policy) {
    uint32_t largest = 0;
    for (const PortPolicy& port : policy.ports)
        largest = std::max(largest, port.max_frame_bytes());
    return largest;
}

PortMbufDemand port_mbuf_demand(const Policy& policy, size_t port) {
    const PortPolicy& p = policy.ports[port];
    PortMbufDemand demand;
    demand.descriptors =
        uint64_t{p.rx_queues} * p.rx_descriptors + uint64_t{p.tx_queues} * p.tx_descriptors;
    if (const EgressTree* tree = policy.tree_for_port(port))
        demand.queues = tree_mbufs(tree->root, largest_frame_bytes(policy));
    return demand;
}

uint32_t auto_mempool_mbufs(const PortMbufDemand& demand) {
    const uint64_t fit = std::bit_ceil(demand.total() + 1) - 1;
    return static_cast<uint32_t>(
        std::clamp<uint64_t>(fit, kMinAutoMempoolMbufs, uint64_t{1} << 24));
}

}  // namespace twinlane::conf
