#include "replay/replay_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "replay/virtual_link.h"

namespace twinlane::replay {
namespace {

double percentile_us(std::vector<uint64_t>& sorted, double q) {
    if (sorted.empty()) return 0;
    // Nearest-rank: the smallest value with at least q of the samples at or below it.
    const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
    return static_cast<double>(sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1]) / 1e3;
}

// Sorts latencies (ns) ascending: LSD radix sort on 11-bit digits, only as many passes as the
// largest value needs (3 up to 8.6 s). Same result as std::sort, without its n log n
// comparisons. measured (perf, replay_bench finish): std::sort was ~18% of a run's time.
void radix_sort(std::vector<uint64_t>& values) {
    if (values.size() < 2) return;
    constexpr unsigned kBits = 11;
    constexpr size_t kBuckets = size_t{1} << kBits;
    const uint64_t max = *std::max_element(values.begin(), values.end());
    std::vector<uint64_t> scratch(values.size());
    std::vector<size_t> counts(kBuckets);
    for (unsigned shift = 0; shift < 64 && (max >> shift) != 0; shift += kBits) {
        std::fill(counts.begin(), counts.end(), 0);
        for (uint64_t v : values)
            ++counts[(v >> shift) & (kBuckets - 1)];
        size_t sum = 0;
        for (size_t& c : counts) {
            const size_t n = c;
            c = sum;
            sum += n;
        }
        for (uint64_t v : values)
            scratch[counts[(v >> shift) & (kBuckets - 1)]++] = v;
        values.swap(scratch);
    }
}

double round3(double v) {
    return std::round(v * 1000.0) / 1000.0;
}

}  // namespace

ReplayReport::ReplayReport(std::string discipline, uint64_t link_rate_bps,
                           std::vector<std::string> classes, uint8_t bulk_class,
                           uint64_t series_interval_ns)
    : discipline_(std::move(discipline)),
      link_rate_bps_(link_rate_bps),
      bulk_class_(bulk_class),
      series_interval_ns_(series_interval_ns) {
    for (auto& name : classes) {
        ClassStats c;
        c.name = std::move(name);
        classes_.push_back(std::move(c));
    }
}

std::optional<double> ReplayReport::Group::jain() const {
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
    if (n == 0) return std::nullopt;
    return sum_sq == 0 ? 0 : sum * sum / (static_cast<double>(n) * sum_sq);
}

void ReplayReport::on_drop(uint8_t class_id, const char* reason, uint64_t now_ns, Ticket ticket) {
    if (ticket.flow != nullptr) bulk_flows_.leave(*ticket.flow);
    if (ticket.job != nullptr) bulk_jobs_.leave(*ticket.job);
    auto counted = std::find_if(drops_by_reason_ptr_.begin(), drops_by_reason_ptr_.end(),
                                [reason](const auto& e) { return e.first == reason; });
    if (counted == drops_by_reason_ptr_.end())
        counted = drops_by_reason_ptr_.insert(drops_by_reason_ptr_.end(), {reason, 0});
    ++counted->second;
    ClassStats& c = classes_.at(class_id);
    ++c.drops;
    leave_queue(c, now_ns);
}

std::map<std::string, uint64_t> ReplayReport::dropped_by_reason() const {
    std::map<std::string, uint64_t> by_name;
    for (const auto& [reason, n] : drops_by_reason_ptr_)
        by_name[reason] += n;
    return by_name;
}

void ReplayReport::on_class_move(uint8_t from, uint8_t to, uint32_t packets, uint64_t bytes,
                                 uint64_t now_ns) {
    if (packets == 0 || from == to) return;
    ClassStats& a = classes_.at(from);
    ClassStats& b = classes_.at(to);
    a.moved_out_packets += packets;
    a.moved_out_bytes += bytes;
    b.moved_in_packets += packets;
    b.moved_in_bytes += bytes;
    // The packets are queued in `to` now: its backlogged period may start, `from`'s end.
    if (b.queued == 0) start_backlog(b, now_ns);
    b.queued += packets;
    if (a.queued > packets) {
        a.queued -= packets;
    } else if (a.queued != 0) {
        a.queued = 1;
        leave_queue(a, now_ns);
    }
}

SloReport SloReport::from(const slo::SloGovernor& governor) {
    SloReport out;
    for (size_t i = 0; i < governor.class_count(); ++i)
        out.classes.push_back({governor.spec().classes[i], governor.stats(i), governor.windows(i)});
    out.events = governor.kept_events();
    return out;
}

void ReplayReport::on_finish(uint64_t queued_at_end, uint64_t end_ns) {
    queued_at_end_ = queued_at_end;
    end_ns_ = end_ns;
    // Classes still backlogged: the others' bytes of the open period count (its time does
    // not, as before: backlogged_ns adds whole periods only).
    for (auto& c : classes_)
        if (c.queued != 0) settle_others(c);
    for (auto& c : classes_)
        radix_sort(c.latencies_ns);
}

uint64_t ReplayReport::dropped_packets() const {
    uint64_t total = 0;
    for (const auto& [reason, n] : drops_by_reason_ptr_)
        total += n;
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
    return static_cast<double>(c.backlogged_wire_bytes) * 8e9 /
           static_cast<double>(c.backlogged_ns);
}

double ReplayReport::backlogged_share_of_left_capacity(size_t class_id) const {
    const ClassStats& c = classes_.at(class_id);
    const double capacity_bytes =
        static_cast<double>(c.backlogged_ns) * static_cast<double>(link_rate_bps_) / 8e9;
    const double left = capacity_bytes - static_cast<double>(c.backlogged_others_wire_bytes);
    if (left <= 0) return 0;
    return static_cast<double>(c.backlogged_wire_bytes) / left;
}

std::optional<double> ReplayReport::jain_flows() const {
    return bulk_flows_.jain();
}
std::optional<double> ReplayReport::jain_jobs() const {
    return bulk_jobs_.jain();
}

namespace {
nlohmann::json json_or_null(std::optional<double> v) {
    return v ? nlohmann::json(round3(*v)) : nlohmann::json(nullptr);
}
std::string text_or_na(std::optional<double> v) {
    char text[16];
    if (!v) return "n/a";
    std::snprintf(text, sizeof text, "%.3f", *v);
    return text;
}
}  // namespace

nlohmann::json ReplayReport::to_json() const {
    using nlohmann::json;
    const uint64_t start = first_arrival_ns_ == UINT64_MAX ? 0 : first_arrival_ns_;
    const double duration_s = static_cast<double>(end_ns_ - std::min(start, end_ns_)) / 1e9;
    json dropped = json::object();
    for (const auto& [reason, n] : dropped_by_reason())
        dropped[reason] = n;
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
            series.push_back(static_cast<double>(b) * 8e9 /
                             static_cast<double>(series_interval_ns_));
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
        if (!class_wire_bytes_.empty()) {
            json by_class = json::object();
            for (size_t k = 0; k < classes_.size(); ++k)
                by_class[classes_[k].name] = c.backlogged_class_wire_bytes[k];
            classes[c.name]["backlogged"]["wire_bytes_by_class"] = std::move(by_class);
        }
        if (slo_) {
            classes[c.name]["moved"] = {{"in_packets", c.moved_in_packets},
                                        {"in_bytes", c.moved_in_bytes},
                                        {"out_packets", c.moved_out_packets},
                                        {"out_bytes", c.moved_out_bytes}};
        }
    }
    json out = {
        {"discipline", discipline_},
        {"link_rate_bps", link_rate_bps_},
        {"duration_s", duration_s},
        {"totals",
         {{"rx_packets", rx_packets_},
          {"tx_packets", tx_packets_},
          {"dropped", dropped},
          {"queued_at_end", queued_at_end_},
          {"malformed", malformed_},
          {"malformed_by_reason", malformed_by_reason_},
          {"segmented_records", split_records_},
          {"segmented_packets", split_packets_},
          {"records_back_in_time", records_back_in_time_},
          {"max_back_in_time_us", round3(static_cast<double>(max_back_in_time_ns_) / 1e3)}}},
        {"classes", classes},
        {"fairness",
         {{"class", classes_.at(bulk_class_).name},
          {"jain_flows", json_or_null(jain_flows())},
          {"jain_jobs", json_or_null(jain_jobs())},
          {"flows", bulk_flows_.members.size()},
          {"jobs", bulk_jobs_.members.size()}}},
    };
    if (slo_) out["slo"] = slo_json();
    // Only when the replay modelled PFC: a report without it is what it always was.
    if (!pfc_.is_null()) out["pfc"] = pfc_;
    return out;
}

nlohmann::json ReplayReport::slo_json() const {
    using nlohmann::json;
    const uint64_t start = first_arrival_ns_ == UINT64_MAX ? 0 : first_arrival_ns_;
    const auto since = [&](uint64_t ns) {
        return static_cast<double>(ns - std::min(ns, start)) / 1e9;
    };
    json classes = json::object();
    for (const SloReport::Class& c : slo_->classes) {
        const slo::SloClassSpec& s = c.spec;
        json actions = json::array();
        if (s.adapt_cap) actions.push_back("adapt_cap");
        if (s.downgrade) actions.push_back("downgrade");
        if (actions.empty()) actions.push_back("alert");
        json objective = {{"window_s", static_cast<double>(s.window_ns) / 1e9},
                          {"actions", actions}};
        if (s.has_latency) {
            objective["percentile"] = slo::to_string(s.percentile);
            objective["target_us"] = round3(static_cast<double>(s.target_ns) / 1e3);
        }
        if (s.min_share_ppm != 0)
            objective["min_share"] = static_cast<double>(s.min_share_ppm) / 1e6;
        if (s.adapt_cap)
            objective["adapt_cap"] = {{"min_bps", s.cap_min_bps}, {"max_bps", s.cap_max_bps}};
        if (s.downgrade)
            objective["downgrade"] = {{"to", s.downgrade_class_name},
                                      {"quiet_s", static_cast<double>(s.quiet_ns) / 1e9}};
        const slo::SloClassStats& st = c.stats;
        json series = {{"t_s", json::array()},           {"packets", json::array()},
                       {"percentile_us", json::array()}, {"max_us", json::array()},
                       {"met", json::array()},           {"bytes_in", json::array()},
                       {"bytes_out", json::array()},     {"downgraded_bytes", json::array()},
                       {"cap_bps", json::array()},       {"downgraded_flows", json::array()}};
        for (const slo::WindowRecord& w : c.windows) {
            series["t_s"].push_back(since(w.start_ns));
            series["packets"].push_back(w.packets);
            series["percentile_us"].push_back(round3(static_cast<double>(w.percentile_ns) / 1e3));
            series["max_us"].push_back(round3(static_cast<double>(w.max_ns) / 1e3));
            series["met"].push_back(w.idle ? json(nullptr) : json(w.met));
            series["bytes_in"].push_back(w.bytes_in);
            series["bytes_out"].push_back(w.bytes_out);
            series["downgraded_bytes"].push_back(w.downgraded_bytes);
            series["cap_bps"].push_back(w.cap_bps);
            series["downgraded_flows"].push_back(w.downgraded_flows);
        }
        json entry = {
            {"objective", objective},
            {"windows",
             {{"met", st.windows_met},
              {"missed", st.windows_missed},
              {"idle", st.windows_idle},
              {"attainment", round3(st.attainment() * 100.0) / 100.0}}},
            {"worst_window",
             st.windows_met + st.windows_missed == 0
                 ? json(nullptr)
                 : json({{"t_s", since(st.worst_window_start_ns)},
                         {"percentile_us",
                          round3(static_cast<double>(st.worst_percentile_ns) / 1e3)}})},
            {"cap",
             {{"final_bps", st.cap_bps},
              {"changes", st.cap_changes},
              {"floor_bps", st.cap_floor_bps}}},
            {"downgrade",
             {{"flows", st.downgrades},
              {"returned_flows", st.returns},
              {"still_downgraded", st.downgraded_flows},
              {"packets", st.downgraded_packets},
              {"bytes", st.downgraded_bytes},
              {"returned_packets", st.returned_packets},
              {"returned_bytes", st.returned_bytes}}},
            {"pressure_events", st.pressure_events},
            {"series", series},
        };
        if (s.min_share_ppm != 0)
            entry["min_share"] = {{"met", st.share_windows_met},
                                  {"missed", st.share_windows_missed}};
        classes[s.class_name] = std::move(entry);
    }
    json events = json::array();
    for (const slo::SloEvent& e : slo_->events) {
        const slo::SloClassSpec& s = slo_->classes.at(e.class_index).spec;
        events.push_back({{"t_s", since(e.time_ns)},
                          {"class", s.class_name},
                          {"kind", slo::to_string(e.kind)},
                          {"reason", slo::to_string(e.reason)},
                          {"cap_bps", e.new_cap_bps},
                          {"flows", e.flows},
                          {"bytes", e.bytes},
                          {"text", slo::describe(e, s)}});
    }
    return {{"classes", classes}, {"events", events}};
}

size_t ReplayReport::coarsen_series(uint64_t departure_ns) {
    size_t interval = kMaxSeriesIntervals;
    while (interval >= kMaxSeriesIntervals) {
        series_interval_ns_ *= 2;
        for (ClassStats& c : classes_) {
            std::vector<uint64_t>& bytes = c.throughput_bytes;
            for (size_t i = 0; i < bytes.size(); i += 2)
                bytes[i / 2] = bytes[i] + (i + 1 < bytes.size() ? bytes[i + 1] : 0);
            bytes.resize((bytes.size() + 1) / 2);
        }
        interval_end_ns_ = 0;  // the cached interval was in the old unit
        interval = series_interval(departure_ns);
    }
    return interval;
}

std::string format_comparison(const std::vector<const ReplayReport*>& reports) {
    std::string out;
    char line[256];
    std::snprintf(line, sizeof line, "%-10s %-10s %10s %10s %8s %8s %10s %10s %10s %10s\n",
                  "discipline", "class", "rx", "tx", "drops", "ecn", "Gbit/s", "p50 us", "p99 us",
                  "p999 us");
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
                      "%-10s %-10s jain(flows) %s  jain(jobs) %s  rx %llu = tx %llu + dropped "
                      "%llu + queued %llu\n",
                      r->discipline().c_str(), "fairness", text_or_na(r->jain_flows()).c_str(),
                      text_or_na(r->jain_jobs()).c_str(),
                      static_cast<unsigned long long>(r->rx_packets()),
                      static_cast<unsigned long long>(r->tx_packets()),
                      static_cast<unsigned long long>(r->dropped_packets()),
                      static_cast<unsigned long long>(r->queued_at_end()));
        out += line;
        if (r->slo()) {
            for (const SloReport::Class& c : r->slo()->classes) {
                const slo::SloClassStats& st = c.stats;
                std::string objective;
                if (c.spec.has_latency) {
                    std::snprintf(line, sizeof line, "%s<=%.0fus",
                                  slo::to_string(c.spec.percentile),
                                  static_cast<double>(c.spec.target_ns) / 1e3);
                    objective = line;
                }
                if (c.spec.min_share_ppm != 0) {
                    std::snprintf(line, sizeof line, "%sshare>=%.1f%%",
                                  objective.empty() ? "" : ",",
                                  static_cast<double>(c.spec.min_share_ppm) / 1e4);
                    objective += line;
                }
                std::snprintf(line, sizeof line,
                              "%-10s slo %-10s %s per %.3g ms: %llu/%llu windows met (%.1f%%)",
                              r->discipline().c_str(), c.spec.class_name.c_str(), objective.c_str(),
                              static_cast<double>(c.spec.window_ns) / 1e6,
                              static_cast<unsigned long long>(st.windows_met),
                              static_cast<unsigned long long>(st.windows_met + st.windows_missed),
                              st.attainment() * 100.0);
                std::string text = line;
                if (c.spec.has_latency && st.windows_met + st.windows_missed != 0) {
                    std::snprintf(line, sizeof line, ", worst %.1f us",
                                  static_cast<double>(st.worst_percentile_ns) / 1e3);
                    text += line;
                }
                if (c.spec.adapt_cap) {
                    std::snprintf(line, sizeof line, "; cap %llu changes, ends at %.2f Gbit/s",
                                  static_cast<unsigned long long>(st.cap_changes),
                                  static_cast<double>(st.cap_bps) / 1e9);
                    text += line;
                }
                if (c.spec.downgrade) {
                    std::snprintf(line, sizeof line,
                                  "; %llu flows downgraded to %s (%.3f MB), %llu returned",
                                  static_cast<unsigned long long>(st.downgrades),
                                  c.spec.downgrade_class_name.c_str(),
                                  static_cast<double>(st.downgraded_bytes) / 1e6,
                                  static_cast<unsigned long long>(st.returns));
                    text += line;
                }
                out += text + "\n";
            }
        }
        for (const auto& p : r->pfc()) {
            // One line per priority; with several PFC ingress ports, their senders on a line
            // each (their times add up to more than the run).
            const nlohmann::json& ingress = p["ingress"];
            const auto senders = [&](const nlohmann::json& s) {
                std::snprintf(line, sizeof line,
                              "pauses sent %llu, sender held %.3f ms (%llu packets, up to %.1f us "
                              "later)",
                              s["pause_frames_sent"].get<unsigned long long>(),
                              s["sender_paused_ms"].get<double>(),
                              s["packets_held"].get<unsigned long long>(),
                              s["max_sender_delay_us"].get<double>());
                return std::string(line);
            };
            const std::string own = ingress.size() > 1
                                        ? std::to_string(ingress.size()) + " PFC ports below"
                                        : senders(p);
            std::snprintf(line, sizeof line,
                          "%-10s %-10s priority %d: %s, pauses received %llu, egress held %.3f "
                          "ms, storms %llu\n",
                          r->discipline().c_str(), "pfc", p["priority"].get<int>(), own.c_str(),
                          p["pause_frames_received"].get<unsigned long long>(),
                          p["egress_paused_ms"].get<double>(),
                          p["storms"].get<unsigned long long>());
            out += line;
            for (size_t k = 0; ingress.size() > 1 && k < ingress.size(); ++k) {
                const std::string part = senders(ingress[k]);
                std::snprintf(line, sizeof line, "%-10s %-10s priority %d from '%s': %s\n",
                              r->discipline().c_str(), "pfc", p["priority"].get<int>(),
                              ingress[k]["port"].get<std::string>().c_str(), part.c_str());
                out += line;
            }
        }
        if (r->split_records() != 0) {
            std::snprintf(line, sizeof line,
                          "%-10s %-10s %llu records above the port's largest frame replayed as "
                          "%llu wire segments (TSO/GRO capture)\n",
                          r->discipline().c_str(), "segmented",
                          static_cast<unsigned long long>(r->split_records()),
                          static_cast<unsigned long long>(r->split_packets()));
            out += line;
        }
    }
    return out;
}

}  // namespace twinlane::replay
