// Virtual-time replay: a pcap's timestamps are arrival times; every packet goes through the
// real classifier and then a discipline; a virtual link of a given rate takes one packet each
// time it is free (so strict priority is honoured packet by packet, as on a real wire) and
// gives it its departure time (last bit on the wire). Deterministic: the same input, policy
// and discipline give the same output pcap and report, byte for byte.
//
// Packet accounting: every input record is either malformed-and-dropped, refused or dropped by
// the discipline (by reason), transmitted, or still queued at the end: rx = tx + dropped +
// queued_at_end. Single-threaded.
//
// The engine is a template on the discipline so that a final discipline class
// (SchedulerDiscipline, FifoDiscipline, RteSchedDiscipline) is called directly, without a
// virtual call per packet; `ReplayEngine` (on the Discipline base) works with any discipline,
// and replay_pcap() picks the direct instantiation for the known ones.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "classifier/classifier.h"
#include "replay/discipline.h"
#include "replay/lossless_model.h"
#include "replay/pcap_io.h"
#include "replay/replay_report.h"
#include "replay/trace_schedule.h"
#include "replay/virtual_link.h"

namespace twinlane::replay {

struct ReplayOptions {
    uint64_t link_rate_bps = 10'000'000'000ULL;
    // The port the classifier sees for a packet offered without one (offer(), run(PcapReader&),
    // the lossless senders' releases).
    uint16_t ingress_port = 0;
    bool drain = true;  // after the last arrival, transmit what is still queued
    // Without an output pcap only the headers are needed (classification, ECN marking): the
    // classifier then sees just the first kHeaderBytes of each frame, and no frame is kept.
    bool keep_payload = true;
    // The egress port's largest frame (MTU + 18). A TCP/UDP record longer than this (a host
    // capture's TSO/GRO frame) is replayed as the MTU-sized segments it stands for
    // (wire_segments.h). 0: every record is one packet, whatever its length.
    uint32_t max_frame_bytes = 0;
    // Lossless senders and the egress peer's pauses (lossless_model.h); off: nothing of PFC.
    LosslessOptions lossless;
    // An ingress link of this rate delivers the records (trace_schedule.h, the rule of `twinlane
    // run --pace-input`): each arrives when the link has carried its last byte, no sooner
    // than its timestamp; with several inputs, each has a link of its own. 0: records arrive
    // at their timestamps.
    uint64_t ingress_rate_bps = 0;
};

// One capture and the ingress port it arrives on. Several inputs are captures of several links
// on one clock (a tap on each link into the egress port): merged by arrival, the earliest
// first record of them all at time zero of the ingress links.
struct ReplayInput {
    PcapReader* reader = nullptr;
    uint16_t ingress_port = 0;
};

inline constexpr uint32_t kHeaderBytes = 256;

template <class D>
class BasicReplayEngine {
  public:
    BasicReplayEngine(const ReplayOptions& options, classifier::Classifier& classifier,
                      D& discipline, ReplayReport& report, PcapWriter* output);

    // Replays every record of `input` (on options.ingress_port); returns the virtual time at
    // which the run ended.
    uint64_t run(PcapReader& input);
    // The same for several inputs, merged by arrival time (each through its own ingress link).
    uint64_t run(std::span<const ReplayInput> inputs);

    // The same in steps, for inputs that are not files: offer records in arrival order, then
    // finish() once (drains if options.drain, closes the report, returns the end time).
    // A record's bytes need to stay valid only during the call.
    void offer(const PcapRecord& record);
    // The same as offering records[0..count) one by one; prefetches the headers of the
    // records ahead (a trace held in memory is cold: one cache miss per frame otherwise).
    void offer_burst(const PcapRecord* records, size_t count);
    uint64_t finish();

  private:
    // What the engine keeps of a packet in flight, beside the descriptor (sched::Packet: class,
    // length, arrival time) that the discipline holds: half a cache line. The classifier reads the
    // input frame in place; only the first bytes of its IP header are copied here, because
    // the DSCP remark and the discipline's ECN marking write them (sched::Packet::l3 points
    // here) and the report asks whether the discipline set CE. Whole frames are kept beside
    // (frames_) only when an output pcap is written; the IP header bytes are copied back into
    // the frame when it is written.
    // measured (callgrind, replay_bench): a 256-byte std::vector copy per packet -> this.
    // IPv4: TOS and header checksum (bytes 1, 10, 11); IPv6: traffic class (bytes 0, 1).
    static constexpr uint32_t kL3CopyBytes = 12;
    struct alignas(32) Slot {
        ReplayReport::Ticket ticket;  // the report's fairness members, looked up once
        uint8_t l3[kL3CopyBytes] = {};
        uint16_t l3_offset = 0;
        uint8_t l3_bytes = 0;  // bytes of the IP header copied into l3 (<= kL3CopyBytes)
        bool ce_at_arrival = false;
    };
    static_assert(sizeof(Slot) == 32);
    // Slots live in fixed chunks that never move: the discipline holds pointers into them.
    static constexpr uint32_t kChunkShift = 10;
    static constexpr uint32_t kChunkSlots = 1u << kChunkShift;

    // `record` arrives on `ingress_port` at `stamped` (its timestamp or its ingress link's).
    void offer_at(const PcapRecord& record, uint64_t stamped, uint16_t ingress_port);
    // With an ingress link: counts a record stamped before `latest_ns` (then moved on to it).
    void note_recorded(uint64_t& latest_ns, uint64_t timestamp_ns);
    void arrive(const PcapRecord& record, uint64_t arrival_ns, uint16_t ingress_port);
    // Virtual time up to `until_ns`, with the lossless senders' releases and the egress peer's
    // pauses at their times in between.
    void advance_to(uint64_t until_ns);
    void apply_peer_pauses(uint64_t now_ns);
    // A record that reaches no discipline: counted as arrived and dropped for `reason`.
    void drop_on_arrival(const classifier::Result& r, uint32_t wire_length, uint64_t arrival_ns,
                         const char* reason);
    // One packet of `wire_length` bytes from `ingress_port` into the discipline; `frame`
    // (`seen` bytes) is where its IP header is read from.
    void enqueue_packet(const classifier::Result& r, const uint8_t* frame, uint32_t seen,
                        uint32_t wire_length, uint32_t slot_id, uint64_t arrival_ns,
                        uint16_t ingress_port);
    // Transmits packets whose transmission can start before `until_ns`. Returns false, early,
    // when a lossless sender was resumed (its releases may come before `until_ns`).
    bool transmit_until(uint64_t until_ns);
    void depart(const sched::Packet& packet, uint64_t start_ns);
    // Reports and frees what the discipline dropped; called up to three times per packet and
    // almost always with nothing to do, hence the inline empty check.
    // measured (callgrind, replay_bench): offer 2055 -> 2021 instructions/packet.
    void account_drops(uint64_t now_ns) {
        if (!drops_.empty()) report_drops(now_ns);
    }
    void report_drops(uint64_t now_ns);
    // Class changes the discipline made (an SLO downgrade), reported before its drops.
    void account_moves(uint64_t now_ns) {
        if (moves_ != nullptr && !moves_->empty()) [[unlikely]]
            report_moves(now_ns);
    }
    void report_moves(uint64_t now_ns);
    Slot& slot(uint32_t id) { return chunks_[id >> kChunkShift][id & (kChunkSlots - 1)]; }
    uint32_t take_slot();
    static bool ce_marked(const Slot& slot, uint8_t ip_version);

    ReplayOptions options_;
    classifier::Classifier& classifier_;
    D& discipline_;
    ReplayReport& report_;
    PcapWriter* output_;
    VirtualLink link_;
    uint64_t link_free_ns_ = 0;
    std::vector<std::unique_ptr<Slot[]>> chunks_;
    uint32_t slot_count_ = 0;
    std::vector<uint32_t> free_slots_;
    std::vector<std::vector<uint8_t>> frames_;  // per slot, only with an output pcap
    std::vector<ReplayDrop> drops_;
    std::vector<slo::ClassMove>* moves_ = nullptr;    // the discipline's, when it moves classes
    std::vector<ReplayDrop>* other_drops_ = nullptr;  // the discipline's own drops, likewise
    uint64_t last_arrival_ns_ = 0;
    std::optional<TraceSchedule> ingress_;  // with options.ingress_rate_bps, in nanoseconds
    uint64_t latest_recorded_ns_ = 0;       // with ingress_: the latest timestamp read so far
    std::optional<LosslessModel> lossless_;
};

using ReplayEngine = BasicReplayEngine<Discipline>;

// Replays `input` through `discipline` with the engine instantiated for its concrete type
// (no virtual call per packet for the disciplines in replay/); returns the end time.
uint64_t replay_pcap(const ReplayOptions& options, classifier::Classifier& classifier,
                     Discipline& discipline, ReplayReport& report, PcapWriter* output,
                     PcapReader& input);
// The same for several inputs merged by arrival (BasicReplayEngine::run(inputs)).
uint64_t replay_pcaps(const ReplayOptions& options, classifier::Classifier& classifier,
                      Discipline& discipline, ReplayReport& report, PcapWriter* output,
                      std::span<const ReplayInput> inputs);

}  // namespace twinlane::replay
