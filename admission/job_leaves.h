// JobLeaves: which of a `per_job: {count: N}` node's N leaves each job's packets enter, decided
// as jobs come and go. A job takes a leaf of its own on its first packet (its home, leaf
// job % N, when that one is free) and keeps it while it sends; with more jobs active than
// leaves a new job shares a leaf: one where no job of its sched::job_tag places or has packets
// (the leaf would count the two as one job, each at half its share), of those an empty one,
// and of those the one with the fewest jobs; it moves to a free leaf once the shared one is
// empty (while it holds packets, the jobs in it stay together). A job that sent nothing for
// kQuietNs and has nothing queued gives its leaf back when another job needs one. A fixed job % N
// puts two of five jobs in one leaf four times in five (the birthday bound over 8 leaves). Jobs
// that do share a leaf still get equal shares: the leaf is fair by job and weighs as many jobs as
// it holds (sched::NodeSpec::fq_by_job).
//
// A job changes leaf only while the leaf it leaves is empty and took nothing in the burst
// being placed (whose packets are enqueued after placement), so no flow is reordered. Past
// the table (more jobs at once than it holds, far more than leaves) a job goes to its home
// leaf with no entry, and a job then finding its home holding such packets joins it there.
//
// Owned by the tree's owner (single-threaded); fixed tables, allocated at construction.
// Placement is O(1) but when a job arrives or moves and must share: then a scan of the N leaves
// and of the table (16 slots a leaf), and at most every kQuietNs / 8 another of the table.
#pragma once

#include <cstdint>
#include <vector>

#include "sched/scheduler.h"

namespace twinlane::admission {

class JobLeaves {
  public:
    // The node's leaves are [first_leaf, first_leaf + count) of its tree.
    JobLeaves(uint16_t first_leaf, uint16_t count);

    static constexpr uint64_t kQuietNs = 1'000'000;

    // The leaf for a packet of `job`, whose home is leaf `home` (an offset from first_leaf),
    // placed in burst `burst` (a number the caller raises before each burst it places, from 1)
    // at `now_ns`, given what `tree` holds now.
    uint16_t place(uint32_t job, uint16_t home, uint64_t burst, uint64_t now_ns,
                   const sched::Scheduler& tree);
    // Where `job`'s queued packets are (its leaf; its home when it has none, which then holds
    // none of it unless the table overflowed): the source of a move. Changes nothing.
    uint16_t where(uint32_t job, uint16_t home) const;

    // A reload: `job` had leaf `offset` (from first_leaf) in the tree this one replaces, and
    // its packets moved into that leaf here; it last sent at `last_ns`.
    void adopt(uint32_t job, uint16_t offset, uint64_t last_ns);
    // Leaf `offset` of the old tree held packets of jobs the table had no room for.
    void adopt_overflow(uint16_t offset);
    template <typename Visit>  // visit(job, offset, last_ns) for every job with a leaf
    void for_each_job(Visit&& visit) const {
        for (const Entry& e : slots_)
            if (e.used) visit(e.job, e.offset, e.last_ns);
    }
    void for_each_overflow(auto&& visit) const {
        for (uint16_t l = 0; l < count_; ++l)
            if (leaves_[l].overflow) visit(l);
    }

    bool has_leaf(uint32_t job) const { return find(job) != nullptr; }
    uint16_t first_leaf() const { return first_; }
    uint16_t count() const { return count_; }
    uint32_t jobs_with_leaves() const { return entries_; }
    uint32_t capacity() const { return max_entries_; }

  private:
    struct Entry {
        uint32_t job = 0;
        uint16_t offset = 0;
        bool used = false;
        uint64_t last_ns = 0;  // the job's last packet
    };
    struct LeafState {
        uint32_t jobs = 0;        // entries placing into it
        uint64_t last_burst = 0;  // the last burst that placed a packet into it (0: none)
        bool overflow = false;    // may hold packets of jobs with no entry
    };

    // Holds nothing and took nothing in this burst: no job placing into it has a packet there.
    bool idle(uint16_t offset, uint64_t burst, const sched::Scheduler& tree) const {
        return leaves_[offset].last_burst != burst &&
               tree.leaf_queued_bytes(static_cast<uint16_t>(first_ + offset)) == 0;
    }
    // From `from` on: a free leaf, else the best to share (see the top). Rare (a job arrives
    // or moves): kept out of place()'s fast path.
    [[gnu::noinline]] uint16_t pick(uint32_t job, uint16_t from, uint64_t burst,
                                    const sched::Scheduler& tree) const;
    void reclaim(uint64_t burst, uint64_t now_ns, const sched::Scheduler& tree);
    Entry* find(uint32_t job);
    const Entry* find(uint32_t job) const;
    bool insert(uint32_t job, uint16_t offset, uint64_t now_ns);
    void erase(uint32_t slot);
    void attach(uint16_t offset);
    void detach(uint16_t offset);
    uint16_t use(uint16_t offset, uint64_t burst) {
        leaves_[offset].last_burst = burst;
        return static_cast<uint16_t>(first_ + offset);
    }

    uint16_t first_ = 0;
    uint16_t count_ = 1;
    uint32_t slot_bits_ = 0;
    uint32_t entries_ = 0;
    uint32_t max_entries_ = 0;   // half the slots: short probe sequences
    uint32_t free_leaves_ = 0;   // leaves no entry places into
    uint64_t reclaimed_ns_ = 0;  // the last reclaim's time
    bool reclaimed_ = false;
    std::vector<Entry> slots_;
    std::vector<LeafState> leaves_;
};

}  // namespace twinlane::admission
