#include "conf/compile.h"

#include <algorithm>
#include <map>

#include "conf/units.h"

namespace twinlane::conf {
namespace {

sched::NodeKind to_sched(NodeKind kind) {
    switch (kind) {
        case NodeKind::strict:
            return sched::NodeKind::strict;
        case NodeKind::drr:
            return sched::NodeKind::drr;
        case NodeKind::fq:
            return sched::NodeKind::fq;
        case NodeKind::fifo:
            return sched::NodeKind::fifo;
    }
    return sched::NodeKind::fifo;
}

class TreeCompiler {
  public:
    TreeCompiler(const PortPolicy& port, size_t class_count, CompiledEgress& out)
        : port_(port), out_(out), classes_(class_count) {}

    // Where each class enters the tree, once every node is added.
    std::vector<admission::ClassLeaves> take_classes() { return std::move(classes_); }
    // The node index where class `c` enters (its leaf or per_job node).
    size_t entry_node(size_t c) const { return entry_nodes_.at(c); }

    // `job_leaf`: a leaf a per_job node generated, shared by jobs when they outnumber its
    // leaves (listed: every job not listed), so fair across jobs before flows (fq_by_job).
    void add(const TreeNode& node, const std::string& parent, uint32_t position_in_parent,
             bool job_leaf = false) {
        sched::NodeSpec spec;
        spec.name = node.name;
        spec.kind = to_sched(node.kind);
        spec.parent = parent;
        spec.weight = node.weight;
        spec.priority = position_in_parent;  // only read under a strict parent
        if (parent.empty()) {
            // The root paces to the link, releasing at most a TX budget's worth at once.
            const uint64_t frame_bytes = port_.max_frame_bytes();
            spec.shaper.rate_bits_per_sec =
                node.shaper ? node.shaper->rate_bits_per_sec : port_.rate_bits_per_sec;
            spec.shaper.burst_bytes =
                static_cast<uint32_t>(node.shaper ? node.shaper->burst_bytes
                                                  : std::max(port_.tx_budget_bytes, frame_bytes));
        } else if (node.shaper) {
            spec.shaper.rate_bits_per_sec = node.shaper->rate_bits_per_sec;
            spec.shaper.burst_bytes = static_cast<uint32_t>(node.shaper->burst_bytes);
        }
        if (node.is_leaf()) {
            spec.limit_packets = node.limit_packets;
            spec.limit_bytes = node.limit_bytes;
            spec.fq_buckets = node.fq_buckets;
            spec.fq_sparse_first = node.fq_sparse_boost;
            spec.fq_by_job = job_leaf && node.kind == NodeKind::fq;
            if (node.codel) {
                spec.codel = sched::CodelSpec{.enabled = true,
                                              .target_ns = node.codel->target_ns,
                                              .interval_ns = node.codel->interval_ns,
                                              .ecn = node.codel->ecn};
            }
            if (node.ecn) {
                spec.red = sched::RedSpec{
                    .enabled = true,
                    .kmin_bytes = static_cast<uint32_t>(node.ecn->kmin_bytes),
                    .kmax_bytes = static_cast<uint32_t>(node.ecn->kmax_bytes),
                    .pmax = static_cast<double>(node.ecn->pmax_ppm) / kPartsPerMillion,
                    .drop_non_ect = node.ecn->drop_non_ect};
            }
        }
        const size_t leaf_id = leaf_count_;
        if (node.is_leaf()) ++leaf_count_;
        if (node.class_index) entry_nodes_[*node.class_index] = out_.tree.nodes.size();
        out_.tree.nodes.push_back(std::move(spec));

        if (node.class_index && node.is_leaf()) {
            classes_[*node.class_index] =
                admission::ClassLeaves{.split = admission::JobSplit::none,
                                       .first_leaf = static_cast<uint16_t>(leaf_id),
                                       .leaf_count = 1,
                                       .jobs = {}};
        }
        const size_t first_child_leaf = leaf_count_;
        for (size_t i = 0; i < node.children.size(); ++i) {
            add(node.children[i], node.name, static_cast<uint32_t>(i),
                node.job_split.mode != JobSplit::Mode::none);
        }
        if (node.class_index && !node.is_leaf()) {
            // A per_job node: its generated children are leaves, listed consecutively.
            classes_[*node.class_index] = admission::ClassLeaves{
                .split = node.job_split.mode == JobSplit::Mode::listed
                             ? admission::JobSplit::listed
                             : admission::JobSplit::modulo,
                .first_leaf = static_cast<uint16_t>(first_child_leaf),
                .leaf_count = static_cast<uint16_t>(leaf_count_ - first_child_leaf),
                .jobs = node.job_split.jobs};
        }
    }

  private:
    const PortPolicy& port_;
    CompiledEgress& out_;
    std::vector<admission::ClassLeaves> classes_;  // by class id
    std::map<size_t, size_t> entry_nodes_;         // class id -> node index
    size_t leaf_count_ = 0;
};

std::string leaf_name(const sched::TreeSpec& tree, uint16_t leaf_id) {
    uint16_t seen = 0;
    for (const sched::NodeSpec& node : tree.nodes) {
        if (node.kind != sched::NodeKind::fifo && node.kind != sched::NodeKind::fq) continue;
        if (seen++ == leaf_id) return node.name;
    }
    return "";
}

// Lossless classes on one egress tree: lane -> priority, priority -> the node a pause holds,
// and the (ingress, priority) accounts of the PFC ports that forward to it.
void compile_lossless(const Policy& policy, const TreeCompiler& compiler, CompiledEgress& egress) {
    for (size_t c = 0; c < policy.classes.size() && c < admission::kMaxLanes; ++c) {
        const std::optional<LosslessPolicy>& lossless = policy.classes[c].lossless;
        if (!lossless) continue;
        egress.lane_priority[c] = lossless->priority;
        egress.pause_node[lossless->priority] = static_cast<int32_t>(compiler.entry_node(c));
        for (const ForwardingPolicy& f : policy.forwarding) {
            if (f.to_port != egress.port || policy.ports[f.from_port].pfc.mode == PfcMode::off)
                continue;
            egress.pfc_accounts.push_back(PfcAccount{f.from_port, lossless->priority});
        }
    }
}

CompiledPfc compile_pfc(const Policy& policy) {
    CompiledPfc out;
    out.dscp_priority = policy.pfc.dscp_priority;
    out.watchdog = pfc::Watchdog{.storm_detect_ns = policy.pfc.storm_detect_ns,
                                 .storm_restore_ns = policy.pfc.storm_restore_ns,
                                 .action = policy.pfc.storm_action == StormAction::drop
                                               ? pfc::StormAction::drop
                                               : pfc::StormAction::forward};
    for (const PortPolicy& port : policy.ports) {
        CompiledPortPfc p;
        p.mode = port.pfc.mode;
        if (p.mode != PfcMode::off) {
            for (const ClassPolicy& cls : policy.classes) {
                if (!cls.lossless) continue;
                p.thresholds[cls.lossless->priority] =
                    pfc::PriorityThresholds{.lossless = true,
                                            .xoff_bytes = cls.lossless->xoff_bytes,
                                            .xon_bytes = cls.lossless->xon_bytes};
            }
        }
        out.ports.push_back(p);
    }
    return out;
}

const TreeNode* class_entry(const TreeNode& node, size_t class_index) {
    if (node.class_index == class_index) return &node;
    for (const TreeNode& child : node.children)
        if (const TreeNode* found = class_entry(child, class_index)) return found;
    return nullptr;
}

slo::Percentile to_slo(SloPercentile p) {
    switch (p) {
        case SloPercentile::p50:
            return slo::Percentile::p50;
        case SloPercentile::p90:
            return slo::Percentile::p90;
        case SloPercentile::p99:
            return slo::Percentile::p99;
        case SloPercentile::p999:
            return slo::Percentile::p999;
    }
    return slo::Percentile::p99;
}

slo::SloTreeSpec compile_slo(const Policy& policy, const EgressTree& tree) {
    const PortPolicy& port = policy.ports[tree.port];
    slo::SloTreeSpec out;
    out.link_bps = port.rate_bits_per_sec;
    out.max_frame_bytes = port.max_frame_bytes();
    for (size_t cls = 0; cls < policy.classes.size(); ++cls) {
        const std::optional<SloPolicy>& slo = policy.classes[cls].slo;
        if (!slo) continue;
        const TreeNode* entry = class_entry(tree.root, cls);
        if (entry == nullptr) continue;
        slo::SloClassSpec s;
        s.class_id = static_cast<uint8_t>(cls);
        s.class_name = policy.classes[cls].name;
        s.window_ns = slo->window_ns;
        s.has_latency = slo->percentile.has_value();
        if (slo->percentile) s.percentile = to_slo(*slo->percentile);
        s.target_ns = slo->target_ns;
        s.min_share_ppm = slo->min_share_ppm.value_or(0);
        s.cap_node = entry->name;
        if (cls < tree.slo_caps.size() && tree.slo_caps[cls]) {
            s.adapt_cap = true;
            s.cap_min_bps = tree.slo_caps[cls]->min_bits_per_sec;
            s.cap_max_bps = tree.slo_caps[cls]->max_bits_per_sec;
        }
        if (slo->downgrade) {
            s.downgrade = true;
            s.downgrade_class = static_cast<uint8_t>(slo->downgrade->class_index);
            s.downgrade_class_name = policy.classes[slo->downgrade->class_index].name;
            s.quiet_ns = slo->downgrade->quiet_ns;
        }
        out.classes.push_back(std::move(s));
    }
    return out;
}

classifier::IpPrefix to_classifier(const IpPrefix& prefix) {
    return classifier::IpPrefix{
        .ip_version = prefix.version, .address = prefix.address, .length = prefix.length};
}

classifier::PortRange to_port_range(const std::optional<ValueRange>& range) {
    if (!range) return classifier::PortRange{};
    return classifier::PortRange{static_cast<uint16_t>(range->first),
                                 static_cast<uint16_t>(range->last)};
}

classifier::ClassifierConfig compile_classifier(const Policy& policy,
                                                std::span<const uint16_t> port_ids) {
    const ClassifierPolicy& in = policy.classifier;
    const HeuristicsPolicy& h = in.heuristics;
    // Start from the classifier's defaults only for what the policy file cannot express.
    classifier::ClassifierConfig config = classifier::ClassifierConfig::defaults();
    config.class_names.clear();
    for (const ClassPolicy& cls : policy.classes)
        config.class_names.push_back(cls.name);
    config.default_class = static_cast<uint8_t>(h.default_class);
    config.malformed_policy = h.malformed == MalformedAction::drop
                                  ? classifier::MalformedPolicy::drop
                                  : classifier::MalformedPolicy::default_class;

    config.rules.clear();
    for (const ClassifierRule& rule : in.rules) {
        classifier::Rule out;
        out.priority = rule.priority;
        const RuleMatch& m = rule.match;
        if (m.ingress_port) {
            out.match.ingress_port = port_ids.empty() ? static_cast<uint16_t>(*m.ingress_port)
                                                      : port_ids[*m.ingress_port];
        }
        out.match.vlan_id = m.vlan;
        if (m.src) out.match.src = to_classifier(*m.src);
        if (m.dst) out.match.dst = to_classifier(*m.dst);
        out.match.ip_protocol = m.proto;
        out.match.src_ports = to_port_range(m.src_port);
        out.match.dst_ports = to_port_range(m.dst_port);
        out.match.dscp = m.dscp;
        out.match.roce = m.roce;
        if (m.roce_qp) out.match.dest_qp = classifier::QpRange{m.roce_qp->first, m.roce_qp->last};
        out.action.class_id = static_cast<uint8_t>(rule.action.class_index);
        out.action.job_id = rule.action.job.value_or(0);
        out.action.remark_dscp = rule.action.remark_dscp;
        config.rules.push_back(out);
    }

    config.roce_detection = h.roce_class.has_value();
    config.roce_class = static_cast<uint8_t>(h.roce_class.value_or(0));
    config.dscp_map.clear();
    for (size_t dscp = 0; dscp < h.dscp_class.size(); ++dscp) {
        if (h.dscp_class[dscp]) {
            config.dscp_map.push_back(classifier::DscpMapping{
                static_cast<uint8_t>(dscp), static_cast<uint8_t>(*h.dscp_class[dscp])});
        }
    }
    config.model_serving_ports.clear();
    config.inference_class = 0;
    if (h.serving) {
        for (const ValueRange& range : h.serving->ports) {
            for (uint32_t port = range.first; port <= range.last; ++port) {
                config.model_serving_ports.push_back(static_cast<uint16_t>(port));
            }
        }
        config.inference_class = static_cast<uint8_t>(h.serving->class_index);
    }
    config.elephant_threshold_bytes = 0;  // off unless the policy asks
    if (h.elephant) {
        config.elephant_threshold_bytes = h.elephant->bytes;
        config.elephant_window_ns = h.elephant->window_ns;
        config.elephant_quiet_ns = h.elephant->quiet_ns;
        config.bulk_class = static_cast<uint8_t>(h.elephant->class_index);
    }
    config.job_prefix_ipv4 = h.job_by_source ? h.job_by_source->ipv4_prefix : 0;
    config.job_prefix_ipv6 = h.job_by_source ? h.job_by_source->ipv6_prefix : 0;
    config.reclass_gap_ns = h.reclass_gap_ns;
    config.flow_table_capacity = in.flow_table.capacity;
    config.flow_slots_per_flow = in.flow_table.slots_per_flow;
    static_assert(FlowTablePolicy{}.slots_per_flow == classifier::kDefaultSlotsPerFlow);
    config.flow_idle_timeout_ns = in.flow_table.idle_timeout_ns;
    config.vxlan_inner = h.vxlan_inner;
    return config;
}

}  // namespace

uint8_t CompiledEgress::pfc_tag(size_t ingress_port, uint8_t lane, uint8_t priority) const {
    if (lane >= lane_priority.size() || lane_priority[lane] != priority) return 0;
    for (size_t k = 0; k < pfc_accounts.size(); ++k) {
        if (pfc_accounts[k] == PfcAccount{ingress_port, priority})
            return static_cast<uint8_t>(k + 1);
    }
    return 0;
}

CompiledPolicy compile_policy(const Policy& policy, std::span<const uint16_t> dpdk_port_ids) {
    CompiledPolicy out;
    if (!dpdk_port_ids.empty() && dpdk_port_ids.size() != policy.ports.size()) {
        out.errors.push_back("compile: " + std::to_string(dpdk_port_ids.size()) +
                             " DPDK port ids for " + std::to_string(policy.ports.size()) +
                             " ports");
        return out;
    }
    for (const EgressTree& tree : policy.egress_trees) {
        const PortPolicy& port = policy.ports[tree.port];
        CompiledEgress egress;
        egress.port = tree.port;
        egress.tree.max_packet_bytes = port.max_frame_bytes();
        egress.tree.random_seed = tree.port + 1;  // deterministic, distinct per port
        TreeCompiler compiler(port, policy.classes.size(), egress);
        compiler.add(tree.root, "", 0);
        compile_lossless(policy, compiler, egress);
        if (egress.pfc_accounts.size() > kMaxPfcAccounts) {
            out.errors.push_back("compile: tree of port '" + port.name + "': more than " +
                                 std::to_string(kMaxPfcAccounts) +
                                 " (PFC ingress port, lossless priority) pairs feed it");
        }
        if (auto error = admission::LeafMap::build(compiler.take_classes(), egress.leaves)) {
            out.errors.push_back("compile: tree of port '" + port.name + "': " + *error);
            return out;
        }
        const admission::ClassLeaves& fallback = egress.leaves.class_leaves(
            static_cast<uint8_t>(policy.classifier.heuristics.default_class));
        egress.tree.default_leaf = leaf_name(
            egress.tree, static_cast<uint16_t>(fallback.first_leaf + fallback.leaf_count - 1));
        egress.slo = compile_slo(policy, tree);
        if (auto error = sched::validate(egress.tree)) {
            out.errors.push_back("compile: tree of port '" + port.name +
                                 "': " + error->to_string());
        }
        out.egress.push_back(std::move(egress));
    }
    out.classifier = compile_classifier(policy, dpdk_port_ids);
    out.pfc = compile_pfc(policy);
    for (const std::string& error : out.classifier.validate()) {
        out.errors.push_back("compile: classifier: " + error);
    }
    return out;
}

}  // namespace twinlane::conf
