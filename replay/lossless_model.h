// Lossless senders and the egress peer's pauses, in virtual time, for the replay engine.
//
// Senders that obey PFC, on each PFC ingress port that carries an input: the packets of a
// lossless priority inside the gateway are counted per (ingress port, priority), the realtime
// pipeline's accounts; each port's own pfc::PauseGenerator, as in the realtime pipeline,
// decides XOFF/XON against that port's thresholds. From an XOFF on (plus the sender's reaction
// time: the cable one way and the peer's response), the port's packets of that priority are
// held at its sender, in order; from an XON on (plus the reaction) they are released back to
// back at the port's rate, delayed, never dropped; later packets of the priority queue behind
// them. Ports pause apart: an incast from two ports pauses both, each by its own bytes.
//
// The egress peer's pauses (`replay --pfc-pause AT:PRIORITY:DURATION`): frames as the peer would
// send them (the longest pause, refreshed at half its length, then XON) reach a
// pfc::PauseReceiver; its holds go to the discipline (Discipline::hold: the twinlane scheduler
// holds the priority's entry node, FIFO and rte_sched cannot hold one class); the watchdog
// releases a storming priority and, by policy, its packets are dropped at dequeue (pfc_storm).
//
// Single-threaded; the engine calls it at each event in time order.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "admission/lanes.h"
#include "pfc/frame.h"
#include "pfc/pause_generator.h"
#include "pfc/pause_receiver.h"
#include "pfc/priority.h"

namespace twinlane::replay {

struct InjectedPause {
    uint64_t at_ns = 0;
    uint8_t priority = 0;
    uint64_t duration_ns = 0;
};

// A PFC ingress port whose senders the replay models.
struct LosslessIngress {
    uint16_t port = 0;  // the engine's ingress port (the policy's port index)
    std::string name;   // for the report
    std::array<pfc::PriorityThresholds, pfc::kPriorities> thresholds{};
    uint64_t rate_bps = 0;
    uint64_t sender_reaction_ns = 0;
    // The account tag (conf::CompiledEgress::pfc_tag) of each class's packets from this port
    // that carry the class's priority; 0: not counted.
    std::array<uint8_t, admission::kMaxLanes> class_tag{};
};

struct LosslessOptions {
    bool enabled = false;
    pfc::DscpPriorityMap dscp_priority{};
    std::vector<LosslessIngress> ingress;
    std::array<uint8_t, admission::kMaxLanes> class_priority{};  // kNoPriority: a lossy class
    uint64_t egress_rate_bps = 0;
    std::array<int32_t, pfc::kPriorities> pause_node{};  // egress tree node per priority; -1
    pfc::Watchdog watchdog;
    std::vector<InjectedPause> pauses;

    LosslessOptions() {
        dscp_priority.fill(pfc::kNoPriority);
        class_priority.fill(pfc::kNoPriority);
        pause_node.fill(-1);
    }
};

class LosslessModel {
  public:
    explicit LosslessModel(const LosslessOptions& options);

    // A record held at its sender: its bytes (as much as the engine reads), the time it was
    // sent in the input and the port it arrives on.
    struct Held {
        uint64_t sent_ns = 0;
        uint32_t wire_length = 0;
        uint16_t port = 0;
        std::vector<uint8_t> bytes;
    };

    // The account tag of a packet of `class_id` arriving on `port` (0: not counted), for
    // sched::Packet::user; `frame` is what the engine reads of it.
    uint8_t tag(uint8_t class_id, uint16_t port, const uint8_t* frame, uint32_t readable) const;
    // Holds the packet at its sender when that sender on `port` is paused (or has earlier
    // packets held, which it must not overtake); false: the packet arrives now.
    bool hold_if_paused(const uint8_t* frame, uint32_t readable, uint32_t wire_length,
                        uint16_t port, uint64_t sent_ns);

    // Bytes of a tagged packet entering and leaving the gateway at `now_ns`; any activity
    // (tag 0) lets the generator refresh its pauses.
    void enter(uint8_t tag, uint32_t bytes, uint64_t now_ns);
    void leave(uint8_t tag, uint32_t bytes, uint64_t now_ns);
    // Whether a sender was resumed since the last call (its releases may start earlier than the
    // engine's next event).
    bool take_resumed() {
        const bool r = resumed_;
        resumed_ = false;
        return r;
    }

    // The next time a held packet is released, or an egress-peer frame arrives; UINT64_MAX.
    uint64_t next_release_ns() const;
    uint64_t next_peer_frame_ns() const;
    // The held packet released at `now_ns` (== next_release_ns()).
    Held release(uint64_t now_ns);
    // Delivers the peer's frames up to `now_ns` and runs the watchdog. Returns true when the
    // holds changed (the caller re-reads hold_until for each priority with a pause node).
    bool peer_until(uint64_t now_ns);
    uint64_t hold_until(uint32_t priority) const {
        return receiver_.storm(priority) ? 0 : receiver_.paused_until(priority);
    }
    const std::array<int32_t, pfc::kPriorities>& pause_node() const { return options_.pause_node; }
    // Lanes whose priority is in a storm, watchdog action drop: their packets are dropped.
    uint32_t storm_drop_lanes() const { return storm_drop_lanes_; }

    // Packets still held at their senders (the replay ended before they were released).
    uint64_t still_held() const {
        uint64_t n = 0;
        for (const Ingress& in : ingress_)
            for (const Sender& s : in.senders)
                n += s.held.size();
        return n;
    }
    // Per lossless priority: frames, pause time each way, packets held, the largest added
    // sender delay, storms; the senders' part summed over the ingress ports and, per port, in
    // "ingress".
    nlohmann::json report(uint64_t end_ns) const;

  private:
    struct Sender {
        bool paused = false;
        uint64_t paused_from_ns = 0;  // XOFF takes effect
        uint64_t resume_at_ns = 0;    // XON takes effect
        uint64_t free_ns = 0;         // the ingress link is busy with releases until then
        std::deque<Held> held;
        uint64_t xoff_at_ns = 0;  // decided
        uint64_t paused_ns = 0;   // XOFF to XON, in all
        uint64_t frames = 0;
        uint64_t packets_held = 0;
        uint64_t max_delay_ns = 0;
        std::vector<std::pair<uint64_t, uint64_t>> intervals;  // XOFF to XON, for the plots
    };
    // One PFC ingress port: its pause generator, its accounts' bytes, its senders.
    struct Ingress {
        LosslessIngress options;
        pfc::PauseGenerator generator;
        std::array<uint64_t, pfc::kPriorities> occupancy{};
        std::array<Sender, pfc::kPriorities> senders{};
    };
    // Where a tag's bytes count: an index into ingress_ and a priority.
    struct Account {
        uint8_t ingress = 0;
        uint8_t priority = 0;
    };
    // The plots draw at most this many intervals per priority and direction.
    static constexpr size_t kMaxIntervals = 10'000;
    int ingress_of(uint16_t port) const;  // its index in ingress_, -1: no PFC there
    void update(Ingress& in, uint64_t now_ns);
    void note_holds(uint64_t now_ns);  // records the egress hold intervals for the report

    LosslessOptions options_;
    std::vector<Ingress> ingress_;
    std::array<Account, 16> accounts_{};  // by tag (1..15)
    pfc::PauseReceiver receiver_;
    bool resumed_ = false;
    // The egress peer's pauses, each sent as its frames come due (a long pause is many
    // refreshes: made one at a time, not all up front).
    struct PeerPause {
        uint8_t priority = 0;
        uint64_t next_ns = 0;  // the next frame's time; UINT64_MAX once its XON is sent
        uint64_t end_ns = 0;   // its XON's
    };
    std::vector<PeerPause> peer_pauses_;
    uint64_t peer_longest_ns_ = 0;  // the longest pause at the egress rate
    uint64_t peer_refresh_ns_ = 1;  // half of it
    PeerPause* next_peer_pause();   // the one whose frame is due first (the first given on a tie)
    std::array<uint64_t, pfc::kPriorities> held_until_{};  // the egress holds last applied
    std::array<uint64_t, pfc::kPriorities> held_since_{};
    std::array<std::vector<std::pair<uint64_t, uint64_t>>, pfc::kPriorities> held_{};
    uint32_t storm_drop_lanes_ = 0;
};

}  // namespace twinlane::replay
