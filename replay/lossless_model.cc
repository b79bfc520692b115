#include "replay/lossless_model.h"

#include <algorithm>

namespace twinlane::replay {
namespace {

pfc::PauseFrame pause_frame(uint8_t priority, uint16_t quanta) {
    pfc::PauseFrame f;
    f.class_enable = static_cast<uint8_t>(1u << priority);
    f.quanta[priority] = quanta;
    return f;
}

uint64_t wire_ns(uint32_t bytes, uint64_t rate_bps) {
    // What the frame takes on the sender's link: its bytes plus preamble, FCS and gap (24).
    return rate_bps == 0 ? 0
                         : ((uint64_t{bytes} + 24) * 8'000'000'000ULL + rate_bps - 1) / rate_bps;
}

}  // namespace

LosslessModel::LosslessModel(const LosslessOptions& options)
    : options_(options), receiver_(options.egress_rate_bps, options.watchdog) {
    for (const LosslessIngress& in : options.ingress) {
        const auto index = static_cast<uint8_t>(ingress_.size());
        ingress_.push_back(Ingress{in, pfc::PauseGenerator(in.thresholds, in.rate_bps), {}, {}});
        for (size_t c = 0; c < in.class_tag.size(); ++c) {
            const uint8_t tag = in.class_tag[c];
            if (tag != 0 && tag < accounts_.size())
                accounts_[tag] = Account{index, options.class_priority[c]};
        }
    }
    // The egress peer pauses as a switch does: the longest pause, refreshed at half its length
    // while it lasts, then XON.
    peer_longest_ns_ = pfc::pause_ns(pfc::kMaxQuanta, options.egress_rate_bps);
    peer_refresh_ns_ = std::max<uint64_t>(peer_longest_ns_ / 2, 1);
    for (const InjectedPause& p : options.pauses) {
        const uint64_t end = p.at_ns + std::min(p.duration_ns, UINT64_MAX - 1 - p.at_ns);
        peer_pauses_.push_back({p.priority, p.at_ns, end});
    }
}

LosslessModel::PeerPause* LosslessModel::next_peer_pause() {
    PeerPause* next = nullptr;
    for (PeerPause& p : peer_pauses_)
        if (p.next_ns != UINT64_MAX && (next == nullptr || p.next_ns < next->next_ns)) next = &p;
    return next;
}

int LosslessModel::ingress_of(uint16_t port) const {
    for (size_t i = 0; i < ingress_.size(); ++i)
        if (ingress_[i].options.port == port) return static_cast<int>(i);
    return -1;
}

uint8_t LosslessModel::tag(uint8_t class_id, uint16_t port, const uint8_t* frame,
                           uint32_t readable) const {
    const int i = ingress_of(port);
    if (i < 0 || class_id >= options_.class_priority.size()) return 0;
    const uint8_t tag = ingress_[i].options.class_tag[class_id];
    if (tag == 0) return 0;
    return pfc::packet_priority(frame, readable, options_.dscp_priority) ==
                   options_.class_priority[class_id]
               ? tag
               : 0;
}

bool LosslessModel::hold_if_paused(const uint8_t* frame, uint32_t readable, uint32_t wire_length,
                                   uint16_t port, uint64_t sent_ns) {
    const int i = ingress_of(port);
    if (i < 0) return false;
    const uint8_t p = pfc::packet_priority(frame, readable, options_.dscp_priority);
    if (p == pfc::kNoPriority || !ingress_[i].options.thresholds[p].lossless) return false;
    Sender& s = ingress_[i].senders[p];
    if (!(s.paused && sent_ns >= s.paused_from_ns) && s.held.empty()) return false;
    s.held.push_back(
        Held{sent_ns, wire_length, port, std::vector<uint8_t>(frame, frame + readable)});
    ++s.packets_held;
    return true;
}

void LosslessModel::enter(uint8_t tag, uint32_t bytes, uint64_t now_ns) {
    if (tag != 0) {
        const Account a = accounts_[tag];
        ingress_[a.ingress].occupancy[a.priority] += bytes;
    }
    for (Ingress& in : ingress_)
        update(in, now_ns);
}

void LosslessModel::leave(uint8_t tag, uint32_t bytes, uint64_t now_ns) {
    if (tag != 0) {
        const Account a = accounts_[tag];
        uint64_t& occupancy = ingress_[a.ingress].occupancy[a.priority];
        occupancy -= std::min<uint64_t>(occupancy, bytes);
    }
    for (Ingress& in : ingress_)
        update(in, now_ns);
}

void LosslessModel::update(Ingress& in, uint64_t now_ns) {
    if (!in.generator.enabled()) return;
    const std::optional<pfc::PauseFrame> frame = in.generator.update(in.occupancy, now_ns);
    if (!frame) return;
    for (uint32_t p = 0; p < pfc::kPriorities; ++p) {
        if (!frame->speaks_for(p)) continue;
        Sender& s = in.senders[p];
        ++s.frames;
        if (frame->quanta[p] != 0 && !s.paused) {
            s.paused = true;
            s.xoff_at_ns = now_ns;
            s.paused_from_ns = now_ns + in.options.sender_reaction_ns;
        } else if (frame->quanta[p] == 0 && s.paused) {
            s.paused = false;
            s.paused_ns += now_ns - s.xoff_at_ns;
            if (s.intervals.size() < kMaxIntervals) s.intervals.emplace_back(s.xoff_at_ns, now_ns);
            s.resume_at_ns = now_ns + in.options.sender_reaction_ns;
            resumed_ = true;
        }
    }
}

uint64_t LosslessModel::next_release_ns() const {
    uint64_t next = UINT64_MAX;
    for (const Ingress& in : ingress_)
        for (const Sender& s : in.senders) {
            if (s.paused || s.held.empty()) continue;
            next = std::min(next, std::max({s.resume_at_ns, s.free_ns, s.held.front().sent_ns}));
        }
    return next;
}

LosslessModel::Held LosslessModel::release(uint64_t now_ns) {
    for (Ingress& in : ingress_)
        for (Sender& s : in.senders) {
            if (s.paused || s.held.empty()) continue;
            if (std::max({s.resume_at_ns, s.free_ns, s.held.front().sent_ns}) != now_ns) continue;
            Held h = std::move(s.held.front());
            s.held.pop_front();
            s.free_ns = now_ns + wire_ns(h.wire_length, in.options.rate_bps);
            s.max_delay_ns = std::max(s.max_delay_ns, now_ns - h.sent_ns);
            return h;
        }
    return Held{};  // not reached: the caller asks at next_release_ns()
}

uint64_t LosslessModel::next_peer_frame_ns() const {
    uint64_t next = UINT64_MAX;
    for (const PeerPause& p : peer_pauses_)
        next = std::min(next, p.next_ns);
    return next;
}

bool LosslessModel::peer_until(uint64_t now_ns) {
    bool changed = false;
    for (PeerPause* p = next_peer_pause(); p != nullptr && p->next_ns <= now_ns;
         p = next_peer_pause()) {
        const uint64_t at = p->next_ns;
        uint64_t quanta = 0;  // at its end: XON
        if (at < p->end_ns) {
            // What is left of it, in quanta of 512 bit times (below the longest pause, so the
            // product stays far from overflowing).
            const uint64_t left = p->end_ns - at;
            quanta = left >= peer_longest_ns_
                         ? pfc::kMaxQuanta
                         : (left * options_.egress_rate_bps + 512'000'000'000ULL - 1) /
                               512'000'000'000ULL;
            quanta = std::min<uint64_t>(quanta, pfc::kMaxQuanta);
            p->next_ns = std::min(at + peer_refresh_ns_, p->end_ns);
        } else {
            p->next_ns = UINT64_MAX;
        }
        const pfc::PauseFrame frame = pause_frame(p->priority, static_cast<uint16_t>(quanta));
        receiver_.tick(at);
        note_holds(at);
        receiver_.on_frame(frame, at);
        note_holds(at);
        changed = true;
    }
    changed = receiver_.tick(now_ns) || changed;
    note_holds(now_ns);
    if (changed) {
        storm_drop_lanes_ = 0;
        for (uint32_t p = 0; p < pfc::kPriorities; ++p) {
            if (!receiver_.storm(p) || options_.watchdog.action != pfc::StormAction::drop) continue;
            for (uint32_t lane = 0; lane < options_.class_priority.size(); ++lane)
                if (options_.class_priority[lane] == p) storm_drop_lanes_ |= 1u << lane;
        }
    }
    return changed;
}

void LosslessModel::note_holds(uint64_t now_ns) {
    for (uint32_t p = 0; p < pfc::kPriorities; ++p) {
        const uint64_t until = receiver_.paused_until(p);
        if (until != 0) {
            if (held_until_[p] == 0) held_since_[p] = now_ns;
            held_until_[p] = until;
        } else if (held_until_[p] != 0) {
            // Ended by XON or a storm (now) or by expiry (its time, at most now).
            if (held_[p].size() < kMaxIntervals)
                held_[p].emplace_back(held_since_[p], std::min(now_ns, held_until_[p]));
            held_until_[p] = 0;
        }
    }
}

namespace {

nlohmann::json intervals_ms(const std::vector<std::pair<uint64_t, uint64_t>>& intervals,
                            uint64_t open_since_ns, uint64_t end_ns) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& [from, to] : intervals)
        out.push_back({static_cast<double>(from) / 1e6, static_cast<double>(to) / 1e6});
    if (open_since_ns != UINT64_MAX)
        out.push_back(
            {static_cast<double>(open_since_ns) / 1e6, static_cast<double>(end_ns) / 1e6});
    return out;
}

}  // namespace

nlohmann::json LosslessModel::report(uint64_t end_ns) const {
    nlohmann::json out = nlohmann::json::array();
    for (uint32_t p = 0; p < pfc::kPriorities; ++p) {
        // The senders of each PFC port, and their sums (the pause times add up over ports).
        nlohmann::json senders = nlohmann::json::array();
        uint64_t frames = 0;
        double paused_ms = 0;
        uint64_t held = 0;
        uint64_t still_held = 0;
        uint64_t max_delay_ns = 0;
        nlohmann::json intervals = nlohmann::json::array();
        for (const Ingress& in : ingress_) {
            if (!in.options.thresholds[p].lossless) continue;
            const Sender& s = in.senders[p];
            const uint64_t paused_ns = s.paused_ns + (s.paused ? end_ns - s.xoff_at_ns : 0);
            nlohmann::json own =
                intervals_ms(s.intervals, s.paused ? s.xoff_at_ns : UINT64_MAX, end_ns);
            senders.push_back({{"port", in.options.name},
                               {"pause_frames_sent", s.frames},
                               {"sender_paused_ms", static_cast<double>(paused_ns) / 1e6},
                               {"packets_held", s.packets_held},
                               {"still_held", s.held.size()},
                               {"max_sender_delay_us", static_cast<double>(s.max_delay_ns) / 1e3},
                               {"sender_paused_intervals_ms", own}});
            frames += s.frames;
            paused_ms += static_cast<double>(paused_ns) / 1e6;
            held += s.packets_held;
            still_held += s.held.size();
            max_delay_ns = std::max(max_delay_ns, s.max_delay_ns);
            for (auto& interval : own)
                intervals.push_back(std::move(interval));
        }
        if (senders.empty() && receiver_.frames(p) == 0) continue;
        out.push_back(
            {{"priority", p},
             {"pause_frames_sent", frames},
             {"sender_paused_ms", paused_ms},
             {"packets_held", held},
             {"still_held", still_held},  // not yet sent when the replay ended
             {"max_sender_delay_us", static_cast<double>(max_delay_ns) / 1e3},
             {"pause_frames_received", receiver_.frames(p)},
             {"egress_paused_ms", static_cast<double>(receiver_.paused_ns(p, end_ns)) / 1e6},
             {"storms", receiver_.storms(p)},
             {"sender_paused_intervals_ms", std::move(intervals)},
             {"egress_held_intervals_ms",
              intervals_ms(held_[p], held_until_[p] != 0 ? held_since_[p] : UINT64_MAX,
                           std::min(end_ns, held_until_[p]))},
             {"ingress", std::move(senders)}});
    }
    return out;
}

}  // namespace twinlane::replay
