// What a replay measured, per class and in total, and its two renderings: the JSON report
// (schema in replay/README.md) and a human table. The engine records events as they happen;
// percentiles are exact (every latency is kept: 8 bytes per transmitted packet).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
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
};

class ReplayReport {
public:
    ReplayReport(std::string discipline, uint64_t link_rate_bps, std::vector<std::string> classes,
                 uint8_t bulk_class, uint64_t series_interval_ns);

    void on_arrival(uint8_t class_id, uint32_t frame_bytes, uint64_t now_ns);
    void on_malformed() { ++malformed_; }
    void on_drop(uint8_t class_id, const char* reason);
    void on_departure(uint8_t class_id, uint32_t frame_bytes, uint64_t arrival_ns,
                      uint64_t departure_ns, bool ecn_marked_here, uint32_t flow_hash,
                      uint32_t job_id);
    // Marks the end of input: bulk departures after it (the drain) do not count for fairness.
    void on_input_end(uint64_t last_arrival_ns) { input_end_ns_ = last_arrival_ns; }
    void on_finish(uint64_t queued_at_end, uint64_t end_ns);

    const std::vector<ClassStats>& classes() const { return classes_; }
    uint64_t rx_packets() const { return rx_packets_; }
    uint64_t tx_packets() const { return tx_packets_; }
    uint64_t dropped_packets() const;
    uint64_t queued_at_end() const { return queued_at_end_; }
    const std::string& discipline() const { return discipline_; }
    LatencySummary latency(size_t class_id) const;
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
    uint64_t rx_packets_ = 0;
    uint64_t tx_packets_ = 0;
    uint64_t malformed_ = 0;
    uint64_t queued_at_end_ = 0;
    uint64_t first_arrival_ns_ = UINT64_MAX;
    uint64_t end_ns_ = 0;
    uint64_t input_end_ns_ = UINT64_MAX;
    std::unordered_map<uint32_t, uint64_t> bulk_flow_bytes_;
    std::unordered_map<uint32_t, uint64_t> bulk_job_bytes_;
};

// Prints one row per class for each report, side by side when several are given.
std::string format_comparison(const std::vector<const ReplayReport*>& reports);

}  // namespace twinlane::replay
