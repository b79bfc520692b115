// Scheduling trees as written (the top-level `scheduler` and each port's own): node keys,
// leaves and their options, per_job splits, children; names unique and every class entering
// each tree once. resolve_tree.cc places them on their ports.
#include <algorithm>
#include <bit>
#include <map>

#include "conf/policy_loader.h"
#include "conf/policy_values.h"
#include "sched/tree_spec.h"

namespace twinlane::conf {

std::optional<RawTree> PolicyLoader::read_tree(const Field& field) {
    RawTree tree;
    std::vector<YAML::Node> ancestors;
    tree.valid = read_node(field, std::nullopt, 0, ancestors, tree.root);
    // Names must be unique within a tree: they name the nodes in metrics and in replacements.
    std::map<std::string, const RawNode*> by_name;
    std::vector<const RawNode*> pending{&tree.root};
    size_t count = 0;
    while (!pending.empty()) {
        const RawNode* raw = pending.back();
        pending.pop_back();
        ++count;
        if (!raw->node.name.empty()) {
            auto [it, inserted] = by_name.emplace(raw->node.name, raw);
            if (!inserted) {
                errors_.add(raw->field.mark, join_path(raw->field.path, "name"),
                            "duplicate node name '" + raw->node.name + "' in this tree");
                tree.valid = false;
            }
        }
        // Reverse, so nodes are visited in file order and the later duplicate is reported.
        for (auto child = raw->children.rbegin(); child != raw->children.rend(); ++child) {
            pending.push_back(&*child);
        }
    }
    if (count > sched::kMaxNodes) {
        errors_.add(field.mark, field.path,
                    "the tree has " + std::to_string(count) + " nodes, at most " +
                        std::to_string(sched::kMaxNodes));
        tree.valid = false;
    }
    check_tree_classes(tree, field);
    return tree;
}

// A node: its common keys (read_node_keys), then what its kind adds: leaf options
// (read_leaf), a per_job split (read_per_job) or children (read_children). Returns whether the
// node and everything under it read without error.
bool PolicyLoader::read_node(const Field& field, std::optional<NodeKind> parent_kind, size_t depth,
                             std::vector<YAML::Node>& ancestors, RawNode& out) {
    out.field = field;
    const size_t errors_before = errors_.size();
    for (const YAML::Node& ancestor : ancestors) {
        if (ancestor.is(field.node)) {
            errors_.add(field.mark, field.path,
                        "this node is its own ancestor (a YAML alias loop); every node needs "
                        "exactly one parent");
            return false;
        }
    }
    if (depth >= sched::kMaxDepth) {
        errors_.add(field.mark, field.path,
                    "the tree is deeper than " + std::to_string(sched::kMaxDepth) + " levels");
        return false;
    }
    const MapFields map(field,
                        {"name", "kind", "class", "weight", "shaper", "children", "per_job",
                         "limit", "codel", "ecn", "buckets", "sparse_boost"},
                        errors_);
    if (!map.is_map()) return false;
    const std::optional<NodeKind> kind = read_node_keys(map, parent_kind, out);
    if (kind == NodeKind::fq || kind == NodeKind::fifo) {
        read_leaf(map, out);
        return errors_.size() == errors_before;
    }
    for (std::string_view leaf_key : {"limit", "codel", "ecn", "buckets", "sparse_boost"}) {
        if (auto f = map.get(leaf_key); f && kind) {
            errors_.add(f->mark, f->path,
                        std::string(leaf_key) + " only applies to leaves (fq, fifo)");
        }
    }
    if (!kind) return false;
    if (auto per_job = map.get("per_job")) {
        return read_per_job(map, *per_job, out) && errors_.size() == errors_before;
    }
    return read_children(map, *kind, depth, ancestors, out) && errors_.size() == errors_before;
}

// name, kind, weight, shaper, class: what every node may have. Returns the kind, if valid.
std::optional<NodeKind> PolicyLoader::read_node_keys(const MapFields& map,
                                                     std::optional<NodeKind> parent_kind,
                                                     RawNode& out) {
    TreeNode& node = out.node;
    if (auto name_field = map.require("name"))
        node.name = read_name(*name_field, errors_).value_or("");
    std::optional<NodeKind> kind;
    if (auto kind_field = map.require("kind")) {
        if (auto index = read_choice(*kind_field, {"strict", "drr", "fq", "fifo"}, errors_)) {
            kind = static_cast<NodeKind>(*index);
            node.kind = *kind;
        }
    }
    if (auto weight = map.get("weight")) {
        if (parent_kind != NodeKind::drr) {
            errors_.add(weight->mark, weight->path, "weight only applies to a child of a drr node");
        } else if (auto value = read_unsigned(*weight, 1, sched::kMaxWeight, errors_)) {
            node.weight = static_cast<uint32_t>(*value);
        }
    }
    if (auto shaper = map.get("shaper")) {
        const MapFields shaper_map(*shaper, {"rate", "burst"}, errors_);
        out.shaper_field = *shaper;
        if (auto rate = shaper_map.require("rate"))
            out.shaper_rate = read_rate(*rate, true, errors_);
        if (auto burst = shaper_map.get("burst"))
            out.shaper_burst = read_byte_budget(*burst, errors_);
    }
    const bool is_leaf = kind == NodeKind::fq || kind == NodeKind::fifo;
    if (auto class_field = map.get("class")) {
        if (kind && !is_leaf && !(kind == NodeKind::drr && map.get("per_job"))) {
            errors_.add(class_field->mark, class_field->path,
                        "a class enters the tree at a leaf (fq, fifo) or a per_job drr node");
        } else {
            node.class_index = lookup_class(*class_field);
        }
    }
    return kind;
}

void PolicyLoader::read_leaf(const MapFields& map, RawNode& out) {
    if (auto children = map.get("children"))
        errors_.add(children->mark, children->path, "a leaf (fq, fifo) has no children");
    if (auto per_job = map.get("per_job"))
        errors_.add(per_job->mark, per_job->path, "per_job only applies to drr nodes");
    read_leaf_options(map, out);
    if (!out.node.class_index && !map.get("class")) {
        errors_.add(map.self().mark, join_path(map.self().path, "class"),
                    "leaf '" + out.node.name + "' has no class: no packet would ever reach it");
    }
}

// A per_job drr node generates one leaf per listed job (plus one for every other job) or
// `count` leaves for job % count, each from the `leaf` template.
bool PolicyLoader::read_per_job(const MapFields& map, const Field& per_job, RawNode& out) {
    TreeNode& node = out.node;
    if (node.kind != NodeKind::drr) {
        errors_.add(per_job.mark, per_job.path, "per_job only applies to drr nodes");
        return false;
    }
    if (auto children = map.get("children")) {
        errors_.add(children->mark, children->path,
                    "a per_job node generates its children; drop 'children'");
        return false;
    }
    if (!map.get("class")) {
        errors_.add(per_job.mark, join_path(map.self().path, "class"),
                    "a per_job node needs the class whose jobs it splits");
    }
    const MapFields job_map(per_job, {"jobs", "count", "leaf"}, errors_);
    auto jobs_field = job_map.get("jobs");
    auto count_field = job_map.get("count");
    if (jobs_field && count_field) {
        errors_.add(count_field->mark, count_field->path, "give either 'jobs' or 'count'");
        return false;
    }
    JobSplit& split = node.job_split;
    std::vector<std::string> child_names;
    if (jobs_field) {
        split.mode = JobSplit::Mode::listed;
        for (const Field& job_field :
             read_sequence(*jobs_field, errors_).value_or(std::vector<Field>{})) {
            auto job = read_unsigned(job_field, 0, UINT32_MAX, errors_);
            if (!job) continue;
            const auto id = static_cast<uint32_t>(*job);
            if (std::find(split.jobs.begin(), split.jobs.end(), id) != split.jobs.end()) {
                errors_.add(job_field.mark, job_field.path,
                            "job " + std::to_string(id) + " is listed twice");
                continue;
            }
            split.jobs.push_back(id);
            child_names.push_back(node.name + ".job" + std::to_string(id));
        }
        if (split.jobs.empty() || split.jobs.size() >= kMaxJobsPerNode) {
            errors_.add(jobs_field->mark, jobs_field->path,
                        "list between 1 and " + std::to_string(kMaxJobsPerNode - 1) + " jobs");
        }
        child_names.push_back(node.name + ".other_jobs");
    } else if (count_field) {
        split.mode = JobSplit::Mode::modulo;
        if (auto count = read_unsigned(*count_field, 1, kMaxJobsPerNode, errors_)) {
            split.count = static_cast<uint32_t>(*count);
            for (uint32_t i = 0; i < split.count; ++i)
                child_names.push_back(node.name + ".job" + std::to_string(i));
        }
    } else {
        errors_.add(per_job.mark, per_job.path, "give 'jobs: [ids]' or 'count: N'");
        return false;
    }
    RawNode leaf_template;
    if (auto leaf_field = job_map.require("leaf")) {
        // The template is an ordinary leaf without name or class: both are generated.
        const MapFields leaf_map(
            *leaf_field, {"kind", "limit", "codel", "ecn", "buckets", "sparse_boost"}, errors_);
        leaf_template.field = *leaf_field;
        if (auto leaf_kind = leaf_map.require("kind")) {
            if (auto index = read_choice(*leaf_kind, {"fq", "fifo"}, errors_)) {
                leaf_template.node.kind = *index == 0 ? NodeKind::fq : NodeKind::fifo;
            }
        }
        read_leaf_options(leaf_map, leaf_template);
    }
    for (const std::string& child_name : child_names) {
        RawNode child = leaf_template;
        child.node.name = child_name;
        out.children.push_back(std::move(child));
    }
    return true;
}

bool PolicyLoader::read_children(const MapFields& map, NodeKind kind, size_t depth,
                                 std::vector<YAML::Node>& ancestors, RawNode& out) {
    auto children = map.get("children");
    if (!children) {
        errors_.add(map.self().mark, join_path(map.self().path, "children"),
                    "a " + std::string(kind == NodeKind::strict ? "strict" : "drr") +
                        " node needs children (or per_job, for drr)");
        return false;
    }
    auto items = read_sequence(*children, errors_);
    if (!items) return false;
    if (items->empty()) errors_.add(children->mark, children->path, "at least one child is needed");
    if (kind == NodeKind::strict && items->size() > sched::kMaxStrictChildren) {
        errors_.add(
            children->mark, children->path,
            "a strict node has at most " + std::to_string(sched::kMaxStrictChildren) + " children");
    }
    ancestors.push_back(map.self().node);
    for (const Field& item : *items) {
        RawNode child;
        read_node(item, kind, depth + 1, ancestors, child);
        out.children.push_back(std::move(child));
    }
    ancestors.pop_back();
    return true;
}

void PolicyLoader::read_leaf_options(const MapFields& map, RawNode& raw) {
    TreeNode& node = raw.node;
    if (auto limit = map.get("limit")) {
        const MapFields limit_map(*limit, {"packets", "bytes"}, errors_);
        if (auto packets = limit_map.get("packets")) {
            if (auto value = read_unsigned(*packets, 1, kMaxLeafPackets, errors_)) {
                node.limit_packets = static_cast<uint32_t>(*value);
            }
        }
        if (auto bytes = limit_map.get("bytes")) {
            if (auto value = read_size_bytes(*bytes, 9216, 1ULL << 32, errors_)) {
                node.limit_bytes = *value;
            }
        }
    }
    if (auto codel = map.get("codel")) {
        const MapFields codel_map(*codel, {"target", "interval", "ecn"}, errors_);
        CodelPolicy policy;
        if (auto target = codel_map.get("target")) {
            policy.target_ns =
                read_duration_ns(*target, 1'000, 1'000'000'000, errors_).value_or(policy.target_ns);
        }
        if (auto interval = codel_map.get("interval")) {
            policy.interval_ns = read_duration_ns(*interval, 1'000, 10'000'000'000ULL, errors_)
                                     .value_or(policy.interval_ns);
        }
        if (auto ecn = codel_map.get("ecn")) policy.ecn = read_bool(*ecn, errors_).value_or(true);
        if (policy.target_ns >= policy.interval_ns) {
            errors_.add(codel->mark, codel->path, "codel target must be shorter than its interval");
        }
        node.codel = policy;
    }
    if (auto ecn = map.get("ecn")) {
        const MapFields ecn_map(*ecn, {"enabled", "kmin", "kmax", "pmax", "drop_non_ect"}, errors_);
        bool enabled = true;
        if (auto f = ecn_map.get("enabled")) enabled = read_bool(*f, errors_).value_or(true);
        EcnPolicy policy{
            .kmin_bytes = 20'000, .kmax_bytes = 200'000, .pmax_ppm = 200'000, .drop_non_ect = true};
        if (auto f = ecn_map.get("kmin")) {
            policy.kmin_bytes =
                read_size_bytes(*f, 0, 1ULL << 31, errors_).value_or(policy.kmin_bytes);
        }
        if (auto f = ecn_map.get("kmax")) {
            policy.kmax_bytes =
                read_size_bytes(*f, 1, 1ULL << 31, errors_).value_or(policy.kmax_bytes);
        }
        if (auto f = ecn_map.get("pmax")) {
            auto ppm = read_percent_ppm(*f, errors_);
            if (ppm && *ppm == 0) {
                errors_.add(f->mark, f->path, "pmax must be more than 0%");
            } else if (ppm) {
                policy.pmax_ppm = *ppm;
            }
        }
        if (auto f = ecn_map.get("drop_non_ect")) {
            policy.drop_non_ect = read_bool(*f, errors_).value_or(true);
        }
        if (policy.kmin_bytes >= policy.kmax_bytes) {
            errors_.add(ecn->mark, ecn->path, "ecn kmin must be below kmax");
        }
        if (enabled) node.ecn = policy;
    }
    auto buckets = map.get("buckets");
    auto sparse = map.get("sparse_boost");
    if (node.kind == NodeKind::fq) {
        if (buckets) {
            auto value = read_unsigned(*buckets, 1, sched::kMaxFqBuckets, errors_);
            if (value && !std::has_single_bit(*value)) {
                errors_.add(buckets->mark, buckets->path,
                            "must be a power of two, got " + std::to_string(*value));
            } else if (value) {
                node.fq_buckets = static_cast<uint32_t>(*value);
            }
        }
        if (sparse) node.fq_sparse_boost = read_bool(*sparse, errors_).value_or(true);
    } else {
        if (buckets) errors_.add(buckets->mark, buckets->path, "buckets only applies to fq leaves");
        if (sparse)
            errors_.add(sparse->mark, sparse->path, "sparse_boost only applies to fq leaves");
    }
}

// Every class enters each tree exactly once. "Missing" is only reported for an otherwise valid
// tree: a misspelled class on a leaf already says what is wrong.
void PolicyLoader::check_tree_classes(const RawTree& tree, const Field& field) {
    std::vector<const RawNode*> served_by(class_names_.size(), nullptr);
    std::vector<const RawNode*> pending{&tree.root};
    while (!pending.empty()) {
        const RawNode* raw = pending.back();
        pending.pop_back();
        if (raw->node.class_index) {
            const size_t cls = *raw->node.class_index;
            if (served_by[cls]) {
                errors_.add(raw->field.mark, join_path(raw->field.path, "class"),
                            "class '" + class_names_[cls] + "' already enters the tree at '" +
                                served_by[cls]->node.name + "'");
            } else {
                served_by[cls] = raw;
            }
        }
        for (auto child = raw->children.rbegin(); child != raw->children.rend(); ++child) {
            pending.push_back(&*child);
        }
    }
    for (size_t cls = 0; cls < served_by.size(); ++cls) {
        if (tree.valid && !served_by[cls] && !class_names_[cls].empty()) {
            errors_.add(field.mark, field.path,
                        "class '" + class_names_[cls] + "' has no leaf in this tree");
        }
    }
}

}  // namespace twinlane::conf
