#include "replay/rte_sched_layout.h"

#include <algorithm>

namespace twinlane::replay {
namespace {
constexpr uint8_t kBestEffort = 12;
constexpr uint32_t kMaxQueue = 32768;  // rte_sched queue sizes are 16-bit powers of two

void collect_classes(const conf::TreeNode& node, std::vector<size_t>& classes) {
    if (node.class_index) classes.push_back(*node.class_index);
    for (const auto& child : node.children)
        collect_classes(child, classes);
}

void mark_classes_split_per_job(const conf::TreeNode& node, std::vector<bool>& split) {
    if (node.class_index && node.job_split.mode != conf::JobSplit::Mode::none &&
        *node.class_index < split.size())
        split[*node.class_index] = true;
    for (const auto& child : node.children)
        mark_classes_split_per_job(child, split);
}

uint64_t leaf_packets(const conf::TreeNode& node) {
    if (node.is_leaf()) return node.limit_packets;
    uint64_t total = 0;
    for (const auto& child : node.children)
        total += leaf_packets(child);
    return total;
}

const conf::TreeNode* per_job_drr(const conf::TreeNode& node) {
    if (node.kind == conf::NodeKind::drr &&
        (node.job_split.mode != conf::JobSplit::Mode::none || node.children.size() > 1))
        return &node;
    for (const auto& child : node.children)
        if (const auto* found = per_job_drr(child)) return found;
    return nullptr;
}
}  // namespace

RteSchedLayout rte_sched_layout_from(const conf::Policy& policy, const conf::EgressTree& tree) {
    RteSchedLayout layout;
    layout.traffic_class_of_class.assign(policy.classes.size(), kBestEffort);
    layout.job_picks_queue.assign(policy.classes.size(), false);
    mark_classes_split_per_job(tree.root, layout.job_picks_queue);
    layout.link_rate_bps = policy.ports.at(tree.port).rate_bits_per_sec;

    std::vector<const conf::TreeNode*> lanes;
    if (tree.root.kind == conf::NodeKind::strict) {
        for (const auto& child : tree.root.children)
            lanes.push_back(&child);
    } else {
        lanes.push_back(&tree.root);
    }
    uint8_t next_tc = 0;
    bool best_effort_used = false;
    for (const conf::TreeNode* lane : lanes) {
        std::vector<size_t> classes;
        collect_classes(*lane, classes);
        const conf::TreeNode* drr = per_job_drr(*lane);
        uint8_t tc;
        if ((drr != nullptr && !best_effort_used) || next_tc >= kBestEffort) {
            tc = kBestEffort;
            if (drr != nullptr && !best_effort_used) {
                for (size_t i = 0; i < 4 && i < drr->children.size(); ++i)
                    layout.best_effort_weights[i] =
                        static_cast<uint8_t>(std::clamp<uint32_t>(drr->children[i].weight, 1, 254));
                const uint64_t per_queue = drr->children.empty()
                                               ? leaf_packets(*drr)
                                               : leaf_packets(*drr) / drr->children.size();
                layout.queue_packets[kBestEffort] = static_cast<uint16_t>(
                    std::min<uint64_t>(std::max<uint64_t>(per_queue, 2), kMaxQueue));
            }
            best_effort_used = true;
        } else {
            tc = next_tc++;
            layout.queue_packets[tc] = static_cast<uint16_t>(
                std::min<uint64_t>(std::max<uint64_t>(leaf_packets(*lane), 2), kMaxQueue));
        }
        for (size_t c : classes)
            if (c < layout.traffic_class_of_class.size()) layout.traffic_class_of_class[c] = tc;
    }
    if (layout.queue_packets[kBestEffort] == 0) layout.queue_packets[kBestEffort] = 64;
    return layout;
}

}  // namespace twinlane::replay
