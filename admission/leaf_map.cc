#include "admission/leaf_map.h"

#include <algorithm>
#include <bit>

namespace twinlane::admission {

std::optional<std::string> LeafMap::build(std::vector<ClassLeaves> classes, LeafMap& out) {
    LeafMap map;
    for (size_t c = 0; c < classes.size(); ++c) {
        const ClassLeaves& cls = classes[c];
        const std::string where = "class " + std::to_string(c) + ": ";
        Entry e;
        e.split = cls.split;
        e.first_leaf = cls.first_leaf;
        switch (cls.split) {
            case JobSplit::none:
                if (cls.leaf_count != 1) return where + "one leaf expected";
                break;
            case JobSplit::modulo:
                if (cls.leaf_count == 0) return where + "no leaves to spread jobs over";
                e.count = cls.leaf_count;
                e.magic = UINT64_MAX / e.count + 1;
                e.job_leaves = static_cast<uint32_t>(map.job_leaves_.size());
                map.job_leaves_.emplace_back(e.first_leaf, e.count);
                break;
            case JobSplit::listed: {
                if (cls.leaf_count != cls.jobs.size() + 1)
                    return where + "listed jobs need one leaf each plus one for other jobs";
                e.count = cls.leaf_count;
                // At most half full, so probe sequences stay short.
                e.slot_bits = static_cast<uint32_t>(
                    std::bit_width(std::bit_ceil(std::max<size_t>(2 * cls.jobs.size(), 1)) - 1));
                e.first_slot = static_cast<uint32_t>(map.slots_.size());
                const uint32_t size = 1u << e.slot_bits;
                map.slots_.resize(map.slots_.size() + size);
                for (uint16_t i = 0; i < cls.jobs.size(); ++i) {
                    uint32_t at = classifier::hash_slot(cls.jobs[i], e.slot_bits);
                    uint32_t probe = 1;
                    for (;; at = (at + 1) & (size - 1), ++probe) {
                        Slot& s = map.slots_[e.first_slot + at];
                        if (!s.used) {
                            s = Slot{cls.jobs[i], i, true};
                            break;
                        }
                        if (s.job == cls.jobs[i]) return where + "job listed twice";
                    }
                    e.max_probe = std::max(e.max_probe, probe);
                }
                break;
            }
        }
        if (uint32_t{e.first_leaf} + e.count > UINT16_MAX) return where + "leaf ids above 65535";
        map.entries_.push_back(e);
    }
    map.classes_ = std::move(classes);
    out = std::move(map);
    return std::nullopt;
}

void LeafMap::adopt(const LeafMap& old, const sched::Scheduler& old_tree,
                    const sched::Scheduler& new_tree) {
    const size_t classes = std::min(class_count(), old.class_count());
    for (size_t c = 0; c < classes; ++c) {
        const JobLeaves* before = old.job_leaves(static_cast<uint8_t>(c));
        if (before == nullptr || entries_[c].split != JobSplit::modulo) continue;
        JobLeaves& now = job_leaves_[entries_[c].job_leaves];
        // The leaf, in this tree, that an old leaf's packets moved to, as an offset in `now`.
        const auto moved_to = [&](uint16_t old_offset) -> std::optional<uint16_t> {
            const auto id = new_tree.leaf_id(
                old_tree.leaf_name(static_cast<uint16_t>(before->first_leaf() + old_offset)));
            if (!id || *id < now.first_leaf() || *id >= now.first_leaf() + now.count())
                return std::nullopt;
            return static_cast<uint16_t>(*id - now.first_leaf());
        };
        before->for_each_job([&](uint32_t job, uint16_t offset, uint64_t last_ns) {
            if (const auto to = moved_to(offset)) now.adopt(job, *to, last_ns);
        });
        before->for_each_overflow([&](uint16_t offset) {
            if (const auto to = moved_to(offset)) now.adopt_overflow(*to);
        });
    }
}

}  // namespace twinlane::admission
