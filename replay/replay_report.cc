#include "replay/replay_report.h"

#include "replay/virtual_link.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace twinlane::replay {
namespace {

double percentile_us(std::vector<uint64_t>& sorted, double q) {
    if (sorted.empty()) return 0;
    // Nearest-rank: the smallest value with at least q of the samples at or below it.
    const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
    return static_cast<double>(sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1]) / 1e3;
}

double round3(double v) { return std::round(v * 1000.0) / 1000.0; }

}  // namespace

ReplayReport::ReplayReport(std::string discipline, uint64_t link_rate_bps,
                           std::vector<std::string> classes, uint8_t bulk_class,
                           uint64_t series_interval_ns)
    : discipline_(std::move(discipline)), link_rate_bps_(link_rate_bps), bulk_class_(bulk_class),
      series_interval_ns_(series_interval_ns) {
    for (auto& name : classes) {
        ClassStats c;
        c.name = std::move(name);
        classes_.push_back(std::move(c));
    }
}

ReplayReport::Member* ReplayReport::Group::arrive(uint32_t key) {
    Member& m = members[key];
    if (m.queued++ == 0) {
        ++backlogged;
        m.credit_start = virtual_bytes;
    }
    return &m;
}

void ReplayReport::Group::leave(Member& m) {
    if (m.queued == 0) return;
    if (--m.queued == 0) {
        --backlogged;
        m.credit += virtual_bytes - m.credit_start;
    }
}

void ReplayReport::Group::depart(Member& m, uint32_t bytes) {
    if (backlogged != 0) virtual_bytes += static_cast<double>(bytes) / static_cast<double>(backlogged);
    m.served += bytes;
    leave(m);
}

double ReplayReport::Group::jain() const {
    double sum = 0, sum_sq = 0;
    size_t n = 0;
    for (const auto& [key, m] : members) {
        const double credit = m.credit + (m.queued != 0 ? virtual_bytes - m.credit_start : 0);
        if (credit < kMinCreditBytes) continue;
        const double score = m.served / credit;
        sum += score;
        sum_sq += score * score;
        ++n;
    }
    return n == 0 || sum_sq == 0 ? 0 : sum * sum / (static_cast<double>(n) * sum_sq);
}

ReplayReport::Ticket ReplayReport::on_arrival(uint8_t class_id, uint32_t frame_bytes,
                                              uint64_t now_ns, uint32_t flow_hash,
                                              uint32_t job_id) {
    Ticket ticket;
    if (class_id == bulk_class_) {
        ticket.flow = bulk_flows_.arrive(flow_hash);
        ticket.job = bulk_jobs_.arrive(job_id);
    }
    ++rx_packets_;
    first_arrival_ns_ = std::min(first_arrival_ns_, now_ns);
    ClassStats& c = classes_.at(class_id);
    ++c.rx_packets;
    c.rx_bytes += frame_bytes;
    if (c.queued++ == 0) c.backlog_since_ns = now_ns;
    return ticket;
}

void ReplayReport::leave_queue(ClassStats& c, uint64_t now_ns) {
    if (c.queued == 0) return;
    if (--c.queued == 0) c.backlogged_ns += now_ns - c.backlog_since_ns;
}

void ReplayReport::on_drop(uint8_t class_id, const char* reason, uint64_t now_ns,
                           Ticket ticket) {
    if (ticket.flow != nullptr) bulk_flows_.leave(*ticket.flow);
    if (ticket.job != nullptr) bulk_jobs_.leave(*ticket.job);
    ++dropped_by_reason_[reason];
    ClassStats& c = classes_.at(class_id);
    ++c.drops;
    leave_queue(c, now_ns);
}

void ReplayReport::on_departure(uint8_t class_id, uint32_t frame_bytes, uint64_t arrival_ns,
                                uint64_t departure_ns, bool ecn_marked_here, Ticket ticket) {
    ++tx_packets_;
    ClassStats& c = classes_.at(class_id);
    ++c.tx_packets;
    c.tx_bytes += frame_bytes;
    if (ecn_marked_here) ++c.ecn_marked;
    c.latencies_ns.push_back(departure_ns - arrival_ns);
    const uint64_t start = first_arrival_ns_ == UINT64_MAX ? 0 : first_arrival_ns_;
    const size_t interval = static_cast<size_t>((departure_ns - std::min(start, departure_ns)) /
                                                series_interval_ns_);
    if (c.throughput_bytes.size() <= interval) c.throughput_bytes.resize(interval + 1, 0);
    c.throughput_bytes[interval] += frame_bytes;
    const uint64_t wire = wire_bytes(frame_bytes);
    for (size_t i = 0; i < classes_.size(); ++i) {
        if (classes_[i].queued == 0) continue;
        if (i == class_id)
            classes_[i].backlogged_wire_bytes += wire;
        else
            classes_[i].backlogged_others_wire_bytes += wire;
    }
    leave_queue(c, departure_ns);
    if (ticket.flow != nullptr) bulk_flows_.depart(*ticket.flow, frame_bytes);
    if (ticket.job != nullptr) bulk_jobs_.depart(*ticket.job, frame_bytes);
}

void ReplayReport::on_finish(uint64_t queued_at_end, uint64_t end_ns) {
    queued_at_end_ = queued_at_end;
    end_ns_ = end_ns;
    for (auto& c : classes_) std::sort(c.latencies_ns.begin(), c.latencies_ns.end());
}

uint64_t ReplayReport::dropped_packets() const {
    uint64_t total = 0;
    for (const auto& [reason, n] : dropped_by_reason_) total += n;
    return total;
}

LatencySummary ReplayReport::latency(size_t class_id) const {
    auto sorted = classes_.at(class_id).latencies_ns;  // sorted by on_finish
    LatencySummary s;
    s.p50_us = percentile_us(sorted, 0.50);
    s.p90_us = percentile_us(sorted, 0.90);
    s.p99_us = percentile_us(sorted, 0.99);
    s.p999_us = percentile_us(sorted, 0.999);
    s.max_us = sorted.empty() ? 0 : static_cast<double>(sorted.back()) / 1e3;
    return s;
}

double ReplayReport::backlogged_throughput_bps(size_t class_id) const {
    const ClassStats& c = classes_.at(class_id);
    if (c.backlogged_ns == 0) return 0;
    return static_cast<double>(c.backlogged_wire_bytes) * 8e9 / static_cast<double>(c.backlogged_ns);
}

double ReplayReport::backlogged_share_of_left_capacity(size_t class_id) const {
    const ClassStats& c = classes_.at(class_id);
    const double capacity_bytes =
        static_cast<double>(c.backlogged_ns) * static_cast<double>(link_rate_bps_) / 8e9;
    const double left = capacity_bytes - static_cast<double>(c.backlogged_others_wire_bytes);
    if (left <= 0) return 0;
    return static_cast<double>(c.backlogged_wire_bytes) / left;
}

double ReplayReport::jain_flows() const { return bulk_flows_.jain(); }
double ReplayReport::jain_jobs() const { return bulk_jobs_.jain(); }

nlohmann::json ReplayReport::to_json() const {
    using nlohmann::json;
    const uint64_t start = first_arrival_ns_ == UINT64_MAX ? 0 : first_arrival_ns_;
    const double duration_s = static_cast<double>(end_ns_ - std::min(start, end_ns_)) / 1e9;
    json dropped = json::object();
    for (const auto& [reason, n] : dropped_by_reason_) dropped[reason] = n;
    json classes = json::object();
    for (size_t i = 0; i < classes_.size(); ++i) {
        const ClassStats& c = classes_[i];
        const LatencySummary l = latency(i);
        json cdf = json::array();
        // About 200 points spread over ranks (dense at the tail, where latency matters).
        const size_t n = c.latencies_ns.size();
        if (n != 0) {
            for (int k = 0; k <= 200; ++k) {
                const double q = 1.0 - std::pow(10.0, -4.0 * k / 200.0);
                const size_t idx = std::min(n - 1, static_cast<size_t>(q * static_cast<double>(n)));
                cdf.push_back({static_cast<double>(c.latencies_ns[idx]) / 1e3,
                               static_cast<double>(idx + 1) / static_cast<double>(n)});
            }
        }
        json series = json::array();
        for (uint64_t b : c.throughput_bytes)
            series.push_back(static_cast<double>(b) * 8e9 / static_cast<double>(series_interval_ns_));
        classes[c.name] = {
            {"rx_packets", c.rx_packets},
            {"rx_bytes", c.rx_bytes},
            {"tx_packets", c.tx_packets},
            {"tx_bytes", c.tx_bytes},
            {"drops", c.drops},
            {"ecn_marked", c.ecn_marked},
            {"throughput_bps",
             duration_s > 0 ? static_cast<double>(c.tx_bytes) * 8 / duration_s : 0.0},
            {"latency_us",
             {{"p50", round3(l.p50_us)},
              {"p90", round3(l.p90_us)},
              {"p99", round3(l.p99_us)},
              {"p999", round3(l.p999_us)},
              {"max", round3(l.max_us)}}},
            {"latency_cdf_us", cdf},
            {"backlogged",
             {{"seconds", static_cast<double>(c.backlogged_ns) / 1e9},
              {"throughput_bps", backlogged_throughput_bps(i)},
              {"share_of_left_capacity", round3(backlogged_share_of_left_capacity(i))}}},
            {"throughput_series",
             {{"interval_s", static_cast<double>(series_interval_ns_) / 1e9}, {"bps", series}}},
        };
    }
    return {
        {"discipline", discipline_},
        {"link_rate_bps", link_rate_bps_},
        {"duration_s", duration_s},
        {"totals",
         {{"rx_packets", rx_packets_},
          {"tx_packets", tx_packets_},
          {"dropped", dropped},
          {"queued_at_end", queued_at_end_},
          {"malformed", malformed_},
          {"malformed_by_reason", malformed_by_reason_}}},
        {"classes", classes},
        {"fairness",
         {{"class", classes_.at(bulk_class_).name},
          {"jain_flows", round3(jain_flows())},
          {"jain_jobs", round3(jain_jobs())},
          {"flows", bulk_flows_.members.size()},
          {"jobs", bulk_jobs_.members.size()}}},
    };
}

std::string format_comparison(const std::vector<const ReplayReport*>& reports) {
    std::string out;
    char line[256];
    std::snprintf(line, sizeof line, "%-10s %-10s %10s %10s %8s %8s %10s %10s %10s %10s\n",
                  "discipline", "class", "rx", "tx", "drops", "ecn", "Gbit/s", "p50 us",
                  "p99 us", "p999 us");
    out += line;
    for (const ReplayReport* r : reports) {
        const nlohmann::json j = r->to_json();
        for (size_t i = 0; i < r->classes().size(); ++i) {
            const ClassStats& c = r->classes()[i];
            const LatencySummary l = r->latency(i);
            std::snprintf(line, sizeof line,
                          "%-10s %-10s %10llu %10llu %8llu %8llu %10.3f %10.1f %10.1f %10.1f\n",
                          r->discipline().c_str(), c.name.c_str(),
                          static_cast<unsigned long long>(c.rx_packets),
                          static_cast<unsigned long long>(c.tx_packets),
                          static_cast<unsigned long long>(c.drops),
                          static_cast<unsigned long long>(c.ecn_marked),
                          j["classes"][c.name]["throughput_bps"].get<double>() / 1e9, l.p50_us,
                          l.p99_us, l.p999_us);
            out += line;
        }
        std::snprintf(line, sizeof line,
                      "%-10s %-10s jain(flows) %.3f  jain(jobs) %.3f  rx %llu = tx %llu + dropped "
                      "%llu + queued %llu\n",
                      r->discipline().c_str(), "fairness", r->jain_flows(), r->jain_jobs(),
                      static_cast<unsigned long long>(r->rx_packets()),
                      static_cast<unsigned long long>(r->tx_packets()),
                      static_cast<unsigned long long>(r->dropped_packets()),
                      static_cast<unsigned long long>(r->queued_at_end()));
        out += line;
    }
    return out;
}

}  // namespace twinlane::replay
