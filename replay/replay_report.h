// What a replay measured, per class and in total, and its two renderings: the JSON report
// (schema in replay/README.md) and a human table. The engine records events as they happen;
// percentiles are exact (every latency is kept: 8 bytes per transmitted packet).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "replay/virtual_link.h"
#include "slo/governor.h"

namespace twinlane::replay {

struct LatencySummary {
    double p50_us = 0, p90_us = 0, p99_us = 0, p999_us = 0, max_us = 0;
};

struct ClassStats {
    std::string name;
    uint64_t rx_packets = 0;
    uint64_t rx_bytes = 0;
    uint64_t tx_packets = 0;
    uint64_t tx_bytes = 0;
    uint64_t drops = 0;
    uint64_t ecn_marked = 0;
    std::vector<uint64_t> latencies_ns;      // departure (last bit) - arrival, per tx packet
    std::vector<uint64_t> throughput_bytes;  // per series interval, by departure time
    // Backlogged periods: from an arrival into an empty class to its last packet leaving.
    uint64_t queued = 0;
    uint64_t backlog_since_ns = 0;
    uint64_t backlogged_ns = 0;
    uint64_t backlogged_wire_bytes = 0;         // this class's bytes sent while backlogged
    uint64_t backlogged_others_wire_bytes = 0;  // other classes' bytes sent meanwhile
    // At the start of the current backlogged period: the link's total wire bytes and this
    // class's backlogged_wire_bytes; the others' share is settled when the period ends.
    uint64_t backlog_start_link_wire_bytes = 0;
    uint64_t backlog_start_own_wire_bytes = 0;
    // Packets that changed class while queued or at admission (an SLO downgrade, its return):
    // rx + moved_in - moved_out = tx + drops + still queued, per class.
    uint64_t moved_in_packets = 0, moved_in_bytes = 0;
    uint64_t moved_out_packets = 0, moved_out_bytes = 0;
    // With track_shares_by_class(): while backlogged, each class's wire bytes (by class id).
    std::vector<uint64_t> backlogged_class_wire_bytes;
    std::vector<uint64_t> backlog_start_class_wire_bytes;
};

// What the SLO governor of a replay measured and did, per class (slo/governor.h), copied out
// at the end of the run.
struct SloReport {
    struct Class {
        slo::SloClassSpec spec;
        slo::SloClassStats stats;
        std::vector<slo::WindowRecord> windows;
    };
    std::vector<Class> classes;
    std::vector<slo::SloEvent> events;
    uint64_t events_dropped = 0;

    static SloReport from(const slo::SloGovernor& governor);
};

class ReplayReport {
  public:
    ReplayReport(std::string discipline, uint64_t link_rate_bps, std::vector<std::string> classes,
                 uint8_t bulk_class, uint64_t series_interval_ns);

    // The fairness-group members a packet of the bulk class counts against (flow and job),
    // resolved once at arrival and handed back at its departure or drop: two hash lookups per
    // packet instead of six. Null members for other classes. Stable: members are never erased.
    // measured (callgrind, replay_bench): on_departure 268 -> 173 instructions/packet.
    struct Member {
        uint64_t queued = 0;
        double credit_start = 0;
        double credit = 0;
        double served = 0;
    };
    struct Ticket {
        Member* flow = nullptr;
        Member* job = nullptr;
    };

    // The per-packet events are inline (called once or twice per packet from the engine).
    // measured (callgrind, replay_bench): report ~290 -> see replay/README.md.
    Ticket on_arrival(uint8_t class_id, uint32_t frame_bytes, uint64_t now_ns, uint32_t flow_hash,
                      uint32_t job_id) {
        Ticket ticket;
        if (class_id == bulk_class_) {
            ticket.flow = bulk_flows_.arrive(flow_hash);
            ticket.job = bulk_jobs_.arrive(job_id);
        }
        ++rx_packets_;
        if (now_ns < first_arrival_ns_) {
            first_arrival_ns_ = now_ns;
            interval_end_ns_ = 0;  // the series starts here: forget the cached interval
        }
        ClassStats& c = classes_.at(class_id);
        ++c.rx_packets;
        c.rx_bytes += frame_bytes;
        if (c.queued++ == 0) start_backlog(c, now_ns);
        return ticket;
    }
    // Whether packets of this class get a non-empty ticket (members to credit).
    bool has_ticket(uint8_t class_id) const { return class_id == bulk_class_; }
    void on_malformed(std::string_view reason) {
        ++malformed_;
        ++malformed_by_reason_[std::string(reason)];
    }
    // A record longer than the port's largest frame replayed as `segments` packets (each
    // arrives through on_arrival; see wire_segments.h).
    void on_split(uint32_t segments) {
        ++split_records_;
        split_packets_ += segments;
    }
    uint64_t split_records() const { return split_records_; }
    uint64_t split_packets() const { return split_packets_; }
    // A drop of an arrived packet: refused at enqueue, discarded by AQM, or malformed.
    void on_drop(uint8_t class_id, const char* reason, uint64_t now_ns, Ticket ticket);
    // Departures come in time order (one link); any order is accepted.
    void on_departure(uint8_t class_id, uint32_t frame_bytes, uint64_t arrival_ns,
                      uint64_t departure_ns, bool ecn_marked_here, Ticket ticket) {
        ++tx_packets_;
        ClassStats& c = classes_[class_id];  // arrived before, so checked by on_arrival
        ++c.tx_packets;
        c.tx_bytes += frame_bytes;
        if (ecn_marked_here) ++c.ecn_marked;
        c.latencies_ns.push_back(departure_ns - arrival_ns);
        size_t interval = series_interval(departure_ns);
        if (interval >= kMaxSeriesIntervals) [[unlikely]]
            interval = coarsen_series(departure_ns);
        if (c.throughput_bytes.size() <= interval) c.throughput_bytes.resize(interval + 1, 0);
        c.throughput_bytes[interval] += frame_bytes;
        // Other classes' bytes sent while `c` is backlogged are settled when its period ends
        // (leave_queue): O(1) per departure instead of a pass over the classes.
        const uint64_t wire = wire_bytes(frame_bytes);
        link_wire_bytes_ += wire;
        if (!class_wire_bytes_.empty()) [[unlikely]]
            class_wire_bytes_[class_id] += wire;
        if (c.queued != 0) c.backlogged_wire_bytes += wire;
        leave_queue(c, departure_ns);
        if (ticket.flow != nullptr) bulk_flows_.depart(*ticket.flow, frame_bytes);
        if (ticket.job != nullptr) bulk_jobs_.depart(*ticket.job, frame_bytes);
    }
    // `packets` (of `bytes`) arrived or queued as `from` now count as `to` (slo::ClassMove).
    void on_class_move(uint8_t from, uint8_t to, uint32_t packets, uint64_t bytes, uint64_t now_ns);
    void set_slo(SloReport slo) { slo_ = std::move(slo); }
    // Also split what others sent while a class was backlogged by class (the report's
    // "backlogged.wire_bytes_by_class"): how much of what inference left training took. Off by
    // default (a copy of every class's counter each time a class becomes backlogged).
    void track_shares_by_class() {
        class_wire_bytes_.assign(classes_.size(), 0);
        for (ClassStats& c : classes_) {
            c.backlogged_class_wire_bytes.assign(classes_.size(), 0);
            c.backlog_start_class_wire_bytes.assign(classes_.size(), 0);
        }
    }
    const std::optional<SloReport>& slo() const { return slo_; }
    void on_finish(uint64_t queued_at_end, uint64_t end_ns);
    // A record stamped `back_ns` earlier than the arrival before it (a capture merged from
    // several queues or interfaces without sorting): replayed at that earlier arrival's time.
    void on_time_reversal(uint64_t back_ns) {
        ++records_back_in_time_;
        max_back_in_time_ns_ = std::max(max_back_in_time_ns_, back_ns);
    }
    uint64_t records_back_in_time() const { return records_back_in_time_; }
    uint64_t max_back_in_time_ns() const { return max_back_in_time_ns_; }

    const std::vector<ClassStats>& classes() const { return classes_; }
    uint64_t rx_packets() const { return rx_packets_; }
    uint64_t tx_packets() const { return tx_packets_; }
    uint64_t dropped_packets() const;
    uint64_t queued_at_end() const { return queued_at_end_; }
    // rx = tx + dropped + still queued at the end: every packet accounted for.
    bool accounts_for_every_packet() const {
        return rx_packets() == tx_packets() + dropped_packets() + queued_at_end();
    }
    const std::string& discipline() const { return discipline_; }
    LatencySummary latency(size_t class_id) const;
    // While the class was backlogged: its throughput, and its share of the link capacity that
    // the other classes left (1.0 = it used everything left; work-conserving schedulers reach
    // it up to rounding).
    double backlogged_throughput_bps(size_t class_id) const;
    double backlogged_share_of_left_capacity(size_t class_id) const;
    // Empty when no member was backlogged long enough to be judged (kMinCreditBytes): no
    // verdict, rather than a 0 that reads as "maximally unfair".
    std::optional<double> jain_flows() const;
    std::optional<double> jain_jobs() const;

    nlohmann::json to_json() const;
    // PFC in the replay, per lossless priority (LosslessModel::report); null when not modelled.
    void set_pfc(nlohmann::json pfc) { pfc_ = std::move(pfc); }
    const nlohmann::json& pfc() const { return pfc_; }

  private:
    nlohmann::json slo_json() const;

    std::string discipline_;
    uint64_t link_rate_bps_;
    std::optional<SloReport> slo_;
    uint8_t bulk_class_;
    uint64_t series_interval_ns_;
    std::vector<ClassStats> classes_;
    std::map<std::string, uint64_t> malformed_by_reason_;
    uint64_t rx_packets_ = 0;
    uint64_t tx_packets_ = 0;
    uint64_t malformed_ = 0;
    uint64_t split_records_ = 0;
    uint64_t split_packets_ = 0;
    uint64_t queued_at_end_ = 0;
    uint64_t records_back_in_time_ = 0;
    uint64_t max_back_in_time_ns_ = 0;
    uint64_t first_arrival_ns_ = UINT64_MAX;
    uint64_t end_ns_ = 0;
    nlohmann::json pfc_;
    uint64_t link_wire_bytes_ = 0;            // every class's wire bytes sent so far
    std::vector<uint64_t> class_wire_bytes_;  // by class, with track_shares_by_class()
    // The throughput-series interval of the last departure, [start, end) in ns: departures
    // come in time order, so the division is needed once per interval.
    size_t interval_index_ = 0;
    uint64_t interval_start_ns_ = 1;
    uint64_t interval_end_ns_ = 0;
    // The series keeps at most this many intervals: a capture spanning days (sparse traffic,
    // a merged file, one bad timestamp) asked for billions of 1 ms intervals (30 days: 24 GB).
    // Past it the interval doubles, adjacent pairs merged, until the departure fits.
    static constexpr size_t kMaxSeriesIntervals = size_t{1} << 16;
    size_t coarsen_series(uint64_t departure_ns);
    size_t series_interval(uint64_t departure_ns) {
        if (departure_ns >= interval_start_ns_ && departure_ns < interval_end_ns_)
            return interval_index_;
        const uint64_t start = first_arrival_ns_ == UINT64_MAX ? 0 : first_arrival_ns_;
        const uint64_t since = departure_ns - std::min(start, departure_ns);
        interval_index_ = static_cast<size_t>(since / series_interval_ns_);
        // Cache only when the series start is known and the interval is clear of it.
        if (first_arrival_ns_ != UINT64_MAX && departure_ns >= start) {
            interval_start_ns_ = start + interval_index_ * series_interval_ns_;
            interval_end_ns_ = interval_start_ns_ + series_interval_ns_;
        }
        return interval_index_;
    }
    void leave_queue(ClassStats& c, uint64_t now_ns) {
        if (c.queued == 0) return;
        if (--c.queued == 0) {
            c.backlogged_ns += now_ns - c.backlog_since_ns;
            settle_others(c);
        }
    }
    void start_backlog(ClassStats& c, uint64_t now_ns) {
        c.backlog_since_ns = now_ns;
        c.backlog_start_link_wire_bytes = link_wire_bytes_;
        c.backlog_start_own_wire_bytes = c.backlogged_wire_bytes;
        if (!class_wire_bytes_.empty()) [[unlikely]]
            std::copy(class_wire_bytes_.begin(), class_wire_bytes_.end(),
                      c.backlog_start_class_wire_bytes.begin());
    }
    void settle_others(ClassStats& c) const {
        for (size_t k = 0; k < class_wire_bytes_.size(); ++k)
            c.backlogged_class_wire_bytes[k] +=
                class_wire_bytes_[k] - c.backlog_start_class_wire_bytes[k];
        c.backlogged_others_wire_bytes +=
            (link_wire_bytes_ - c.backlog_start_link_wire_bytes) -
            (c.backlogged_wire_bytes - c.backlog_start_own_wire_bytes);
    }
    // Reasons are strings with static storage: counted by pointer, merged by name on output.
    std::vector<std::pair<const char*, uint64_t>> drops_by_reason_ptr_;
    std::map<std::string, uint64_t> dropped_by_reason() const;
    // Fairness among the bulk class's flows (or jobs), judged only while they are backlogged:
    // each departure credits every backlogged member with an equal share of its bytes (a
    // virtual clock, as in fair-queueing theory), and a member's score is the bytes it was
    // sent over the bytes it was credited. Jain's index over the scores is 1.0 when every
    // backlogged member got an equal share, whatever each offered. Members credited less than
    // kMinCreditBytes are left out: their score is noise.
    struct Group {
        std::unordered_map<uint32_t, Member> members;
        size_t backlogged = 0;
        double virtual_bytes = 0;  // cumulative share of one backlogged member
        // Members looked up recently, direct-mapped by key: a flow's packets come in runs.
        // measured (callgrind, replay_bench): Group::arrive 61 -> see replay/README.md.
        struct Cached {
            uint32_t key = 0;
            Member* member = nullptr;
        };
        std::array<Cached, 64> cache{};
        Member* arrive(uint32_t key) {
            Cached& slot = cache[key % cache.size()];
            if (slot.member == nullptr || slot.key != key) slot = Cached{key, &members[key]};
            Member& m = *slot.member;
            if (m.queued++ == 0) {
                ++backlogged;
                m.credit_start = virtual_bytes;
            }
            return &m;
        }
        void leave(Member& m);
        void depart(Member& m, uint32_t bytes);
        std::optional<double> jain() const;
    };
    static constexpr double kMinCreditBytes = 64 * 1024;
    Group bulk_flows_;
    Group bulk_jobs_;
};

inline void ReplayReport::Group::leave(Member& m) {
    if (m.queued == 0) return;
    if (--m.queued == 0) {
        --backlogged;
        m.credit += virtual_bytes - m.credit_start;
    }
}

inline void ReplayReport::Group::depart(Member& m, uint32_t bytes) {
    if (backlogged != 0)
        virtual_bytes += static_cast<double>(bytes) / static_cast<double>(backlogged);
    m.served += bytes;
    leave(m);
}

// Prints one row per class for each report, side by side when several are given.
std::string format_comparison(const std::vector<const ReplayReport*>& reports);

}  // namespace twinlane::replay
