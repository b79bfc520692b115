// Places each egress port's tree on the port: percentages become bits/s of the parent's rate,
// time-based bursts become bytes, and shapers and limits are checked against the port's rate
// and largest frame.
#include <algorithm>

#include "conf/policy_loader.h"
#include "sched/tree_spec.h"

namespace twinlane::conf {

void PolicyLoader::build_egress_trees(const std::optional<Field>& default_tree_field,
                                      const std::vector<std::optional<Field>>& port_tree_fields) {
    std::optional<RawTree> default_tree;
    if (default_tree_field) default_tree = read_tree(*default_tree_field);
    std::vector<std::optional<RawTree>> port_trees(port_tree_fields.size());
    for (size_t i = 0; i < port_tree_fields.size(); ++i) {
        if (port_tree_fields[i]) port_trees[i] = read_tree(*port_tree_fields[i]);
    }
    if (policy_.ports.size() != port_trees.size()) return;  // ports section itself was broken

    std::vector<bool> is_egress(policy_.ports.size(), false);
    for (const ForwardingPolicy& forwarding : policy_.forwarding) {
        is_egress[forwarding.to_port] = true;
    }
    for (size_t port = 0; port < policy_.ports.size(); ++port) {
        if (!is_egress[port]) {
            if (port_tree_fields[port]) {
                errors_.add(port_tree_fields[port]->mark, port_tree_fields[port]->path,
                            "port '" + port_names_[port] +
                                "' is no forwarding destination, its scheduler is never used");
            }
            continue;
        }
        const RawTree* tree = port_trees[port] ? &*port_trees[port]
                              : default_tree   ? &*default_tree
                                               : nullptr;
        if (!tree) {
            const Field& at = egress_reference_.at(port);
            errors_.add(at.mark, at.path,
                        "egress port '" + port_names_[port] +
                            "' needs a scheduling tree: add a top-level 'scheduler' or "
                            "a 'scheduler' on the port");
            continue;
        }
        if (!tree->valid || policy_.ports[port].rate_bits_per_sec == 0) continue;
        EgressTree egress;
        egress.port = port;
        if (resolve_node(tree->root, policy_.ports[port].rate_bits_per_sec, policy_.ports[port],
                         egress.root)) {
            policy_.egress_trees.push_back(std::move(egress));
        }
    }
}

// Places a tree on a port: percentages become bits/s, defaults that depend on the rate apply.
bool PolicyLoader::resolve_node(const RawNode& raw, uint64_t parent_rate, const PortPolicy& port,
                                TreeNode& out) {
    out = raw.node;
    out.rate_bits_per_sec = parent_rate;
    bool ok = !raw.shaper_rate || resolve_shaper(raw, parent_rate, port, out);
    const uint64_t frame_bytes = port.max_frame_bytes();
    if (out.is_leaf() && out.limit_bytes < frame_bytes) {
        errors_.add(raw.field.mark, join_path(raw.field.path, "limit.bytes"),
                    "limit of " + std::to_string(out.limit_bytes) +
                        " bytes cannot hold one frame of port '" + port.name + "' (" +
                        std::to_string(frame_bytes) + " bytes)");
        ok = false;
    }
    out.children.clear();
    for (const RawNode& child : raw.children) {
        TreeNode resolved;
        ok = resolve_node(child, out.rate_bits_per_sec, port, resolved) && ok;
        out.children.push_back(std::move(resolved));
    }
    return ok;
}

// The node's shaper at this port's rate: at most its parent's rate, a bucket of at least one
// frame (a smaller one could never release that frame).
bool PolicyLoader::resolve_shaper(const RawNode& raw, uint64_t parent_rate, const PortPolicy& port,
                                  TreeNode& out) {
    bool ok = true;
    const bool overridden = overrides(port);
    uint64_t rate = raw.shaper_rate->resolve(parent_rate);
    const std::string rate_path = join_path(raw.shaper_field.path, "rate");
    if (rate > parent_rate && overridden) rate = parent_rate;
    if (rate > parent_rate) {
        errors_.add(raw.shaper_field.mark, rate_path,
                    "shaper rate " + rate_text(rate) + " is above the " + rate_text(parent_rate) +
                        " available on port '" + port.name + "'");
        ok = false;
    } else if (rate == 0) {
        errors_.add(raw.shaper_field.mark, rate_path,
                    "shaper rate rounds to 0 on port '" + port.name + "'");
        ok = false;
    }
    const ByteBudget burst = raw.shaper_burst.value_or(
        ByteBudget{.bytes = 0, .ns = kDefaultBurstNs, .is_duration = true});
    const uint64_t frame_bytes = port.max_frame_bytes();
    const uint64_t burst_bytes =
        std::max(burst.resolve(rate), raw.shaper_burst && !overridden ? 0 : frame_bytes);
    if (burst_bytes < frame_bytes || burst_bytes > sched::kMaxBurstBytes) {
        errors_.add(raw.shaper_field.mark, join_path(raw.shaper_field.path, "burst"),
                    "burst is " + std::to_string(burst_bytes) + " bytes on port '" + port.name +
                        "'; it must hold one frame (" + std::to_string(frame_bytes) +
                        " bytes) and at most " + std::to_string(sched::kMaxBurstBytes >> 20) +
                        "MiB");
        ok = false;
    }
    out.shaper = ShaperPolicy{rate, burst_bytes};
    out.rate_bits_per_sec = std::min(rate, parent_rate);
    return ok;
}

}  // namespace twinlane::conf
