// The classifier section: explicit rules (match -> class, job, DSCP remark), the heuristics
// that run when no rule matches (RoCEv2, DSCP map, serving ports, elephants), the flow table.
#include <algorithm>
#include <bit>
#include <map>

#include "classifier/flow_table.h"
#include "conf/policy_loader.h"
#include "conf/policy_values.h"

namespace twinlane::conf {

void PolicyLoader::read_classifier(const Field& field) {
    const MapFields map(field, {"rules", "heuristics", "flow_table"}, errors_);
    if (!class_names_.empty())
        policy_.classifier.heuristics.default_class = class_names_.size() - 1;
    if (auto rules = map.get("rules")) read_rules(*rules);
    if (auto heuristics = map.get("heuristics")) read_heuristics(*heuristics);
    if (auto flow_table = map.get("flow_table")) read_flow_table(*flow_table);
}

void PolicyLoader::read_rules(const Field& field) {
    ClassifierPolicy& classifier = policy_.classifier;
    const std::vector<Field> items = read_sequence(field, errors_).value_or(std::vector<Field>{});
    // Same priority would make the winner depend on file order: ask the author to decide.
    std::map<uint32_t, size_t> first_with;
    // Rules are deleted and reported by name: each must be unique, automatic names too.
    std::map<std::string, size_t> first_named;
    std::vector<bool> automatic_name;
    for (const Field& item : items) {
        ClassifierRule rule;
        rule.name = "rule" + std::to_string(classifier.rules.size());
        const RuleFields fields = read_rule(item, rule);
        auto [first, inserted] = first_with.emplace(rule.priority, classifier.rules.size());
        if (!inserted && fields.priority) {
            errors_.add(fields.priority->mark, fields.priority->path,
                        "priority " + std::to_string(rule.priority) + " is already used by rule '" +
                            classifier.rules[first->second].name + "'");
        }
        const bool automatic = !fields.name_given;
        auto [owner, fresh] = first_named.emplace(rule.name, classifier.rules.size());
        // A name already reported as invalid is not a duplicate of anything.
        if (!fresh && (automatic || fields.name)) {
            const std::string other = items[owner->second].path;
            const std::string other_kind =
                automatic_name[owner->second] ? " (its automatic name)" : "";
            if (automatic) {
                errors_.add(item.mark, join_path(item.path, "name"),
                            "this unnamed rule's automatic name '" + rule.name +
                                "' is already used by " + other + other_kind + "; give it a name");
            } else {
                errors_.add(
                    fields.name->mark, fields.name->path,
                    "rule name '" + rule.name + "' is already used by " + other + other_kind);
            }
        }
        automatic_name.push_back(automatic);
        classifier.rules.push_back(std::move(rule));
    }
    std::stable_sort(classifier.rules.begin(), classifier.rules.end(),
                     [](const auto& a, const auto& b) { return a.priority < b.priority; });
}

void PolicyLoader::read_flow_table(const Field& field) {
    ClassifierPolicy& classifier = policy_.classifier;
    const MapFields table(field, {"capacity", "slots_per_flow", "idle_timeout"}, errors_);
    if (auto capacity = table.get("capacity")) {
        if (auto value = read_unsigned(*capacity, 1024, 1U << 24, errors_)) {
            classifier.flow_table.capacity = static_cast<uint32_t>(*value);
        }
    }
    if (auto slots = table.get("slots_per_flow")) {
        const auto value = read_unsigned(*slots, 2, classifier::kMaxSlotsPerFlow, errors_);
        if (value && !std::has_single_bit(*value)) {
            errors_.add(slots->mark, slots->path, "must be a power of two: 2, 4, 8 or 16");
        } else if (value) {
            classifier.flow_table.slots_per_flow = static_cast<uint32_t>(*value);
        }
    }
    if (auto idle = table.get("idle_timeout")) {
        classifier.flow_table.idle_timeout_ns =
            read_duration_ns(*idle, 1'000'000, 3'600'000'000'000ULL, errors_)
                .value_or(classifier.flow_table.idle_timeout_ns);
    }
}

// Returns the priority and name fields, for the caller's duplicate checks.
PolicyLoader::RuleFields PolicyLoader::read_rule(const Field& field, ClassifierRule& rule) {
    const MapFields map(field, {"name", "priority", "match", "action"}, errors_);
    RuleFields fields;
    if (auto name = map.get("name")) {
        fields.name_given = true;
        if (auto text = read_name(*name, errors_)) {
            rule.name = *text;
            fields.name = *name;
        }
    }
    auto priority = map.require("priority");
    if (priority) {
        auto value = read_unsigned(*priority, 0, 65535, errors_);
        if (!value) priority.reset();  // already reported; keep it out of the duplicate check
        rule.priority = static_cast<uint32_t>(value.value_or(0));
    }
    if (auto match_field = map.require("match")) read_rule_match(*match_field, rule.match);
    if (auto action_field = map.require("action")) {
        const MapFields action(*action_field, {"class", "job", "dscp"}, errors_);
        if (auto f = action.require("class"))
            rule.action.class_index = lookup_class(*f).value_or(0);
        if (auto f = action.get("job")) {
            if (auto v = read_unsigned(*f, 0, UINT32_MAX, errors_)) {
                rule.action.job = static_cast<uint32_t>(*v);
            }
        }
        if (auto f = action.get("dscp")) {
            if (auto v = read_unsigned(*f, 0, 63, errors_)) {
                rule.action.remark_dscp = static_cast<uint8_t>(*v);
            }
        }
    }
    fields.priority = priority;
    return fields;
}

void PolicyLoader::read_heuristics(const Field& field) {
    const MapFields map(field,
                        {"roce", "dscp_map", "serving", "elephant", "job_by_source", "reclass_gap",
                         "default_class", "malformed", "vxlan_inner"},
                        errors_);
    HeuristicsPolicy& h = policy_.classifier.heuristics;
    if (auto f = map.get("roce")) h.roce_class = lookup_class(*f);
    if (auto f = map.get("dscp_map")) read_dscp_map(*f);
    if (auto f = map.get("serving")) read_serving(*f);
    if (auto f = map.get("reclass_gap")) {
        h.reclass_gap_ns =
            read_duration_ns(*f, 0, 1'000'000'000, errors_).value_or(h.reclass_gap_ns);
    }
    if (auto f = map.get("elephant")) read_elephant(*f);
    if (auto f = map.get("job_by_source")) read_job_by_source(*f);
    if (auto f = map.get("default_class"))
        h.default_class = lookup_class(*f).value_or(h.default_class);
    if (auto f = map.get("malformed")) {
        if (auto index = read_choice(*f, {"default", "drop"}, errors_)) {
            h.malformed = *index == 0 ? MalformedAction::default_class : MalformedAction::drop;
        }
    }
    if (auto f = map.get("vxlan_inner")) h.vxlan_inner = read_bool(*f, errors_).value_or(false);
}

void PolicyLoader::read_rule_match(const Field& field, RuleMatch& m) {
    const MapFields match(
        field,
        {"ingress_port", "vlan", "src", "dst", "proto", "src_port", "dst_port", "dscp", "roce"},
        errors_);
    if (auto f = match.get("ingress_port")) m.ingress_port = lookup_port(*f);
    if (auto f = match.get("vlan")) {
        if (auto v = read_unsigned(*f, 0, 4095, errors_)) m.vlan = static_cast<uint16_t>(*v);
    }
    if (auto f = match.get("src")) m.src = read_prefix(*f, errors_);
    if (auto f = match.get("dst")) m.dst = read_prefix(*f, errors_);
    if (m.src && m.dst && m.src->version != m.dst->version) {
        errors_.add(field.mark, field.path, "src and dst mix IPv4 and IPv6");
    }
    if (auto f = match.get("proto")) m.proto = read_protocol(*f, errors_);
    if (auto f = match.get("src_port")) m.src_port = read_range(*f, 65535, errors_);
    if (auto f = match.get("dst_port")) m.dst_port = read_range(*f, 65535, errors_);
    if ((m.src_port || m.dst_port) && m.proto && *m.proto != 6 && *m.proto != 17) {
        errors_.add(field.mark, field.path, "src_port/dst_port need proto tcp or udp");
    }
    if (auto f = match.get("dscp")) {
        if (auto v = read_unsigned(*f, 0, 63, errors_)) m.dscp = static_cast<uint8_t>(*v);
    }
    if (auto f = match.get("roce")) {
        if (f->node.IsMap()) {  // roce: {qp: 100-200}
            const MapFields roce(*f, {"qp"}, errors_);
            m.roce = true;
            if (auto qp = roce.require("qp")) m.roce_qp = read_range(*qp, 0xFFFFFF, errors_);
        } else {
            m.roce = read_bool(*f, errors_);
        }
        if (m.roce == true && m.proto && *m.proto != 17) {
            errors_.add(f->mark, f->path, "RoCEv2 is carried over UDP; proto conflicts");
        }
    }
}

void PolicyLoader::read_dscp_map(const Field& field) {
    HeuristicsPolicy& h = policy_.classifier.heuristics;
    if (!field.node.IsMap() && !field.node.IsNull()) {
        errors_.add(field.mark, field.path,
                    "expected a mapping of dscp: class, such as {46: inference}");
    } else if (field.node.IsMap()) {
        // Keys are numbers, not a fixed set: walk the mapping directly.
        for (const auto& pair : field.node) {
            const YAML::Node key_node = pair.first;
            const YAML::Node value_node = pair.second;
            const std::string key = key_node.IsScalar() ? key_node.Scalar() : "";
            const Field key_field{key_node, key_node.Mark(), join_path(field.path, key)};
            auto dscp = read_unsigned(key_field, 0, 63, errors_);
            const YAML::Mark value_mark = value_node.IsNull() ? key_node.Mark() : value_node.Mark();
            auto cls = lookup_class(Field{value_node, value_mark, key_field.path});
            if (!dscp || !cls) continue;
            if (h.dscp_class[*dscp]) {
                errors_.add(key_field.mark, key_field.path,
                            "dscp " + std::to_string(*dscp) + " is mapped twice");
            }
            h.dscp_class[*dscp] = cls;
        }
    }
}

void PolicyLoader::read_serving(const Field& field) {
    const MapFields serving(field, {"ports", "class"}, errors_);
    ServingPolicy policy;
    if (auto ports = serving.require("ports")) {
        for (const Field& item : read_sequence(*ports, errors_).value_or(std::vector<Field>{})) {
            auto range = read_range(item, 65535, errors_);
            if (range && range->first == 0) {
                errors_.add(item.mark, item.path, "port 0 is not a serving port");
            } else if (range) {
                policy.ports.push_back(*range);
            }
        }
        uint64_t total = 0;
        for (const ValueRange& range : policy.ports)
            total += range.last - range.first + 1;
        if (total > kMaxServingPorts) {
            errors_.add(ports->mark, ports->path,
                        "at most " + std::to_string(kMaxServingPorts) +
                            " serving ports in all (each is a table entry)");
        }
    }
    if (auto cls = serving.require("class")) policy.class_index = lookup_class(*cls).value_or(0);
    policy_.classifier.heuristics.serving = policy;
}

void PolicyLoader::read_job_by_source(const Field& field) {
    const MapFields prefixes(field, {"ipv4", "ipv6"}, errors_);
    JobBySourcePolicy policy;
    if (auto f = prefixes.get("ipv4")) {
        policy.ipv4_prefix =
            static_cast<uint8_t>(read_unsigned(*f, 1, 32, errors_).value_or(policy.ipv4_prefix));
    }
    if (auto f = prefixes.get("ipv6")) {
        policy.ipv6_prefix =
            static_cast<uint8_t>(read_unsigned(*f, 1, 128, errors_).value_or(policy.ipv6_prefix));
    }
    policy_.classifier.heuristics.job_by_source = policy;
}

void PolicyLoader::read_elephant(const Field& field) {
    HeuristicsPolicy& h = policy_.classifier.heuristics;
    const MapFields elephant(field, {"bytes", "window", "quiet", "class"}, errors_);
    ElephantPolicy policy;
    if (auto v = elephant.require("bytes")) {
        // Flow entries count window bytes in 32 bits (classifier/flow_table.h).
        policy.bytes =
            read_size_bytes(*v, 1, classifier::kMaxElephantThresholdBytes, errors_).value_or(0);
    }
    if (auto v = elephant.require("window")) {
        policy.window_ns =
            read_duration_ns(*v, 1'000'000, 3'600'000'000'000ULL, errors_).value_or(0);
    }
    auto quiet = elephant.require("quiet");
    if (quiet) {
        policy.quiet_ns =
            read_duration_ns(*quiet, 1'000, 3'600'000'000'000ULL, errors_).value_or(0);
    }
    if (auto v = elephant.require("class")) policy.class_index = lookup_class(*v).value_or(0);
    // A demoted flow may move back only after its packets in the bulk lane have left.
    if (quiet && policy.quiet_ns != 0 && policy.quiet_ns < h.reclass_gap_ns) {
        errors_.add(quiet->mark, quiet->path,
                    "quiet must be at least reclass_gap (" +
                        std::to_string(h.reclass_gap_ns / 1000) + "us)");
    }
    h.elephant = policy;
}

}  // namespace twinlane::conf
