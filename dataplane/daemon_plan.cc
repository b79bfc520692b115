#include "dataplane/daemon_plan.h"

#include <algorithm>
#include <tuple>

#include "conf/mbuf_demand.h"
#include "conf/policy_document.h"

namespace twinlane::dataplane {
namespace {

using conf::Policy;

template <typename T>
void compare(std::vector<std::string>& out, const std::string& what, const T& a, const T& b) {
    if (a == b) return;
    if constexpr (std::is_arithmetic_v<T>) {
        out.push_back(what + ": " + std::to_string(a) + " -> " + std::to_string(b));
    } else if constexpr (std::is_convertible_v<T, std::string>) {
        out.push_back(what + ": '" + std::string(a) + "' -> '" + std::string(b) + "'");
    } else {
        out.push_back(what + " changed");
    }
}

void compare_ports(std::vector<std::string>& out, const Policy& a, const Policy& b) {
    if (a.ports.size() != b.ports.size()) {
        compare(out, "ports (count)", a.ports.size(), b.ports.size());
        return;
    }
    for (size_t i = 0; i < a.ports.size(); ++i) {
        const conf::PortPolicy& x = a.ports[i];
        const conf::PortPolicy& y = b.ports[i];
        const std::string at = "ports[" + x.name + "].";
        compare(out, at + "name", x.name, y.name);
        compare(out, at + "device", x.device, y.device);
        compare(out, at + "rate", x.rate_bits_per_sec, y.rate_bits_per_sec);
        compare(out, at + "rx_queues", x.rx_queues, y.rx_queues);
        compare(out, at + "tx_queues", x.tx_queues, y.tx_queues);
        compare(out, at + "rx_descriptors", x.rx_descriptors, y.rx_descriptors);
        compare(out, at + "tx_descriptors", x.tx_descriptors, y.tx_descriptors);
        compare(out, at + "mtu", x.mtu, y.mtu);
        compare(out, at + "tx_budget", x.tx_budget_bytes, y.tx_budget_bytes);
        compare(out, at + "burst_time", x.burst_time_ns, y.burst_time_ns);
        // The pool exists: a new explicit size needs a restart, and so do queues that could
        // hold more than the running share (a full pool stops RX for every class).
        if (y.mempool_given) compare(out, at + "mempool", x.mempool_mbufs, y.mempool_mbufs);
        const uint64_t needs = conf::port_mbuf_demand(b, i).total();
        if (needs > x.mempool_mbufs) {
            out.push_back(at + "mempool: the new queues and descriptor rings can hold " +
                          std::to_string(needs) + " mbufs, more than the running " +
                          std::to_string(x.mempool_mbufs));
        }
    }
}

void compare_lcores(std::vector<std::string>& out, const conf::LcorePolicy& a,
                    const conf::LcorePolicy& b) {
    const auto rx = [](const conf::LcorePolicy& p) {
        std::vector<std::tuple<uint32_t, size_t, uint16_t>> flat;
        for (const conf::RxLcore& l : p.rx)
            for (const conf::RxQueueRef& q : l.queues)
                flat.emplace_back(l.lcore, q.port, q.queue);
        return flat;
    };
    const auto sched = [](const conf::LcorePolicy& p) {
        std::vector<std::pair<uint32_t, std::vector<size_t>>> flat;
        for (const conf::SchedulerLcore& l : p.scheduler)
            flat.emplace_back(l.lcore, l.egress_ports);
        return flat;
    };
    if (a.mode != b.mode || a.single_lcore != b.single_lcore || rx(a) != rx(b) ||
        sched(a) != sched(b))
        out.push_back("lcores changed");
}

void compare_classifier(std::vector<std::string>& out, const classifier::ClassifierConfig& a,
                        const classifier::ClassifierConfig& b) {
    const std::string h = "classifier.heuristics.";
    compare(out, h + "default_class", a.default_class, b.default_class);
    compare(out, h + "malformed", static_cast<int>(a.malformed_policy),
            static_cast<int>(b.malformed_policy));
    compare(out, h + "roce", a.roce_detection, b.roce_detection);
    compare(out, h + "roce (class)", a.roce_class, b.roce_class);
    const auto dscp = [](const classifier::ClassifierConfig& c) {
        std::vector<std::pair<int, int>> m;
        for (const classifier::DscpMapping& d : c.dscp_map)
            m.emplace_back(d.dscp, d.class_id);
        return m;
    };
    if (dscp(a) != dscp(b)) out.push_back(h + "dscp_map changed");
    if (a.model_serving_ports != b.model_serving_ports) out.push_back(h + "serving.ports changed");
    compare(out, h + "serving.class", a.inference_class, b.inference_class);
    compare(out, h + "elephant.bytes", a.elephant_threshold_bytes, b.elephant_threshold_bytes);
    compare(out, h + "elephant.window", a.elephant_window_ns, b.elephant_window_ns);
    compare(out, h + "elephant.quiet", a.elephant_quiet_ns, b.elephant_quiet_ns);
    compare(out, h + "elephant.class", a.bulk_class, b.bulk_class);
    compare(out, h + "job_by_source.ipv4", a.job_prefix_ipv4, b.job_prefix_ipv4);
    compare(out, h + "job_by_source.ipv6", a.job_prefix_ipv6, b.job_prefix_ipv6);
    compare(out, h + "reclass_gap", a.reclass_gap_ns, b.reclass_gap_ns);
    compare(out, h + "vxlan_inner", a.vxlan_inner, b.vxlan_inner);
    compare(out, "classifier.flow_table.capacity", a.flow_table_capacity, b.flow_table_capacity);
    compare(out, "classifier.flow_table.slots_per_flow", a.flow_slots_per_flow,
            b.flow_slots_per_flow);
    compare(out, "classifier.flow_table.idle_timeout", a.flow_idle_timeout_ns,
            b.flow_idle_timeout_ns);
    compare(out, "classifier (aging_scan_per_burst)", a.aging_scan_per_burst,
            b.aging_scan_per_burst);
    compare(out, "classifier (fragment cache)", a.fragment_cache_capacity,
            b.fragment_cache_capacity);
    compare(out, "classifier (fragment timeout)", a.fragment_timeout_ns, b.fragment_timeout_ns);
    compare(out, "classifier (vxlan_port)", a.vxlan_port, b.vxlan_port);
    compare(out, "classifier (roce_port)", a.roce_port, b.roce_port);
    compare(out, "classifier (max_vlan_depth)", a.max_vlan_depth, b.max_vlan_depth);
}

bool same_node(const sched::NodeSpec& a, const sched::NodeSpec& b) {
    return a.name == b.name && a.kind == b.kind && a.parent == b.parent && a.weight == b.weight &&
           a.priority == b.priority && a.shaper.rate_bits_per_sec == b.shaper.rate_bits_per_sec &&
           a.shaper.burst_bytes == b.shaper.burst_bytes && a.limit_packets == b.limit_packets &&
           a.limit_bytes == b.limit_bytes && a.fq_buckets == b.fq_buckets &&
           a.fq_sparse_first == b.fq_sparse_first && a.codel.enabled == b.codel.enabled &&
           a.codel.target_ns == b.codel.target_ns && a.codel.interval_ns == b.codel.interval_ns &&
           a.codel.ecn == b.codel.ecn && a.red.enabled == b.red.enabled &&
           a.red.kmin_bytes == b.red.kmin_bytes && a.red.kmax_bytes == b.red.kmax_bytes &&
           a.red.pmax == b.red.pmax && a.red.drop_non_ect == b.red.drop_non_ect;
}

std::vector<std::string> leaf_names(const sched::TreeSpec& tree) {
    std::vector<std::string> names;
    for (const sched::NodeSpec& node : tree.nodes)
        if (node.kind == sched::NodeKind::fifo || node.kind == sched::NodeKind::fq)
            names.push_back(node.name);
    return names;
}

// Where a class's packets go, by leaf name: job split, listed jobs and the leaves in order.
struct EntryByName {
    admission::JobSplit split;
    std::vector<uint32_t> jobs;
    std::vector<std::string> leaves;
    bool operator==(const EntryByName&) const = default;
};

EntryByName by_name(const admission::ClassLeaves& entry, const std::vector<std::string>& leaves) {
    EntryByName out{entry.split, entry.jobs, {}};
    for (uint32_t leaf = entry.first_leaf; leaf < uint32_t{entry.first_leaf} + entry.leaf_count;
         ++leaf)
        out.leaves.push_back(leaf < leaves.size() ? leaves[leaf] : "?");
    return out;
}

std::string join(const std::vector<std::string>& names) {
    std::string text;
    for (const std::string& name : names)
        text += (text.empty() ? "" : ", ") + name;
    return text;
}

}  // namespace

std::vector<std::string> restart_only_changes(const Policy& running, const Policy& candidate,
                                              const classifier::ClassifierConfig& running_rules,
                                              const classifier::ClassifierConfig& candidate_rules) {
    std::vector<std::string> out;
    compare_ports(out, running, candidate);
    const auto forwarding = [](const Policy& p) {
        std::vector<std::pair<size_t, size_t>> f;
        for (const conf::ForwardingPolicy& x : p.forwarding)
            f.emplace_back(x.from_port, x.to_port);
        return f;
    };
    if (forwarding(running) != forwarding(candidate)) out.push_back("forwarding changed");
    compare_lcores(out, running.lcores, candidate.lcores);
    const auto classes = [](const Policy& p) {
        std::vector<std::string> names;
        for (const conf::ClassPolicy& c : p.classes)
            names.push_back(c.name);
        return names;
    };
    if (classes(running) != classes(candidate)) {
        out.push_back("classes: [" + join(classes(running)) + "] -> [" + join(classes(candidate)) +
                      "] (one lane ring per class)");
    }
    // Each SLO's measurement and controller are built at start, with their tree.
    if (classes(running) == classes(candidate)) {
        const nlohmann::json before = conf::policy_document(running)["classes"];
        const nlohmann::json after = conf::policy_document(candidate)["classes"];
        for (size_t i = 0; i < before.size() && i < after.size(); ++i) {
            const nlohmann::json none = nullptr;
            const nlohmann::json& a = before[i].contains("slo") ? before[i]["slo"] : none;
            const nlohmann::json& b = after[i].contains("slo") ? after[i]["slo"] : none;
            if (a != b)
                out.push_back("classes[" + running.classes[i].name + "].slo: " + a.dump() + " -> " +
                              b.dump());
        }
    }
    const auto tree_ports = [](const Policy& p) {
        std::vector<size_t> ports;
        for (const conf::EgressTree& t : p.egress_trees)
            ports.push_back(t.port);
        return ports;
    };
    if (tree_ports(running) != tree_ports(candidate)) out.push_back("egress trees' ports changed");
    compare_classifier(out, running_rules, candidate_rules);
    return out;
}

bool same_rules(const Policy& a, const Policy& b) {
    if (a.classifier.rules.size() != b.classifier.rules.size()) return false;
    for (size_t i = 0; i < a.classifier.rules.size(); ++i) {
        if (conf::rule_document(a, a.classifier.rules[i]) !=
            conf::rule_document(b, b.classifier.rules[i]))
            return false;
    }
    return true;
}

bool same_topology(const sched::TreeSpec& a, const sched::TreeSpec& b) {
    if (a.nodes.size() != b.nodes.size()) return false;
    for (size_t i = 0; i < a.nodes.size(); ++i) {
        const sched::NodeSpec& x = a.nodes[i];
        const sched::NodeSpec& y = b.nodes[i];
        if (x.name != y.name || x.kind != y.kind || x.parent != y.parent ||
            x.priority != y.priority)
            return false;
        if (x.kind == sched::NodeKind::fq && x.fq_buckets != y.fq_buckets) return false;
    }
    return a.max_packet_bytes <= b.max_packet_bytes;
}

EgressPlan plan_egress_change(const conf::CompiledEgress& running,
                              const conf::CompiledEgress& candidate,
                              const std::vector<std::string>& class_names) {
    const sched::TreeSpec& a = running.tree;
    const sched::TreeSpec& b = candidate.tree;
    const std::vector<std::string> old_leaves = leaf_names(a);
    const std::vector<std::string> new_leaves = leaf_names(b);
    const std::vector<admission::ClassLeaves>& old_classes = running.leaves.classes();
    const std::vector<admission::ClassLeaves>& new_classes = candidate.leaves.classes();
    bool same_entries = old_classes.size() == new_classes.size();
    std::string refusal;
    for (size_t c = 0; c < new_classes.size(); ++c) {
        const EntryByName after = by_name(new_classes[c], new_leaves);
        if (c >= old_classes.size()) continue;
        const EntryByName before = by_name(old_classes[c], old_leaves);
        if (before == after) continue;
        same_entries = false;
        if (before.leaves.empty()) continue;  // nothing of this class can be queued
        const std::string name = c < class_names.size() ? class_names[c] : std::to_string(c);
        refusal += (refusal.empty() ? "" : "; ") + std::string("class '") + name +
                   "' would enter other leaves ([" + join(before.leaves) + "] -> [" +
                   join(after.leaves) + "])";
    }
    EgressPlan plan;
    if (!refusal.empty()) {
        plan.refusal = refusal +
                       ": packets queued at the swap could be overtaken by later ones of the "
                       "same flow; keep the class's leaf names and job split, or restart";
        return plan;
    }
    bool identical = same_entries && a.nodes.size() == b.nodes.size() &&
                     a.max_packet_bytes == b.max_packet_bytes && a.default_leaf == b.default_leaf &&
                     a.random_seed == b.random_seed;
    for (size_t i = 0; identical && i < a.nodes.size(); ++i)
        identical = same_node(a.nodes[i], b.nodes[i]);
    if (identical) {
        plan.change = EgressChange::none;
    } else if (same_entries && same_topology(a, b)) {
        plan.change = EgressChange::apply;
    } else {
        plan.change = EgressChange::rebuild;
    }
    return plan;
}

uint32_t pool_for(const sched::TreeSpec& tree, uint32_t running_pool) {
    uint64_t sum = 0;
    for (const sched::NodeSpec& node : tree.nodes)
        if (node.kind == sched::NodeKind::fifo || node.kind == sched::NodeKind::fq)
            sum += node.limit_packets;
    return static_cast<uint32_t>(
        std::min<uint64_t>(std::max<uint64_t>(sum, running_pool), sched::kMaxPoolPackets));
}

UpdatePlan plan_update(const Policy& running_policy,
                       const classifier::ClassifierConfig& running_classifier,
                       const std::vector<conf::CompiledEgress>& running,
                       const Policy& candidate_policy, const conf::CompiledPolicy& candidate) {
    UpdatePlan plan;
    plan.details = restart_only_changes(running_policy, candidate_policy, running_classifier,
                                        candidate.classifier);
    if (!plan.details.empty()) {
        plan.refusal =
            "the new policy changes what only a restart can change (ports, forwarding, lcores, "
            "classes and their slo, classifier heuristics and flow table); the running policy "
            "is unchanged";
        return plan;
    }
    if (candidate.egress.size() != running.size()) {
        plan.refusal = "the new policy has another number of egress trees";
        return plan;
    }
    std::vector<std::string> class_names;
    for (const conf::ClassPolicy& cls : candidate_policy.classes)
        class_names.push_back(cls.name);
    for (size_t e = 0; e < running.size(); ++e) {
        const conf::CompiledEgress& now = running[e];
        const std::string& port = candidate_policy.ports[candidate.egress[e].port].name;
        const EgressPlan egress = plan_egress_change(now, candidate.egress[e], class_names);
        if (!egress.refusal.empty()) {
            plan.details.push_back("port '" + port + "': " + egress.refusal);
            continue;
        }
        if (egress.change == EgressChange::none) continue;
        UpdateStep step{e, egress.change, candidate.egress[e], nullptr};
        if (egress.change == EgressChange::apply) {
            step.compiled.tree.pool_packets = now.tree.pool_packets;
        } else {
            step.compiled.tree.pool_packets = pool_for(step.compiled.tree, now.tree.pool_packets);
            sched::Scheduler::BuildResult built = sched::Scheduler::build(step.compiled.tree);
            if (!built.scheduler) {
                plan.details.push_back("port '" + port +
                                       "': scheduler: " + built.error->to_string());
                continue;
            }
            step.new_tree = std::move(built.scheduler);
        }
        plan.steps.push_back(std::move(step));
    }
    if (!plan.details.empty()) {
        plan.refusal =
            "the change cannot be applied while running; the running policy is unchanged";
        plan.steps.clear();
        return plan;
    }
    plan.rules_change = !same_rules(running_policy, candidate_policy);
    return plan;
}

sched::QueueCounters retire_counters(sched::QueueCounters c) {
    // After migrate_from nothing is queued: bytes_in = bytes_out + drop_bytes + migrated bytes.
    uint64_t dropped_bytes = 0;
    for (uint64_t b : c.drop_bytes)
        dropped_bytes += b;
    const uint64_t gone = c.bytes_out + dropped_bytes;
    const uint64_t migrated_bytes = c.bytes_in > gone ? c.bytes_in - gone : 0;
    c.packets_in -= std::min(c.packets_in, c.migrated_out_packets);
    c.bytes_in -= migrated_bytes;
    c.depth_packets = 0;
    c.depth_bytes = 0;
    return c;
}

}  // namespace twinlane::dataplane
