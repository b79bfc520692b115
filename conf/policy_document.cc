#include "conf/policy_document.h"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <yaml-cpp/yaml.h>

#include <array>
#include <cstdio>
#include <map>

#include "conf/units.h"

namespace twinlane::conf {
namespace {

using nlohmann::json;

std::string range_text(const ValueRange& range) {
    if (range.first == range.last) return std::to_string(range.first);
    return std::to_string(range.first) + "-" + std::to_string(range.last);
}

std::string prefix_text(const IpPrefix& prefix) {
    std::array<char, INET6_ADDRSTRLEN> text{};
    const int family = prefix.version == 6 ? AF_INET6 : AF_INET;
    if (inet_ntop(family, prefix.address.data(), text.data(), text.size()) == nullptr) return "";
    return std::string(text.data()) + "/" + std::to_string(prefix.length);
}

std::string mode_text(uint32_t mode) {
    std::array<char, 8> text{};
    std::snprintf(text.data(), text.size(), "%04o", mode);
    return text.data();
}

constexpr std::array<const char*, 4> kKindNames{"strict", "drr", "fq", "fifo"};
constexpr std::array<const char*, 7> kLogLevelNames{"trace", "debug",    "info", "warn",
                                                    "error", "critical", "off"};

void add_leaf_options(const TreeNode& node, json& out) {
    out["limit"] = {{"packets", node.limit_packets}, {"bytes", node.limit_bytes}};
    if (node.codel) {
        out["codel"] = {{"target", duration_text(node.codel->target_ns)},
                        {"interval", duration_text(node.codel->interval_ns)},
                        {"ecn", node.codel->ecn}};
    }
    if (node.ecn) {
        out["ecn"] = {{"kmin", node.ecn->kmin_bytes},
                      {"kmax", node.ecn->kmax_bytes},
                      {"pmax", percent_text(node.ecn->pmax_ppm)},
                      {"drop_non_ect", node.ecn->drop_non_ect}};
    }
    if (node.kind == NodeKind::fq) {
        out["buckets"] = node.fq_buckets;
        out["sparse_boost"] = node.fq_sparse_boost;
    }
}

json node_document(const Policy& policy, const TreeNode& node, bool parent_is_drr) {
    json out = json::object();
    out["name"] = node.name;
    out["kind"] = kKindNames[static_cast<size_t>(node.kind)];
    if (node.class_index) out["class"] = policy.classes[*node.class_index].name;
    if (parent_is_drr) out["weight"] = node.weight;
    if (node.shaper) {
        out["shaper"] = {{"rate", rate_text(node.shaper->rate_bits_per_sec)},
                         {"burst", node.shaper->burst_bytes}};
    }
    if (node.is_leaf()) {
        add_leaf_options(node, out);
        return out;
    }
    if (node.job_split.mode != JobSplit::Mode::none && !node.children.empty()) {
        json per_job = json::object();
        if (node.job_split.mode == JobSplit::Mode::listed) {
            per_job["jobs"] = node.job_split.jobs;
        } else {
            per_job["count"] = node.job_split.count;
        }
        // Generated children are copies of one template; the first one stands for all.
        const TreeNode& first = node.children.front();
        json leaf = json::object();
        leaf["kind"] = kKindNames[static_cast<size_t>(first.kind)];
        add_leaf_options(first, leaf);
        per_job["leaf"] = std::move(leaf);
        out["per_job"] = std::move(per_job);
        return out;
    }
    json children = json::array();
    for (const TreeNode& child : node.children) {
        children.push_back(node_document(policy, child, node.kind == NodeKind::drr));
    }
    out["children"] = std::move(children);
    return out;
}

json lcores_document(const Policy& policy) {
    const LcorePolicy& lcores = policy.lcores;
    switch (lcores.mode) {
        case LcorePolicy::Mode::automatic:
            return "auto";
        case LcorePolicy::Mode::run_to_completion:
            return {{"single", lcores.single_lcore}};
        case LcorePolicy::Mode::explicit_roles:
            break;
    }
    json rx = json::array();
    for (const RxLcore& lcore : lcores.rx) {
        std::map<size_t, std::vector<uint16_t>> queues_by_port;
        for (const RxQueueRef& ref : lcore.queues)
            queues_by_port[ref.port].push_back(ref.queue);
        json poll = json::array();
        for (const auto& [port, queues] : queues_by_port) {
            poll.push_back({{"port", policy.ports[port].name}, {"queues", queues}});
        }
        rx.push_back({{"lcore", lcore.lcore}, {"poll", std::move(poll)}});
    }
    json scheduler = json::array();
    for (const SchedulerLcore& lcore : lcores.scheduler) {
        json ports = json::array();
        for (size_t port : lcore.egress_ports)
            ports.push_back(policy.ports[port].name);
        scheduler.push_back({{"lcore", lcore.lcore}, {"ports", std::move(ports)}});
    }
    return {{"rx", std::move(rx)}, {"scheduler", std::move(scheduler)}};
}

std::string rate_written(const RateSpec& rate) {
    return rate.is_share ? percent_text(rate.share_ppm) : rate_text(rate.bits_per_sec);
}

// A class's slo as written (adapt_cap shares stay shares: they are resolved per port).
json slo_document(const Policy& policy, const SloPolicy& slo) {
    static constexpr const char* kPercentileKeys[] = {"p50", "p90", "p99", "p999"};
    json out = json::object();
    if (slo.percentile)
        out[kPercentileKeys[static_cast<size_t>(*slo.percentile)]] = duration_text(slo.target_ns);
    out["window"] = duration_text(slo.window_ns);
    if (slo.min_share_ppm) out["min_share"] = percent_text(*slo.min_share_ppm);
    if (slo.adapt_cap)
        out["adapt_cap"] = {{"min", rate_written(slo.adapt_cap->min)},
                            {"max", rate_written(slo.adapt_cap->max)}};
    if (slo.downgrade)
        out["downgrade"] = {{"to", policy.classes[slo.downgrade->class_index].name},
                            {"quiet", duration_text(slo.downgrade->quiet_ns)}};
    if (slo.alert) out["alert"] = true;
    return out;
}

json heuristics_document(const Policy& policy) {
    const HeuristicsPolicy& h = policy.classifier.heuristics;
    auto class_name = [&](size_t index) { return policy.classes[index].name; };
    json out = json::object();
    if (h.roce_class) out["roce"] = class_name(*h.roce_class);
    json dscp_map = json::object();
    for (size_t dscp = 0; dscp < h.dscp_class.size(); ++dscp) {
        if (h.dscp_class[dscp]) dscp_map[std::to_string(dscp)] = class_name(*h.dscp_class[dscp]);
    }
    if (!dscp_map.empty()) out["dscp_map"] = std::move(dscp_map);
    if (h.serving) {
        json ports = json::array();
        for (const ValueRange& range : h.serving->ports)
            ports.push_back(range_text(range));
        out["serving"] = {{"ports", std::move(ports)},
                          {"class", class_name(h.serving->class_index)}};
    }
    if (h.elephant) {
        out["elephant"] = {{"bytes", h.elephant->bytes},
                           {"window", duration_text(h.elephant->window_ns)},
                           {"quiet", duration_text(h.elephant->quiet_ns)},
                           {"class", class_name(h.elephant->class_index)}};
    }
    if (h.job_by_source) {
        out["job_by_source"] = {{"ipv4", h.job_by_source->ipv4_prefix},
                                {"ipv6", h.job_by_source->ipv6_prefix}};
    }
    out["reclass_gap"] = duration_text(h.reclass_gap_ns);
    out["default_class"] = class_name(h.default_class);
    out["malformed"] = h.malformed == MalformedAction::drop ? "drop" : "default";
    out["vxlan_inner"] = h.vxlan_inner;
    return out;
}

// Would a YAML reader take this plain scalar for something other than a string?
bool needs_quotes(const std::string& text) {
    if (text.empty()) return true;
    static const std::array<const char*, 12> kSpecial{
        "true", "false", "yes", "no", "on", "off", "null", "~", "True", "False", "Yes", "No"};
    for (const char* word : kSpecial) {
        if (text == word) return true;
    }
    return text.find_first_not_of("0123456789.+-eE") == std::string::npos;
}

void emit(YAML::Emitter& out, const json& value) {
    switch (value.type()) {
        case json::value_t::object:
            out << YAML::BeginMap;
            for (const auto& [key, item] : value.items()) {
                out << YAML::Key;
                if (needs_quotes(key)) {
                    out << YAML::DoubleQuoted << key;
                } else {
                    out << key;
                }
                out << YAML::Value;
                emit(out, item);
            }
            out << YAML::EndMap;
            break;
        case json::value_t::array:
            out << YAML::BeginSeq;
            for (const json& item : value)
                emit(out, item);
            out << YAML::EndSeq;
            break;
        case json::value_t::string: {
            const auto& text = value.get_ref<const std::string&>();
            if (needs_quotes(text)) {
                out << YAML::DoubleQuoted << text;
            } else {
                out << text;
            }
            break;
        }
        case json::value_t::boolean:
            out << (value.get<bool>() ? "true" : "false");
            break;
        case json::value_t::null:
        case json::value_t::discarded:
            out << YAML::Null;
            break;
        default:  // numbers
            out << value.dump();
            break;
    }
}

}  // namespace

json rule_document(const Policy& policy, const ClassifierRule& rule) {
    json match = json::object();
    const RuleMatch& m = rule.match;
    if (m.ingress_port) match["ingress_port"] = policy.ports[*m.ingress_port].name;
    if (m.vlan) match["vlan"] = *m.vlan;
    if (m.src) match["src"] = prefix_text(*m.src);
    if (m.dst) match["dst"] = prefix_text(*m.dst);
    if (m.proto) {
        switch (*m.proto) {
            case 6:
                match["proto"] = "tcp";
                break;
            case 17:
                match["proto"] = "udp";
                break;
            default:
                match["proto"] = *m.proto;
                break;
        }
    }
    if (m.src_port) match["src_port"] = range_text(*m.src_port);
    if (m.dst_port) match["dst_port"] = range_text(*m.dst_port);
    if (m.dscp) match["dscp"] = *m.dscp;
    if (m.roce_qp) {
        match["roce"] = {{"qp", range_text(*m.roce_qp)}};
    } else if (m.roce) {
        match["roce"] = *m.roce;
    }
    json action = {{"class", policy.classes[rule.action.class_index].name}};
    if (rule.action.job) action["job"] = *rule.action.job;
    if (rule.action.remark_dscp) action["dscp"] = *rule.action.remark_dscp;
    return {{"name", rule.name},
            {"priority", rule.priority},
            {"match", std::move(match)},
            {"action", std::move(action)}};
}

json policy_document(const Policy& policy) {
    json doc = json::object();
    doc["version"] = 1;
    doc["log_level"] = kLogLevelNames[static_cast<size_t>(policy.log_level)];
    json ports = json::array();
    for (size_t i = 0; i < policy.ports.size(); ++i) {
        const PortPolicy& port = policy.ports[i];
        json entry = {{"name", port.name},
                      {"device", port.device},
                      {"rate", rate_text(port.rate_bits_per_sec)},
                      {"rx_queues", port.rx_queues},
                      {"tx_queues", port.tx_queues},
                      {"rx_descriptors", port.rx_descriptors},
                      {"tx_descriptors", port.tx_descriptors},
                      {"mtu", port.mtu},
                      {"tx_budget", port.tx_budget_bytes},
                      {"burst_time", duration_text(port.burst_time_ns)}};
        // Sized to fit stays so: an edited copy is sized to its own queues again.
        if (port.mempool_given) entry["mempool"] = port.mempool_mbufs;
        if (port.pfc.mode != PfcMode::off) {
            entry["pfc"] = {{"mode", port.pfc.mode == PfcMode::software ? "software" : "nic"},
                            {"cable", std::to_string(port.pfc.cable_metres) + "m"},
                            {"peer_response", port.pfc.peer_response_bytes}};
        }
        if (const EgressTree* tree = policy.tree_for_port(i)) {
            entry["scheduler"] = node_document(policy, tree->root, false);
        }
        ports.push_back(std::move(entry));
    }
    doc["ports"] = std::move(ports);
    json forwarding = json::array();
    for (const ForwardingPolicy& f : policy.forwarding) {
        forwarding.push_back(
            {{"from", policy.ports[f.from_port].name}, {"to", policy.ports[f.to_port].name}});
    }
    doc["forwarding"] = std::move(forwarding);
    doc["lcores"] = lcores_document(policy);
    json classes = json::array();
    bool lossless = false;
    for (const ClassPolicy& cls : policy.classes) {
        json entry = {{"name", cls.name}};
        if (cls.lossless) {
            lossless = true;
            const LosslessPolicy& l = *cls.lossless;
            entry["lossless"] = {
                {"priority", l.priority},
                {"xoff", l.xoff_bytes},
                {"xon", l.xon_bytes},
                {"headroom", l.headroom_bytes ? json(*l.headroom_bytes) : json("auto")}};
        }
        if (cls.slo) entry["slo"] = slo_document(policy, *cls.slo);
        classes.push_back(std::move(entry));
    }
    doc["classes"] = std::move(classes);
    json rules = json::array();
    for (const ClassifierRule& rule : policy.classifier.rules) {
        rules.push_back(rule_document(policy, rule));
    }
    doc["classifier"] = {
        {"rules", std::move(rules)},
        {"heuristics", heuristics_document(policy)},
        {"flow_table",
         {{"capacity", policy.classifier.flow_table.capacity},
          {"slots_per_flow", policy.classifier.flow_table.slots_per_flow},
          {"idle_timeout", duration_text(policy.classifier.flow_table.idle_timeout_ns)}}}};
    doc["control"] = {{"socket", policy.control.socket_path},
                      {"mode", mode_text(policy.control.socket_mode)}};
    doc["metrics"] = {{"enabled", policy.metrics.enabled},
                      {"listen", policy.metrics.listen_address},
                      {"port", policy.metrics.port}};
    const PfcPolicy& pfc = policy.pfc;
    json dscp_priority = json::object();
    for (size_t dscp = 0; dscp < pfc.dscp_priority.size(); ++dscp) {
        if (pfc.dscp_priority[dscp] != 0xFF)
            dscp_priority[std::to_string(dscp)] = pfc.dscp_priority[dscp];
    }
    const bool pfc_ports =
        std::any_of(policy.ports.begin(), policy.ports.end(),
                    [](const PortPolicy& p) { return p.pfc.mode != PfcMode::off; });
    if (lossless || pfc_ports || !dscp_priority.empty()) {
        doc["pfc"] = {
            {"dscp_priority", std::move(dscp_priority)},
            {"poll", duration_text(pfc.poll_ns)},
            {"watchdog",
             {{"storm_detect",
               pfc.storm_detect_ns ? json(duration_text(pfc.storm_detect_ns)) : json("off")},
              {"storm_restore", duration_text(pfc.storm_restore_ns)},
              {"action", pfc.storm_action == StormAction::drop ? "drop" : "forward"}}}};
    }
    return doc;
}

std::string render_yaml(const json& document) {
    YAML::Emitter out;
    out.SetIndent(2);
    emit(out, document);
    return std::string(out.c_str()) + "\n";
}

}  // namespace twinlane::conf
