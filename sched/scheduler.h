// Hierarchical packet scheduler for one egress port: strict / DRR inner nodes, fifo / fq
// leaves, token-bucket shapers on any node, tail limits, RED/ECN and CoDel per leaf.
//
// Build once from a validated TreeSpec (allocates everything: descriptor pool sized by the sum
// of leaf limits or TreeSpec::pool_packets, fq buckets, counters). After that, enqueue/dequeue
// never allocate, throw, lock, log or read a clock: time is the `now_ns` argument (monotonic ns).
// Packets are copied by value into pool slots linked by 32-bit indices.
//
// Complexity: enqueue O(1) per packet, plus O(depth) when a leaf goes from empty to
// backlogged; dequeue one tree walk per run of packets from the same leaf (O(depth) when no
// shaper blocks the chosen path, O(nodes) worst case when shapers make the scheduler skip
// capped subtrees; never dependent on packet or flow counts) and O(1) per packet in the run;
// fq flow selection is amortised O(1) (DRR with quantum >= max_packet_bytes).
// next_eligible_ns is O(backlogged nodes).
//
// Drops are handed back, never freed here: enqueue writes every refused packet to `drops`
// (room for n required, n - accepted entries written); dequeue writes CoDel drops to `drops`
// up to `drop_capacity` (when full, CoDel delivers instead of dropping).
//
// Thread-safety: single writer. One lcore owns the scheduler; apply()/migrate_from() run on that
// lcore between bursts. leaf_counters()/node_counters() may be called from any thread while it
// runs (relaxed atomics: each value whole, race-free); everything else belongs to the owner.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "sched/codel.h"
#include "sched/counters.h"
#include "sched/packet.h"
#include "sched/red.h"
#include "sched/token_bucket.h"
#include "sched/tree_spec.h"

// GCC reads `__restrict__` after a member function as "`this` is a restrict pointer"; clang
// (the fuzzing build) makes `*this` restrict-qualified instead, which calls to the other members
// reject, so there it is left out.
#if defined(__clang__)
#define TWINLANE_RESTRICT_THIS
#else
#define TWINLANE_RESTRICT_THIS __restrict__
#endif

namespace twinlane::sched {

// What Scheduler::move_flow moved (and dropped at the target's limits, when asked to).
struct MoveResult {
    uint32_t packets = 0;
    uint64_t bytes = 0;
    uint32_t dropped = 0;
    uint64_t dropped_bytes = 0;
};

struct DequeueResult {
    uint32_t packets = 0;       // written to `out`, in scheduling order
    uint32_t dropped = 0;       // CoDel drops written to `drops`
    uint64_t budget_bytes = 0;  // sum of the packets' WireCost (what dequeue_burst charged)
};

// How dequeue_burst charges a packet against its byte budget: max(length_bytes,
// min_frame_bytes) + overhead_bytes. {0, 0} charges length_bytes; a TX pacer counting wire
// bytes uses sched/ethernet_wire.h's {kMinFrameBytesWithoutFcs, kWireOverheadBytes}.
struct WireCost {
    uint32_t min_frame_bytes = 0;
    uint32_t overhead_bytes = 0;
};

class Scheduler {
  public:
    static constexpr uint64_t kNever = UINT64_MAX;
    static constexpr uint32_t kInvalid = UINT32_MAX;
    static constexpr uint64_t kUnlimitedBytes = UINT64_MAX;

    struct BuildResult {
        std::unique_ptr<Scheduler> scheduler;  // null on error
        std::optional<ValidationError> error;
    };
    static BuildResult build(const TreeSpec& spec);
    // What build() allocates for a valid spec, in bytes (the packet pool dominates: 48 bytes per
    // packet of pool), so that a caller can refuse a tree that does not fit the machine.
    static uint64_t memory_bytes(const TreeSpec& spec);

    // Hot path ------------------------------------------------------------------------------
    // Admits `count` packets or drops them; returns the drops written to `drops`, room for
    // `drop_capacity` (at least `count`). A drop is the arrival, or, in a full fq leaf, queued
    // packets at the head of a fatter flow pushed out for it (`fq_overflow`): the arrival is
    // queued in their place. Room beyond `count` lets an arrival push out more than one packet
    // (a jumbo frame for smaller ones queued) when earlier arrivals did not leave room; with
    // none, such an arrival is dropped instead.
    uint32_t enqueue_burst(const Packet* packets, uint32_t count, uint64_t now_ns,
                           DroppedPacket* drops, uint32_t drop_capacity);
    // The same with room for `count` drops; returns count minus the drops.
    uint32_t enqueue(const Packet* packets, uint32_t count, uint64_t now_ns, DroppedPacket* drops) {
        return count - enqueue_burst(packets, count, now_ns, drops, count);
    }
    // Up to max_packets packets, in exactly the order (and with exactly the state changes) of
    // as many single-packet dequeues at the same now_ns. Same as dequeue_burst without a budget.
    DequeueResult dequeue(Packet* out, uint32_t max_packets, uint64_t now_ns, DroppedPacket* drops,
                          uint32_t drop_capacity) {
        return dequeue_burst(out, max_packets, kUnlimitedBytes, now_ns, drops, drop_capacity);
    }
    // Burst dequeue with a byte budget. Returns the longest prefix of what repeated single dequeues
    // at now_ns would return such that the prefix has at most max_packets packets and its WireCost
    // sum is <= max_bytes: it stops before the packet that would exceed the budget and leaves that
    // packet queued, with the scheduler in exactly the state k single dequeues leave (k = packets
    // returned). Also stops when the tree is empty or shapers block it (then in the state
    // max_packets single dequeues leave: a failed walk advances DRR rings exactly as a failed
    // single dequeue does). `drops` is shared by the whole burst, as it is by consecutive single
    // dequeues given the remaining capacity. The budget is exact: a budget below the next packet's
    // cost returns nothing. Cost: one tree walk per run of packets from the same leaf (a run lasts
    // while the DRR deficits and shaper tokens on the leaf's path allow, across quanta where each
    // DRR child on the path is its parent's only backlogged child); a budget below one
    // max-size frame adds a non-mutating look-ahead per packet. CoDel drops go to `drops` as in
    // dequeue().
    // `__restrict__` (GCC: `this` is a restrict pointer): the tree's members are touched only
    // through `this`, never through `out`, `drops` or the pool and flow arrays, so they stay in
    // registers across those stores (sched_bench 1024 flows: 23-27 -> 18-20 ns/packet).
    DequeueResult dequeue_burst(Packet* out, uint32_t max_packets, uint64_t max_bytes,
                                uint64_t now_ns, DroppedPacket* drops, uint32_t drop_capacity,
                                WireCost cost = {}) TWINLANE_RESTRICT_THIS;
    // Earliest time >= now_ns at which dequeue can return a packet; kNever when empty.
    uint64_t next_eligible_ns(uint64_t now_ns);

    // Runtime changes (owning lcore, between bursts) ----------------------------------------
    // In-place update of weights, shapers, limits, CoDel/RED parameters, fq_sparse_first,
    // max_packet_bytes and default_leaf. The topology (names, order, kinds, parents,
    // priorities, fq_buckets) must be unchanged, otherwise build a new tree and migrate.
    // Queued packets stay where they are: nothing is lost or reordered. Lowering a limit below
    // the current depth only refuses new arrivals until the queue drains. Shapers earn at their
    // old rates until `now_ns` and at the new ones from then on (as set_shaper_rate); a smaller
    // burst clamps the tokens, debt is kept.
    std::optional<ValidationError> apply(const TreeSpec& spec, uint64_t now_ns);

    // Moves every queued packet of `old_tree` into this (freshly built) tree: leaf by name, or
    // to this tree's default_leaf when the name is gone. Per-leaf and per-flow order and arrival
    // times are kept; limits and AQM are bypassed (nothing is lost). All-or-nothing: fails
    // without moving anything if a leaf has no destination or the pool lacks room. A node
    // whose name is in both trees keeps its shaper's tokens or debt as of `now_ns` (clamped to
    // its new burst), so a replacement grants no fresh burst; new nodes start full.
    std::optional<ValidationError> migrate_from(Scheduler& old_tree, uint64_t now_ns);

    // A flow changed class (the classifier reclassified it): moves every packet queued in leaf
    // `from` whose flow_hash is `flow_hash` to the tail of its flow in leaf `to`, in order, with
    // arrival times kept (limits and AQM bypassed: nothing is lost). Called before the flow's
    // first packet for `to` is enqueued, its packets then stay in order whatever the two
    // leaves' priorities, shapers or depths. Counted as migrated_out_packets of `from` and
    // packets_in of `to`. O(packets queued in the flow's bucket of `from`) (all of `from` for
    // a fifo leaf) plus O(children) per ancestor left idle. Returns the packets moved; 0 when
    // `from` == `to` or either is not a leaf id. Owning lcore, between enqueue/dequeue calls.
    uint32_t move_flow(uint16_t from, uint16_t to, uint32_t flow_hash) {
        return move_flow(from, to, flow_hash, UserStamp{}).packets;
    }
    // The same, and the moved packets' `user` bits under `mask` become `value`'s (the rest,
    // e.g. a PFC tag, stays), so that they leave counted in the class they moved to (an SLO
    // downgrade, slo/governor.h). A zero mask changes nothing. With `drops`, the target's
    // limits hold: packets that would take it past them are dropped there (written to
    // `drops`, counted as the target's queue_full drops, up to `drop_capacity`; beyond that
    // they are moved all the same), as if they had arrived in it; the rest keep their order.
    struct UserStamp {
        uint8_t value = 0;
        uint8_t mask = 0;
    };
    MoveResult move_flow(uint16_t from, uint16_t to, uint32_t flow_hash, UserStamp stamp,
                         DroppedPacket* drops = nullptr, uint32_t drop_capacity = 0);

    // The shaper of `node` runs at `rate_bits_per_sec` from `now_ns` on (tokens earned at the
    // old rate until then are kept; the bucket depth is unchanged); the spec() says so too.
    // O(1), no allocation: for a controller on the owning lcore, between bursts. False (and
    // nothing changed) for a node without a shaper, a rate of 0 or above kMaxRateBitsPerSec.
    bool set_shaper_rate(uint32_t node, uint64_t rate_bits_per_sec, uint64_t now_ns);

    // The jobs with packets in an fq_by_job leaf (a flow that emptied counts until dequeue
    // comes to it), which its weight under a drr parent is multiplied by; 0 once the leaf is
    // empty, and for other leaves.
    uint32_t leaf_jobs(uint16_t leaf) const {
        return leaves_[leaf].by_job ? leaves_[leaf].jobs : 0;
    }

    // Whether an fq_by_job leaf holds packets of a job of tag `job` (Packet::job) now.
    bool leaf_holds_job(uint16_t leaf, uint8_t job) const {
        const Leaf& l = leaves_[leaf];
        return l.by_job && job_flows_[l.job_flows_at + job] != 0;
    }

    // Bytes queued in `leaf` now (the owner's view; other threads read leaf_counters()).
    uint64_t leaf_queued_bytes(uint16_t leaf) const { return leaves_[leaf].bytes; }

    // Holds node `node` and its subtree until `until_ns` (0: releases it now), as a PFC pause of
    // the priority the node's class is bound to: dequeue skips it as it skips a shaper that does
    // not conform, so every other node keeps being served; arrivals are still queued. Nothing
    // else changes (no packet moves, no counter). Owning lcore, between enqueue/dequeue calls;
    // a rebuilt tree starts without holds.
    void hold(uint32_t node, uint64_t until_ns) { nodes_[node].shaper.hold_until(until_ns); }
    uint64_t held_until_ns(uint32_t node) const { return nodes_[node].shaper.held_until_ns(); }

    // Introspection (any time, off the hot path) --------------------------------------------
    const TreeSpec& spec() const { return spec_; }
    uint32_t node_count() const { return static_cast<uint32_t>(nodes_.size()); }
    uint32_t leaf_count() const { return static_cast<uint32_t>(leaves_.size()); }
    std::optional<uint32_t> node_id(std::string_view name) const;
    std::optional<uint16_t> leaf_id(std::string_view name) const;
    const std::string& leaf_name(uint16_t leaf) const;
    QueueCounters leaf_counters(uint16_t leaf) const;
    // Sum over the node's leaves (the root also includes unknown-leaf and oversize drops).
    QueueCounters node_counters(uint32_t node) const;
    uint64_t queued_packets() const { return queued_packets_; }
    uint32_t pool_capacity() const { return static_cast<uint32_t>(slots_.size()); }
    uint32_t pool_free() const { return pool_free_count_; }

  private:
    // A node is backlogged when its subtree holds packets: a leaf while Leaf::packets != 0, a
    // strict node while backlog_mask != 0, a drr node while active_count != 0. Only the leaf
    // counts packets, so enqueue and dequeue walk up the tree only when a leaf fills or empties.
    struct Node {
        TokenBucket shaper;
        // As a child of a drr node.
        int64_t deficit_bytes = 0;
        uint32_t quantum_bytes = 0;
        uint32_t next_active = kInvalid;
        uint32_t parent = kInvalid;
        uint32_t leaf = kInvalid;  // leaf index for fifo/fq nodes
        NodeKind kind = NodeKind::fifo;
        bool parent_is_drr = false;
        uint32_t position_in_parent = 0;  // bit in a strict parent's backlog mask
        uint32_t first_child = 0;         // into child_ids_; strict children sorted by priority
        uint32_t child_count = 0;
        // As a drr node: FIFO ring of backlogged children. As a strict node: backlog mask.
        uint32_t active_head = kInvalid;
        uint32_t active_tail = kInvalid;
        uint32_t active_count = 0;
        uint64_t backlog_mask = 0;
    };

    enum class FlowList : uint8_t { none, fresh, old };

    // 32 bytes on a 32-byte boundary: one cache line per flow (with 65536 flows each one is a
    // miss, and a flow split across two lines was two).
    struct alignas(32) Flow {
        uint32_t head = kInvalid;  // kInvalid: the flow queue is empty
        uint32_t tail = kInvalid;  // the last packet while head != kInvalid (stale otherwise)
        int32_t deficit_bytes = 0;
        uint64_t bytes = 0;
        FlowList list = FlowList::none;
        // fq_by_job: counted in its job's flows from a packet's arrival in it until dequeue
        // finds it empty or the leaf empties, for that packet's Packet::job.
        uint8_t job = 0;
        bool counted = false;
    };

    // An fq leaf's list of active flows (fresh or old): a FIFO ring of flow ids in
    // flow_rings_, as many slots as the leaf has buckets (a flow is on one list at most).
    // head/tail run freely; the list is empty when they are equal. An array rather than links
    // through the flows, so that dequeue knows the flows it serves next and can prefetch them.
    struct FlowRing {
        uint32_t base = 0;  // into flow_rings_
        uint32_t head = 0;
        uint32_t tail = 0;
        bool empty() const { return head == tail; }
    };

    struct Leaf {
        uint32_t node = 0;
        uint32_t first_flow = 0;
        uint32_t flow_mask = 0;  // buckets - 1; 0 for fifo
        FlowRing fresh;
        FlowRing old;
        uint32_t limit_packets = 0;
        uint64_t limit_bytes = 0;
        uint32_t packets = 0;
        uint32_t nearest_drr = kInvalid;   // the drr node nearest above the leaf, if any
        uint32_t fattest_flow = kInvalid;  // fq: the fattest flow seen at an overflow (find_room)
        uint64_t bytes = 0;
        bool sparse_first = true;
        // fq_by_job; its flags take what was padding here and its counts come last, so the
        // other fields keep their cache lines. `shares_stale`: jobs fell during a dequeue run
        // (the node's quantum follows at the run's end, as after single dequeues).
        bool by_job = false;
        bool shares_stale = false;
        CodelParams codel;
        RedParams red;
        LiveQueueCounters counters;
        // fq_by_job: counted flows (Flow::counted) per job are job_flows_[job_flows_at + job];
        // the jobs with any, and the counted flows in all.
        uint32_t jobs = 0;
        uint32_t counted_flows = 0;
        // The most counted flows of any one job, and how many jobs have that many (0 once the
        // last of them lost a flow, until job_quantum recounts): the flows' DRR quanta follow it.
        uint32_t widest_job_flows = 0;
        uint32_t widest_jobs = 0;
        uint32_t job_flows_at = 0;
    };

    struct DropSink {
        DroppedPacket* entries;
        uint32_t capacity;
        uint32_t count;
    };

    class CodelQueue;
    friend class CodelQueue;
    class CodelPeekQueue;
    friend class CodelPeekQueue;

    Scheduler() = default;
    void configure_params(const TreeSpec& spec);

    uint32_t allocate_slot();
    struct FlowAppend;
    void insert(Leaf& leaf, const Packet& packet, uint64_t arrival_ns);
    // `MaybeByJob` false: the leaf is known not fq_by_job (the hot paths choose per run, so a
    // leaf without it pays nothing for it).
    template <bool MaybeByJob>
    [[gnu::always_inline]] void append_to_flow(Leaf& leaf, uint32_t flow_index, uint32_t slot,
                                               uint32_t length, FlowAppend& append);
    struct Departures;
    bool pop_flow(uint32_t flow, Packet& out, Departures& taken);
    // A full fq leaf's room for one arrival: `drops` head packets of `flow` leave the leaf at
    // `depth` packets and `depth_bytes` bytes (find_room, push_out in scheduler.cc).
    struct Room {
        uint32_t flow = kInvalid;
        uint32_t drops = 0;
        uint32_t depth = 0;
        uint64_t depth_bytes = 0;
    };
    Room find_room(Leaf& leaf, uint32_t arriving_flow, uint32_t length, uint32_t spare,
                   uint32_t depth, uint64_t depth_bytes);
    void push_out(Leaf& leaf, const Room& room, DroppedPacket* drops, uint32_t& dropped,
                  uint32_t& free);
    void settle_departures(Leaf& leaf, Departures& taken);
    struct EnqueueRun;
    uint32_t enqueue_run(const Packet* packets, uint32_t i, uint32_t count, uint64_t now_ns,
                         DroppedPacket* drops, uint32_t extra_room, uint32_t& dropped);
    template <bool MaybeByJob>
    [[gnu::always_inline]] uint32_t enqueue_leaf_run(Leaf& leaf, const Packet* packets, uint32_t i,
                                                     uint32_t count, uint64_t now_ns,
                                                     DroppedPacket* drops, uint32_t extra_room,
                                                     uint32_t& dropped);
    template <bool MaybeByJob>
    [[gnu::always_inline]] bool admit_in_run(Leaf& leaf, EnqueueRun& run, const Packet& packet,
                                             uint32_t spare, uint64_t now_ns, DroppedPacket* drops,
                                             uint32_t& dropped, DropReason& reason);
    bool red_admits(Leaf& leaf, const Packet& packet, uint64_t depth_bytes, DropReason& reason);
    // For readers on other threads: the leaf's depth, after every change of it.
    static void publish_depth(Leaf& leaf) {
        leaf.counters.depth_packets.set(leaf.packets);
        leaf.counters.depth_bytes.set(leaf.bytes);
    }
    void push_flow_list(Leaf& leaf, FlowList list, uint32_t flow);
    void join_job(Leaf& leaf, Flow& flow, uint8_t job);
    void leave_job(Leaf& leaf, Flow& flow);
    uint32_t uncount_flow(Leaf& leaf, Flow& flow);
    void forget_jobs(Leaf& leaf);
    void refresh_widest_job(Leaf& leaf);
    uint32_t job_quantum(Leaf& leaf, const Flow& flow);
    void set_shares(uint32_t node, uint32_t jobs);
    uint32_t pop_flow_list(Leaf& leaf, FlowList list);
    void prefetch_ring(const Leaf& leaf, const FlowRing& ring) const;
    void prefetch_slot(uint32_t slot) const;
    void rotate_active(Node& parent);
    uint32_t pick(uint32_t node, uint64_t now_ns);
    uint32_t peek_pick(uint32_t node, uint64_t now_ns);
    bool eligible_for_peek(uint32_t child, uint64_t now_ns);
    uint32_t peek_flow(const Leaf& leaf) const;
    bool peek_length(const Leaf& leaf, uint64_t now_ns, uint32_t drops_room, uint32_t& length);
    uint64_t path_allowance_bytes(uint32_t leaf_node) const;
    void give_missed_quanta(uint32_t leaf_node, uint64_t bytes_before_last);
    void charge_path(uint32_t leaf_node, uint64_t bytes);
    bool charge_lone_path(uint32_t leaf_node, uint64_t bytes, uint64_t now_ns);
    uint64_t give_spent_quanta(uint32_t leaf_node, uint64_t& least_deficit);
    template <bool AnyByJob>
    DequeueResult dequeue_runs(Packet* out, uint32_t max_packets, uint64_t max_bytes,
                               uint64_t now_ns, DroppedPacket* drops, uint32_t drop_capacity,
                               WireCost cost) TWINLANE_RESTRICT_THIS;
    template <bool MaybeByJob>
    [[gnu::always_inline]] bool dequeue_leaf(Leaf& leaf, uint64_t now_ns, Packet& out,
                                             DropSink& sink, Departures& taken);
    bool dequeue_flow(Leaf& leaf, uint32_t flow, uint64_t now_ns, Packet& out, DropSink& sink,
                      Departures& taken);
    void deactivate(uint32_t leaf_node);
    void activate(uint32_t node);
    uint64_t eligible_time(uint32_t node, uint64_t now_ns);
    struct DepartureTally;
    struct DepartureRun;
    bool run_picks_leaf_again(const Leaf& leaf, DepartureRun& run, uint32_t last_length,
                              uint64_t now_ns);
    void finish_run(Leaf& leaf, const DepartureRun& run, const Packet* out, uint32_t sent,
                    uint64_t now_ns, DepartureTally& tally, Departures& taken);
    void reset_queues();

    TreeSpec spec_;
    std::vector<Node> nodes_;
    std::vector<uint32_t> child_ids_;
    std::vector<Leaf> leaves_;
    std::vector<Flow> flows_;
    std::vector<uint32_t> flow_rings_;  // the fq leaves' FlowRings, then ring_scratch_
    uint32_t ring_scratch_ = 0;         // where an enqueue writes the ring entry it does not add
    std::vector<CodelState> codel_states_;  // parallel to flows_
    std::vector<uint32_t> job_flows_;       // 256 per fq_by_job leaf (Leaf::job_flows_at)
    uint32_t by_job_leaves_ = 0;
    std::vector<Packet> slots_;
    std::vector<uint32_t> next_slot_;   // links of the pool's slots, then link_scratch_
    uint32_t link_scratch_ = 0;         // where an enqueue writes the link it does not need
    std::vector<uint32_t> free_slots_;  // stack of free slots, pool_free_count_ deep
    uint32_t pool_free_count_ = 0;
    uint64_t queued_packets_ = 0;
    uint32_t root_ = 0;
    uint32_t max_packet_bytes_ = 0;
    DeterministicRng rng_;
    LiveQueueCounters port_drops_;  // unknown-leaf and oversize drops (no leaf to charge)
    std::array<uint32_t, kSojournHistogramBuckets> run_histogram_{};  // DepartureTally's counts
};

}  // namespace twinlane::sched
