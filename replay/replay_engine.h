// Virtual-time replay: a pcap's timestamps are arrival times; every packet goes through the
// real classifier and then a discipline; a virtual link of a given rate takes one packet each
// time it is free (so strict priority is honoured packet by packet, as on a real wire) and
// gives it its departure time (last bit on the wire). Deterministic: the same input, policy
// and discipline give the same output pcap and report, byte for byte.
//
// Packet accounting: every input record is either malformed-and-dropped, refused or dropped by
// the discipline (by reason), transmitted, or still queued at the end: rx = tx + dropped +
// queued_at_end. Single-threaded.
#pragma once

#include <cstdint>
#include <vector>

#include "classifier/classifier.h"
#include "replay/discipline.h"
#include "replay/pcap_io.h"
#include "replay/replay_report.h"
#include "replay/virtual_link.h"

namespace twinlane::replay {

struct ReplayOptions {
    uint64_t link_rate_bps = 10'000'000'000ULL;
    uint16_t ingress_port = 0;  // the port the classifier sees for every input packet
    bool drain = true;          // after the last arrival, transmit what is still queued
    // Without an output pcap only the headers are needed (classification, ECN marking):
    // keeping just the first kHeaderBytes of each frame saves copying jumbo payloads.
    bool keep_payload = true;
};

inline constexpr uint32_t kHeaderBytes = 256;

class ReplayEngine {
public:
    ReplayEngine(const ReplayOptions& options, classifier::Classifier& classifier,
                 Discipline& discipline, ReplayReport& report, PcapWriter* output);

    // Replays every record of `input`; returns the virtual time at which the run ended.
    uint64_t run(PcapReader& input);

    // The same in steps, for inputs that are not files: offer records in arrival order, then
    // finish() once (drains if options.drain, closes the report, returns the end time).
    void offer(const PcapRecord& record);
    uint64_t finish();

private:
    struct Slot {
        std::vector<uint8_t> bytes;
        uint64_t arrival_ns = 0;
        uint32_t wire_length = 0;
        ReplayReport::Ticket ticket;  // the report's fairness members, looked up once
        uint16_t l3_offset = 0;
        uint8_t ip_version = 0;
        uint8_t class_id = 0;
        bool ce_at_arrival = false;
    };

    void arrive(const PcapRecord& record, uint64_t arrival_ns);
    // Transmits packets whose transmission can start before `until_ns`.
    void transmit_until(uint64_t until_ns);
    void depart(const sched::Packet& packet, uint64_t start_ns);
    // Reports and frees what the discipline dropped; called up to three times per packet and
    // almost always with nothing to do, hence the inline empty check.
    // measured (callgrind, replay_bench): offer 2055 -> 2021 instructions/packet.
    void account_drops(uint64_t now_ns) {
        if (!drops_.empty()) report_drops(now_ns);
    }
    void report_drops(uint64_t now_ns);
    uint32_t take_slot();
    bool ce_marked(const Slot& slot) const;

    ReplayOptions options_;
    classifier::Classifier& classifier_;
    Discipline& discipline_;
    ReplayReport& report_;
    PcapWriter* output_;
    VirtualLink link_;
    uint64_t link_free_ns_ = 0;
    std::vector<Slot> slots_;
    std::vector<uint32_t> free_slots_;
    std::vector<ReplayDrop> drops_;
    uint64_t last_arrival_ns_ = 0;
};

}  // namespace twinlane::replay
