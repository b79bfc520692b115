#include "admission/job_leaves.h"

#include <algorithm>
#include <bit>
#include <bitset>
#include <tuple>

#include "classifier/hash_slot.h"
#include "sched/tree_spec.h"

namespace twinlane::admission {

JobLeaves::JobLeaves(uint16_t first_leaf, uint16_t count)
    : first_(first_leaf), count_(std::max<uint16_t>(count, 1)) {
    // Room for 8 jobs a leaf at half load: sharing past that is rare, and overflow then only
    // falls back to the job's home leaf.
    const uint32_t slots = std::bit_ceil(std::max<uint32_t>(64, 16u * count_));
    slot_bits_ = static_cast<uint32_t>(std::countr_zero(slots));
    max_entries_ = slots / 2;
    slots_.resize(slots);
    leaves_.resize(count_);
    free_leaves_ = count_;
}

uint16_t JobLeaves::place(uint32_t job, uint16_t home, uint64_t burst, uint64_t now_ns,
                          const sched::Scheduler& tree) {
    if (Entry* e = find(job)) {
        // Sharing a leaf that is empty now: the job has nothing queued, so it may take a leaf
        // of its own if one is free (or freed by jobs gone quiet), like a new job.
        if (leaves_[e->offset].jobs < 2 || !idle(e->offset, burst, tree)) [[likely]] {
            e->last_ns = now_ns;
            return use(e->offset, burst);
        }
        if (free_leaves_ == 0) {
            reclaim(burst, now_ns, tree);
            e = find(job);  // reclaim may have shifted it, or taken it (quiet, nothing queued)
        }
        if (e != nullptr) {
            if (free_leaves_ == 0) {
                e->last_ns = now_ns;
                return use(e->offset, burst);
            }
            erase(static_cast<uint32_t>(e - slots_.data()));
        }
    }
    LeafState& at_home = leaves_[home];
    if (at_home.overflow && idle(home, burst, tree)) at_home.overflow = false;
    if (at_home.overflow) {  // may hold this job's packets from when the table was full
        insert(job, home, now_ns);
        return use(home, burst);
    }
    if (free_leaves_ == 0 || entries_ == max_entries_) reclaim(burst, now_ns, tree);
    const uint16_t offset = pick(job, home, burst, tree);
    if (!insert(job, offset, now_ns)) {
        at_home.overflow = true;
        return use(home, burst);
    }
    return use(offset, burst);
}

uint16_t JobLeaves::where(uint32_t job, uint16_t home) const {
    const Entry* e = find(job);
    return static_cast<uint16_t>(first_ + (e != nullptr ? e->offset : home));
}

void JobLeaves::adopt(uint32_t job, uint16_t offset, uint64_t last_ns) {
    if (offset < count_ && find(job) == nullptr && !insert(job, offset, last_ns))
        leaves_[offset].overflow = true;
}

void JobLeaves::adopt_overflow(uint16_t offset) {
    if (offset < count_) leaves_[offset].overflow = true;
}

uint16_t JobLeaves::pick(uint32_t job, uint16_t from, uint64_t burst,
                         const sched::Scheduler& tree) const {
    const auto nth = [&](uint16_t i) {  // the i-th leaf from `from` on, cyclically
        return static_cast<uint16_t>(from + i < count_ ? from + i : from + i - count_);
    };
    if (free_leaves_ != 0) {
        for (uint16_t i = 0; i < count_; ++i)
            if (leaves_[nth(i)].jobs == 0) return nth(i);
    }
    // A leaf counts jobs by tag: two jobs of one tag in it would take one job's share, for as
    // long as they share it. Its entries say which jobs place into it even while it is empty.
    const uint8_t tag = sched::job_tag(job);
    std::bitset<sched::kMaxNodes> tag_taken;  // by offset: leaves are nodes of one tree
    for (const Entry& e : slots_)
        if (e.used && sched::job_tag(e.job) == tag) tag_taken.set(e.offset);
    // Ordered by (tag free, empty, fewer jobs), the first from `from` on among equals.
    const auto rank = [&](uint16_t l) {
        const bool taken =
            tag_taken[l] || tree.leaf_holds_job(static_cast<uint16_t>(first_ + l), tag);
        return std::tuple(!taken, idle(l, burst, tree), -int64_t{leaves_[l].jobs});
    };
    uint16_t best = from;
    auto best_rank = rank(from);
    for (uint16_t i = 1; i < count_; ++i) {
        const uint16_t l = nth(i);
        const auto r = rank(l);
        if (r > best_rank) {
            best = l;
            best_rank = r;
        }
    }
    return best;
}

void JobLeaves::reclaim(uint64_t burst, uint64_t now_ns, const sched::Scheduler& tree) {
    if (reclaimed_ && now_ns - reclaimed_ns_ < kQuietNs / 8) return;
    reclaimed_ = true;
    reclaimed_ns_ = now_ns;
    // Backward-shift deletion moves later entries into the hole: look at the slot again.
    for (uint32_t slot = 0; slot < slots_.size();) {
        const Entry& e = slots_[slot];
        if (e.used && now_ns - e.last_ns >= kQuietNs && idle(e.offset, burst, tree))
            erase(slot);
        else
            ++slot;
    }
}

JobLeaves::Entry* JobLeaves::find(uint32_t job) {
    return const_cast<Entry*>(static_cast<const JobLeaves*>(this)->find(job));
}

const JobLeaves::Entry* JobLeaves::find(uint32_t job) const {
    const uint32_t mask = (1u << slot_bits_) - 1;
    for (uint32_t at = classifier::hash_slot(job, slot_bits_);; at = (at + 1) & mask) {
        const Entry& e = slots_[at];
        if (!e.used) return nullptr;
        if (e.job == job) return &e;
    }
}

bool JobLeaves::insert(uint32_t job, uint16_t offset, uint64_t now_ns) {
    if (entries_ == max_entries_) return false;
    const uint32_t mask = (1u << slot_bits_) - 1;
    uint32_t at = classifier::hash_slot(job, slot_bits_);
    while (slots_[at].used)
        at = (at + 1) & mask;
    slots_[at] = Entry{job, offset, true, now_ns};
    ++entries_;
    attach(offset);
    return true;
}

void JobLeaves::erase(uint32_t slot) {
    detach(slots_[slot].offset);
    --entries_;
    const uint32_t hole = classifier::erase_slot(
        slot, (1u << slot_bits_) - 1, [&](uint32_t s) { return slots_[s].used; },
        [&](uint32_t s) { return classifier::hash_slot(slots_[s].job, slot_bits_); },
        [&](uint32_t from, uint32_t to) { slots_[to] = slots_[from]; });
    slots_[hole] = Entry{};
}

void JobLeaves::attach(uint16_t offset) {
    if (leaves_[offset].jobs++ == 0) --free_leaves_;
}

void JobLeaves::detach(uint16_t offset) {
    if (--leaves_[offset].jobs == 0) ++free_leaves_;
}

}  // namespace twinlane::admission
