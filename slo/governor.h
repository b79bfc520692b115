// SloGovernor: the SLOs of one egress tree, measured and enforced by the thread that owns the
// tree (the scheduler lcore in realtime, the engine in replay), between and inside bursts,
// with no lock and no allocation on that thread (replay may ask it to keep every window and
// event in vectors; realtime does not).
//
// Per class with an `slo:` (slo/slo_spec.h):
//   measure   admit(): every arriving packet of the class counts its flow's bytes
//             (slo/flow_meter.h); depart(): every packet that leaves the scheduler in the class
//             records its latency (arrival to departure) into a fine histogram
//             (slo/latency_histogram.h). Windows are aligned to multiples of window_ns.
//   judge     tick(now): a window that ended is closed: its percentile, met or missed (exactly:
//             the count above the target against the rank), idle when nothing left; totals,
//             the worst window, the min_share floor; published as relaxed counters
//             (LiveSloCounters) for stats on other threads.
//   act       the class's Controller (slo/controller.h) decides from the window, and from
//             pressure within it (a packet predicted to wait, or having waited, more than half
//             the target); the governor applies the decision to the tree it is bound to:
//             Scheduler::set_shaper_rate on the class's node; a downgraded flow's queued
//             packets move to the lower class's leaf (Scheduler::move_flow, restamped with the
//             lower class) before any later packet of it is placed there, and back on return,
//             so a flow is never reordered. Each action is an SloEvent (with its reason) in a
//             single-producer ring that another thread drains and logs.
// A class without an SLO is not looked at: governs(lane) is false and admit/depart return at
// once. A governor bound to no scheduler (bind(nullptr, ...)) measures only.
//
// Downgrading here rather than in the classifier: the lcore that sees the latency owns the
// tree, so the decision, the move of the flow's queued packets and the placement of its next
// packet happen in one place and one order, with no cross-lcore hand-over (the classifier runs
// on the RX lcores); it is the reclassification path all the same (move_flow before the first
// packet in the new leaf), taken by the scheduler's owner. Flows are named by their 32-bit
// flow hash, as the fq leaves and move_flow name them: colliding flows share a fate. The one
// thing the classifiers learn: which flows are down (classifier/held_flows.h), so that their
// elephant heuristic does not take a flow out of the governor's hands before it returns.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "admission/lanes.h"
#include "admission/leaf_map.h"
#include "classifier/hash_slot.h"
#include "classifier/held_flows.h"
#include "sched/relaxed_counter.h"
#include "sched/scheduler.h"
#include "slo/controller.h"
#include "slo/flow_meter.h"
#include "slo/latency_histogram.h"
#include "slo/slo_spec.h"
#include "slo/slo_stats.h"

namespace twinlane::slo {

using sched::RelaxedCounter;

// Flows of one class that can be downgraded at once: a surge over thousands of clients moves
// about two flows per client (requests and responses).
inline constexpr uint32_t kMaxDowngradedFlows = 16384;

// A class's packets moved to another class (downgrade, return, reclassification of a
// downgraded flow): replay's report keeps per-class accounting with them.
struct ClassMove {
    uint8_t from = 0;
    uint8_t to = 0;
    uint32_t packets = 0;
    uint64_t bytes = 0;
};

enum class EventKind : uint8_t { missed, met_again, cap, downgrade, restore };
const char* to_string(EventKind kind);

struct SloEvent {
    uint64_t time_ns = 0;
    uint64_t window_start_ns = 0;
    uint64_t percentile_ns = 0;  // of the window that closed (pressure: the delay seen)
    uint64_t old_cap_bps = 0;
    uint64_t new_cap_bps = 0;
    uint64_t bytes = 0;  // downgrade/restore: the flows' bytes in the window
    uint32_t flows = 0;
    uint32_t downgraded_flows = 0;  // after the action
    uint32_t deferred = 0;          // restore: flows of `flows` that leave once drained below
    uint8_t class_index = 0;        // into SloTreeSpec::classes
    EventKind kind = EventKind::missed;
    Reason reason = Reason::none;
};
// One line: "inference: cap 5.00G -> 9.00G (pressure: queueing delay 26.1us > 25.0us, half
// the p99 target 50.0us)".
std::string describe(const SloEvent& event, const SloClassSpec& spec);

// A line per class whose latency target is not above SloTreeSpec::blocking_ns(): no action of
// the class can keep it (the operator is told at check, run and replay).
std::vector<std::string> targets_within_blocking(const SloTreeSpec& tree);

// Single producer (the owner), single consumer (a logger thread). Full: the event is counted
// in dropped() instead; the producer never waits.
class EventRing {
  public:
    static constexpr uint32_t kCapacity = 256;
    void push(const SloEvent& e) {
        const uint64_t head = head_.load(std::memory_order_relaxed);
        if (head - tail_.load(std::memory_order_acquire) >= kCapacity) {
            dropped_.add(1);
            return;
        }
        slots_[head % kCapacity] = e;
        head_.store(head + 1, std::memory_order_release);
    }
    bool pop(SloEvent& out) {
        const uint64_t tail = tail_.load(std::memory_order_relaxed);
        if (tail == head_.load(std::memory_order_acquire)) return false;
        out = slots_[tail % kCapacity];
        tail_.store(tail + 1, std::memory_order_release);
        return true;
    }
    uint64_t dropped() const { return dropped_.read(); }

  private:
    std::array<SloEvent, kCapacity> slots_{};
    std::atomic<uint64_t> head_{0};
    std::atomic<uint64_t> tail_{0};
    RelaxedCounter dropped_;
};

// One writer (the owner); any thread reads each value whole.
struct LiveSloCounters {
    RelaxedCounter windows_met, windows_missed, windows_idle;
    RelaxedCounter last_window_start_ns, last_percentile_ns, last_packets, last_met;
    RelaxedCounter worst_window_start_ns, worst_percentile_ns;
    RelaxedCounter share_windows_met, share_windows_missed;  // min_share floor
    RelaxedCounter cap_bps, cap_changes, cap_floor_bps;
    RelaxedCounter downgraded_flows;                      // now
    RelaxedCounter downgrades, returns;                   // flows moved down / back, since start
    RelaxedCounter downgraded_packets, downgraded_bytes;  // placed or moved into the lower class
    RelaxedCounter returned_packets, returned_bytes;      // queued packets moved back
    RelaxedCounter pressure_events;
};

// One closed window (kept when GovernorOptions::keep_windows).
struct WindowRecord {
    uint64_t start_ns = 0;
    uint64_t packets = 0;
    uint64_t percentile_ns = 0;
    uint64_t max_ns = 0;
    uint64_t bytes_out = 0;
    uint64_t bytes_in = 0;          // arrived and stayed in the class
    uint64_t downgraded_bytes = 0;  // arrived or queued, moved to the lower class
    uint64_t cap_bps = 0;           // when the window closed (after its decision)
    uint32_t downgraded_flows = 0;  // when the window closed
    bool idle = true;
    bool met = true;
    int8_t share_met = -1;  // min_share: 1 met, 0 missed, -1 not judged
};

// Where the governor's own drops go: packets of a downgraded flow that the lower class has no
// room for when the flow's queued packets move there (as if they had arrived in it). The
// owner frees and counts them (realtime: the mbufs; replay: the report).
class DropHandler {
  public:
    virtual void dropped(const sched::DroppedPacket* drops, uint32_t count) = 0;

  protected:
    ~DropHandler() = default;
};

struct GovernorOptions {
    bool keep_windows = false;  // replay: every WindowRecord, for the report and its plot
    bool keep_events = false;   // replay: every event, besides the ring
};

class SloGovernor {
  public:
    // `lane_count`: the policy's classes. Allocates everything.
    SloGovernor(const SloTreeSpec& spec, uint32_t lane_count, GovernorOptions options = {});
    SloGovernor(const SloGovernor&) = delete;
    SloGovernor& operator=(const SloGovernor&) = delete;
    ~SloGovernor();

    // The tree to act on and where classes enter it; nullptr: measure only. Again after the
    // tree was replaced or changed in place (the cap is read back from the tree). Off the hot
    // path; an error (a node or class the tree lacks) leaves the governor unbound.
    std::optional<std::string> bind(sched::Scheduler* scheduler, admission::LeafMap* leaves);
    // Replay's report follows class moves through this vector (nullptr: not recorded).
    void set_move_sink(std::vector<ClassMove>* moves) { moves_ = moves; }
    // With a handler, a downgrade keeps the lower class within its limits (what does not fit
    // is dropped there, through the handler); without one, moves pass the limits (nothing is
    // lost, the lower class may hold more than its limit for a while).
    void set_drop_handler(DropHandler* handler) { drop_handler_ = handler; }
    // Where downgraded flows are held while they are down (the classifiers' elephant
    // heuristic leaves them alone: classifier/held_flows.h); nullptr: nowhere. Before the first
    // downgrade; the set outlives the governor.
    void set_held_flows(classifier::HeldFlows* held) { held_ = held; }

    bool bound() const { return scheduler_ != nullptr; }
    const SloTreeSpec& spec() const { return spec_; }
    size_t class_count() const { return classes_.size(); }
    bool governs(uint8_t lane) const { return lane < kLanes && class_of_lane_[lane] >= 0; }

    // ---- hot path (the owner) ---------------------------------------------------------------
    // Packets of `lane` about to be enqueued, their leaf and user already placed for `lane`
    // (job_of(i) gives packet i's job): counts their flows, acts on pressure, and places the
    // packets of downgraded flows in the lower class (leaf and user).
    template <typename JobOf>
    void admit(uint8_t lane, sched::Packet* pkts, uint32_t n, JobOf job_of, uint64_t now_ns);
    // A packet left the scheduler: its descriptor's `user`, latency, length, flow.
    // `user`: the descriptor's, its lane in the low bits (admission/lanes.h).
    void depart(uint8_t user, uint64_t latency_ns, uint32_t bytes, uint32_t flow_hash,
                uint64_t now_ns) {
        const uint8_t lane = admission::user_lane(user);
        if (downgraders_[lane] != 0) [[unlikely]]
            left_lower_class(lane, flow_hash);
        if (class_of_lane_[lane] < 0) return;
        record_departure(class_of_lane_[lane], latency_ns, bytes, flow_hash, now_ns);
    }
    // Packets the scheduler dropped (refused at enqueue, or AQM at dequeue).
    void dropped(const sched::DroppedPacket* drops, uint32_t n) {
        for (uint32_t i = 0; i < n; ++i) {
            const uint8_t lane = admission::user_lane(drops[i].packet.user);
            if (downgraders_[lane] != 0) [[unlikely]]
                left_lower_class(lane, drops[i].packet.flow_hash);
        }
    }
    // Closes the windows that ended by `now_ns` and acts on them. Cheap when none did.
    void tick(uint64_t now_ns) {
        if (now_ns >= next_deadline_ns_) [[unlikely]]
            close_windows(now_ns);
    }
    uint64_t next_deadline_ns() const { return next_deadline_ns_; }
    // End of a run: closes every window up to `now_ns`, and the window `now_ns` falls in if
    // anything left in it.
    void finish(uint64_t now_ns);

    // A flow of `old_lane` (job `old_job`) reclassified into `lane` (job `job`): its queued
    // packets move from where they are (the lower class's leaf if it is downgraded) to where
    // its next packet goes, restamped with that class. Returns the packets moved.
    uint32_t follow_reclassification(uint8_t old_lane, uint32_t old_job, uint8_t lane, uint32_t job,
                                     uint32_t flow_hash);

    // ---- reads ------------------------------------------------------------------------------
    SloClassStats stats(size_t class_index) const;  // any thread
    EventRing& events() { return events_; }
    const std::vector<SloEvent>& kept_events() const { return kept_events_; }
    const std::vector<WindowRecord>& windows(size_t class_index) const {
        return classes_[class_index]->windows;
    }

  private:
    static constexpr uint32_t kLanes = admission::kMaxLanes;
    static constexpr uint32_t kOverrideSlotBits = 15;
    static constexpr uint32_t kOverrideSlots = uint32_t{1} << kOverrideSlotBits;
    static_assert(kOverrideSlots == 2 * kMaxDowngradedFlows, "overrides at most half full");

    // The downgraded flows of one class, kept dense (a window's close visits only them), found
    // through a hash table of slots (flow hash, index + 1; open addressing, backward-shift
    // removal; the last flow moves into a removed one's place).
    // `queued`: the flow's packets in the lower class; it returns only when there are none.
    // Its load while down, for its return: `bytes_down` over `windows_down` windows closed
    // since it went down, `active_windows` of them with bytes, `silent_windows` in a row
    // without (kSilentWindowsMax at most).
    // `returning`: the controller brought it back while packets of it were still queued
    // below; its packets keep going there, behind them, and it leaves the table when the
    // last of them has left (left_lower_class).
    struct Override {
        uint32_t flow_hash = 0;
        uint32_t job = 0;
        uint32_t queued = 0;
        uint32_t silent_windows = 0;
        uint32_t windows_down = 0;
        uint32_t active_windows = 0;
        uint64_t bytes_down = 0;
        bool returning = false;
    };
    struct OverrideSlot {
        uint32_t flow_hash = 0;
        uint32_t index = 0;  // into ClassState::overrides, + 1; 0: free
    };

    struct ClassState {
        SloClassSpec spec;
        uint8_t lane = 0;
        uint8_t index = 0;
        bool acting = false;  // bound to a scheduler, and the spec has an action
        Controller controller;
        uint32_t quantile_ppm = 0;
        // The window being measured: [start, end).
        uint64_t window_start_ns = 0;
        uint64_t window_end_ns = 0;
        LatencyHistogram histogram;
        uint64_t packets = 0;
        uint64_t over_target = 0;
        uint64_t max_ns = 0;
        uint64_t max_within_target_ns = 0;  // the largest latency at or below the target
        uint64_t bytes_out = 0;
        uint64_t bytes_in = 0;
        uint64_t bytes_in_gone = 0;  // of bytes_in: sent by flows downgraded since, before that
        uint64_t downgraded_bytes = 0;
        uint64_t backlog_at_start = 0;
        FlowMeter meter;
        // What stays in the class arrives at: bytes in the current tick and the one before,
        // less what flows downgraded meanwhile had sent in them. A tick is twice the target.
        uint64_t tick_ns = 25'000;
        uint32_t tick = 0;
        uint64_t kept_tick_bytes = 0, kept_previous_tick_bytes = 0;
        uint64_t removed_tick_bytes = 0, removed_previous_tick_bytes = 0;
        bool was_met = true;
        bool have_worst = false;
        bool queue_pressed = false;  // this window: the backlog predicted a delay past the guard
        SloEvent pressed;  // this window's pressure downgrades so far, logged as one event
        // The tree, as bound.
        uint16_t first_leaf = 0;
        uint16_t leaf_count = 0;
        uint32_t cap_node = sched::Scheduler::kInvalid;
        uint64_t path_min_bps = 0;          // lowest shaper above the cap node (or the link)
        uint64_t service_bps = 0;           // min(cap, path_min_bps)
        uint64_t guard_bytes = UINT64_MAX;  // backlog at which the predicted delay is the guard
        std::array<Override, kMaxDowngradedFlows> overrides{};  // [0, override_count)
        std::array<OverrideSlot, kOverrideSlots> override_slots{};
        uint32_t override_count = 0;
        LiveSloCounters live;
        std::vector<WindowRecord> windows;
        // Scratch for one decision.
        std::array<FlowLoad, kMaxFlowsPerDecision> heaviest{};
        std::array<FlowLoad, kMaxFlowsPerDecision> downgraded{};

        ClassState(const SloClassSpec& s, const ControllerSpec& c) : spec(s), controller(c, 0) {}
    };

    const Override* find_override(const ClassState& c, uint32_t flow_hash) const {
        if (c.override_count == 0) return nullptr;
        const uint32_t at = override_slot(c, flow_hash);
        const OverrideSlot& slot = c.override_slots[at];
        return slot.index == 0 ? nullptr : &c.overrides[slot.index - 1];
    }
    // The slot holding `flow_hash`, else the free slot ending its probe sequence.
    static uint32_t override_slot(const ClassState& c, uint32_t flow_hash) {
        uint32_t at = override_home(flow_hash);
        while (c.override_slots[at].index != 0 && c.override_slots[at].flow_hash != flow_hash)
            at = (at + 1) & (kOverrideSlots - 1);
        return at;
    }
    Override* find_override(ClassState& c, uint32_t flow_hash) {
        return const_cast<Override*>(std::as_const(*this).find_override(c, flow_hash));
    }
    // A packet of `flow_hash` left class `lane` (departed or dropped): one fewer queued below
    // for the class that downgraded it.
    void left_lower_class(uint8_t lane, uint32_t flow_hash);
    static uint32_t override_home(uint32_t flow_hash) {
        return classifier::hash_slot(flow_hash, kOverrideSlotBits);
    }
    bool insert_override(ClassState& c, uint32_t flow_hash, uint32_t job);
    bool erase_override(ClassState& c, uint32_t flow_hash);

    uint64_t queued_bytes(const ClassState& c) const {
        uint64_t bytes = 0;
        for (uint16_t l = 0; l < c.leaf_count; ++l)
            bytes += scheduler_->leaf_queued_bytes(static_cast<uint16_t>(c.first_leaf + l));
        return bytes;
    }
    void record_departure(int8_t index, uint64_t latency_ns, uint32_t bytes, uint32_t flow_hash,
                          uint64_t now_ns);
    static void roll_tick(ClassState& c, uint64_t now_ns) {
        const auto tick = static_cast<uint32_t>(now_ns / c.tick_ns);
        if (tick == c.tick) return;
        const bool next = tick == c.tick + 1;
        c.kept_previous_tick_bytes = next ? c.kept_tick_bytes : 0;
        c.removed_previous_tick_bytes = next ? c.removed_tick_bytes : 0;
        c.kept_tick_bytes = c.removed_tick_bytes = 0;
        c.tick = tick;
    }
    // The recent arrival rate of what stays in the class (over the last tick and a half).
    static uint64_t kept_arrival_bps(const ClassState& c, uint64_t now_ns) {
        const uint64_t bytes = c.kept_tick_bytes + c.kept_previous_tick_bytes;
        const uint64_t removed = c.removed_tick_bytes + c.removed_previous_tick_bytes;
        const uint64_t span_ns = c.tick_ns + now_ns % c.tick_ns;
        return bytes > removed ? static_cast<uint64_t>(static_cast<double>(bytes - removed) * 8e9 /
                                                       static_cast<double>(span_ns))
                               : 0;
    }
    // Pressure: `measured` when delay_ns is a departure's latency, else the class's backlog
    // over its service rate at an arrival.
    void press(ClassState& c, uint64_t delay_ns, bool measured, const FlowLoad& flow,
               uint64_t now_ns);
    void close_windows(uint64_t now_ns);
    void close_window(ClassState& c, uint64_t end_ns);
    void apply(ClassState& c, const Decision& d, uint64_t now_ns, uint64_t window_start_ns,
               uint64_t percentile_ns);
    void set_cap(ClassState& c, uint64_t cap_bps, uint64_t now_ns);
    uint64_t downgrade_flow(ClassState& c, const FlowLoad& flow);
    bool restore_flow(ClassState& c, const FlowLoad& flow);
    void record_move(uint8_t from, uint8_t to, uint32_t packets, uint64_t bytes) {
        if (moves_ != nullptr && packets != 0) moves_->push_back({from, to, packets, bytes});
    }
    void emit(const SloEvent& e);

    SloTreeSpec spec_;
    GovernorOptions options_;
    uint32_t lane_count_ = 0;
    std::array<int8_t, kLanes> class_of_lane_{};
    std::array<uint32_t, kLanes> downgraders_{};  // per lane: bit i = class i downgrades to it
    std::vector<std::unique_ptr<ClassState>> classes_;
    sched::Scheduler* scheduler_ = nullptr;
    admission::LeafMap* leaves_ = nullptr;
    uint64_t next_deadline_ns_ = 0;
    bool started_ = false;
    std::vector<ClassMove>* moves_ = nullptr;
    DropHandler* drop_handler_ = nullptr;
    classifier::HeldFlows* held_ = nullptr;
    std::array<sched::DroppedPacket, 256> drop_scratch_{};
    EventRing events_;
    std::vector<SloEvent> kept_events_;
};

template <typename JobOf>
void SloGovernor::admit(uint8_t lane, sched::Packet* pkts, uint32_t n, JobOf job_of,
                        uint64_t now_ns) {
    if (!governs(lane)) return;
    ClassState& c = *classes_[static_cast<size_t>(class_of_lane_[lane])];
    // Pass 1: count, and act on pressure before anything of the run is placed, so a flow
    // downgraded at its k-th packet has all of this run's packets placed below (pass 2).
    uint64_t run_bytes = 0;
    roll_tick(c, now_ns);
    for (uint32_t i = 0; i < n; ++i) {
        const sched::Packet& p = pkts[i];
        const uint32_t job = job_of(i);
        const FlowMeter::Added flow = c.meter.add(p.flow_hash, job, p.length_bytes, c.tick);
        if (find_override(c, p.flow_hash) != nullptr) {
            c.downgraded_bytes += p.length_bytes;
            continue;
        }
        c.bytes_in += p.length_bytes;
        c.kept_tick_bytes += p.length_bytes;
        run_bytes += p.length_bytes;
        if (c.acting && run_bytes + queued_bytes(c) > c.guard_bytes) [[unlikely]] {
            const uint64_t backlog = run_bytes + queued_bytes(c);
            const uint64_t delay_ns = static_cast<uint64_t>(static_cast<double>(backlog) * 8e9 /
                                                            static_cast<double>(c.service_bps));
            c.queue_pressed = true;
            // A flow the meter had no room for (a surge of thousands of clients) has sent at
            // least this packet: it can be pressed out like any other.
            const bool untracked = flow.window_bytes == 0;
            press(c, delay_ns, false,
                  FlowLoad{p.flow_hash, job, untracked ? p.length_bytes : flow.window_bytes},
                  now_ns);
            if (find_override(c, p.flow_hash) != nullptr) {
                // Its bytes so far, this one included, are in bytes_in_gone now (the meter
                // knew none of an untracked flow's).
                if (untracked) {
                    c.bytes_in_gone += p.length_bytes;
                    c.removed_tick_bytes += p.length_bytes;
                }
                c.downgraded_bytes += p.length_bytes;
                run_bytes -= p.length_bytes;
            }
        }
    }
    if (c.override_count == 0) return;
    // Pass 2: packets of downgraded flows go to the lower class.
    const uint8_t to = c.spec.downgrade_class;
    uint32_t moved = 0;
    uint64_t moved_bytes = 0;
    for (uint32_t i = 0; i < n; ++i) {
        sched::Packet& p = pkts[i];
        Override* o = find_override(c, p.flow_hash);
        if (o == nullptr) continue;
        p.leaf = leaves_->place(to, job_of(i), *scheduler_);
        p.job = sched::job_tag(job_of(i));
        p.user = admission::pack_user(to, admission::user_pfc_tag(p.user));
        ++o->queued;
        ++moved;
        moved_bytes += p.length_bytes;
    }
    if (moved != 0) {
        c.live.downgraded_packets.add(moved);
        c.live.downgraded_bytes.add(moved_bytes);
        record_move(c.spec.class_id, to, moved, moved_bytes);
    }
}

}  // namespace twinlane::slo
