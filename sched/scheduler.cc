#include "sched/scheduler.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <string>
#include <type_traits>
#include <unordered_map>

#include "sched/ecn.h"

namespace twinlane::sched {

namespace {

bool is_leaf(NodeKind kind) {
    return kind == NodeKind::fifo || kind == NodeKind::fq;
}

// `yes` if `condition`, else `no`, for conditions that are random per packet: on values already
// loaded GCC makes it a conditional move, not a branch that mispredicts (callgrind
// --branch-sim shows none left where it is used; several on one condition become a branch
// again, hence the masks in append_to_flow).
template <typename T>
[[gnu::always_inline]] inline T select(bool condition, T yes, T no) {
    return condition ? yes : no;
}

// Packet::job's values: an fq_by_job leaf counts its listed flows per value.
constexpr uint32_t kJobTags = 256;

// weight * jobs (at least 1) * max_packet_bytes, within the field (weight <= 65536 alone fits).
uint32_t quantum_bytes(uint32_t weight, uint32_t jobs, uint32_t max_packet_bytes) {
    const uint64_t bytes = uint64_t{weight} * std::max<uint32_t>(jobs, 1) * max_packet_bytes;
    return static_cast<uint32_t>(std::min<uint64_t>(bytes, UINT32_MAX));
}

uint32_t histogram_bucket(uint64_t sojourn_ns) {
    const uint32_t width = static_cast<uint32_t>(std::bit_width(sojourn_ns));
    return std::min(width, kSojournHistogramBuckets - 1);
}

}  // namespace

// Adapts one flow queue of a leaf to codel_dequeue's Queue interface (see codel.h).
class Scheduler::CodelQueue {
  public:
    CodelQueue(Scheduler& scheduler, Leaf& leaf, uint32_t flow, DropSink& sink, Departures& taken)
        : scheduler_(scheduler), leaf_(leaf), flow_(flow), sink_(sink), taken_(taken) {}

    bool pop(Packet& out) { return scheduler_.pop_flow(flow_, out, taken_); }
    uint64_t backlog_bytes() const { return scheduler_.flows_[flow_].bytes; }
    bool mark(const Packet& packet) { return mark_ce(packet); }
    // pop() already took the packet off the leaf (in `taken`). CoDel always delivers the last
    // packet of a flow, so a drop never empties the leaf: no walk up the tree here.
    bool drop(const Packet& packet) {
        if (sink_.count == sink_.capacity) return false;
        sink_.entries[sink_.count++] = DroppedPacket{packet, DropReason::codel};
        leaf_.counters.count_drop(DropReason::codel, packet.length_bytes);
        return true;
    }

  private:
    Scheduler& scheduler_;
    Leaf& leaf_;
    uint32_t flow_;
    DropSink& sink_;
    Departures& taken_;
};

// The same interface over a copy of one flow's queue position: dequeue_burst's look-ahead runs
// CoDel on it to learn which packet a dequeue would deliver without changing anything.
class Scheduler::CodelPeekQueue {
  public:
    CodelPeekQueue(const Scheduler& scheduler, uint32_t flow, uint32_t drops_room)
        : scheduler_(scheduler),
          slot_(scheduler.flows_[flow].head),
          bytes_left_(scheduler.flows_[flow].bytes),
          drops_room_(drops_room) {}

    bool pop(Packet& out) {
        if (slot_ == kInvalid) return false;
        out = scheduler_.slots_[slot_];
        bytes_left_ -= out.length_bytes;
        slot_ = scheduler_.next_slot_[slot_];
        return true;
    }
    uint64_t backlog_bytes() const { return bytes_left_; }
    bool mark(const Packet& packet) const { return read_ecn(packet) != EcnCodepoint::not_ect; }
    bool drop(const Packet&) {
        if (drops_room_ == 0) return false;
        --drops_room_;
        return true;
    }

  private:
    const Scheduler& scheduler_;
    uint32_t slot_;
    uint64_t bytes_left_;
    uint32_t drops_room_;
};

Scheduler::BuildResult Scheduler::build(const TreeSpec& spec) {
    if (auto problem = validate(spec)) return {nullptr, std::move(problem)};
    std::unique_ptr<Scheduler> scheduler(new Scheduler());
    Scheduler& s = *scheduler;
    s.spec_ = spec;
    const auto node_total = static_cast<uint32_t>(spec.nodes.size());

    std::unordered_map<std::string_view, uint32_t> index_by_name;
    for (uint32_t i = 0; i < node_total; ++i)
        index_by_name.emplace(spec.nodes[i].name, i);

    s.nodes_.resize(node_total);
    std::vector<std::vector<uint32_t>> children(node_total);
    uint64_t total_limit_packets = 0;
    uint32_t flow_total = 0;
    uint32_t job_flow_total = 0;
    for (uint32_t i = 0; i < node_total; ++i) {
        const NodeSpec& node_spec = spec.nodes[i];
        Node& node = s.nodes_[i];
        node.kind = node_spec.kind;
        if (node_spec.parent.empty()) {
            s.root_ = i;
        } else {
            node.parent = index_by_name.at(node_spec.parent);
            node.parent_is_drr = spec.nodes[node.parent].kind == NodeKind::drr;
            children[node.parent].push_back(i);
        }
        if (is_leaf(node_spec.kind)) {
            node.leaf = static_cast<uint32_t>(s.leaves_.size());
            Leaf& leaf = s.leaves_.emplace_back();
            leaf.node = i;
            const uint32_t buckets = node_spec.kind == NodeKind::fq ? node_spec.fq_buckets : 1;
            leaf.first_flow = flow_total;
            leaf.flow_mask = buckets - 1;
            flow_total += buckets;
            if (node_spec.kind == NodeKind::fq && node_spec.fq_by_job) {
                leaf.by_job = true;
                ++s.by_job_leaves_;
                leaf.job_flows_at = job_flow_total;
                job_flow_total += kJobTags;
            }
            total_limit_packets += node_spec.limit_packets;
        }
    }
    for (Leaf& leaf : s.leaves_) {
        uint32_t n = leaf.node;
        while (n != kInvalid && !s.nodes_[n].parent_is_drr)
            n = s.nodes_[n].parent;
        leaf.nearest_drr = n == kInvalid ? kInvalid : s.nodes_[n].parent;
    }
    for (uint32_t i = 0; i < node_total; ++i) {
        std::vector<uint32_t>& list = children[i];
        if (s.nodes_[i].kind == NodeKind::strict) {
            std::sort(list.begin(), list.end(), [&](uint32_t a, uint32_t b) {
                return spec.nodes[a].priority < spec.nodes[b].priority;
            });
        }
        s.nodes_[i].first_child = static_cast<uint32_t>(s.child_ids_.size());
        s.nodes_[i].child_count = static_cast<uint32_t>(list.size());
        for (uint32_t position = 0; position < list.size(); ++position) {
            s.nodes_[list[position]].position_in_parent = position;
            s.child_ids_.push_back(list[position]);
        }
    }
    s.flows_.resize(flow_total);
    s.codel_states_.resize(flow_total);
    s.job_flows_.resize(job_flow_total);
    uint32_t ring_total = 0;
    for (Leaf& leaf : s.leaves_) {
        if (leaf.flow_mask == 0) continue;
        leaf.fresh.base = ring_total;
        leaf.old.base = ring_total + leaf.flow_mask + 1;
        ring_total += 2 * (leaf.flow_mask + 1);
    }
    s.ring_scratch_ = ring_total;  // one word past the rings
    s.flow_rings_.resize(ring_total + 1);

    const uint32_t pool =
        spec.pool_packets != 0 ? spec.pool_packets : static_cast<uint32_t>(total_limit_packets);
    s.slots_.resize(pool);
    s.next_slot_.resize(pool + 1);
    s.link_scratch_ = pool;
    s.free_slots_.resize(pool);
    s.reset_queues();
    s.rng_ = DeterministicRng(spec.random_seed);
    s.configure_params(spec);
    return {std::move(scheduler), std::nullopt};
}

void Scheduler::configure_params(const TreeSpec& spec) {
    max_packet_bytes_ = spec.max_packet_bytes;
    for (uint32_t i = 0; i < nodes_.size(); ++i) {
        const NodeSpec& node_spec = spec.nodes[i];
        Node& node = nodes_[i];
        node.shaper.configure(node_spec.shaper.rate_bits_per_sec, node_spec.shaper.burst_bytes);
        // A quantum of at least one max-size packet lets every DRR pick send a packet: O(1).
        // An fq_by_job leaf weighs its jobs (set_shares keeps that between changes of spec).
        const uint32_t jobs =
            node.leaf != kInvalid && leaves_[node.leaf].by_job ? leaves_[node.leaf].jobs : 1;
        node.quantum_bytes = quantum_bytes(node_spec.weight, jobs, spec.max_packet_bytes);
        node.deficit_bytes = std::min<int64_t>(node.deficit_bytes, node.quantum_bytes);
        if (node.leaf == kInvalid) continue;
        Leaf& leaf = leaves_[node.leaf];
        leaf.limit_packets = node_spec.limit_packets;
        leaf.limit_bytes = node_spec.limit_bytes;
        leaf.sparse_first = node_spec.fq_sparse_first;
        leaf.codel =
            CodelParams{node_spec.codel.enabled, node_spec.codel.target_ns,
                        node_spec.codel.interval_ns, node_spec.codel.ecn, spec.max_packet_bytes};
        leaf.red.enabled = node_spec.red.enabled;
        leaf.red.kmin_bytes = node_spec.red.kmin_bytes;
        leaf.red.kmax_bytes = node_spec.red.kmax_bytes;
        leaf.red.pmax_q32 = static_cast<uint64_t>(std::llround(node_spec.red.pmax * 4294967296.0));
        leaf.red.drop_non_ect = node_spec.red.drop_non_ect;
    }
}

void Scheduler::reset_queues() {
    queued_packets_ = 0;
    for (Node& node : nodes_) {
        node.deficit_bytes = 0;
        node.next_active = kInvalid;
        node.active_head = kInvalid;
        node.active_tail = kInvalid;
        node.active_count = 0;
        node.backlog_mask = 0;
    }
    for (Leaf& leaf : leaves_) {
        leaf.fresh.head = leaf.fresh.tail = leaf.old.head = leaf.old.tail = 0;
        if (leaf.by_job) {
            leaf.jobs = 0;
            leaf.counted_flows = 0;
            leaf.widest_job_flows = 0;
            leaf.widest_jobs = 0;
            leaf.shares_stale = false;
            set_shares(leaf.node, 0);
        }
        leaf.packets = 0;
        leaf.bytes = 0;
        publish_depth(leaf);
    }
    std::fill(flows_.begin(), flows_.end(), Flow{});
    std::fill(codel_states_.begin(), codel_states_.end(), CodelState{});
    std::fill(job_flows_.begin(), job_flows_.end(), 0);
    const auto pool = static_cast<uint32_t>(slots_.size());
    // Slot 0 on top: slots are handed out in index order, as the linked free list did.
    for (uint32_t i = 0; i < pool; ++i)
        free_slots_[i] = pool - 1 - i;
    pool_free_count_ = pool;
}

uint64_t Scheduler::memory_bytes(const TreeSpec& spec) {
    uint64_t flows = 0;
    uint64_t job_counts = 0;
    uint64_t total_limit_packets = 0;
    for (const NodeSpec& node : spec.nodes) {
        if (!is_leaf(node.kind)) continue;
        flows += node.kind == NodeKind::fq ? node.fq_buckets : 1;
        if (node.kind == NodeKind::fq && node.fq_by_job) job_counts += kJobTags;
        total_limit_packets += node.limit_packets;
    }
    const uint64_t pool = spec.pool_packets != 0 ? spec.pool_packets : total_limit_packets;
    return pool * (sizeof(Packet) + 2 * sizeof(uint32_t)) +
           flows * (sizeof(Flow) + sizeof(CodelState) + 2 * sizeof(uint32_t)) +
           job_counts * sizeof(uint32_t) + spec.nodes.size() * (sizeof(Node) + sizeof(Leaf));
}

// ---- pool and queues ----------------------------------------------------------------------

// The free slots are a stack indexed by the free count, not a list linked through next_slot_:
// taking a slot then needs no load of the previous one's link (a dependent load per packet).
// Slots are released by pop_flow and settle_departures.
[[gnu::always_inline]] inline uint32_t Scheduler::allocate_slot() {
    return free_slots_[--pool_free_count_];
}

[[gnu::always_inline]] inline void Scheduler::push_flow_list(Leaf& leaf, FlowList list,
                                                             uint32_t flow) {
    FlowRing& ring = list == FlowList::fresh ? leaf.fresh : leaf.old;
    flow_rings_[ring.base + (ring.tail++ & leaf.flow_mask)] = flow;
    flows_[flow].list = list;
}

[[gnu::always_inline]] inline uint32_t Scheduler::pop_flow_list(Leaf& leaf, FlowList list) {
    FlowRing& ring = list == FlowList::fresh ? leaf.fresh : leaf.old;
    const uint32_t flow = flow_rings_[ring.base + (ring.head++ & leaf.flow_mask)];
    flows_[flow].list = FlowList::none;
    return flow;
}

// fq_by_job: `flow` (not counted) takes a packet of `job`. A job's first counted flow adds a
// share to the leaf's weight at once (arrivals come between dequeue runs).
inline void Scheduler::join_job(Leaf& leaf, Flow& flow, uint8_t job) {
    flow.job = job;
    flow.counted = true;
    ++leaf.counted_flows;
    const uint32_t own = ++job_flows_[leaf.job_flows_at + job];
    if (own == 1) set_shares(leaf.node, ++leaf.jobs);
    // Reaching the widest count is exact again: every other job is below it, or counted.
    if (own > leaf.widest_job_flows) {
        leaf.widest_job_flows = own;
        leaf.widest_jobs = 1;
    } else if (own == leaf.widest_job_flows) {
        ++leaf.widest_jobs;
    }
}

// fq_by_job: `flow` was found empty, or the leaf emptied. During a dequeue run the weight follows
// at the run's end (finish_run).
inline void Scheduler::leave_job(Leaf& leaf, Flow& flow) {
    if (!flow.counted) return;
    const uint32_t own = uncount_flow(leaf, flow);
    // With widest_jobs 0 every job is below widest_job_flows, so this one was not at it.
    if (own == leaf.widest_job_flows) --leaf.widest_jobs;
}

// fq_by_job: `flow` no longer counts in its job's flows; the job's count before.
inline uint32_t Scheduler::uncount_flow(Leaf& leaf, Flow& flow) {
    flow.counted = false;
    --leaf.counted_flows;
    const uint32_t own = job_flows_[leaf.job_flows_at + flow.job]--;
    if (own == 1) {
        --leaf.jobs;
        leaf.shares_stale = true;
    }
    return own;
}

// fq_by_job: the widest job after the last one that wide lost a flow: a scan of the leaf's
// kJobTags counts, when a quantum is due in a leaf of several jobs (a leaf of one job, the
// common case, never needs it).
[[gnu::noinline]] void Scheduler::refresh_widest_job(Leaf& leaf) {
    const auto counts = job_flows_.begin() + leaf.job_flows_at;
    leaf.widest_job_flows = *std::max_element(counts, counts + kJobTags);
    leaf.widest_jobs =
        leaf.widest_job_flows == 0
            ? 0
            : static_cast<uint32_t>(std::count(counts, counts + kJobTags, leaf.widest_job_flows));
}

// fq_by_job: the leaf emptied. Its listed flows are all empty now and stay listed (fq removes
// them in turn); they hold no job's packets.
[[gnu::noinline]] void Scheduler::forget_jobs(Leaf& leaf) {
    for (const FlowRing* ring : {&leaf.fresh, &leaf.old}) {
        for (uint32_t i = ring->head; i != ring->tail; ++i) {
            Flow& flow = flows_[flow_rings_[ring->base + (i & leaf.flow_mask)]];
            if (flow.counted) uncount_flow(leaf, flow);
        }
    }
    leaf.widest_job_flows = 0;
    leaf.widest_jobs = 0;
}

// fq_by_job: a flow's DRR quantum, one max packet scaled by the widest job's flows over its
// own job's, so that each job's flows together get as much per round as any other job's: one
// max packet each when the jobs have as many flows (as plain fq), never less: a round is as
// short as per-job fairness allows, so a job that joins mid-round waits for one round of
// frames, not of whole queues.
[[gnu::noinline]] uint32_t Scheduler::job_quantum(Leaf& leaf, const Flow& flow) {
    if (leaf.jobs <= 1) return max_packet_bytes_;
    if (leaf.widest_jobs == 0) refresh_widest_job(leaf);
    const uint32_t own = std::max<uint32_t>(job_flows_[leaf.job_flows_at + flow.job], 1);
    const uint64_t bytes = uint64_t{max_packet_bytes_} * std::max(leaf.widest_job_flows, own) / own;
    return static_cast<uint32_t>(std::min<uint64_t>(bytes, INT32_MAX / 2));
}

// A drr child's quantum is its weight times its jobs (at least 1) times one max packet.
void Scheduler::set_shares(uint32_t node_index, uint32_t jobs) {
    Node& node = nodes_[node_index];
    if (node.parent_is_drr)
        node.quantum_bytes = quantum_bytes(spec_.nodes[node_index].weight, jobs, max_packet_bytes_);
}

// Tail of the flow queue packets are being appended to, with the packets and bytes appended
// so far; written to the Flow when the flow changes or the run ends.
struct Scheduler::FlowAppend {
    uint32_t flow = kInvalid;
    uint32_t tail = kInvalid;
    uint64_t bytes = 0;

    void flush(std::vector<Flow>& flows) const {
        if (flow == kInvalid) return;
        Flow& f = flows[flow];
        f.tail = tail;
        f.bytes += bytes;
    }
};

// Hot-path helpers below are forced inline: measured (callgrind, sched_cost fq64) as calls
// they cost about 20 instructions/packet each way in register saves and argument moves.
//
// Links `slot` (length `length`, next_slot_ already kInvalid) at the tail of its flow in
// `leaf`, through `append`: switching to another flow writes the previous one's appends back
// and puts an idle flow on the leaf's list.
template <bool MaybeByJob>
[[gnu::always_inline]] inline void Scheduler::append_to_flow(Leaf& leaf, uint32_t flow_index,
                                                             uint32_t slot, uint32_t length,
                                                             FlowAppend& append) {
    if (flow_index == append.flow) {
        next_slot_[append.tail] = slot;
    } else {
        append.flush(flows_);
        Flow& flow = flows_[flow_index];
        // An emptied flow keeps its old tail (Flow): not resetting it spares each departure a
        // store that the next one waited for (sched_bench, 1 flow).
        append = FlowAppend{flow_index,
                            flow.tail | (0u - static_cast<uint32_t>(flow.head == kInvalid)), 0};
        // Whether the flow is idle, or empty, is random with many flows: no branches. The
        // ring entry of a flow already listed goes to a scratch word, the link of an empty
        // flow's tail to the link past the pool's.
        const uint32_t empty = 0u - static_cast<uint32_t>(append.tail == kInvalid);
        next_slot_[append.tail + ((link_scratch_ - append.tail) & empty)] = slot;
        flow.head += (slot - flow.head) & empty;
        if (leaf.flow_mask != 0) {
            // push_flow_list() if idle.
            const FlowList list = leaf.sparse_first ? FlowList::fresh : FlowList::old;
            FlowRing& ring = leaf.sparse_first ? leaf.fresh : leaf.old;
            const bool idle = flow.list == FlowList::none;
            const uint32_t entry = ring.base + (ring.tail & leaf.flow_mask);
            flow_rings_[select(idle, entry, ring_scratch_)] = flow_index;
            ring.tail += idle;
            // Masks, not more selects: GCC turns several selects on one condition into a branch.
            const uint32_t all = 0u - static_cast<uint32_t>(idle);
            flow.deficit_bytes += static_cast<int32_t>(
                (max_packet_bytes_ - static_cast<uint32_t>(flow.deficit_bytes)) & all);
            flow.list = static_cast<FlowList>(static_cast<uint8_t>(flow.list) |
                                              (static_cast<uint8_t>(list) & all));
            if constexpr (MaybeByJob) {
                if (leaf.by_job && !flow.counted) join_job(leaf, flow, slots_[slot].job);
            }
        }
    }
    append.tail = slot;
    append.bytes += length;
}

[[gnu::always_inline]] inline void Scheduler::insert(Leaf& leaf, const Packet& packet,
                                                     uint64_t arrival_ns) {
    const uint32_t slot = allocate_slot();
    slots_[slot] = packet;
    slots_[slot].arrival_ns = arrival_ns;
    next_slot_[slot] = kInvalid;
    FlowAppend append;
    append_to_flow<true>(leaf, leaf.first_flow + (packet.flow_hash & leaf.flow_mask), slot,
                         packet.length_bytes, append);
    append.flush(flows_);
    leaf.bytes += packet.length_bytes;
    ++queued_packets_;
    if (leaf.packets++ == 0) activate(leaf.node);
    publish_depth(leaf);
}

// Packets a run of dequeue_burst took off one leaf's flow queues and has not yet taken off the
// leaf's depth, the tree's count and the pool's free count; their slots are already on the
// free stack above its top. settle_departures applies them once per run instead of per packet
// (sched_bench twinlane_burst, 65536 flows: 64 B 27.4-28.1 -> 29.7-30.1 M packets/s, mixed
// 22.6-22.8 -> 23.8-24.7; 1 and 1024 flows unchanged).
struct Scheduler::Departures {
    uint32_t packets = 0;
    uint64_t bytes = 0;
};

[[gnu::always_inline]] inline bool Scheduler::pop_flow(uint32_t flow_index, Packet& out,
                                                       Departures& taken) {
    Flow& flow = flows_[flow_index];
    const uint32_t slot = flow.head;
    if (slot == kInvalid) return false;
    out = slots_[slot];
    flow.head = next_slot_[slot];
    flow.bytes -= out.length_bytes;
    free_slots_[pool_free_count_ + taken.packets] = slot;
    ++taken.packets;
    taken.bytes += out.length_bytes;
    return true;
}

// fq_codel's answer to a full leaf: room is made by dropping from the head of a flow with more
// bytes queued than the arriving one would have, not by dropping the arrival. With a shared
// tail drop, whichever flow arrives next loses, so the flows that fill the leaf take the limit
// and a sparse flow (an RPC) loses packets and waits behind a full queue. fq_codel scans every
// bucket for the fattest flow; here the leaf remembers the fattest flow seen at an overflow
// (O(1) per arrival; a scan only at the first overflow or once that flow has drained): an
// arrival from a flow with more bytes than it becomes it (and is dropped: it is the fattest
// known), an arrival from a smaller flow pushes it out. While the leaf stays full its heavy
// senders keep arriving, so the remembered flow is a heavy one.
// Changes nothing but that memory; no room (Room::flow kInvalid) when the arriving flow is
// the fattest known, or room takes more than `spare` drops (the caller's drop array has one
// entry per arrival).
Scheduler::Room Scheduler::find_room(Leaf& leaf, uint32_t arriving_flow, uint32_t length,
                                     uint32_t spare, uint32_t depth, uint64_t depth_bytes) {
    const uint64_t arriving_bytes = flows_[arriving_flow].bytes + length;
    uint32_t victim = leaf.fattest_flow;
    if (victim == kInvalid || flows_[victim].bytes == 0) {
        // First overflow, or the remembered flow drained: find the fattest (rare).
        victim = arriving_flow;
        for (const FlowRing* ring : {&leaf.fresh, &leaf.old}) {
            for (uint32_t i = ring->head; i != ring->tail; ++i) {
                const uint32_t f = flow_rings_[ring->base + (i & leaf.flow_mask)];
                if (flows_[f].bytes > flows_[victim].bytes) victim = f;
            }
        }
    }
    if (victim == arriving_flow || flows_[victim].bytes <= arriving_bytes) {
        leaf.fattest_flow = arriving_flow;
        return {};
    }
    leaf.fattest_flow = victim;
    if (length > leaf.limit_bytes) return {};
    Room room{victim, 0, depth, depth_bytes};
    for (uint32_t slot = flows_[victim].head;
         room.depth >= leaf.limit_packets || room.depth_bytes + length > leaf.limit_bytes;
         slot = next_slot_[slot]) {
        if (slot == kInvalid || room.drops == spare) return {};
        room.depth_bytes -= slots_[slot].length_bytes;
        --room.depth;
        ++room.drops;
    }
    return room;
}

// Drops the packets find_room counted from the head of its flow (`fq_overflow`).
void Scheduler::push_out(Leaf& leaf, const Room& room, DroppedPacket* drops, uint32_t& dropped,
                         uint32_t& free) {
    Flow& flow = flows_[room.flow];
    constexpr DropReason reason = DropReason::fq_overflow;
    for (uint32_t k = 0; k < room.drops; ++k) {
        const uint32_t slot = flow.head;
        const Packet& packet = slots_[slot];
        flow.head = next_slot_[slot];
        if (flow.head == kInvalid) flow.tail = kInvalid;
        flow.bytes -= packet.length_bytes;
        leaf.counters.count_drop(reason, packet.length_bytes);
        drops[dropped++] = DroppedPacket{packet, reason};
        free_slots_[free++] = slot;
    }
    queued_packets_ -= room.drops;
}

[[gnu::always_inline]] inline void Scheduler::settle_departures(Leaf& leaf, Departures& taken) {
    leaf.packets -= taken.packets;
    leaf.bytes -= taken.bytes;
    publish_depth(leaf);
    queued_packets_ -= taken.packets;
    pool_free_count_ += taken.packets;
    taken = Departures{};
}

// ---- tree bookkeeping ---------------------------------------------------------------------

// `node_index` (a leaf's node) just became backlogged: link it into its parent, and the parent
// into its own parent while each one was idle before. A drr child joins at the tail of the ring
// with a fresh quantum; a strict child sets its bit.
// measured (callgrind, sched_cost fq64): counting packets only at the leaf (this walk runs only
// when a leaf fills up) took enqueue from 165 to 128 instructions/packet.
void Scheduler::activate(uint32_t node_index) {
    for (uint32_t n = node_index;;) {
        Node& node = nodes_[n];
        if (node.parent == kInvalid) return;
        Node& parent = nodes_[node.parent];
        if (!node.parent_is_drr) {
            const bool was_backlogged = parent.backlog_mask != 0;
            parent.backlog_mask |= uint64_t{1} << node.position_in_parent;
            if (was_backlogged) return;
        } else {
            node.deficit_bytes = node.quantum_bytes;
            node.next_active = kInvalid;
            if (parent.active_tail == kInvalid) {
                parent.active_head = n;
            } else {
                nodes_[parent.active_tail].next_active = n;
            }
            parent.active_tail = n;
            if (parent.active_count++ != 0) return;
        }
        n = node.parent;
    }
}

// The leaf at `leaf_node` just emptied: unlink it, and each ancestor that became idle. When a
// packet left, the path is the one pick() just chose, where each node is the head of its drr
// parent's active ring (the search below stops at once); move_flow may empty a leaf anywhere
// in the ring. O(children) per level at worst.
void Scheduler::deactivate(uint32_t leaf_node) {
    for (uint32_t n = leaf_node;;) {
        Node& node = nodes_[n];
        if (node.parent == kInvalid) return;
        Node& parent = nodes_[node.parent];
        if (!node.parent_is_drr) {
            parent.backlog_mask &= ~(uint64_t{1} << node.position_in_parent);
            if (parent.backlog_mask != 0) return;
        } else {
            uint32_t previous = kInvalid;
            for (uint32_t c = parent.active_head; c != n; c = nodes_[c].next_active)
                previous = c;
            if (previous == kInvalid) {
                parent.active_head = node.next_active;
            } else {
                nodes_[previous].next_active = node.next_active;
            }
            if (parent.active_tail == n) parent.active_tail = previous;
            node.next_active = kInvalid;
            if (--parent.active_count != 0) return;
        }
        n = node.parent;
    }
}

// Departures of `bytes` from the leaf at `leaf_node`: every shaper on the path pays, and every
// node under a drr parent spends deficit. Charging a run's sum at once equals charging each
// packet (integer arithmetic, nothing else reads them in between).
void Scheduler::charge_path(uint32_t leaf_node, uint64_t bytes) {
    for (uint32_t n = leaf_node; n != kInvalid;) {
        Node& node = nodes_[n];
        node.shaper.consume(bytes);
        if (node.parent_is_drr) node.deficit_bytes -= static_cast<int64_t>(bytes);
        n = node.parent;
    }
}

// Bytes a shaper lets through before it stops conforming, rounded down: tokens / 2^33 <=
// tokens / 8e9, a shift instead of a division. Under-estimating only ends a run early (the
// next pick() or the lone-path check then continues it).
static uint64_t shaper_allowance_bytes(const TokenBucket& shaper) {
    const int64_t tokens = shaper.tokens_units();
    return tokens < 0 ? 0 : static_cast<uint64_t>(tokens) >> 33;
}

// Bytes the leaf at `leaf_node` may send (right after pick() chose it, before charging) such
// that, after every packet of the run, the next pick() would choose it again: every shaper on
// the path still conforms (tokens >= 0) and every drr child keeps a positive deficit. Nodes
// outside the path are unchanged by the run, so the rest of pick()'s walk would repeat: strict
// siblings above were blocked and stay blocked at the same now_ns, and revisiting a blocked
// drr subtree rotates each ring by twice its length (no change once its deficits are > 0).
uint64_t Scheduler::path_allowance_bytes(uint32_t leaf_node) const {
    uint64_t allowance = UINT64_MAX;
    for (uint32_t n = leaf_node; n != kInvalid;) {
        const Node& node = nodes_[n];
        if (node.shaper.enabled())
            allowance = std::min(allowance, shaper_allowance_bytes(node.shaper));
        if (node.parent_is_drr) {
            allowance = std::min<uint64_t>(
                allowance,
                node.deficit_bytes <= 0 ? 0 : static_cast<uint64_t>(node.deficit_bytes - 1));
        }
        n = node.parent;
    }
    return allowance;
}

// The quanta the picks of a lone run gave without a walk: the drr children on the path had
// their deficits d > 0 right after the pick that started the lone stretch, then `bytes_before_last`
// bytes left before the stretch's last packet. A pick gives a child one quantum when its deficit
// is <= 0, and one suffices (quantum >= one max packet >= any queued packet), so after the
// picks the deficit is d + m * quantum - bytes_before_last with m the least count that makes it
// positive. Applied before the stretch's bytes are charged; same result as pick() by pick().
void Scheduler::give_missed_quanta(uint32_t leaf_node, uint64_t bytes_before_last) {
    for (uint32_t n = leaf_node; n != kInvalid; n = nodes_[n].parent) {
        Node& node = nodes_[n];
        if (!node.parent_is_drr) continue;
        const auto spent = static_cast<int64_t>(bytes_before_last);
        if (spent < node.deficit_bytes) continue;
        const int64_t quantum = node.quantum_bytes;
        node.deficit_bytes += ((spent - node.deficit_bytes) / quantum + 1) * quantum;
    }
}

// charge_path(), and returns whether the next pick() would choose the same leaf again by giving
// spent drr children a quantum: every drr child on the path is its parent's only backlogged child
// (rotating a one-child ring changes nothing) and every shaper on the path still conforms.
// (conforms() changes nothing here: pick() refilled the path's shapers to now_ns already.)
bool Scheduler::charge_lone_path(uint32_t leaf_node, uint64_t bytes, uint64_t now_ns) {
    bool lone = true;
    for (uint32_t n = leaf_node; n != kInvalid;) {
        Node& node = nodes_[n];
        if (node.shaper.enabled()) {
            node.shaper.consume(bytes);
            lone &= node.shaper.conforms(now_ns);
        }
        if (node.parent_is_drr) {
            node.deficit_bytes -= static_cast<int64_t>(bytes);
            lone &= nodes_[node.parent].active_count == 1;
        }
        n = node.parent;
    }
    return lone;
}

// What pick() does on a lone path (each drr child the only backlogged child of its parent)
// whose run spent a deficit: the spent children get a quantum (>= one max packet, so positive
// again); rotating a one-child ring changes nothing. Returns what the shapers on the path allow
// (path_allowance_bytes() of a lone path; the same walk). This and charge_lone_path() are
// charge_path() and path_allowance_bytes() fused with the lone-path steps on purpose: built from
// shared per-node helpers instead, they cost lone_burst 22 more instructions per packet
// (sched_cost, callgrind).
uint64_t Scheduler::give_spent_quanta(uint32_t leaf_node, uint64_t& least_deficit) {
    uint64_t allowance = UINT64_MAX;
    least_deficit = UINT64_MAX;
    for (uint32_t n = leaf_node; n != kInvalid; n = nodes_[n].parent) {
        Node& node = nodes_[n];
        if (node.shaper.enabled())
            allowance = std::min(allowance, shaper_allowance_bytes(node.shaper));
        if (node.parent_is_drr) {
            if (node.deficit_bytes <= 0) node.deficit_bytes += node.quantum_bytes;
            least_deficit = std::min(least_deficit, static_cast<uint64_t>(node.deficit_bytes));
        }
    }
    return allowance;
}

[[gnu::always_inline]] inline void Scheduler::rotate_active(Node& parent) {
    if (parent.active_head == parent.active_tail) return;
    const uint32_t head = parent.active_head;
    parent.active_head = nodes_[head].next_active;
    nodes_[head].next_active = kInvalid;
    nodes_[parent.active_tail].next_active = head;
    parent.active_tail = head;
}

// Descends from `node_index` to a leaf that may send now; kInvalid if shapers block them all.
// Mutates DRR state (fresh quanta, ring rotation) on the way, as the algorithm prescribes.
uint32_t Scheduler::pick(uint32_t node_index, uint64_t now_ns) {
    Node& node = nodes_[node_index];
    if (node.leaf != kInvalid) return node.leaf;
    if (node.kind == NodeKind::strict) {
        for (uint64_t mask = node.backlog_mask; mask != 0; mask &= mask - 1) {
            const uint32_t child =
                child_ids_[node.first_child + static_cast<uint32_t>(std::countr_zero(mask))];
            Node& child_node = nodes_[child];
            if (child_node.shaper.enabled() && !child_node.shaper.conforms(now_ns)) continue;
            // A leaf child is the answer: no call (see the DRR branch).
            if (child_node.leaf != kInvalid) return child_node.leaf;
            const uint32_t leaf = pick(child, now_ns);
            if (leaf != kInvalid) return leaf;
        }
        return kInvalid;
    }
    // DRR: a head with spent deficit gets one quantum (>= one max packet) and goes to the back,
    // so each child is visited at most twice before one is chosen or all are found blocked.
    for (uint32_t tries = 2 * node.active_count; tries > 0; --tries) {
        const uint32_t child = node.active_head;
        Node& child_node = nodes_[child];
        if (child_node.deficit_bytes <= 0) {
            child_node.deficit_bytes += child_node.quantum_bytes;
            rotate_active(node);
            continue;
        }
        if (!child_node.shaper.enabled() || child_node.shaper.conforms(now_ns)) {
            // A backlogged leaf can always send: return it without recursing.
            // measured (callgrind, replay_bench): pick 166 -> 144 instructions/packet.
            if (child_node.leaf != kInvalid) return child_node.leaf;
            const uint32_t leaf = pick(child, now_ns);
            if (leaf != kInvalid) return leaf;
        }
        rotate_active(node);
    }
    return kInvalid;
}

// What pick(node_index, now_ns) would return, without changing anything (shaper refills are
// path-independent, so refilling here is not a change). A drr node's pick() walks its ring
// twice: in the first round heads with a positive deficit are tried and the others get a
// quantum and go round; in the second every child has a positive deficit. So pick() returns
// the first eligible child with a positive deficit in ring order, else the first eligible one
// with a non-positive deficit.
uint32_t Scheduler::peek_pick(uint32_t node_index, uint64_t now_ns) {
    Node& node = nodes_[node_index];
    if (node.leaf != kInvalid) return node.leaf;
    if (node.kind == NodeKind::strict) {
        for (uint64_t mask = node.backlog_mask; mask != 0; mask &= mask - 1) {
            const uint32_t child =
                child_ids_[node.first_child + static_cast<uint32_t>(std::countr_zero(mask))];
            Node& child_node = nodes_[child];
            if (child_node.shaper.enabled() && !child_node.shaper.conforms(now_ns)) continue;
            const uint32_t leaf = peek_pick(child, now_ns);
            if (leaf != kInvalid) return leaf;
        }
        return kInvalid;
    }
    for (const bool positive : {true, false}) {
        for (uint32_t child = node.active_head; child != kInvalid;
             child = nodes_[child].next_active) {
            Node& child_node = nodes_[child];
            if ((child_node.deficit_bytes > 0) != positive) continue;
            if (child_node.shaper.enabled() && !child_node.shaper.conforms(now_ns)) continue;
            const uint32_t leaf = peek_pick(child, now_ns);
            if (leaf != kInvalid) return leaf;
        }
    }
    return kInvalid;
}

// The flow dequeue_leaf() would serve next, without changing anything. Its loop serves the
// first fresh flow with packets and a positive deficit, else the first such old flow; flows
// with a spent deficit get a quantum and move to the old list's tail (fresh ones first, in
// order), empty ones leave. So after those two scans come fresh, then old flows with packets.
uint32_t Scheduler::peek_flow(const Leaf& leaf) const {
    if (leaf.flow_mask == 0) return leaf.first_flow;
    for (const bool positive : {true, false}) {
        for (const FlowRing* ring : {&leaf.fresh, &leaf.old}) {
            for (uint32_t i = ring->head; i != ring->tail; ++i) {
                const uint32_t flow = flow_rings_[ring->base + (i & leaf.flow_mask)];
                const Flow& f = flows_[flow];
                if (f.head != kInvalid && (f.deficit_bytes > 0) == positive) return flow;
            }
        }
    }
    return kInvalid;
}

// Length of the packet dequeue_leaf() would deliver next from `leaf`, without changing
// anything: the chosen flow's head, or with CoDel the packet CoDel would deliver after its
// drops (run on a copy of the state; `drops_room` as the drop sink has). False if none.
bool Scheduler::peek_length(const Leaf& leaf, uint64_t now_ns, uint32_t drops_room,
                            uint32_t& length) {
    const uint32_t flow = peek_flow(leaf);
    if (flow == kInvalid || flows_[flow].head == kInvalid) return false;
    if (!leaf.codel.enabled) {
        length = slots_[flows_[flow].head].length_bytes;
        return true;
    }
    CodelState state = codel_states_[flow];
    CodelPeekQueue queue(*this, flow, drops_room);
    Packet out;
    if (!codel_dequeue(state, leaf.codel, queue, now_ns, out).has_packet) return false;
    length = out.length_bytes;
    return true;
}

// ---- hot path -----------------------------------------------------------------------------

// Below this many packets a leaf's flows and packets stay in the L1/L2 caches, where the
// prefetches in dequeue_leaf cost more instructions than they save (sched_bench, 1024 flows);
// the same for a flow table below this many flows at enqueue (256 KiB).
constexpr uint32_t kPrefetchDepth = 4096;
constexpr uint32_t kPrefetchFlows = 8192;

// Packets come in runs for one leaf (a lane's burst usually is one run). During a run the
// leaf's depth, the pool's free count and the flow tail being appended to live in registers
// (EnqueueRun) and are written back once: updated in memory per packet, each was a
// store-to-load chain (perf, net_null 64 B: next_slot_[flow.tail] and the flow's tail/packets
// were ~40% of enqueue's samples). Same admissions, drops, order and counters as one packet at
// a time.
struct Scheduler::EnqueueRun {
    uint32_t depth = 0;
    uint64_t depth_bytes = 0;
    uint32_t free = 0;     // the pool's free count
    uint32_t packets = 0;  // admitted in this run
    uint64_t bytes = 0;
    FlowAppend append;
};

uint32_t Scheduler::enqueue_burst(const Packet* packets, uint32_t count, uint64_t now_ns,
                                  DroppedPacket* drops, uint32_t drop_capacity) {
    const uint32_t extra_room = drop_capacity > count ? drop_capacity - count : 0;
    // Touch the burst's flow queues up front so their cache misses overlap (sched_bench, 64k
    // flows); a packet with an unknown leaf is skipped here and dropped below. A small flow
    // table stays in cache (sched_bench's 1024 flows: 32 KiB).
    if (flows_.size() > kPrefetchFlows) {
        for (uint32_t i = 0; i < count; ++i) {
            if (packets[i].leaf >= leaves_.size()) continue;
            const Leaf& leaf = leaves_[packets[i].leaf];
            __builtin_prefetch(&flows_[leaf.first_flow + (packets[i].flow_hash & leaf.flow_mask)]);
        }
    }
    uint32_t dropped = 0;
    for (uint32_t i = 0; i < count;) {
        if (packets[i].leaf < leaves_.size()) [[likely]] {
            i = enqueue_run(packets, i, count, now_ns, drops, extra_room, dropped);
            continue;
        }
        port_drops_.count_drop(DropReason::unknown_leaf, packets[i].length_bytes);
        drops[dropped++] = DroppedPacket{packets[i++], DropReason::unknown_leaf};
    }
    return dropped;
}

// The run of packets for one leaf that starts at packets[i]; returns where the next run starts.
[[gnu::always_inline]] inline uint32_t Scheduler::enqueue_run(const Packet* packets, uint32_t i,
                                                              uint32_t count, uint64_t now_ns,
                                                              DroppedPacket* drops,
                                                              uint32_t extra_room,
                                                              uint32_t& dropped) {
    Leaf& leaf = leaves_[packets[i].leaf];
    if (leaf.by_job)
        return enqueue_leaf_run<true>(leaf, packets, i, count, now_ns, drops, extra_room, dropped);
    return enqueue_leaf_run<false>(leaf, packets, i, count, now_ns, drops, extra_room, dropped);
}

template <bool MaybeByJob>
[[gnu::always_inline]] inline uint32_t Scheduler::enqueue_leaf_run(
    Leaf& leaf, const Packet* packets, uint32_t i, uint32_t count, uint64_t now_ns,
    DroppedPacket* drops, uint32_t extra_room, uint32_t& dropped) {
    const uint16_t leaf_index = packets[i].leaf;
    EnqueueRun run{leaf.packets, leaf.bytes, pool_free_count_, 0, 0, FlowAppend{}};
    for (; i < count && packets[i].leaf == leaf_index; ++i) {
        const Packet& packet = packets[i];
        DropReason reason = DropReason::oversize;
        // Drops so far plus one per packet still to come stay within the room.
        if (admit_in_run<MaybeByJob>(leaf, run, packet, i + 1 + extra_room - dropped, now_ns, drops,
                                     dropped, reason))
            continue;
        leaf.counters.count_drop(reason, packet.length_bytes);
        drops[dropped++] = DroppedPacket{packet, reason};
    }
    run.append.flush(flows_);
    // The leaf is linked into the tree while it holds packets, by the state of the leaf before
    // and after the run, never by its depth within it: an fq overflow may push out the leaf's
    // last packet for the arrival it admits (depth 0 for a moment, the leaf still linked), and
    // linking it again there put it in its drr parent's ring twice (SIGSEGV in pick() with
    // limit_packets 1). Depth only falls by an overflow, which admits the arrival, so a leaf
    // that held packets before the run still does.
    if (leaf.packets == 0 && run.depth != 0) activate(leaf.node);
    leaf.packets = run.depth;
    leaf.bytes = run.depth_bytes;
    publish_depth(leaf);
    pool_free_count_ = run.free;
    queued_packets_ += run.packets;
    leaf.counters.packets_in.add(run.packets);
    leaf.counters.bytes_in.add(run.bytes);
    return i;
}

// One arrival of a run: admitted, or false with the reason. A full fq leaf makes room by
// pushing out head packets of its fattest flow (into `drops`, `spare` of them at most).
template <bool MaybeByJob>
[[gnu::always_inline]] inline bool Scheduler::admit_in_run(Leaf& leaf, EnqueueRun& run,
                                                           const Packet& packet, uint32_t spare,
                                                           uint64_t now_ns, DroppedPacket* drops,
                                                           uint32_t& dropped, DropReason& reason) {
    const uint32_t length = packet.length_bytes;
    const uint32_t flow = leaf.first_flow + (packet.flow_hash & leaf.flow_mask);
    if (length == 0 || length > max_packet_bytes_) {
        reason = DropReason::oversize;
        return false;
    }
    if (run.depth >= leaf.limit_packets || run.depth_bytes + length > leaf.limit_bytes) {
        reason = run.depth >= leaf.limit_packets ? DropReason::queue_full_packets
                                                 : DropReason::queue_full_bytes;
        if (leaf.flow_mask == 0) [[likely]]
            return false;
        run.append.flush(flows_);  // the flows' byte counts must be current
        run.append = FlowAppend{};
        const Room room = find_room(leaf, flow, length, spare, run.depth, run.depth_bytes);
        if (room.flow == kInvalid || !red_admits(leaf, packet, run.depth_bytes, reason))
            return false;
        uint32_t free = run.free;  // a local: a reference into `run` would keep it in memory
        push_out(leaf, room, drops, dropped, free);
        run.free = free;
        run.depth = room.depth;
        run.depth_bytes = room.depth_bytes;
    } else if (run.free == 0) {
        reason = DropReason::pool_exhausted;
        return false;
    } else if (!red_admits(leaf, packet, run.depth_bytes, reason)) {
        return false;
    }
    const uint32_t slot = free_slots_[--run.free];
    slots_[slot] = packet;
    slots_[slot].arrival_ns = now_ns;
    next_slot_[slot] = kInvalid;
    append_to_flow<MaybeByJob>(leaf, flow, slot, length, run.append);
    run.depth_bytes += length;
    ++run.depth;
    ++run.packets;
    run.bytes += length;
    return true;
}

// RED at arrival, on the leaf's bytes before this packet: false (red_early) if it drops it.
[[gnu::always_inline]] inline bool Scheduler::red_admits(Leaf& leaf, const Packet& packet,
                                                         uint64_t depth_bytes, DropReason& reason) {
    if (!leaf.red.enabled || !red_signal(leaf.red, depth_bytes, rng_)) return true;
    if (mark_ce(packet)) {
        leaf.counters.ecn_marked_red.add(1);
        return true;
    }
    if (!leaf.red.drop_non_ect) return true;
    reason = DropReason::red_early;
    return false;
}

[[gnu::always_inline]] inline bool Scheduler::dequeue_flow(Leaf& leaf, uint32_t flow,
                                                           uint64_t now_ns, Packet& out,
                                                           DropSink& sink, Departures& taken) {
    if (!leaf.codel.enabled) return pop_flow(flow, out, taken);
    CodelQueue queue(*this, leaf, flow, sink, taken);
    const CodelVerdict verdict = codel_dequeue(codel_states_[flow], leaf.codel, queue, now_ns, out);
    if (verdict.marked) leaf.counters.ecn_marked_codel.add(1);
    return verdict.has_packet;
}

[[gnu::always_inline]] inline void Scheduler::prefetch_slot(uint32_t slot) const {
    __builtin_prefetch(&slots_[slot]);
    __builtin_prefetch(reinterpret_cast<const char*>(&slots_[slot + 1]) - 1);
    __builtin_prefetch(&next_slot_[slot]);
}

// Flows a ring serves next, touched ahead of time: with 65536 flows each flow, its packets
// and their links are cache misses. The flow kFlowsAhead places on is fetched first, its head
// packet and link once it is kSlotsAhead away, its second packet kSecondAhead away (each read
// of a line fetched a few packets before, not a stall).
[[gnu::always_inline]] inline void Scheduler::prefetch_ring(const Leaf& leaf,
                                                            const FlowRing& ring) const {
    constexpr uint32_t kFlowsAhead = 8;
    constexpr uint32_t kSlotsAhead = 4;
    constexpr uint32_t kSecondAhead = 2;
    const uint32_t queued = ring.tail - ring.head;
    const uint32_t* entries = &flow_rings_[ring.base];
    const uint32_t head = ring.head;
    const uint32_t mask = leaf.flow_mask;
    auto flow_at = [&](uint32_t ahead) -> const Flow& {
        return flows_[entries[(head + ahead) & mask]];
    };
    if (queued > kFlowsAhead) __builtin_prefetch(&flow_at(kFlowsAhead));
    if (queued > kSlotsAhead) {
        if (const uint32_t slot = flow_at(kSlotsAhead).head; slot != kInvalid) prefetch_slot(slot);
    }
    if (queued > kSecondAhead) {
        if (const uint32_t slot = flow_at(kSecondAhead).head; slot != kInvalid) {
            if (const uint32_t second = next_slot_[slot]; second != kInvalid) prefetch_slot(second);
        }
    }
}

// fq_codel's flow choice: fresh (sparse) flows first, DRR by deficit across flows.
template <bool MaybeByJob>
[[gnu::always_inline]] inline bool Scheduler::dequeue_leaf(Leaf& leaf, uint64_t now_ns, Packet& out,
                                                           DropSink& sink, Departures& taken) {
    if (leaf.flow_mask == 0) return dequeue_flow(leaf, leaf.first_flow, now_ns, out, sink, taken);
    for (;;) {
        const bool from_fresh = !leaf.fresh.empty();
        const FlowList list = from_fresh ? FlowList::fresh : FlowList::old;
        FlowRing& ring = from_fresh ? leaf.fresh : leaf.old;
        if (ring.empty()) return false;
        const uint32_t flow_index = flow_rings_[ring.base + (ring.head & leaf.flow_mask)];
        Flow& flow = flows_[flow_index];
        if (flow.deficit_bytes <= 0) {
            if (MaybeByJob && leaf.by_job)
                flow.deficit_bytes += static_cast<int32_t>(job_quantum(leaf, flow));
            else
                flow.deficit_bytes += static_cast<int32_t>(max_packet_bytes_);
            pop_flow_list(leaf, list);
            push_flow_list(leaf, FlowList::old, flow_index);
            continue;
        }
        if (!dequeue_flow(leaf, flow_index, now_ns, out, sink, taken)) {
            if (MaybeByJob && leaf.by_job) leave_job(leaf, flow);  // empty: no job's packets
            pop_flow_list(leaf, list);
            // An emptied fresh flow waits in the old list so that it cannot regain priority
            // immediately by sending one packet at a time (fq_codel's anti-starvation rule).
            if (from_fresh && !leaf.old.empty()) push_flow_list(leaf, FlowList::old, flow_index);
            continue;
        }
        flow.deficit_bytes -= static_cast<int32_t>(out.length_bytes);
        // A leaf this deep does not stay in cache: fetch what comes next ahead of time.
        if (leaf.packets > kPrefetchDepth) prefetch_ring(leaf, ring);
        // Plain DRR (no sparse-flow rule) drops an emptied flow at once, while its line is
        // still in cache; with many flows the lazy removal cost an extra miss per packet.
        // pop_flow_list() without a branch: whether the flow emptied is random.
        if (!leaf.sparse_first) {
            const uint32_t emptied = flow.head == kInvalid;
            ring.head += emptied;
            flow.list = static_cast<FlowList>(static_cast<uint8_t>(flow.list) &
                                              static_cast<uint8_t>(emptied - 1));
            if (MaybeByJob && leaf.by_job && emptied) leave_job(leaf, flow);
        }
        return true;
    }
}

// Sojourn statistics of runs of departures from a leaf, kept here and added to the leaf's
// counters once at each run's end. Incremented per packet in memory, the leaf's histogram
// slot was a store-to-load chain: 26% of dequeue_burst's samples (perf, net_null 64 B). The
// histogram is counted without a branch: sojourns straddle bucket boundaries at random, and
// run-length counting (a branch per change of bucket) mispredicted on ~40% of packets
// (callgrind --branch-sim, sched_cost fqmix).
struct Scheduler::DepartureTally {
    uint32_t* counts;  // Scheduler::run_histogram_, zero outside a run
    uint64_t sum_ns = 0;
    uint64_t max_ns = 0;
    uint64_t touched = 0;  // bit b set: counts[b] != 0

    [[gnu::always_inline]] void add(uint64_t sojourn_ns) {
        sum_ns += sojourn_ns;
        max_ns = select(sojourn_ns > max_ns, sojourn_ns, max_ns);
        const uint32_t b = histogram_bucket(sojourn_ns);
        ++counts[b];
        touched |= uint64_t{1} << b;
    }
    // Adds the runs so far to `counters` and starts over.
    void flush(LiveQueueCounters& counters) {
        for (uint64_t bits = touched; bits != 0; bits &= bits - 1) {
            const auto b = static_cast<uint32_t>(std::countr_zero(bits));
            counters.sojourn_log2_histogram[b].add(counts[b]);
            counts[b] = 0;
        }
        counters.sojourn_sum_ns.add(sum_ns);
        counters.sojourn_max_ns.raise_to(max_ns);
        sum_ns = 0;
        max_ns = 0;
        touched = 0;
    }
};

// The packets dequeue_burst takes from one leaf in a row.
struct Scheduler::DepartureRun {
    static constexpr uint64_t kNotLone = UINT64_MAX;
    uint32_t start;  // its first packet's index in `out`
    uint64_t bytes;
    uint64_t limit;    // bytes up to which the next pick() is this leaf again
    uint64_t charged;  // bytes already charged to the path
    // On a lone path: `bytes` when the drr deficits on the path were last exact (right after a
    // pick); the quanta of the picks since are given by give_missed_quanta(). kNotLone otherwise.
    uint64_t lone_from = kNotLone;
    uint64_t least_deficit = 0;  // the least of those deficits: fewer bytes since need no quantum

    void settle_quanta(Scheduler& scheduler, uint32_t leaf_node, uint32_t last_length) const {
        const uint64_t before_last = bytes - lone_from - last_length;
        if (before_last >= least_deficit) scheduler.give_missed_quanta(leaf_node, before_last);
    }
};

// One pick() per run of packets from the same leaf: after the first packet, the run goes on
// while path_allowance_bytes() says the next pick() would choose this leaf again, and the run's
// bytes are charged to the path once at its end. With a budget below one max-size frame,
// peek_pick()/peek_length() look ahead without changing anything, so the scheduler stops in
// exactly the state the single dequeues so far leave.
// measured (callgrind, sched_cost): see sched/README.md.
DequeueResult Scheduler::dequeue_burst(Packet* out, uint32_t max_packets, uint64_t max_bytes,
                                       uint64_t now_ns, DroppedPacket* drops,
                                       uint32_t drop_capacity,
                                       WireCost cost) TWINLANE_RESTRICT_THIS {
    // Compiled twice: a tree without fq_by_job leaves pays nothing for them.
    if (by_job_leaves_ != 0)
        return dequeue_runs<true>(out, max_packets, max_bytes, now_ns, drops, drop_capacity, cost);
    return dequeue_runs<false>(out, max_packets, max_bytes, now_ns, drops, drop_capacity, cost);
}

template <bool AnyByJob>
[[gnu::always_inline]] inline DequeueResult Scheduler::dequeue_runs(
    Packet* out, uint32_t max_packets, uint64_t max_bytes, uint64_t now_ns, DroppedPacket* drops,
    uint32_t drop_capacity, WireCost cost) TWINLANE_RESTRICT_THIS {
    DropSink sink{drops, drop_capacity, 0};
    auto wire = [cost](uint32_t length) -> uint64_t {
        return std::max(length, cost.min_frame_bytes) + uint64_t{cost.overhead_bytes};
    };
    // Every queued packet has length <= max_packet_bytes_ (it only grows at runtime), so a
    // budget of one max-size frame admits whatever comes next without looking.
    const uint64_t max_wire = wire(max_packet_bytes_);
    auto next_fits = [&](const Leaf& leaf, uint64_t left) {
        uint32_t length = 0;
        return peek_length(leaf, now_ns, sink.capacity - sink.count, length) &&
               wire(length) <= left;
    };
    // Past this many bytes charged the next packet may not fit: look before taking it.
    const uint64_t look_ahead_above = max_bytes >= max_wire ? max_bytes - max_wire : 0;
    uint32_t sent = 0;
    uint64_t charged = 0;  // <= max_bytes throughout
    Node& root = nodes_[root_];
    DepartureTally tally{run_histogram_.data()};
    while (sent < max_packets && queued_packets_ != 0) {
        if (root.shaper.enabled() && !root.shaper.conforms(now_ns)) break;
        if (max_bytes - charged < max_wire) {
            // A blocked tree falls through to pick(), which then fails exactly as a single
            // dequeue's would (its DRR bookkeeping included).
            const uint32_t next = peek_pick(root_, now_ns);
            if (next != kInvalid && !next_fits(leaves_[next], max_bytes - charged)) break;
        }
        const uint32_t leaf_index = pick(root_, now_ns);
        if (leaf_index == kInvalid) break;
        Leaf& leaf = leaves_[leaf_index];
        DepartureRun run{sent, 0, 0, 0, DepartureRun::kNotLone, UINT64_MAX};
        // Before the run's first packet: the path is as pick() left it either way.
        if (max_packets - sent > 1 && leaf.packets > 1) run.limit = path_allowance_bytes(leaf.node);
        bool budget_spent = false;
        Departures taken;
        for (;;) {
            Packet& packet = out[sent];
            if (!dequeue_leaf<AnyByJob>(leaf, now_ns, packet, sink, taken)) break;
            tally.add(now_ns - packet.arrival_ns);
            run.bytes += packet.length_bytes;
            charged += wire(packet.length_bytes);
            ++sent;
            if (sent == max_packets || leaf.packets == taken.packets) break;
            if (AnyByJob && leaf.shares_stale) break;  // its weight changes: pick again
            const bool refill = run.bytes > run.limit;
            if (refill && !run_picks_leaf_again(leaf, run, out[sent - 1].length_bytes, now_ns))
                break;
            // charged > 0 here, so this is max_bytes - charged < max_wire.
            if (charged > look_ahead_above && !next_fits(leaf, max_bytes - charged)) {
                budget_spent = true;
                break;
            }
            if (refill) {
                const uint64_t allowance = give_spent_quanta(leaf.node, run.least_deficit);
                run.limit = run.bytes + std::min(allowance, UINT64_MAX - run.bytes);
                run.lone_from = run.bytes;
            }
        }
        finish_run(leaf, run, out, sent, now_ns, tally, taken);
        if (budget_spent) break;
    }
    return DequeueResult{sent, sink.count, charged};
}

// A run's bytes past what its path allows: the next pick() chooses another leaf, unless the
// path is lone: then it gives the spent drr children a quantum and, if every shaper on the path
// conforms, takes this leaf again. The run goes on with those quanta (a lone bulk class whose
// quantum is a packet or two sends whole bursts, not one tree walk per packet), given only once
// the next packet is certain: k single dequeues stop before the k+1-th pick(). Most paths that
// are not lone fail at the nearest drr node, without a walk. A run on a lone path gets here
// only when a shaper's allowance is spent (its deficits are not limits: give_missed_quanta).
[[gnu::always_inline]] inline bool Scheduler::run_picks_leaf_again(const Leaf& leaf,
                                                                   DepartureRun& run,
                                                                   uint32_t last_length,
                                                                   uint64_t now_ns) {
    if (run.lone_from == DepartureRun::kNotLone) {
        if (leaf.nearest_drr != kInvalid && nodes_[leaf.nearest_drr].active_count != 1)
            return false;
    } else {
        run.settle_quanta(*this, leaf.node, last_length);
        run.lone_from = run.bytes;
    }
    const bool picked_again = charge_lone_path(leaf.node, run.bytes - run.charged, now_ns);
    run.charged = run.bytes;
    return picked_again;
}

// The run's counters, its path charged for what it has not been, its slots released.
[[gnu::always_inline]] inline void Scheduler::finish_run(Leaf& leaf, const DepartureRun& run,
                                                         const Packet* out, uint32_t sent,
                                                         uint64_t now_ns, DepartureTally& tally,
                                                         Departures& taken) {
    if (sent != run.start) {
        LiveQueueCounters& counters = leaf.counters;
        counters.packets_out.add(sent - run.start);
        counters.bytes_out.add(run.bytes);
        counters.sojourn_last_ns.set(now_ns - out[sent - 1].arrival_ns);
        tally.flush(counters);
        if (run.lone_from != DepartureRun::kNotLone && run.bytes != run.lone_from)
            run.settle_quanta(*this, leaf.node, out[sent - 1].length_bytes);
        if (run.bytes != run.charged) charge_path(leaf.node, run.bytes - run.charged);
    }
    settle_departures(leaf, taken);
    if (leaf.by_job) {
        if (leaf.packets == 0) forget_jobs(leaf);
        if (leaf.shares_stale) {
            leaf.shares_stale = false;
            set_shares(leaf.node, leaf.jobs);
        }
    }
    if (leaf.packets == 0) deactivate(leaf.node);
}

uint64_t Scheduler::eligible_time(uint32_t node_index, uint64_t now_ns) {
    Node& node = nodes_[node_index];
    const uint64_t own = node.shaper.enabled() ? node.shaper.conform_time_ns(now_ns) : now_ns;
    if (node.leaf != kInvalid) return own;
    uint64_t earliest_child = kNever;
    if (node.kind == NodeKind::strict) {
        for (uint64_t mask = node.backlog_mask; mask != 0; mask &= mask - 1) {
            const uint32_t child =
                child_ids_[node.first_child + static_cast<uint32_t>(std::countr_zero(mask))];
            earliest_child = std::min(earliest_child, eligible_time(child, now_ns));
        }
    } else {
        for (uint32_t child = node.active_head; child != kInvalid;
             child = nodes_[child].next_active) {
            earliest_child = std::min(earliest_child, eligible_time(child, now_ns));
        }
    }
    return std::max(own, earliest_child);
}

uint64_t Scheduler::next_eligible_ns(uint64_t now_ns) {
    if (queued_packets_ == 0) return kNever;
    return eligible_time(root_, now_ns);
}

// ---- runtime changes ----------------------------------------------------------------------

std::optional<ValidationError> Scheduler::apply(const TreeSpec& spec, uint64_t now_ns) {
    if (auto problem = validate(spec)) return problem;
    if (spec.nodes.size() != spec_.nodes.size()) {
        return ValidationError{"", "nodes", "node count changed: build a new tree and migrate"};
    }
    for (size_t i = 0; i < spec.nodes.size(); ++i) {
        const NodeSpec& now = spec.nodes[i];
        const NodeSpec& before = spec_.nodes[i];
        const char* field = nullptr;
        if (now.name != before.name)
            field = "name";
        else if (now.kind != before.kind)
            field = "kind";
        else if (now.parent != before.parent)
            field = "parent";
        else if (now.priority != before.priority)
            field = "priority";
        else if (now.kind == NodeKind::fq && now.fq_buckets != before.fq_buckets)
            field = "fq_buckets";
        else if (now.kind == NodeKind::fq && now.fq_by_job != before.fq_by_job)
            field = "fq_by_job";
        if (field != nullptr) {
            return ValidationError{now.name, field,
                                   "topology change: build a new tree and migrate"};
        }
    }
    if (spec.max_packet_bytes < spec_.max_packet_bytes) {
        return ValidationError{"", "max_packet_bytes",
                               "cannot shrink at runtime (queued packets may be larger)"};
    }
    spec_ = spec;
    // What the old rates earned until now (refill() does nothing for a time already passed).
    for (Node& node : nodes_)
        node.shaper.refill(now_ns);
    configure_params(spec_);
    return std::nullopt;
}

std::optional<ValidationError> Scheduler::migrate_from(Scheduler& old_tree, uint64_t now_ns) {
    std::vector<uint16_t> destination(old_tree.leaves_.size());
    for (uint32_t l = 0; l < old_tree.leaves_.size(); ++l) {
        const std::string& name = old_tree.leaf_name(static_cast<uint16_t>(l));
        std::optional<uint16_t> target = leaf_id(name);
        if (!target && !spec_.default_leaf.empty()) target = leaf_id(spec_.default_leaf);
        if (!target) {
            return ValidationError{name, "default_leaf",
                                   "leaf is gone from the new tree and no default_leaf is set"};
        }
        destination[l] = *target;
    }
    if (old_tree.queued_packets() > pool_free_count_) {
        return ValidationError{"", "pool_packets",
                               "new tree's pool cannot hold the queued packets"};
    }
    if (old_tree.max_packet_bytes_ > max_packet_bytes_) {
        return ValidationError{"", "max_packet_bytes", "smaller than the old tree's"};
    }
    for (uint32_t l = 0; l < old_tree.leaves_.size(); ++l) {
        Leaf& from = old_tree.leaves_[l];
        if (from.packets == 0) continue;
        Leaf& to = leaves_[destination[l]];
        for (uint32_t f = 0; f <= from.flow_mask; ++f) {
            const Flow& flow = old_tree.flows_[from.first_flow + f];
            for (uint32_t slot = flow.head; slot != kInvalid; slot = old_tree.next_slot_[slot]) {
                Packet packet = old_tree.slots_[slot];
                packet.leaf = destination[l];  // the descriptor names the leaf it is queued in
                insert(to, packet, packet.arrival_ns);
                to.counters.packets_in.add(1);
                to.counters.bytes_in.add(packet.length_bytes);
                from.counters.migrated_out_packets.add(1);
            }
        }
    }
    for (uint32_t n = 0; n < nodes_.size(); ++n) {
        if (const std::optional<uint32_t> old = old_tree.node_id(spec_.nodes[n].name))
            nodes_[n].shaper.take_over(old_tree.nodes_[*old].shaper, now_ns);
    }
    old_tree.reset_queues();
    return std::nullopt;
}

bool Scheduler::set_shaper_rate(uint32_t node, uint64_t rate_bits_per_sec, uint64_t now_ns) {
    if (node >= nodes_.size() || rate_bits_per_sec == 0 || rate_bits_per_sec > kMaxRateBitsPerSec)
        return false;
    NodeSpec& spec = spec_.nodes[node];
    if (spec.shaper.rate_bits_per_sec == 0) return false;
    TokenBucket& shaper = nodes_[node].shaper;
    shaper.refill(now_ns);  // what the old rate earned until now
    shaper.configure(rate_bits_per_sec, spec.shaper.burst_bytes);
    spec.shaper.rate_bits_per_sec = rate_bits_per_sec;
    return true;
}

MoveResult Scheduler::move_flow(uint16_t from, uint16_t to, uint32_t flow_hash, UserStamp stamp,
                                DroppedPacket* drops, uint32_t drop_capacity) {
    if (from == to || from >= leaves_.size() || to >= leaves_.size()) return {};
    Leaf& source = leaves_[from];
    Leaf& target = leaves_[to];
    if (source.packets == 0) return {};
    // Take the flow's packets out of its bucket in `source` (shared with colliding flows, which
    // stay), keeping their order in a chain.
    Flow& bucket = flows_[source.first_flow + (flow_hash & source.flow_mask)];
    uint32_t chain_head = kInvalid;
    uint32_t chain_tail = kInvalid;
    uint32_t packets = 0;
    uint64_t bytes = 0;
    uint32_t previous = kInvalid;
    for (uint32_t slot = bucket.head; slot != kInvalid;) {
        const uint32_t next = next_slot_[slot];
        if (slots_[slot].flow_hash != flow_hash) {
            previous = slot;
            slot = next;
            continue;
        }
        if (previous == kInvalid) {
            bucket.head = next;
        } else {
            next_slot_[previous] = next;
        }
        if (bucket.tail == slot) bucket.tail = previous;
        next_slot_[slot] = kInvalid;
        if (chain_tail == kInvalid) {
            chain_head = slot;
        } else {
            next_slot_[chain_tail] = slot;
        }
        chain_tail = slot;
        ++packets;
        bytes += slots_[slot].length_bytes;
        slot = next;
    }
    if (packets == 0) return {};
    // An emptied bucket may stay on the leaf's flow lists: dequeue drops empty flows lazily.
    bucket.bytes -= bytes;
    source.packets -= packets;
    source.bytes -= bytes;
    source.counters.migrated_out_packets.add(packets);
    publish_depth(source);
    if (source.packets == 0) {
        if (source.by_job) {
            forget_jobs(source);
            source.shares_stale = false;
            set_shares(source.node, source.jobs);
        }
        deactivate(source.node);
    }

    FlowAppend append;
    MoveResult result;
    const uint32_t target_flow = target.first_flow + (flow_hash & target.flow_mask);
    for (uint32_t slot = chain_head; slot != kInvalid;) {
        const uint32_t next = next_slot_[slot];
        next_slot_[slot] = kInvalid;
        Packet& packet = slots_[slot];
        packet.leaf = to;  // the descriptor names the leaf it is queued in
        packet.user =
            static_cast<uint8_t>((packet.user & ~stamp.mask) | (stamp.value & stamp.mask));
        const uint32_t length = packet.length_bytes;
        const bool full_packets = target.packets + result.packets >= target.limit_packets;
        const bool full_bytes = target.bytes + result.bytes + length > target.limit_bytes;
        if ((full_packets || full_bytes) && result.dropped < drop_capacity) {
            // Past the target's limits: dropped there, as an arrival would be.
            const DropReason reason =
                full_packets ? DropReason::queue_full_packets : DropReason::queue_full_bytes;
            target.counters.count_drop(reason, length);
            drops[result.dropped++] = DroppedPacket{packet, reason};
            result.dropped_bytes += length;
            free_slots_[pool_free_count_++] = slot;
            --queued_packets_;
        } else {
            append_to_flow<true>(target, target_flow, slot, length, append);
            ++result.packets;
            result.bytes += length;
        }
        slot = next;
    }
    append.flush(flows_);
    if (result.packets == 0) return result;
    target.counters.packets_in.add(result.packets);
    target.counters.bytes_in.add(result.bytes);
    target.bytes += result.bytes;
    const bool was_idle = target.packets == 0;
    target.packets += result.packets;
    publish_depth(target);
    if (was_idle) activate(target.node);
    return result;
}

// ---- introspection ------------------------------------------------------------------------

std::optional<uint32_t> Scheduler::node_id(std::string_view name) const {
    for (uint32_t i = 0; i < spec_.nodes.size(); ++i) {
        if (spec_.nodes[i].name == name) return i;
    }
    return std::nullopt;
}

std::optional<uint16_t> Scheduler::leaf_id(std::string_view name) const {
    const std::optional<uint32_t> node = node_id(name);
    if (!node || nodes_[*node].leaf == kInvalid) return std::nullopt;
    return static_cast<uint16_t>(nodes_[*node].leaf);
}

const std::string& Scheduler::leaf_name(uint16_t leaf) const {
    return spec_.nodes[leaves_[leaf].node].name;
}

QueueCounters Scheduler::leaf_counters(uint16_t leaf) const {
    return leaves_[leaf].counters.read();
}

QueueCounters Scheduler::node_counters(uint32_t node) const {
    QueueCounters total;
    for (uint32_t l = 0; l < leaves_.size(); ++l) {
        for (uint32_t n = leaves_[l].node; n != kInvalid; n = nodes_[n].parent) {
            if (n == node) {
                total.add(leaf_counters(static_cast<uint16_t>(l)));
                break;
            }
        }
    }
    if (node == root_) total.add(port_drops_.read());
    return total;
}

}  // namespace twinlane::sched
