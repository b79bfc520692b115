#include "control/stats_json.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

namespace twinlane::control {
namespace {

using nlohmann::json;

constexpr std::array<const char*, 4> kKindNames{"strict", "drr", "fq", "fifo"};

void add_node_stats(const conf::Policy& policy, size_t egress_index, const conf::TreeNode& node,
                    const std::string& parent, const NodeCountersReader& read_node, json& out) {
    json entry = {{"port", policy.ports[policy.egress_trees[egress_index].port].name},
                  {"node", node.name},
                  {"parent", parent},
                  {"kind", kKindNames[static_cast<size_t>(node.kind)]},
                  {"leaf", node.is_leaf()},
                  {"class", nullptr},
                  {"counters", queue_counters_to_json(read_node(egress_index, node.name))}};
    if (node.class_index) entry["class"] = policy.classes[*node.class_index].name;
    out.push_back(std::move(entry));
    for (const conf::TreeNode& child : node.children) {
        add_node_stats(policy, egress_index, child, node.name, read_node, out);
    }
}

const conf::TreeNode* find_class_entry(const conf::TreeNode& node, size_t class_index) {
    if (node.class_index == class_index) return &node;
    for (const conf::TreeNode& child : node.children) {
        if (const conf::TreeNode* found = find_class_entry(child, class_index)) return found;
    }
    return nullptr;
}

std::string address_text(const classifier::PacketKey& key, bool source) {
    const uint8_t version = classifier::key_ip_version(key);
    if (version != 4 && version != 6) return "";
    std::array<uint8_t, 16> bytes{};
    const uint64_t hi = key.words[source ? 0 : 2];
    const uint64_t lo = key.words[source ? 1 : 3];
    for (size_t i = 0; i < 8; ++i) {
        bytes[i] = static_cast<uint8_t>(hi >> (56 - 8 * i));
        bytes[8 + i] = static_cast<uint8_t>(lo >> (56 - 8 * i));
    }
    std::array<char, INET6_ADDRSTRLEN> text{};
    if (inet_ntop(version == 6 ? AF_INET6 : AF_INET, bytes.data(), text.data(), text.size()) ==
        nullptr) {
        return "";
    }
    return text.data();
}

}  // namespace

json queue_counters_to_json(const sched::QueueCounters& counters) {
    json drops = json::object();
    json drop_bytes = json::object();
    for (uint32_t i = 0; i < sched::kDropReasonCount; ++i) {
        const char* reason = sched::to_string(static_cast<sched::DropReason>(i));
        drops[reason] = counters.drop_packets[i];
        drop_bytes[reason] = counters.drop_bytes[i];
    }
    return {{"packets_in", counters.packets_in},
            {"bytes_in", counters.bytes_in},
            {"packets_out", counters.packets_out},
            {"bytes_out", counters.bytes_out},
            {"drops", std::move(drops)},
            {"drop_bytes", std::move(drop_bytes)},
            {"dropped_packets", counters.dropped_packets()},
            {"ecn_marked_red", counters.ecn_marked_red},
            {"ecn_marked_codel", counters.ecn_marked_codel},
            {"depth_packets", counters.depth_packets},
            {"depth_bytes", counters.depth_bytes},
            {"migrated_out_packets", counters.migrated_out_packets},
            {"sojourn_last_ns", counters.sojourn_last_ns},
            {"sojourn_max_ns", counters.sojourn_max_ns},
            {"sojourn_sum_ns", counters.sojourn_sum_ns},
            {"sojourn_log2_histogram", counters.sojourn_log2_histogram}};
}

json queue_stats_json(const conf::Policy& policy, const NodeCountersReader& read_node) {
    json out = json::array();
    for (size_t i = 0; i < policy.egress_trees.size(); ++i) {
        add_node_stats(policy, i, policy.egress_trees[i].root, "", read_node, out);
    }
    return out;
}

json class_stats_json(const conf::Policy& policy, const NodeCountersReader& read_node,
                      const ClassifiedCountersReader& read_classified,
                      const ClassLatencyReader& read_latency) {
    json out = json::array();
    for (size_t cls = 0; cls < policy.classes.size(); ++cls) {
        sched::QueueCounters queue;
        for (size_t i = 0; i < policy.egress_trees.size(); ++i) {
            if (const conf::TreeNode* entry = find_class_entry(policy.egress_trees[i].root, cls)) {
                queue.add(read_node(i, entry->name));
            }
        }
        const classifier::ClassCounters classified = read_classified(cls);
        const ClassLatency latency = read_latency ? read_latency(cls) : ClassLatency{};
        out.push_back({{"name", policy.classes[cls].name},
                       {"class_id", cls},
                       {"classified_packets", classified.packets},
                       {"classified_bytes", classified.bytes},
                       {"malformed_drops", classified.drops},
                       {"queue", queue_counters_to_json(queue)},
                       {"latency",
                        {{"packets", latency.packets},
                         {"mean_ns", latency.mean_ns},
                         {"p50_ns", latency.p50_ns},
                         {"p99_ns", latency.p99_ns},
                         {"p999_ns", latency.p999_ns},
                         {"max_ns", latency.max_ns}}}});
    }
    return out;
}

json flows_top_json(const conf::Policy& policy, std::span<const classifier::FlowTable* const> tables,
                    size_t count) {
    // A min-heap of the `count` largest keeps this O(flows log count) with bounded memory.
    auto smaller_bytes = [](const classifier::FlowRecord& a, const classifier::FlowRecord& b) {
        return a.bytes > b.bytes;
    };
    std::vector<classifier::FlowRecord> heap;
    heap.reserve(std::min<size_t>(count, 4096));
    for (const classifier::FlowTable* table : tables) {
        if (table == nullptr || count == 0) continue;
        table->for_each([&](const classifier::FlowRecord& flow) {
            if (heap.size() < count) {
                heap.push_back(flow);
                std::push_heap(heap.begin(), heap.end(), smaller_bytes);
            } else if (flow.bytes > heap.front().bytes) {
                std::pop_heap(heap.begin(), heap.end(), smaller_bytes);
                heap.back() = flow;
                std::push_heap(heap.begin(), heap.end(), smaller_bytes);
            }
        });
    }
    std::sort_heap(heap.begin(), heap.end(), smaller_bytes);
    json out = json::array();
    for (const classifier::FlowRecord& flow : heap) {
        const classifier::PacketKey& key = flow.key;
        const uint8_t class_id = flow.applied.class_id;
        json cls = class_id < policy.classes.size() ? json(policy.classes[class_id].name)
                                                    : json(class_id);
        out.push_back({{"src", address_text(key, true)},
                       {"dst", address_text(key, false)},
                       {"proto", classifier::key_ip_protocol(key)},
                       {"src_port", classifier::key_src_port(key)},
                       {"dst_port", classifier::key_dst_port(key)},
                       {"ingress_port", classifier::key_ingress_port(key)},
                       {"class", std::move(cls)},
                       {"job", flow.applied.job_id},
                       {"packets", flow.packets},
                       {"bytes", flow.bytes},
                       {"last_seen_ns", flow.last_seen_ns}});
    }
    return out;
}

}  // namespace twinlane::control
