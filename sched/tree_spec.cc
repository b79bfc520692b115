#include "sched/tree_spec.h"

#include <string_view>
#include <unordered_map>

namespace twinlane::sched {

const char* to_string(NodeKind kind) {
    switch (kind) {
        case NodeKind::strict:
            return "strict";
        case NodeKind::drr:
            return "drr";
        case NodeKind::fifo:
            return "fifo";
        case NodeKind::fq:
            return "fq";
    }
    return "unknown";
}

std::string ValidationError::to_string() const {
    std::string text;
    if (!node.empty()) text += "node '" + node + "': ";
    if (!field.empty()) text += "field '" + field + "': ";
    return text + message;
}

namespace {

bool is_leaf(NodeKind kind) {
    return kind == NodeKind::fifo || kind == NodeKind::fq;
}

ValidationError error(const std::string& node, const char* field, std::string message) {
    return ValidationError{node, field, std::move(message)};
}

std::optional<ValidationError> validate_shaper(const NodeSpec& node) {
    const ShaperSpec& shaper = node.shaper;
    if (shaper.rate_bits_per_sec > kMaxRateBitsPerSec) {
        return error(node.name, "shaper.rate_bits_per_sec", "must be <= 10 Tb/s");
    }
    if (shaper.rate_bits_per_sec > 0 &&
        (shaper.burst_bytes == 0 || shaper.burst_bytes > kMaxBurstBytes)) {
        return error(node.name, "shaper.burst_bytes",
                     "must be in [1, 268435456] bytes when a rate is set");
    }
    return std::nullopt;
}

std::optional<ValidationError> validate_leaf(const NodeSpec& node, const TreeSpec& spec) {
    if (node.limit_packets == 0) return error(node.name, "limit_packets", "must be > 0");
    if (node.limit_bytes < spec.max_packet_bytes) {
        return error(node.name, "limit_bytes", "must be >= max_packet_bytes");
    }
    if (node.kind == NodeKind::fq) {
        const uint32_t buckets = node.fq_buckets;
        if (buckets == 0 || buckets > kMaxFqBuckets || (buckets & (buckets - 1)) != 0) {
            return error(node.name, "fq_buckets", "must be a power of two in [1, 1048576]");
        }
    }
    if (node.codel.enabled) {
        if (node.codel.target_ns == 0) return error(node.name, "codel.target_ns", "must be > 0");
        if (node.codel.interval_ns < node.codel.target_ns) {
            return error(node.name, "codel.interval_ns", "must be >= codel.target_ns");
        }
    }
    if (node.red.enabled) {
        if (node.red.kmax_bytes <= node.red.kmin_bytes) {
            return error(node.name, "red.kmax_bytes", "must be > red.kmin_bytes");
        }
        if (!(node.red.pmax > 0.0 && node.red.pmax <= 1.0)) {
            return error(node.name, "red.pmax", "must be in (0, 1]");
        }
    }
    return std::nullopt;
}

}  // namespace

std::optional<ValidationError> validate(const TreeSpec& spec) {
    if (spec.nodes.empty()) return error("", "nodes", "tree has no nodes");
    if (spec.nodes.size() > kMaxNodes) return error("", "nodes", "more than 4096 nodes");
    if (spec.max_packet_bytes < 64 || spec.max_packet_bytes > 65535) {
        return error("", "max_packet_bytes", "must be in [64, 65535]");
    }

    std::unordered_map<std::string_view, size_t> index_by_name;
    for (size_t i = 0; i < spec.nodes.size(); ++i) {
        const NodeSpec& node = spec.nodes[i];
        if (node.name.empty()) {
            return error("#" + std::to_string(i), "name", "must not be empty");
        }
        if (!index_by_name.emplace(node.name, i).second) {
            return error(node.name, "name", "duplicate node name");
        }
    }

    size_t root = spec.nodes.size();
    std::vector<uint32_t> child_count(spec.nodes.size(), 0);
    uint64_t leaf_count = 0;
    uint64_t total_limit_packets = 0;
    for (size_t i = 0; i < spec.nodes.size(); ++i) {
        const NodeSpec& node = spec.nodes[i];
        if (node.parent.empty()) {
            if (root != spec.nodes.size()) {
                return error(node.name, "parent",
                             "second root (first root is '" + spec.nodes[root].name + "')");
            }
            root = i;
        } else {
            const auto parent = index_by_name.find(node.parent);
            if (parent == index_by_name.end()) {
                return error(node.name, "parent", "unknown parent '" + node.parent + "'");
            }
            const NodeSpec& parent_node = spec.nodes[parent->second];
            if (is_leaf(parent_node.kind)) {
                return error(node.name, "parent",
                             "parent '" + node.parent + "' is a " + to_string(parent_node.kind) +
                                 " leaf and cannot have children");
            }
            ++child_count[parent->second];
            if (parent_node.kind == NodeKind::drr &&
                (node.weight == 0 || node.weight > kMaxWeight)) {
                return error(node.name, "weight", "must be in [1, 65536] under a drr parent");
            }
        }
        if (auto shaper_error = validate_shaper(node)) return shaper_error;
        if (is_leaf(node.kind)) {
            ++leaf_count;
            total_limit_packets += node.limit_packets;
            if (auto leaf_error = validate_leaf(node, spec)) return leaf_error;
        }
    }
    if (root == spec.nodes.size()) {
        return error("", "parent", "no root: every node has a parent, so the tree has a cycle");
    }

    // Cycles and depth: every node's parent chain must reach the root within kMaxDepth steps.
    for (const NodeSpec& node : spec.nodes) {
        const NodeSpec* current = &node;
        uint32_t depth = 0;
        while (!current->parent.empty()) {
            current = &spec.nodes[index_by_name.at(current->parent)];
            ++depth;
            if (current == &node) {
                return error(node.name, "parent", "cycle: the node is its own ancestor");
            }
            if (depth > spec.nodes.size()) {
                return error(node.name, "parent", "parent chain does not reach the root (cycle)");
            }
        }
        if (depth >= kMaxDepth) return error(node.name, "parent", "tree deeper than 16 levels");
    }

    for (size_t i = 0; i < spec.nodes.size(); ++i) {
        const NodeSpec& node = spec.nodes[i];
        if (is_leaf(node.kind)) continue;
        if (child_count[i] == 0) {
            return error(node.name, "kind",
                         std::string(to_string(node.kind)) + " node has no children");
        }
        if (node.kind == NodeKind::strict && child_count[i] > kMaxStrictChildren) {
            return error(node.name, "kind", "strict node has more than 64 children");
        }
    }
    // Strict siblings need distinct priorities: "served in priority order" must be a total order.
    std::unordered_map<std::string_view, std::unordered_map<uint32_t, std::string_view>> seen;
    for (const NodeSpec& node : spec.nodes) {
        if (node.parent.empty()) continue;
        if (spec.nodes[index_by_name.at(node.parent)].kind != NodeKind::strict) continue;
        auto [it, inserted] = seen[node.parent].emplace(node.priority, node.name);
        if (!inserted) {
            return error(node.name, "priority",
                         "same priority " + std::to_string(node.priority) + " as sibling '" +
                             std::string(it->second) + "'");
        }
    }

    if (leaf_count > 65535) return error("", "nodes", "more than 65535 leaves");
    if (total_limit_packets > kMaxPoolPackets || spec.pool_packets > kMaxPoolPackets) {
        return error("", "pool_packets", "pool larger than 2^28 packets");
    }
    if (!spec.default_leaf.empty()) {
        const auto it = index_by_name.find(spec.default_leaf);
        if (it == index_by_name.end() || !is_leaf(spec.nodes[it->second].kind)) {
            return error("", "default_leaf", "'" + spec.default_leaf + "' is not a leaf");
        }
    }
    return std::nullopt;
}

}  // namespace twinlane::sched
