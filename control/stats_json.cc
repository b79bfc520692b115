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

json classifier_counters_to_json(const classifier::ClassifierCounters& counters) {
    json malformed = json::object();
    uint64_t malformed_packets = 0;
    for (size_t i = 1; i < classifier::kMalformedReasonCount; ++i) {  // 0 is `none`
        const auto reason = static_cast<classifier::MalformedReason>(i);
        malformed[std::string(classifier::to_string(reason))] = counters.malformed[i];
        malformed_packets += counters.malformed[i];
    }
    return {{"malformed", std::move(malformed)},
            {"malformed_packets", malformed_packets},
            {"flows_inserted", counters.flow_inserts},
            {"flow_table_overflows", counters.flow_overflows},
            {"flows_expired", counters.flows_expired},
            {"fragments_followed", counters.fragments_followed},
            {"fragments_unmatched", counters.fragments_unmatched},
            {"elephants_detected", counters.elephants_detected},
            {"elephant_demotions", counters.elephant_demotions},
            {"elephant_returns", counters.elephant_returns},
            {"reclassifications", counters.reclassifications},
            {"reclass_deferred", counters.reclass_deferred}};
}

json queue_stats_json(const conf::Policy& policy, const NodeCountersReader& read_node) {
    json out = json::array();
    for (size_t i = 0; i < policy.egress_trees.size(); ++i) {
        add_node_stats(policy, i, policy.egress_trees[i].root, "", read_node, out);
    }
    return out;
}

json slo_stats_to_json(const SloStatsEntry& entry) {
    const slo::SloClassSpec& spec = entry.spec;
    const slo::SloClassStats& st = entry.stats;
    json actions = json::array();
    if (spec.adapt_cap) actions.push_back("adapt_cap");
    if (spec.downgrade) actions.push_back("downgrade");
    if (actions.empty()) actions.push_back("alert");
    json objective = {{"window_ns", spec.window_ns}, {"actions", actions}};
    if (spec.has_latency) {
        objective["percentile"] = slo::to_string(spec.percentile);
        objective["target_ns"] = spec.target_ns;
    }
    if (spec.min_share_ppm != 0)
        objective["min_share"] = static_cast<double>(spec.min_share_ppm) / 1e6;
    if (spec.adapt_cap) {
        objective["cap_min_bits_per_sec"] = spec.cap_min_bps;
        objective["cap_max_bits_per_sec"] = spec.cap_max_bps;
    }
    if (spec.downgrade) objective["downgrade_to"] = spec.downgrade_class_name;
    const bool judged = st.windows_met + st.windows_missed != 0;
    json out = {{"port", entry.port},
                {"objective", std::move(objective)},
                {"windows_met", st.windows_met},
                {"windows_missed", st.windows_missed},
                {"windows_idle", st.windows_idle},
                {"attainment", st.attainment()},
                {"last_window", judged ? json({{"start_ns", st.last_window_start_ns},
                                               {"percentile_ns", st.last_percentile_ns},
                                               {"packets", st.last_packets},
                                               {"met", st.last_met}})
                                       : json(nullptr)},
                {"worst_window", judged ? json({{"start_ns", st.worst_window_start_ns},
                                                {"percentile_ns", st.worst_percentile_ns}})
                                        : json(nullptr)},
                {"share_windows_met", st.share_windows_met},
                {"share_windows_missed", st.share_windows_missed},
                {"cap_changes", st.cap_changes},
                {"downgraded_flows", st.downgraded_flows},
                {"downgrades", st.downgrades},
                {"returns", st.returns},
                {"downgraded_packets", st.downgraded_packets},
                {"downgraded_bytes", st.downgraded_bytes},
                {"returned_packets", st.returned_packets},
                {"returned_bytes", st.returned_bytes},
                {"pressure_events", st.pressure_events}};
    out["cap_bits_per_sec"] = spec.adapt_cap ? json(st.cap_bps) : json(nullptr);
    out["cap_floor_bits_per_sec"] = spec.adapt_cap ? json(st.cap_floor_bps) : json(nullptr);
    return out;
}

json class_stats_json(const conf::Policy& policy, const NodeCountersReader& read_node,
                      const ClassifiedCountersReader& read_classified, const SloReader& read_slo,
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
        json entry = {{"name", policy.classes[cls].name},
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
                        {"max_ns", latency.max_ns}}}};
        if (latency.log2_histogram) {
            entry["latency"]["sum_ns"] = latency.sum_ns;
            entry["latency"]["log2_histogram"] = *latency.log2_histogram;
        }
        if (policy.classes[cls].slo) {
            json slos = json::array();
            if (read_slo) {
                for (const SloStatsEntry& slo : read_slo(cls))
                    slos.push_back(slo_stats_to_json(slo));
            }
            entry["slo"] = std::move(slos);
        }
        out.push_back(std::move(entry));
    }
    return out;
}

json flows_top_json(const conf::Policy& policy,
                    std::span<const classifier::FlowTable* const> tables, size_t count) {
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
        json cls =
            class_id < policy.classes.size() ? json(policy.classes[class_id].name) : json(class_id);
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
