// Lossless classes and priority flow control: a class's `lossless`, a port's `pfc`, the
// top-level `pfc` section, and the checks across them once the trees are placed on their ports
// (a lossless class's leaves hold xoff + headroom from every PFC port that feeds them).
#include <algorithm>
#include <cmath>
#include <functional>

#include "conf/lossless.h"
#include "conf/policy_loader.h"
#include "conf/policy_values.h"

namespace twinlane::conf {
namespace {

// "100m", "2km", or a number of metres.
std::optional<uint64_t> read_metres(const Field& field, ErrorList& errors) {
    const std::string text = field.node.IsScalar() ? field.node.Scalar() : "";
    uint64_t scale = 1;
    std::string_view digits = text;
    if (digits.ends_with("km")) {
        scale = 1000;
        digits.remove_suffix(2);
    } else if (digits.ends_with("m")) {
        digits.remove_suffix(1);
    }
    const auto value = parse_unsigned(digits, 100'000);
    if (!value || *value * scale > 100'000) {
        errors.add(field.mark, field.path,
                   "expected a cable length such as 5m, 100m or 2km (at most 100km)");
        return std::nullopt;
    }
    return *value * scale;
}

}  // namespace

std::optional<LosslessPolicy> PolicyLoader::read_lossless(const Field& field) {
    const MapFields map(field, {"priority", "xoff", "xon", "headroom"}, errors_);
    if (!map.is_map()) return std::nullopt;
    LosslessPolicy lossless;
    if (auto f = map.require("priority")) {
        lossless.priority = static_cast<uint8_t>(read_unsigned(*f, 0, 7, errors_).value_or(3));
    }
    if (auto f = map.require("xoff"))
        lossless.xoff_bytes = read_size_bytes(*f, 1, 1ULL << 31, errors_).value_or(0);
    if (auto f = map.require("xon"))
        lossless.xon_bytes = read_size_bytes(*f, 0, 1ULL << 31, errors_).value_or(0);
    if (lossless.xon_bytes >= lossless.xoff_bytes && lossless.xoff_bytes != 0) {
        errors_.add(field.mark, field.path, "xon must be below xoff");
    }
    if (auto f = map.get("headroom")) {
        if (f->node.IsScalar() && f->node.Scalar() == "auto") {
            lossless.headroom_bytes.reset();
        } else if (auto bytes = read_size_bytes(*f, 1, 1ULL << 31, errors_)) {
            lossless.headroom_bytes = *bytes;
        }
    }
    return lossless;
}

void PolicyLoader::read_port_pfc(const Field& field, PortPfc& pfc) {
    const std::vector<std::string_view> modes{"off", "software", "nic"};
    if (field.node.IsScalar()) {  // `pfc: software` is short for `pfc: {mode: software}`
        if (auto mode = read_choice(field, modes, errors_)) pfc.mode = static_cast<PfcMode>(*mode);
        return;
    }
    const MapFields map(field, {"mode", "cable", "peer_response"}, errors_);
    if (auto f = map.require("mode")) {
        if (auto mode = read_choice(*f, modes, errors_)) pfc.mode = static_cast<PfcMode>(*mode);
    }
    if (auto f = map.get("cable")) pfc.cable_metres = read_metres(*f, errors_).value_or(0);
    if (auto f = map.get("peer_response")) {
        pfc.peer_response_bytes =
            read_size_bytes(*f, 0, 1ULL << 24, errors_).value_or(pfc.peer_response_bytes);
    }
}

void PolicyLoader::read_pfc(const Field& field) {
    const MapFields map(field, {"dscp_priority", "poll", "watchdog"}, errors_);
    PfcPolicy& pfc = policy_.pfc;
    if (auto f = map.get("dscp_priority")) {
        if (!f->node.IsMap()) {
            errors_.add(f->mark, f->path, "expected a mapping of dscp: priority, such as {26: 3}");
        } else {
            for (const auto& pair : f->node) {
                const YAML::Node key = pair.first;
                const Field key_field{key, key.Mark(),
                                      join_path(f->path, key.IsScalar() ? key.Scalar() : "")};
                const Field value_field{pair.second, pair.second.Mark(), key_field.path};
                auto dscp = read_unsigned(key_field, 0, 63, errors_);
                auto priority = read_unsigned(value_field, 0, 7, errors_);
                if (!dscp || !priority) continue;
                if (pfc.dscp_priority[*dscp] != 0xFF) {
                    errors_.add(key_field.mark, key_field.path,
                                "dscp " + std::to_string(*dscp) + " is mapped twice");
                }
                pfc.dscp_priority[*dscp] = static_cast<uint8_t>(*priority);
            }
        }
    }
    if (auto f = map.get("poll")) {
        pfc.poll_ns = read_duration_ns(*f, 1'000, 10'000'000, errors_).value_or(pfc.poll_ns);
    }
    if (auto f = map.get("watchdog")) {
        const MapFields watchdog(*f, {"storm_detect", "storm_restore", "action"}, errors_);
        if (auto d = watchdog.get("storm_detect")) {
            if (d->node.IsScalar() && d->node.Scalar() == "off") {
                pfc.storm_detect_ns = 0;
            } else {
                pfc.storm_detect_ns = read_duration_ns(*d, 1'000'000, 10'000'000'000ULL, errors_)
                                          .value_or(pfc.storm_detect_ns);
            }
        }
        if (auto r = watchdog.get("storm_restore")) {
            pfc.storm_restore_ns = read_duration_ns(*r, 1'000'000, 60'000'000'000ULL, errors_)
                                       .value_or(pfc.storm_restore_ns);
        }
        if (auto a = watchdog.get("action")) {
            if (auto action = read_choice(*a, {"drop", "forward"}, errors_))
                pfc.storm_action = *action == 0 ? StormAction::drop : StormAction::forward;
        }
    }
}

// Across sections, once the trees are placed: every PFC port can both receive (it is polled)
// and send (it transmits, so its scheduler lcore sends the frames); each priority names one
// lossless class; a lossless class has a PFC port to pause, leaves that do not drop early and
// room for xoff + headroom from every PFC port feeding them.
void PolicyLoader::check_lossless() {
    for (size_t i = 0; i < policy_.ports.size(); ++i) {
        const PortPolicy& port = policy_.ports[i];
        if (port.pfc.mode == PfcMode::off) continue;
        const bool receives =
            std::any_of(policy_.forwarding.begin(), policy_.forwarding.end(),
                        [&](const ForwardingPolicy& f) { return f.from_port == i; });
        const bool sends = std::any_of(policy_.forwarding.begin(), policy_.forwarding.end(),
                                       [&](const ForwardingPolicy& f) { return f.to_port == i; });
        if (!receives || !sends) {
            const Field& at = pfc_fields_.count(i) ? pfc_fields_.at(i) : lossless_anchor_;
            errors_.add(at.mark, at.path,
                        "pfc on port '" + port.name +
                            "' needs it to receive (forwarding from it) " +
                            "and to transmit (forwarding to it): PFC frames are sent by its " +
                            "scheduler lcore and read by its RX lcore");
        }
    }
    std::array<std::optional<size_t>, 8> class_of_priority{};
    for (size_t c = 0; c < policy_.classes.size(); ++c) {
        const ClassPolicy& cls = policy_.classes[c];
        if (!cls.lossless) continue;
        const Field& at = lossless_fields_.at(c);
        const uint8_t p = cls.lossless->priority;
        if (class_of_priority[p]) {
            errors_.add(at.mark, join_path(at.path, "priority"),
                        "priority " + std::to_string(p) + " is already bound to class '" +
                            policy_.classes[*class_of_priority[p]].name + "'");
        }
        class_of_priority[p] = c;
        const bool any_pfc =
            std::any_of(policy_.ports.begin(), policy_.ports.end(),
                        [](const PortPolicy& port) { return port.pfc.mode != PfcMode::off; });
        if (!any_pfc) {
            errors_.add(at.mark, at.path,
                        "class '" + cls.name + "' is lossless but no port has pfc: nothing " +
                            "would pause its senders");
        }
    }
    for (const EgressTree& tree : policy_.egress_trees)
        check_lossless_leaves(tree);
}

void PolicyLoader::check_lossless_leaves(const EgressTree& tree) {
    const PortPolicy& egress = policy_.ports[tree.port];
    std::function<void(const TreeNode&, std::optional<size_t>)> visit =
        [&](const TreeNode& node, std::optional<size_t> cls) {
            if (node.class_index) cls = node.class_index;
            for (const TreeNode& child : node.children)
                visit(child, cls);
            if (!node.is_leaf() || !cls || !policy_.classes[*cls].lossless) return;
            const Field& at = lossless_fields_.at(*cls);
            const LosslessPolicy& lossless = *policy_.classes[*cls].lossless;
            if (node.codel) {
                errors_.add(at.mark, at.path,
                            "leaf '" + node.name + "' of lossless class '" +
                                policy_.classes[*cls].name +
                                "' has codel, which drops: use ecn marking instead");
            }
            if (node.ecn && node.ecn->drop_non_ect) {
                errors_.add(at.mark, at.path,
                            "leaf '" + node.name + "' of lossless class '" +
                                policy_.classes[*cls].name +
                                "' drops non-ECT packets early: set ecn.drop_non_ect: false");
            }
            const LosslessRoom room = lossless_room(policy_, tree.port, lossless);
            if (room.ingress_ports == 0) return;
            const uint64_t min_packets = (room.bytes + kMinFrameBytes - 1) / kMinFrameBytes;
            if (node.limit_bytes < room.bytes || node.limit_packets < min_packets) {
                errors_.add(at.mark, at.path,
                            "leaf '" + node.name + "' of port '" + egress.name + "' holds " +
                                std::to_string(node.limit_bytes) + " bytes and " +
                                std::to_string(node.limit_packets) +
                                " packets; lossless needs xoff + headroom from its " +
                                std::to_string(room.ingress_ports) +
                                " PFC port(s): " + std::to_string(room.bytes) + " bytes (" +
                                std::to_string(min_packets) + " packets of " +
                                std::to_string(kMinFrameBytes) + " bytes)");
            }
        };
    visit(tree.root, std::nullopt);
}

}  // namespace twinlane::conf
