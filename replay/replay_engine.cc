#include "replay/replay_engine.h"

#include <algorithm>

#include "classifier/dscp_rewrite.h"

namespace twinlane::replay {
namespace {
constexpr uint8_t kEcnCe = 0x3;

uint32_t slot_of(const sched::Packet& p) {
    return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(p.handle));
}
}  // namespace

ReplayEngine::ReplayEngine(const ReplayOptions& options, classifier::Classifier& classifier,
                           Discipline& discipline, ReplayReport& report, PcapWriter* output)
    : options_(options), classifier_(classifier), discipline_(discipline), report_(report),
      output_(output), link_(options.link_rate_bps) {}

uint32_t ReplayEngine::take_slot() {
    if (free_slots_.empty()) {
        slots_.emplace_back();
        return static_cast<uint32_t>(slots_.size() - 1);
    }
    const uint32_t slot = free_slots_.back();
    free_slots_.pop_back();
    return slot;
}

bool ReplayEngine::ce_marked(const Slot& s) const {
    if (s.ip_version == 4 && s.bytes.size() >= s.l3_offset + 2u)
        return (s.bytes[s.l3_offset + 1] & 0x3) == kEcnCe;
    if (s.ip_version == 6 && s.bytes.size() >= s.l3_offset + 2u)
        return ((s.bytes[s.l3_offset + 1] >> 4) & 0x3) == kEcnCe;
    return false;
}

uint64_t ReplayEngine::run(PcapReader& input) {
    PcapRecord record;
    while (input.next(record)) offer(record);
    return finish();
}

void ReplayEngine::offer(const PcapRecord& record) {
    // Captures are not always in time order (multi-queue capture): never go back in time.
    const uint64_t arrival = std::max(record.timestamp_ns, last_arrival_ns_);
    transmit_until(arrival);
    arrive(record, arrival);
    last_arrival_ns_ = arrival;
}

uint64_t ReplayEngine::finish() {
    if (options_.drain) transmit_until(UINT64_MAX);
    const uint64_t end = std::max(link_free_ns_, last_arrival_ns_);
    report_.on_finish(discipline_.queued_packets(), end);
    return end;
}

void ReplayEngine::arrive(const PcapRecord& record, uint64_t arrival_ns) {
    const uint32_t slot_id = take_slot();
    Slot& s = slots_[slot_id];
    const size_t keep = options_.keep_payload
                            ? record.captured.size()
                            : std::min<size_t>(record.captured.size(), kHeaderBytes);
    s.bytes.assign(record.captured.begin(), record.captured.begin() + static_cast<long>(keep));
    s.arrival_ns = arrival_ns;
    s.wire_length = record.wire_length;

    const classifier::Result r =
        classifier_.classify(s.bytes.data(), static_cast<uint32_t>(s.bytes.size()),
                             std::max<uint32_t>(record.wire_length,
                                                static_cast<uint32_t>(s.bytes.size())),
                             options_.ingress_port, arrival_ns);
    s.class_id = r.class_id;
    s.l3_offset = r.l3_offset;
    s.ip_version = r.ip_version;
    s.ticket = report_.on_arrival(r.class_id, record.wire_length, arrival_ns, r.flow_hash, r.job_id);
    if (r.malformed != classifier::MalformedReason::none)
        report_.on_malformed(classifier::to_string(r.malformed));
    if (r.drop) {
        report_.on_drop(r.class_id, "malformed", arrival_ns, s.ticket);
        free_slots_.push_back(slot_id);
        return;
    }
    if (r.remark_dscp != classifier::kNoRemark && r.ip_version != 0)
        classifier::rewrite_dscp(s.bytes.data() + r.l3_offset, r.ip_version, r.remark_dscp);
    s.ce_at_arrival = ce_marked(s);

    sched::Packet p;
    p.handle = reinterpret_cast<void*>(static_cast<uintptr_t>(slot_id));
    p.l3 = r.ecn_capable ? s.bytes.data() + r.l3_offset : nullptr;
    p.ip_version = r.ecn_capable ? r.ip_version : 0;
    p.length_bytes = record.wire_length;
    p.flow_hash = r.flow_hash;
    p.user = r.class_id;
    discipline_.enqueue(p, r.class_id, r.job_id, arrival_ns, drops_);
    account_drops(arrival_ns);
}

void ReplayEngine::transmit_until(uint64_t until_ns) {
    sched::Packet p;
    while (true) {
        const uint64_t start = link_free_ns_;
        if (start >= until_ns) return;
        if (discipline_.dequeue(start, p, drops_)) {
            account_drops(start);
            depart(p, start);
            continue;
        }
        account_drops(start);
        // Nothing eligible now: the link idles until a shaper allows more or a packet arrives.
        const uint64_t next = discipline_.next_eligible_ns(start);
        if (next == UINT64_MAX || next >= until_ns) {
            if (until_ns != UINT64_MAX) link_free_ns_ = until_ns;
            return;
        }
        link_free_ns_ = std::max(next, start + 1);
    }
}

void ReplayEngine::depart(const sched::Packet& packet, uint64_t start_ns) {
    const uint32_t slot_id = slot_of(packet);
    Slot& s = slots_[slot_id];
    const uint64_t departure = start_ns + link_.transmit_ns(s.wire_length);
    link_free_ns_ = departure;
    const bool marked_here = !s.ce_at_arrival && ce_marked(s);
    report_.on_departure(s.class_id, s.wire_length, s.arrival_ns, departure, marked_here,
                         s.ticket);
    if (output_ != nullptr) output_->write(departure, s.bytes, s.wire_length);
    free_slots_.push_back(slot_id);
}

void ReplayEngine::report_drops(uint64_t now_ns) {
    for (const ReplayDrop& d : drops_) {
        const uint32_t slot_id = slot_of(d.packet);
        report_.on_drop(slots_[slot_id].class_id, d.reason, now_ns, slots_[slot_id].ticket);
        free_slots_.push_back(slot_id);
    }
    drops_.clear();
}

}  // namespace twinlane::replay
