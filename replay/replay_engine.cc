#include "replay/replay_engine.h"

#include <algorithm>
#include <cstring>

#include "classifier/dscp_rewrite.h"
#include "pfc/frame.h"
#include "replay/fifo_discipline.h"
#include "replay/rte_sched_discipline.h"
#include "replay/scheduler_discipline.h"
#include "replay/wire_segments.h"

namespace twinlane::replay {
namespace {
constexpr uint8_t kEcnCe = 0x3;
// How many records ahead offer_burst prefetches (about 200 ns of work per packet; a miss to
// DRAM is about 100 ns).
constexpr size_t kPrefetchAhead = 4;

uint32_t slot_of(const sched::Packet& p) {
    return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(p.handle));
}
}  // namespace

template <class D>
BasicReplayEngine<D>::BasicReplayEngine(const ReplayOptions& options,
                                        classifier::Classifier& classifier, D& discipline,
                                        ReplayReport& report, PcapWriter* output)
    : options_(options),
      classifier_(classifier),
      discipline_(discipline),
      report_(report),
      output_(output),
      link_(options.link_rate_bps),
      moves_(discipline.class_moves()),
      other_drops_(discipline.other_drops()) {
    if (options.lossless.enabled) lossless_.emplace(options.lossless);
    if (options.ingress_rate_bps != 0)
        ingress_.emplace(1'000'000'000, 1.0, options.ingress_rate_bps);
}

template <class D>
uint32_t BasicReplayEngine<D>::take_slot() {
    if (!free_slots_.empty()) {
        const uint32_t id = free_slots_.back();
        free_slots_.pop_back();
        return id;
    }
    if ((slot_count_ & (kChunkSlots - 1)) == 0) chunks_.emplace_back(new Slot[kChunkSlots]);
    if (options_.keep_payload) frames_.emplace_back();
    return slot_count_++;
}

template <class D>
bool BasicReplayEngine<D>::ce_marked(const Slot& s, uint8_t ip_version) {
    if (s.l3_bytes < 2) return false;
    if (ip_version == 4) return (s.l3[1] & 0x3) == kEcnCe;
    if (ip_version == 6) return ((s.l3[1] >> 4) & 0x3) == kEcnCe;
    return false;
}

template <class D>
uint64_t BasicReplayEngine<D>::run(PcapReader& input) {
    // Records read in place from the file's mapping stay valid: they are gathered into bursts
    // (prefetched by offer_burst); a record from libpcap is offered before the next read.
    constexpr size_t kBurst = 32;
    PcapRecord burst[kBurst];
    while (true) {
        size_t n = 0;
        try {
            while (n < kBurst && input.next(burst[n])) {
                ++n;
                if (!input.record_outlives_next()) break;
            }
        } catch (const PcapError&) {
            offer_burst(burst, n);  // what was read before the error, as one by one would
            throw;
        }
        if (n == 0) break;
        offer_burst(burst, n);
    }
    return finish();
}

template <class D>
uint64_t BasicReplayEngine<D>::run(std::span<const ReplayInput> inputs) {
    if (inputs.size() == 1 && inputs[0].ingress_port == options_.ingress_port)
        return run(*inputs[0].reader);
    // One record ahead per input, offered in arrival order; a record is offered before its
    // reader reads the next, so it stays valid without a copy.
    struct Pending {
        PcapRecord record;
        uint64_t stamped = 0;
        bool live = false;
    };
    std::vector<Pending> pending(inputs.size());
    std::vector<TraceSchedule> links;
    if (options_.ingress_rate_bps != 0)
        links.assign(inputs.size(), TraceSchedule(1'000'000'000, 1.0, options_.ingress_rate_bps));
    for (size_t k = 0; k < inputs.size(); ++k)
        pending[k].live = inputs[k].reader->next(pending[k].record);
    uint64_t epoch = UINT64_MAX;
    for (const Pending& p : pending)
        if (p.live) epoch = std::min(epoch, p.record.timestamp_ns);
    std::vector<uint64_t> latest(inputs.size(), 0);  // each input's latest timestamp so far
    auto stamp = [&](size_t k) {
        Pending& p = pending[k];
        p.stamped = p.record.timestamp_ns;
        if (!links.empty()) {
            note_recorded(latest[k], p.stamped);
            links[k].next(p.stamped, p.record.wire_length);
            p.stamped = epoch + links[k].last_end();  // ticks are ns here
        }
    };
    for (size_t k = 0; k < inputs.size(); ++k) {
        if (!links.empty()) links[k].start_at(epoch);
        if (pending[k].live) stamp(k);
    }
    for (;;) {
        size_t first = inputs.size();
        for (size_t k = 0; k < inputs.size(); ++k)
            if (pending[k].live &&
                (first == inputs.size() || pending[k].stamped < pending[first].stamped))
                first = k;
        if (first == inputs.size()) break;
        offer_at(pending[first].record, pending[first].stamped, inputs[first].ingress_port);
        pending[first].live = inputs[first].reader->next(pending[first].record);
        if (pending[first].live) stamp(first);
    }
    return finish();
}

template <class D>
void BasicReplayEngine<D>::note_recorded(uint64_t& latest_ns, uint64_t timestamp_ns) {
    // An ingress link's timing never goes back: a capture's clock that did is counted here.
    if (timestamp_ns < latest_ns) report_.on_time_reversal(latest_ns - timestamp_ns);
    latest_ns = std::max(latest_ns, timestamp_ns);
}

template <class D>
void BasicReplayEngine<D>::offer(const PcapRecord& record) {
    uint64_t stamped = record.timestamp_ns;
    if (ingress_) [[unlikely]] {
        note_recorded(latest_recorded_ns_, stamped);
        ingress_->next(stamped, record.wire_length);
        stamped = ingress_->first_timestamp_ns() + ingress_->last_end();  // ticks are ns here
    }
    offer_at(record, stamped, options_.ingress_port);
}

template <class D>
void BasicReplayEngine<D>::offer_at(const PcapRecord& record, uint64_t stamped,
                                    uint16_t ingress_port) {
    // Captures are not always in time order (multi-queue capture): never go back in time.
    if (stamped < last_arrival_ns_) [[unlikely]]
        report_.on_time_reversal(last_arrival_ns_ - stamped);
    const uint64_t arrival = std::max(stamped, last_arrival_ns_);
    if (lossless_) [[unlikely]] {
        advance_to(arrival);
        const auto seen = static_cast<uint32_t>(
            options_.keep_payload ? record.captured.size()
                                  : std::min<size_t>(record.captured.size(), kHeaderBytes));
        if (lossless_->hold_if_paused(record.captured.data(), seen, record.wire_length,
                                      ingress_port, arrival)) {
            last_arrival_ns_ = arrival;
            return;
        }
    }
    transmit_until(arrival);
    discipline_.advance(arrival);
    account_moves(arrival);
    arrive(record, arrival, ingress_port);
    last_arrival_ns_ = arrival;
}

template <class D>
void BasicReplayEngine<D>::advance_to(uint64_t until_ns) {
    for (;;) {
        const uint64_t next =
            std::min(lossless_->next_release_ns(), lossless_->next_peer_frame_ns());
        if (!transmit_until(std::min(next, until_ns))) continue;  // a sender resumed: look again
        if (next > until_ns || next == UINT64_MAX) return;
        if (lossless_->next_peer_frame_ns() == next) apply_peer_pauses(next);
        if (lossless_->next_release_ns() == next) {
            const LosslessModel::Held held = lossless_->release(next);
            arrive(PcapRecord{next, held.wire_length, held.bytes}, next, held.port);
        }
    }
}

template <class D>
void BasicReplayEngine<D>::apply_peer_pauses(uint64_t now_ns) {
    if (!lossless_->peer_until(now_ns)) return;
    for (uint32_t p = 0; p < pfc::kPriorities; ++p) {
        const int32_t node = lossless_->pause_node()[p];
        if (node >= 0) discipline_.hold(static_cast<uint32_t>(node), lossless_->hold_until(p));
    }
}

template <class D>
void BasicReplayEngine<D>::offer_burst(const PcapRecord* records, size_t count) {
    for (size_t i = 0; i < std::min(count, kPrefetchAhead); ++i)
        __builtin_prefetch(records[i].captured.data());
    for (size_t i = 0; i < count; ++i) {
        if (i + kPrefetchAhead < count) {
            const uint8_t* ahead = records[i + kPrefetchAhead].captured.data();
            __builtin_prefetch(ahead);
            __builtin_prefetch(ahead + 64);
        }
        offer(records[i]);
    }
}

template <class D>
uint64_t BasicReplayEngine<D>::finish() {
    if (options_.drain && lossless_) advance_to(UINT64_MAX);
    if (options_.drain) transmit_until(UINT64_MAX);
    const uint64_t end = std::max(link_free_ns_, last_arrival_ns_);
    discipline_.finished(end);
    account_moves(end);
    report_.on_finish(discipline_.queued_packets(), end);
    if (lossless_) report_.set_pfc(lossless_->report(end));
    return end;
}

// Inlined into arrive(). measured (replay_bench, side by side with the engine before it):
// as a call 7.1-7.4 vs 7.8-7.9 M packets/s; inlined 7.5-7.8 vs 7.6-7.9.
template <class D>
[[gnu::always_inline]] inline void BasicReplayEngine<D>::enqueue_packet(
    const classifier::Result& r, const uint8_t* frame, uint32_t seen, uint32_t wire_length,
    uint32_t slot_id, uint64_t arrival_ns, uint16_t ingress_port) {
    Slot& s = slot(slot_id);
    s.ticket = report_.on_arrival(r.class_id, wire_length, arrival_ns, r.flow_hash, r.job_id);
    s.l3_offset = r.l3_offset;
    s.l3_bytes = 0;
    if (r.ip_version != 0 && r.l3_offset < seen) {
        s.l3_bytes = static_cast<uint8_t>(std::min(seen - r.l3_offset, kL3CopyBytes));
        std::memcpy(s.l3, frame + r.l3_offset, s.l3_bytes);
    }
    if (classifier::wants_remark(r)) classifier::rewrite_dscp(s.l3, r.ip_version, r.remark_dscp);
    s.ce_at_arrival = ce_marked(s, r.ip_version);

    sched::Packet p;
    p.handle = reinterpret_cast<void*>(static_cast<uintptr_t>(slot_id));
    p.arrival_ns = arrival_ns;
    p.l3 = r.ecn_capable ? s.l3 : nullptr;
    p.length_bytes = wire_length;
    p.flow_hash = r.flow_hash;
    uint8_t tag = 0;
    if (lossless_) [[unlikely]] {
        tag = lossless_->tag(r.class_id, ingress_port, frame, seen);
        lossless_->enter(tag, wire_length, arrival_ns);
    }
    p.user = admission::pack_user(r.class_id, tag);
    discipline_.enqueue(p, r.class_id, r.job_id, arrival_ns, drops_);
    account_moves(arrival_ns);
    account_drops(arrival_ns);
}

template <class D>
void BasicReplayEngine<D>::drop_on_arrival(const classifier::Result& r, uint32_t wire_length,
                                           uint64_t arrival_ns, const char* reason) {
    const ReplayReport::Ticket ticket =
        report_.on_arrival(r.class_id, wire_length, arrival_ns, r.flow_hash, r.job_id);
    report_.on_drop(r.class_id, reason, arrival_ns, ticket);
}

template <class D>
void BasicReplayEngine<D>::arrive(const PcapRecord& record, uint64_t arrival_ns,
                                  uint16_t ingress_port) {
    // The classifier reads the frame where it is; without an output pcap it sees only the
    // first kHeaderBytes, as if the frame had been snapped there.
    const auto captured = static_cast<uint32_t>(record.captured.size());
    const uint32_t seen = options_.keep_payload ? captured : std::min(captured, kHeaderBytes);
    const uint8_t* frame = record.captured.data();
    // A MAC control frame (PFC, PAUSE) in the capture is for the gateway's MAC: consumed before
    // classification, never forwarded, as the realtime RX takes it out of every burst. The
    // report charges it to the class of unmatched traffic.
    if (pfc::is_mac_control(frame, seen)) [[unlikely]] {
        classifier::Result unmatched;
        unmatched.class_id = classifier_.config().default_class;
        drop_on_arrival(unmatched, record.wire_length, arrival_ns, "mac_control");
        return;
    }
    const classifier::Result r = classifier_.classify(
        frame, seen, std::max(record.wire_length, seen), ingress_port, arrival_ns);
    if (r.malformed != classifier::MalformedReason::none)
        report_.on_malformed(classifier::to_string(r.malformed));
    // A reclassified flow's queued packets follow it before anything of it is offered (or
    // dropped) under the new class.
    if (r.previous_class != classifier::kNoPreviousClass) [[unlikely]] {
        discipline_.reclassified(r.flow_hash, r.previous_class, r.previous_job, r.class_id,
                                 r.job_id);
        account_moves(arrival_ns);
    }
    if (r.drop || record.wire_length == 0) {
        // An empty record (a damaged capture) has nothing to send; dropped here rather than by
        // the twinlane scheduler alone (which refuses length 0), so every discipline sees it so.
        drop_on_arrival(r, record.wire_length, arrival_ns,
                        record.wire_length == 0 ? "empty_record" : "malformed");
        return;
    }
    // Records above the port's largest frame (host captures with TSO/GRO) go out as the
    // segments the NIC would send; the flow was classified once, on the whole record.
    if (record.wire_length > options_.max_frame_bytes && options_.max_frame_bytes != 0) {
        const SegmentPlan plan = plan_segments(record.captured.first(seen), record.wire_length,
                                               r.l3_offset, r.ip_version, options_.max_frame_bytes);
        if (plan.count > 1) {
            report_.on_split(plan.count);
            for (uint32_t k = 0; k < plan.count; ++k) {
                const uint32_t slot_id = take_slot();
                const uint32_t wire = plan.segment_wire_length(k);
                if (options_.keep_payload) {
                    std::vector<uint8_t>& segment = frames_[slot_id];
                    write_segment(plan, record.captured, k, segment);
                    enqueue_packet(r, segment.data(), static_cast<uint32_t>(segment.size()), wire,
                                   slot_id, arrival_ns, ingress_port);
                } else {
                    enqueue_packet(r, frame, seen, wire, slot_id, arrival_ns, ingress_port);
                }
            }
            return;
        }
        // Not splittable (non-IP, fragment, damaged length, ...): no port could send it. Drop
        // it here, so that every discipline (fifo and rte_sched have no frame limit of their
        // own) faces the same packets.
        drop_on_arrival(r, record.wire_length, arrival_ns, "oversize");
        return;
    }
    const uint32_t slot_id = take_slot();
    if (options_.keep_payload) frames_[slot_id].assign(frame, frame + captured);
    enqueue_packet(r, frame, seen, record.wire_length, slot_id, arrival_ns, ingress_port);
}

template <class D>
bool BasicReplayEngine<D>::transmit_until(uint64_t until_ns) {
    sched::Packet p;
    while (true) {
        const uint64_t start = link_free_ns_;
        if (start >= until_ns) return true;
        if (lossless_) [[unlikely]] {
            apply_peer_pauses(start);  // the watchdog's time moves with the link's
            if (lossless_->take_resumed()) return false;
        }
        discipline_.advance(start);
        account_moves(start);
        if (discipline_.dequeue(start, p, drops_)) {
            account_drops(start);
            if (lossless_ && ((lossless_->storm_drop_lanes() >> admission::user_lane(p.user)) & 1))
                [[unlikely]] {
                drops_.push_back({p, "pfc_storm"});
                account_drops(start);
                continue;
            }
            depart(p, start);
            account_moves(start);
            continue;
        }
        account_drops(start);
        // Nothing eligible now: the link idles until a shaper allows more or a packet arrives.
        const uint64_t next = discipline_.next_eligible_ns(start);
        if (next == UINT64_MAX || next >= until_ns) {
            if (until_ns != UINT64_MAX) link_free_ns_ = until_ns;
            return true;
        }
        link_free_ns_ = std::max(next, start + 1);
    }
}

template <class D>
void BasicReplayEngine<D>::depart(const sched::Packet& packet, uint64_t start_ns) {
    // Class, length and arrival time come from the descriptor the discipline hands back; the
    // slot (likely out of L1 after the packet's time in the queue) is read only for what
    // needs it: the link's next free time does not wait for it.
    // measured (replay_bench, side by side): see replay/README.md.
    const uint32_t slot_id = slot_of(packet);
    const uint64_t departure = start_ns + link_.transmit_ns(packet.length_bytes);
    link_free_ns_ = departure;
    const uint8_t class_id = admission::user_lane(packet.user);
    if (lossless_) [[unlikely]]
        lossless_->leave(admission::user_pfc_tag(packet.user), packet.length_bytes, start_ns);
    // Only a packet the discipline can mark (l3 set) can have become CE since its arrival.
    bool marked_here = false;
    ReplayReport::Ticket ticket;
    // A packet that may have changed class (moves_) carries the ticket of the class it arrived
    // in, whatever it leaves as.
    if (packet.l3 != nullptr || report_.has_ticket(class_id) || moves_ != nullptr) {
        const Slot& s = slot(slot_id);
        marked_here = packet.l3 != nullptr && !s.ce_at_arrival &&
                      ce_marked(s, static_cast<uint8_t>(packet.l3[0] >> 4));
        ticket = s.ticket;
    }
    report_.on_departure(class_id, packet.length_bytes, packet.arrival_ns, departure, marked_here,
                         ticket);
    discipline_.departed(packet, departure - packet.arrival_ns, start_ns);
    if (output_ != nullptr) {
        const Slot& s = slot(slot_id);
        std::vector<uint8_t>& frame = frames_[slot_id];
        if (s.l3_bytes != 0) std::memcpy(frame.data() + s.l3_offset, s.l3, s.l3_bytes);
        output_->write(departure, frame, packet.length_bytes);
    }
    free_slots_.push_back(slot_id);
}

template <class D>
void BasicReplayEngine<D>::report_drops(uint64_t now_ns) {
    for (const ReplayDrop& d : drops_) {
        const uint32_t slot_id = slot_of(d.packet);
        const uint8_t tag = admission::user_pfc_tag(d.packet.user);
        const char* reason = d.reason;
        if (lossless_ && tag != 0) [[unlikely]] {
            lossless_->leave(tag, d.packet.length_bytes, now_ns);
            if (sched::is_room_drop(reason)) reason = "lossless_overflow";
        }
        report_.on_drop(admission::user_lane(d.packet.user), reason, now_ns, slot(slot_id).ticket);
        free_slots_.push_back(slot_id);
    }
    drops_.clear();
}

template <class D>
void BasicReplayEngine<D>::report_moves(uint64_t now_ns) {
    for (const slo::ClassMove& m : *moves_)
        report_.on_class_move(m.from, m.to, m.packets, m.bytes, now_ns);
    moves_->clear();
    if (other_drops_ != nullptr && !other_drops_->empty()) {
        // Reported as the discipline's own drops are (report_drops), after the moves.
        drops_.insert(drops_.end(), other_drops_->begin(), other_drops_->end());
        other_drops_->clear();
        report_drops(now_ns);
    }
}

template class BasicReplayEngine<Discipline>;
template class BasicReplayEngine<SchedulerDiscipline>;
template class BasicReplayEngine<FifoDiscipline>;
template class BasicReplayEngine<RteSchedDiscipline>;

namespace {
template <class D>
uint64_t replay_with(const ReplayOptions& options, classifier::Classifier& classifier,
                     D& discipline, ReplayReport& report, PcapWriter* output,
                     std::span<const ReplayInput> inputs) {
    BasicReplayEngine<D> engine(options, classifier, discipline, report, output);
    return engine.run(inputs);
}
}  // namespace

uint64_t replay_pcaps(const ReplayOptions& options, classifier::Classifier& classifier,
                      Discipline& discipline, ReplayReport& report, PcapWriter* output,
                      std::span<const ReplayInput> inputs) {
    if (auto* d = dynamic_cast<SchedulerDiscipline*>(&discipline))
        return replay_with(options, classifier, *d, report, output, inputs);
    if (auto* d = dynamic_cast<FifoDiscipline*>(&discipline))
        return replay_with(options, classifier, *d, report, output, inputs);
    if (auto* d = dynamic_cast<RteSchedDiscipline*>(&discipline))
        return replay_with(options, classifier, *d, report, output, inputs);
    return replay_with(options, classifier, discipline, report, output, inputs);
}

uint64_t replay_pcap(const ReplayOptions& options, classifier::Classifier& classifier,
                     Discipline& discipline, ReplayReport& report, PcapWriter* output,
                     PcapReader& input) {
    const ReplayInput one{&input, options.ingress_port};
    return replay_pcaps(options, classifier, discipline, report, output, {&one, 1});
}

}  // namespace twinlane::replay
