// A class's `slo:`: a latency target at a percentile over a window, a throughput floor, and the
// action taken when the target is missed (conf/README.md, "slo"). Read with the classes (a
// downgrade names another class, so after all of them), resolved per egress port once the
// trees are placed (adapt_cap bounds may be shares of the class node's parent rate).
#include <algorithm>
#include <array>
#include <utility>

#include "conf/policy_loader.h"
#include "slo/slo_spec.h"

namespace twinlane::conf {
namespace {

constexpr std::array<std::pair<std::string_view, SloPercentile>, 4> kPercentiles{{
    {"p50", SloPercentile::p50},
    {"p90", SloPercentile::p90},
    {"p99", SloPercentile::p99},
    {"p999", SloPercentile::p999},
}};
constexpr uint64_t kMaxQuietNs = 3'600'000'000'000ULL;  // 1 h

// Where a class enters a tree, with the rate its parent offers (what `%` refers to).
struct Entry {
    const TreeNode* node = nullptr;
    uint64_t parent_rate = 0;
};

Entry find_entry(const TreeNode& node, uint64_t parent_rate, size_t class_index) {
    if (node.class_index == class_index) return {&node, parent_rate};
    for (const TreeNode& child : node.children) {
        const Entry found = find_entry(child, node.rate_bits_per_sec, class_index);
        if (found.node != nullptr) return found;
    }
    return {};
}

std::string rate_written(const RateSpec& rate) {
    return rate.is_share ? percent_text(rate.share_ppm) : rate_text(rate.bits_per_sec);
}

}  // namespace

void PolicyLoader::read_class_slos() {
    for (size_t i = 0; i < slo_fields_.size() && i < policy_.classes.size(); ++i) {
        if (!slo_fields_[i]) continue;
        policy_.classes[i].slo = read_slo(slo_fields_[i]->slo, i);
    }
}

std::optional<SloPolicy> PolicyLoader::read_slo(const Field& field, size_t class_index) {
    const MapFields map(
        field,
        {"p50", "p90", "p99", "p999", "window", "min_share", "adapt_cap", "downgrade", "alert"},
        errors_);
    if (!map.is_map()) return std::nullopt;
    SloFields& at = *slo_fields_[class_index];
    SloPolicy slo;
    bool ok = true;
    std::optional<Field> first_percentile;
    for (const auto& [key, percentile] : kPercentiles) {
        const auto f = map.get(key);
        if (!f) continue;
        if (first_percentile) {
            errors_.add(f->mark, f->path,
                        "one percentile target per class (this one also has '" +
                            first_percentile->path.substr(first_percentile->path.rfind('.') + 1) +
                            "')");
            ok = false;
            continue;
        }
        first_percentile = f;
        if (auto ns = read_duration_ns(*f, slo::kMinTargetNs, slo::kMaxWindowNs, errors_)) {
            slo.percentile = percentile;
            slo.target_ns = *ns;
        } else {
            ok = false;
        }
    }
    if (auto f = map.get("window")) {
        if (auto ns = read_duration_ns(*f, slo::kMinWindowNs, slo::kMaxWindowNs, errors_)) {
            slo.window_ns = *ns;
        } else {
            ok = false;
        }
    }
    if (auto f = map.get("min_share")) {
        at.min_share = f;
        if (auto ppm = read_percent_ppm(*f, errors_)) {
            if (*ppm == 0) {
                errors_.add(f->mark, f->path, "min_share must be above 0%");
                ok = false;
            }
            slo.min_share_ppm = *ppm;
        } else {
            ok = false;
        }
    }
    if (!first_percentile && !map.get("min_share")) {
        errors_.add(field.mark, field.path,
                    "an slo needs a latency target (p50, p90, p99 or p999: e.g. p99: 50us) or a "
                    "min_share");
        ok = false;
    }
    const auto needs_target = [&](const Field& f, const char* action) {
        if (first_percentile) return true;
        errors_.add(f.mark, f.path,
                    std::string(action) +
                        " acts when a latency target is missed: add one (e.g. p99: 50us)");
        return false;
    };
    if (auto f = map.get("adapt_cap")) {
        at.adapt_cap = f;
        const MapFields cap(*f, {"min", "max"}, errors_);
        const auto min_field = cap.require("min");
        const auto max_field = cap.require("max");
        std::optional<RateSpec> min, max;
        if (min_field) min = read_rate(*min_field, true, errors_);
        if (max_field) max = read_rate(*max_field, true, errors_);
        if (min && max && min->is_share == max->is_share &&
            (min->is_share ? min->share_ppm > max->share_ppm
                           : min->bits_per_sec > max->bits_per_sec)) {
            errors_.add(min_field->mark, min_field->path,
                        "min " + rate_written(*min) + " is above max " + rate_written(*max));
            ok = false;
        }
        if (needs_target(*f, "adapt_cap") && min && max && cap.is_map()) {
            slo.adapt_cap = SloCapPolicy{*min, *max};
        } else {
            ok = false;
        }
    }
    if (auto f = map.get("downgrade")) {
        const MapFields down(*f, {"to", "quiet"}, errors_);
        SloDowngradePolicy d;
        bool down_ok = down.is_map();
        if (auto to = down.require("to")) {
            if (auto cls = lookup_class(*to)) {
                if (*cls == class_index) {
                    errors_.add(to->mark, to->path,
                                "a class cannot be downgraded to itself: name a lower class");
                    down_ok = false;
                }
                d.class_index = *cls;
            } else {
                down_ok = false;
            }
        } else {
            down_ok = false;
        }
        if (auto quiet = down.get("quiet")) {
            if (auto ns = read_duration_ns(*quiet, 0, kMaxQuietNs, errors_)) {
                d.quiet_ns = *ns;
            } else {
                down_ok = false;
            }
        }
        if (needs_target(*f, "downgrade") && down_ok) {
            slo.downgrade = d;
        } else {
            ok = false;
        }
    }
    if (auto f = map.get("alert")) {
        if (auto alert = read_bool(*f, errors_)) {
            slo.alert = *alert;
            if (*alert && (map.get("adapt_cap") || map.get("downgrade"))) {
                errors_.add(f->mark, f->path,
                            "alert: true means measure and export only; remove it or the "
                            "actions (adapt_cap, downgrade)");
                ok = false;
            }
        } else {
            ok = false;
        }
    }
    if (!ok) return std::nullopt;
    return slo;
}

void PolicyLoader::resolve_slos() {
    for (EgressTree& tree : policy_.egress_trees) {
        const PortPolicy& port = policy_.ports[tree.port];
        tree.slo_caps.assign(policy_.classes.size(), std::nullopt);
        for (size_t cls = 0; cls < policy_.classes.size(); ++cls) {
            const std::optional<SloPolicy>& slo = policy_.classes[cls].slo;
            if (!slo || !slo->adapt_cap || cls >= slo_fields_.size() || !slo_fields_[cls]) continue;
            const Field& at = *slo_fields_[cls]->adapt_cap;
            const Entry entry = find_entry(tree.root, port.rate_bits_per_sec, cls);
            if (entry.node == nullptr) continue;  // reported by the tree's class check
            const std::string where = "the node '" + entry.node->name + "' where class '" +
                                      policy_.classes[cls].name + "' enters the tree of port '" +
                                      port.name + "'";
            if (!entry.node->shaper) {
                errors_.add(at.mark, at.path,
                            where +
                                " has no shaper: adapt_cap moves a shaper's rate (add "
                                "shaper: {rate: ...} there; the cap starts at that rate)");
                continue;
            }
            uint64_t min = slo->adapt_cap->min.resolve(entry.parent_rate);
            uint64_t max = slo->adapt_cap->max.resolve(entry.parent_rate);
            const uint64_t rate = entry.node->shaper->rate_bits_per_sec;
            if (overrides(port)) {
                // Replayed at another rate (--link-rate): fitted to it, as shapers are.
                max = std::min(max, entry.parent_rate);
                min = std::min(min, max);
            }
            if (min == 0) {
                errors_.add(at.mark, join_path(at.path, "min"),
                            "min rounds to 0 on port '" + port.name + "'");
            } else if (max > entry.parent_rate) {
                errors_.add(at.mark, join_path(at.path, "max"),
                            "max " + rate_text(max) + " is above the " +
                                rate_text(entry.parent_rate) + " available to " + where);
            } else if (min > max) {
                errors_.add(at.mark, join_path(at.path, "min"),
                            "min " + rate_text(min) + " is above max " + rate_text(max) +
                                " on port '" + port.name + "'");
            } else if (rate < min || rate > max) {
                errors_.add(at.mark, at.path,
                            "the shaper of " + where + " runs at " + rate_text(rate) +
                                ", outside adapt_cap [" + rate_text(min) + ", " + rate_text(max) +
                                "]: the cap starts at the shaper's rate");
            } else {
                tree.slo_caps[cls] = SloCapRates{min, max};
            }
        }
        // A floor is kept only if the caps the controllers may raise leave room for it.
        for (size_t cls = 0; cls < policy_.classes.size(); ++cls) {
            const std::optional<SloPolicy>& slo = policy_.classes[cls].slo;
            if (!slo || !slo->min_share_ppm || cls >= slo_fields_.size() || !slo_fields_[cls] ||
                !slo_fields_[cls]->min_share)
                continue;
            const uint64_t floor =
                port.rate_bits_per_sec / kPartsPerMillion * *slo->min_share_ppm +
                port.rate_bits_per_sec % kPartsPerMillion * *slo->min_share_ppm / kPartsPerMillion;
            uint64_t raised = 0;
            std::string by;
            for (size_t other = 0; other < tree.slo_caps.size(); ++other) {
                if (other == cls || !tree.slo_caps[other]) continue;
                raised += tree.slo_caps[other]->max_bits_per_sec;
                by += (by.empty() ? "'" : ", '") + policy_.classes[other].name + "'";
            }
            if (raised + floor > port.rate_bits_per_sec) {
                const Field& f = *slo_fields_[cls]->min_share;
                errors_.add(f.mark, f.path,
                            "min_share " + percent_text(*slo->min_share_ppm) + " of port '" +
                                port.name + "' (" + rate_text(floor) +
                                ") cannot be kept: adapt_cap of " + by + " may take up to " +
                                rate_text(raised) + " of its " + rate_text(port.rate_bits_per_sec));
            }
        }
    }
}

}  // namespace twinlane::conf
