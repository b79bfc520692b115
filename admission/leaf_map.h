// LeafMap: where a classified packet enters its egress port's scheduling tree, from its class
// and job, in O(1) and inline (one per packet on the hot path). Compiled once from the policy
// (conf/compile.h); each tree's owner keeps its own copy, whose place() assigns jobs to leaves
// as they come (single-threaded); the compiled mapping, leaf(), never changes.
//
// A class enters one leaf, or a per_job node's generated leaves, which are consecutive leaf
// ids (pre-order): `listed` gives leaf first + i to jobs[i] and first + jobs.size() to every
// other job; `modulo` (`per_job: {count}`) gives each job a leaf of its own while there are
// enough (job_leaves.h), first + job % count being its home. Listed jobs are found in a small
// open-addressing table with a probe bound fixed at build time; the home uses a precomputed
// reciprocal (Lemire's fastmod), so neither divides per packet.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "admission/job_leaves.h"
#include "classifier/hash_slot.h"
#include "sched/scheduler.h"

namespace twinlane::admission {

enum class JobSplit : uint8_t { none, listed, modulo };

// What the policy says about one class on one egress tree.
struct ClassLeaves {
    JobSplit split = JobSplit::none;
    uint16_t first_leaf = 0;
    uint16_t leaf_count = 1;     // none: 1; listed: jobs.size() + 1; modulo: the count
    std::vector<uint32_t> jobs;  // listed only, distinct

    bool operator==(const ClassLeaves&) const = default;
};

class LeafMap {
  public:
    LeafMap() = default;
    // Empty on success, else why `classes` cannot be a map (a mismatch with the leaves above is
    // a compile bug, reported rather than hidden).
    static std::optional<std::string> build(std::vector<ClassLeaves> classes, LeafMap& out);

    // The compiled leaf of (class, job): for a per_job count node, the job's home.
    uint16_t leaf(uint8_t class_id, uint32_t job) const {
        const Entry& e = entries_[class_id];
        switch (e.split) {
            case JobSplit::none:
                return e.first_leaf;
            case JobSplit::modulo:
                return static_cast<uint16_t>(e.first_leaf + fastmod(job, e.magic, e.count));
            case JobSplit::listed:
                return static_cast<uint16_t>(e.first_leaf + listed_index(e, job));
        }
        return e.first_leaf;
    }

    // The leaf a packet of (class, job) enters now, in the burst next_burst() began (the
    // owner's: a per_job count node's job may take a free leaf; see job_leaves.h).
    uint16_t place(uint8_t class_id, uint32_t job, const sched::Scheduler& tree) {
        const Entry& e = entries_[class_id];
        if (e.split != JobSplit::modulo) return leaf(class_id, job);
        return job_leaves_[e.job_leaves].place(
            job, static_cast<uint16_t>(fastmod(job, e.magic, e.count)), burst_, now_ns_, tree);
    }
    // Where the queued packets of (class, job) are: the source of a move.
    uint16_t where(uint8_t class_id, uint32_t job) const {
        const Entry& e = entries_[class_id];
        if (e.split != JobSplit::modulo) return leaf(class_id, job);
        return job_leaves_[e.job_leaves].where(
            job, static_cast<uint16_t>(fastmod(job, e.magic, e.count)));
    }
    // Before each burst placed, at `now_ns`: packets placed in one burst are enqueued after
    // all of them are placed, so a leaf that took one is not empty whatever the tree says.
    void next_burst(uint64_t now_ns) {
        ++burst_;
        now_ns_ = now_ns;
    }
    // After `new_tree` took over `old_tree`'s packets (Scheduler::migrate_from, leaf by
    // name): each job keeps the leaf its packets moved to, where it is still its class's.
    void adopt(const LeafMap& old, const sched::Scheduler& old_tree,
               const sched::Scheduler& new_tree);
    // A per_job count class's placement (null for other classes): tests and reports.
    const JobLeaves* job_leaves(uint8_t class_id) const {
        const Entry& e = entries_[class_id];
        return e.split == JobSplit::modulo ? &job_leaves_[e.job_leaves] : nullptr;
    }

    size_t class_count() const { return classes_.size(); }
    const ClassLeaves& class_leaves(uint8_t class_id) const { return classes_[class_id]; }
    const std::vector<ClassLeaves>& classes() const { return classes_; }

  private:
    struct Entry {
        uint64_t magic = 0;  // modulo: 2^64 / count, rounded up
        uint32_t first_slot = 0;
        uint32_t slot_bits = 0;  // listed: the table has 2^slot_bits slots
        uint16_t first_leaf = 0;
        uint16_t count = 1;       // modulo: divisor; listed: jobs + 1 (the last: other jobs)
        uint32_t max_probe = 0;   // listed: the longest probe sequence any listed job needs
        uint32_t job_leaves = 0;  // modulo: index in job_leaves_
        JobSplit split = JobSplit::none;
    };
    struct Slot {
        uint32_t job = 0;
        uint16_t index = 0;  // leaf offset of `job`
        bool used = false;
    };

    // a % d for 32-bit a and d, exact (Lemire, Kaser, Kurz: "Faster remainder by direct
    // computation", 2019).
    __extension__ using Wide = unsigned __int128;  // GCC and Clang on 64-bit targets
    static uint32_t fastmod(uint32_t a, uint64_t magic, uint32_t d) {
        const uint64_t low = magic * a;
        return static_cast<uint32_t>((static_cast<Wide>(low) * d) >> 64);
    }
    uint32_t listed_index(const Entry& e, uint32_t job) const {
        const uint32_t mask = (1u << e.slot_bits) - 1;
        uint32_t at = classifier::hash_slot(job, e.slot_bits);
        for (uint32_t probe = 0; probe < e.max_probe; ++probe, at = (at + 1) & mask) {
            const Slot& s = slots_[e.first_slot + at];
            if (!s.used) break;
            if (s.job == job) return s.index;
        }
        return e.count - 1u;
    }

    std::vector<Entry> entries_;
    std::vector<Slot> slots_;
    std::vector<ClassLeaves> classes_;
    std::vector<JobLeaves> job_leaves_;
    uint64_t burst_ = 1;
    uint64_t now_ns_ = 0;
};

}  // namespace twinlane::admission
