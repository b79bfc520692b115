#include "dataplane/run_report.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "control/stats_json.h"

namespace twinlane::dataplane {
namespace {

double per_packet(uint64_t cycles, uint64_t packets) {
    return packets == 0 ? 0.0 : static_cast<double>(cycles) / static_cast<double>(packets);
}

// The class's non-empty latency buckets as [upper bound ns, packets], ascending; the highest
// bound is capped at the exact max, as the percentiles are.
nlohmann::json latency_histogram_json(const CounterSnapshot::Lane& lane) {
    nlohmann::json out = nlohmann::json::array();
    for (uint32_t b = 0; b < kLatencyBuckets; ++b) {
        if (lane.latency_buckets[b] == 0) continue;
        out.push_back({std::min(LatencyLayout::bucket_upper_ns(b), lane.latency_max_ns),
                       lane.latency_buckets[b]});
    }
    return out;
}

// Per port and priority with any PFC activity: frames and paused time each way, storms.
nlohmann::json pfc_json(const RunReport& r) {
    nlohmann::json out = nlohmann::json::array();
    const CounterSnapshot& c = r.counters;
    for (size_t p = 0; p < c.pfc.size(); ++p) {
        const CounterSnapshot::Pfc& s = c.pfc[p];
        for (uint32_t q = 0; q < 8; ++q) {
            if (s.tx_frames[q] + s.rx_frames[q] + s.storms[q] == 0) continue;
            out.push_back({{"port", r.port_names[p]},
                           {"priority", q},
                           {"tx_pause_frames", s.tx_frames[q]},
                           {"tx_pause_ms", static_cast<double>(s.tx_pause_ns[q]) / 1e6},
                           {"rx_pause_frames", s.rx_frames[q]},
                           {"rx_pause_ms", static_cast<double>(s.rx_pause_ns[q]) / 1e6},
                           {"storms", s.storms[q]}});
        }
    }
    return out;
}

// Per lcore: its role, how long its busy passes took (the loop's share of RX->TX latency) and
// the CPU time other threads took from it.
nlohmann::json loops_json(const RunReport& r) {
    nlohmann::json out = nlohmann::json::array();
    for (const RunReport::Lcore& l : r.lcores) {
        const LoopSnapshot& s = l.loop;
        nlohmann::json entry = {{"lcore", l.id},
                                {"role", l.role},
                                {"busy_passes", s.busy_passes},
                                {"pass_p50_ns", s.percentile_ns(kP50Ppm)},
                                {"pass_p99_ns", s.percentile_ns(kP99Ppm)},
                                {"pass_p999_ns", s.percentile_ns(kP999Ppm)},
                                {"pass_max_ns", s.max_ns},
                                {"poll_gap_max_ns", s.poll_gap_max_ns}};
        if (s.cpu) add_thread_cpu(entry, *s.cpu);
        out.push_back(std::move(entry));
    }
    return out;
}

nlohmann::json to_json(const RunReport& r) {
    const CounterSnapshot& c = r.counters;
    nlohmann::json drops = nlohmann::json::object();
    for (uint32_t d = 0; d < kDropCauseCount; ++d)
        drops[to_string(static_cast<DropCause>(d))] = c.drops[d];
    nlohmann::json roles = nlohmann::json::array();
    for (const RunReport::Lcore& l : r.lcores)
        roles.push_back(l.role);
    nlohmann::json ports = nlohmann::json::array();
    for (size_t p = 0; p < c.ports.size(); ++p) {
        const auto& s = c.ports[p];
        nlohmann::json nic = nullptr;
        if (p < r.port_nic.size() && r.port_nic[p].known) {
            const NicCounters& n = r.port_nic[p];
            nic = {{"rx_missed", n.rx_missed},
                   {"rx_errors", n.rx_errors},
                   {"rx_nombuf", n.rx_nombuf},
                   {"tx_errors", n.tx_errors}};
        }
        ports.push_back({{"name", r.port_names[p]},
                         {"device", r.port_devices[p]},
                         {"rx_packets", s.rx_packets},
                         {"rx_bytes", s.rx_bytes},
                         {"tx_packets", s.tx_packets},
                         {"tx_bytes", s.tx_bytes},
                         {"tx_refused", s.tx_refused},
                         {"tx_link_bound_ns", s.tx_link_bound_ns},
                         {"nic", nic}});
    }
    nlohmann::json classes = nlohmann::json::array();
    for (size_t l = 0; l < c.lanes.size(); ++l) {
        const auto& s = c.lanes[l];
        classes.push_back({{"name", r.class_names[l]},
                           {"rx_packets", s.rx_packets},
                           {"rx_bytes", s.rx_bytes},
                           {"tx_packets", s.tx_packets},
                           {"tx_bytes", s.tx_bytes},
                           {"dropped", s.dropped},
                           {"latency_mean_ns", s.latency_mean_ns()},
                           {"latency_p50_ns", s.latency_percentile_ns(kP50Ppm)},
                           {"latency_p99_ns", s.latency_percentile_ns(kP99Ppm)},
                           {"latency_p999_ns", s.latency_percentile_ns(kP999Ppm)},
                           {"latency_max_ns", s.latency_max_ns},
                           {"latency_histogram", latency_histogram_json(s)}});
    }
    const auto& st = c.stages;
    return {{"mode", "policy"},
            {"elapsed_s", r.elapsed_s},
            {"rx_packets", c.rx_packets()},
            {"rx_bytes", c.rx_bytes()},
            {"tx_packets", c.tx_packets()},
            {"tx_bytes", c.tx_bytes()},
            {"dropped", drops},
            {"queued", r.queued},
            {"ports", ports},
            {"classes", classes},
            {"pfc", pfc_json(r)},
            {"classifier", control::classifier_counters_to_json(r.classifier)},
            {"lcores", roles},
            {"loops", loops_json(r)},
            {"cycles_per_packet",
             {{"rx_classify", per_packet(st[0], st[1])},
              {"sched_enqueue", per_packet(st[2], st[3])},
              {"sched_dequeue_tx", per_packet(st[4], st[5])}}},
            {"tsc_hz", r.tsc_hz},
            {"mbufs",
             {{"in_use_start", r.mbufs_in_use_start},
              {"in_use_end", r.mbufs_in_use_end},
              {"held_by_af_xdp", r.mbufs_held_by_af_xdp}}}};
}

void row(const char* label, uint64_t packets, uint64_t bytes) {
    std::printf("  %-28s %14llu packets %16llu bytes\n", label,
                static_cast<unsigned long long>(packets), static_cast<unsigned long long>(bytes));
}

}  // namespace

void print_report(const RunReport& r, bool json) {
    if (json) {
        std::printf("%s\n", to_json(r).dump().c_str());
        std::fflush(stdout);
        return;
    }
    const CounterSnapshot& c = r.counters;
    std::printf("twinlane run: %.3f s\n", r.elapsed_s);
    row("received", c.rx_packets(), c.rx_bytes());
    row("transmitted", c.tx_packets(), c.tx_bytes());
    for (uint32_t d = 0; d < kDropCauseCount; ++d) {
        if (c.drops[d] == 0) continue;
        const std::string label = std::string("dropped: ") + to_string(static_cast<DropCause>(d));
        std::printf("  %-28s %14llu packets\n", label.c_str(),
                    static_cast<unsigned long long>(c.drops[d]));
    }
    std::printf("  %-28s %14llu packets\n", "still queued",
                static_cast<unsigned long long>(r.queued));
    // Counted whatever the policy did with them (dropped above, or sent in the default class);
    // the same totals and reason names as the JSON report.
    const nlohmann::json classified = control::classifier_counters_to_json(r.classifier);
    if (const uint64_t malformed = classified["malformed_packets"]; malformed != 0) {
        std::string reasons;
        for (const auto& [reason, packets] : classified["malformed"].items()) {
            if (packets.get<uint64_t>() == 0) continue;
            reasons += (reasons.empty() ? "" : ", ") + reason + " " + packets.dump();
        }
        std::printf("  %-28s %14llu packets (%s)\n", "malformed, by reason",
                    static_cast<unsigned long long>(malformed), reasons.c_str());
    }
    std::printf("\n  %-12s %-28s %12s %12s %10s %12s %11s\n", "port", "device", "rx", "tx",
                "refused", "NIC lost rx", "link-bound");
    for (size_t p = 0; p < c.ports.size(); ++p) {
        // Lost before twinlane saw them (missed + errors + no mbuf), as the PMD counts them.
        std::string lost = "n/a";
        if (p < r.port_nic.size() && r.port_nic[p].known) {
            const NicCounters& n = r.port_nic[p];
            lost = std::to_string(n.rx_missed + n.rx_errors + n.rx_nombuf);
        }
        // Share of the run the port's rate held back queued packets.
        const double bound_pct =
            r.elapsed_s > 0 ? static_cast<double>(c.ports[p].tx_link_bound_ns) / 1e7 / r.elapsed_s
                            : 0.0;
        std::printf(
            "  %-12s %-28.28s %12llu %12llu %10llu %12s %10.1f%%\n", r.port_names[p].c_str(),
            r.port_devices[p].c_str(), static_cast<unsigned long long>(c.ports[p].rx_packets),
            static_cast<unsigned long long>(c.ports[p].tx_packets),
            static_cast<unsigned long long>(c.ports[p].tx_refused), lost.c_str(), bound_pct);
    }
    // Latency: RX burst -> accepted by tx_burst.
    std::printf("\n  %-12s %12s %12s %10s %10s %10s %10s %10s %10s\n", "class", "rx", "tx",
                "dropped", "mean us", "p50 us", "p99 us", "p99.9 us", "max us");
    const auto us = [](uint64_t ns) { return static_cast<double>(ns) / 1e3; };
    for (size_t l = 0; l < c.lanes.size(); ++l) {
        const auto& s = c.lanes[l];
        std::printf("  %-12s %12llu %12llu %10llu %10.1f %10.1f %10.1f %10.1f %10.1f\n",
                    r.class_names[l].c_str(), static_cast<unsigned long long>(s.rx_packets),
                    static_cast<unsigned long long>(s.tx_packets),
                    static_cast<unsigned long long>(s.dropped), us(s.latency_mean_ns()),
                    us(s.latency_percentile_ns(kP50Ppm)), us(s.latency_percentile_ns(kP99Ppm)),
                    us(s.latency_percentile_ns(kP999Ppm)), us(s.latency_max_ns));
    }
    const nlohmann::json pfc = pfc_json(r);
    if (!pfc.empty()) {
        std::printf("\n  %-12s %8s %12s %14s %12s %14s %8s\n", "pfc port", "priority",
                    "pauses sent", "peer held ms", "pauses recv", "held ms", "storms");
        for (const auto& e : pfc) {
            std::printf("  %-12s %8d %12llu %14.3f %12llu %14.3f %8llu\n",
                        e["port"].get<std::string>().c_str(), e["priority"].get<int>(),
                        e["tx_pause_frames"].get<unsigned long long>(),
                        e["tx_pause_ms"].get<double>(),
                        e["rx_pause_frames"].get<unsigned long long>(),
                        e["rx_pause_ms"].get<double>(), e["storms"].get<unsigned long long>());
        }
    }
    const auto& st = c.stages;
    std::printf("\n  cycles/packet: rx+classify %.1f, sched enqueue %.1f, dequeue+tx %.1f\n",
                per_packet(st[0], st[1]), per_packet(st[2], st[3]), per_packet(st[4], st[5]));
    for (const RunReport::Lcore& l : r.lcores) {
        std::printf("  %s\n", l.role.c_str());
        if (l.loop.busy_passes == 0) continue;
        const LoopSnapshot& s = l.loop;
        std::printf(
            "    busy passes %llu: p50 %.1f us, p99 %.1f, p99.9 %.1f, max %.1f; inputs "
            "unpolled at most %.1f us\n",
            static_cast<unsigned long long>(s.busy_passes), us(s.percentile_ns(kP50Ppm)),
            us(s.percentile_ns(kP99Ppm)), us(s.percentile_ns(kP999Ppm)), us(s.max_ns),
            us(s.poll_gap_max_ns));
        if (s.cpu)
            std::printf(
                "    its CPU taken by other threads: %.3f ms waiting to run (of %.3f ms "
                "run), %llu preemptions\n",
                static_cast<double>(s.cpu->runqueue_wait_ns) / 1e6,
                static_cast<double>(s.cpu->run_ns) / 1e6,
                static_cast<unsigned long long>(s.cpu->involuntary_switches));
    }
    std::printf("  mbufs in use: %llu at start, %llu at end",
                static_cast<unsigned long long>(r.mbufs_in_use_start),
                static_cast<unsigned long long>(r.mbufs_in_use_end));
    if (r.mbufs_held_by_af_xdp != 0)
        std::printf(" (af_xdp rings may keep up to %llu)",
                    static_cast<unsigned long long>(r.mbufs_held_by_af_xdp));
    std::printf("\n");
    std::fflush(stdout);
}

}  // namespace twinlane::dataplane
