// What a replay measured, per class and in total, and its two renderings: the JSON report
// (schema in replay/README.md) and a human table. The engine records events as they happen;
// percentiles are exact (every latency is kept: 8 bytes per transmitted packet).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

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
    std::vector<uint64_t> latencies_ns;       // departure (last bit) - arrival, per tx packet
    std::vector<uint64_t> throughput_bytes;   // per series interval, by departure time
    // Backlogged periods: from an arrival into an empty class to its last packet leaving.
    uint64_t queued = 0;
    uint64_t backlog_since_ns = 0;
    uint64_t backlogged_ns = 0;
    uint64_t backlogged_wire_bytes = 0;        // this class's bytes sent while backlogged
    uint64_t backlogged_others_wire_bytes = 0; // other classes' bytes sent meanwhile
};

class ReplayReport {
public:
    ReplayReport(std::string discipline, uint64_t link_rate_bps, std::vector<std::string> classes,
                 uint8_t bulk_class, uint64_t series_interval_ns);

    // The fairness-group members a packet of the bulk class counts against (flow and job),
    // resolved once at arrival and handed back at its departure or drop: two hash lookups per
    // packet instead of six. Null members for other classes. Stable: members are never erased.
    // measured (callgrind, replay_bench): on_departure 268 -> 173 instructions/packet.
    struct Member;
    struct Ticket {
        Member* flow = nullptr;
        Member* job = nullptr;
    };

    Ticket on_arrival(uint8_t class_id, uint32_t frame_bytes, uint64_t now_ns, uint32_t flow_hash,
                      uint32_t job_id);
    void on_malformed(std::string_view reason) {
        ++malformed_;
        ++malformed_by_reason_[std::string(reason)];
    }
    // A drop of an arrived packet: refused at enqueue, discarded by AQM, or malformed.
    void on_drop(uint8_t class_id, const char* reason, uint64_t now_ns, Ticket ticket);
    void on_departure(uint8_t class_id, uint32_t frame_bytes, uint64_t arrival_ns,
                      uint64_t departure_ns, bool ecn_marked_here, Ticket ticket);
    void on_finish(uint64_t queued_at_end, uint64_t end_ns);

    const std::vector<ClassStats>& classes() const { return classes_; }
    uint64_t rx_packets() const { return rx_packets_; }
    uint64_t tx_packets() const { return tx_packets_; }
    uint64_t dropped_packets() const;
    uint64_t queued_at_end() const { return queued_at_end_; }
    const std::string& discipline() const { return discipline_; }
    LatencySummary latency(size_t class_id) const;
    // While the class was backlogged: its throughput, and its share of the link capacity that
    // the other classes left (1.0 = it used everything left; work-conserving schedulers reach
    // it up to rounding).
    double backlogged_throughput_bps(size_t class_id) const;
    double backlogged_share_of_left_capacity(size_t class_id) const;
    double jain_flows() const;
    double jain_jobs() const;

    nlohmann::json to_json() const;

private:
    std::string discipline_;
    uint64_t link_rate_bps_;
    uint8_t bulk_class_;
    uint64_t series_interval_ns_;
    std::vector<ClassStats> classes_;
    std::map<std::string, uint64_t> dropped_by_reason_;
    std::map<std::string, uint64_t> malformed_by_reason_;
    uint64_t rx_packets_ = 0;
    uint64_t tx_packets_ = 0;
    uint64_t malformed_ = 0;
    uint64_t queued_at_end_ = 0;
    uint64_t first_arrival_ns_ = UINT64_MAX;
    uint64_t end_ns_ = 0;
    void leave_queue(ClassStats& c, uint64_t now_ns);
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
        Member* arrive(uint32_t key);
        void leave(Member& m);
        void depart(Member& m, uint32_t bytes);
        double jain() const;
    };
    static constexpr double kMinCreditBytes = 64 * 1024;
    Group bulk_flows_;
    Group bulk_jobs_;
};

struct ReplayReport::Member {
    uint64_t queued = 0;
    double credit_start = 0;
    double credit = 0;
    double served = 0;
};

// Prints one row per class for each report, side by side when several are given.
std::string format_comparison(const std::vector<const ReplayReport*>& reports);

}  // namespace twinlane::replay
