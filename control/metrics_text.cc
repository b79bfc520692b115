#include "control/metrics_text.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string_view>
#include <utility>
#include <vector>

#include "sched/counters.h"

namespace twinlane::control {
namespace {

using nlohmann::json;
using Labels = std::vector<std::pair<std::string, std::string>>;

std::string escape_label(std::string_view value) {
    std::string out;
    out.reserve(value.size());
    for (char c : value) {
        if (c == '\\') {
            out += "\\\\";
        } else if (c == '"') {
            out += "\\\"";
        } else if (c == '\n') {
            out += "\\n";
        } else {
            out += c;
        }
    }
    return out;
}

// Integer nanoseconds as exact decimal seconds ("0.000000255", "549.755813887").
std::string seconds_text(uint64_t ns) {
    std::string text = std::to_string(ns / 1'000'000'000) + ".";
    char fraction[16];
    std::snprintf(fraction, sizeof fraction, "%09llu",
                  static_cast<unsigned long long>(ns % 1'000'000'000));
    text += fraction;
    while (text.back() == '0')
        text.pop_back();
    if (text.back() == '.') text.pop_back();
    return text;
}

std::string number_text(const json& value) {
    if (value.is_number_unsigned()) return std::to_string(value.get<uint64_t>());
    if (value.is_number_integer()) return std::to_string(value.get<int64_t>());
    if (value.is_number_float()) {
        char text[32];
        std::snprintf(text, sizeof text, "%.17g", value.get<double>());
        return text;
    }
    if (value.is_boolean()) return value.get<bool>() ? "1" : "0";
    return "NaN";
}

// Families in first-use order, samples grouped under their family's HELP/TYPE.
class Exposition {
  public:
    void sample(const std::string& family, const char* type, const char* help,
                const std::string& name_suffix, const Labels& labels, const std::string& value) {
        auto [it, inserted] = index_.emplace(family, families_.size());
        if (inserted) families_.push_back({family, type, help, {}});
        std::string line = family + name_suffix;
        if (!labels.empty()) {
            line += '{';
            for (size_t i = 0; i < labels.size(); ++i) {
                if (i) line += ',';
                line += labels[i].first + "=\"" + escape_label(labels[i].second) + '"';
            }
            line += '}';
        }
        families_[it->second].samples.push_back(line + ' ' + value);
    }
    void counter(const std::string& name, const char* help, const Labels& labels,
                 const json& value) {
        sample(name, "counter", help, "", labels, number_text(value));
    }
    void gauge(const std::string& name, const char* help, const Labels& labels, const json& value) {
        sample(name, "gauge", help, "", labels, number_text(value));
    }
    // A duration in integer nanoseconds, exported as exact seconds.
    void seconds(const std::string& name, const char* type, const char* help, const Labels& labels,
                 uint64_t ns) {
        sample(name, type, help, "", labels, seconds_text(ns));
    }
    std::string text() const {
        std::string out;
        for (const Family& family : families_) {
            out += "# HELP " + family.name + ' ' + family.help + '\n';
            out += "# TYPE " + family.name + ' ' + family.type + '\n';
            for (const std::string& line : family.samples)
                out += line + '\n';
        }
        return out;
    }

  private:
    struct Family {
        std::string name;
        const char* type;
        const char* help;
        std::vector<std::string> samples;
    };
    std::map<std::string, size_t> index_;
    std::vector<Family> families_;
};

const json& field(const json& object, const char* key) {
    static const json kZero = 0;
    const auto it = object.find(key);
    return it == object.end() ? kZero : *it;
}

std::string text_of(const json& object, const char* key) {
    const auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

// A non-negative integer, else 0 (nlohmann stores small literals as signed).
uint64_t u64_of(const json& value) {
    if (value.is_number_unsigned()) return value.get<uint64_t>();
    if (value.is_number_integer() && value.get<int64_t>() > 0) return value.get<uint64_t>();
    return 0;
}

Labels with(Labels labels, const char* name, std::string value) {
    labels.emplace_back(name, std::move(value));
    return labels;
}

// The qdisc-style set, for a class (summed over ports) or one scheduler node. PREFIX is
// twinlane_class or twinlane_queue.
void add_queue_counters(Exposition& out, const std::string& prefix, const Labels& labels,
                        const json& counters) {
    out.counter(prefix + "_enqueued_packets_total", "Packets admitted to the queue.", labels,
                field(counters, "packets_in"));
    out.counter(prefix + "_enqueued_bytes_total", "Bytes admitted to the queue.", labels,
                field(counters, "bytes_in"));
    out.counter(prefix + "_packets_total", "Packets sent (dequeued towards the port).", labels,
                field(counters, "packets_out"));
    out.counter(prefix + "_bytes_total", "Bytes sent (dequeued towards the port).", labels,
                field(counters, "bytes_out"));
    const json& drops = field(counters, "drops");
    if (drops.is_object()) {
        for (const auto& [reason, value] : drops.items()) {
            out.counter(prefix + "_drops_total", "Packets dropped, by reason.",
                        with(labels, "reason", reason), value);
        }
    }
    const json& drop_bytes = field(counters, "drop_bytes");
    if (drop_bytes.is_object()) {
        for (const auto& [reason, value] : drop_bytes.items()) {
            out.counter(prefix + "_dropped_bytes_total", "Bytes dropped, by reason.",
                        with(labels, "reason", reason), value);
        }
    }
    // Linux's red qdisc counts an overlimit for every packet over its thresholds, marked or
    // dropped; twinlane's AQMs are RED (at enqueue) and CoDel (at dequeue).
    const uint64_t overlimits =
        u64_of(field(counters, "ecn_marked_red")) + u64_of(field(counters, "ecn_marked_codel")) +
        (drops.is_object() ? u64_of(field(drops, "red_early")) + u64_of(field(drops, "codel")) : 0);
    out.counter(prefix + "_overlimits_total",
                "Packets the AQM signalled congestion on: CE marks plus RED early and CoDel "
                "drops.",
                labels, overlimits);
    for (const auto& [marker, key] :
         {std::pair{"red", "ecn_marked_red"}, std::pair{"codel", "ecn_marked_codel"}}) {
        out.counter(prefix + "_ecn_marks_total",
                    "Packets marked CE, by marker (red at enqueue, codel at dequeue).",
                    with(labels, "marker", marker), field(counters, key));
    }
    out.gauge(prefix + "_backlog_packets", "Packets queued now.", labels,
              field(counters, "depth_packets"));
    out.gauge(prefix + "_backlog_bytes", "Bytes queued now.", labels,
              field(counters, "depth_bytes"));
}

// A log2 histogram as the API gives them (sched/counters.h: bucket i counts [2^(i-1), 2^i) ns,
// bucket 0 counts 0 ns, the last one everything above its lower bound): le = (2^i - 1) ns,
// exact for integer nanoseconds; the last bucket has no upper bound but +Inf.
void add_log2_histogram(Exposition& out, const std::string& family, const char* help,
                        const Labels& labels, const json& histogram, uint64_t sum_ns) {
    uint64_t cumulative = 0;
    if (histogram.is_array()) {
        const size_t buckets = std::min<size_t>(histogram.size(), 64);
        for (size_t i = 0; i < buckets; ++i) {
            cumulative += u64_of(histogram[i]);
            if (i + 1 == buckets) break;
            const uint64_t upper_ns = i == 0 ? 0 : (uint64_t{1} << i) - 1;
            out.sample(family, "histogram", help, "_bucket",
                       with(labels, "le", seconds_text(upper_ns)), std::to_string(cumulative));
        }
    }
    out.sample(family, "histogram", help, "_bucket", with(labels, "le", "+Inf"),
               std::to_string(cumulative));
    out.sample(family, "histogram", help, "_sum", labels, seconds_text(sum_ns));
    out.sample(family, "histogram", help, "_count", labels, std::to_string(cumulative));
}

void add_sojourn_histogram(Exposition& out, const Labels& labels, const json& counters) {
    add_log2_histogram(out, "twinlane_class_sojourn_seconds",
                       "Time packets spent queued in the scheduler.", labels,
                       field(counters, "sojourn_log2_histogram"),
                       u64_of(field(counters, "sojourn_sum_ns")));
}

// A class's time through the realtime pipeline (stats(classes)'s "latency"), where the daemon
// keeps its histogram.
void add_pipeline_latency(Exposition& out, const Labels& labels, const json& latency) {
    if (!latency.contains("log2_histogram")) return;
    add_log2_histogram(out, "twinlane_class_pipeline_latency_seconds",
                       "Time from the RX burst to acceptance by the NIC's tx_burst (queueing "
                       "included).",
                       labels, latency["log2_histogram"], u64_of(field(latency, "sum_ns")));
    out.seconds("twinlane_class_pipeline_latency_max_seconds", "gauge",
                "The longest time a packet of the class took through the pipeline.", labels,
                u64_of(field(latency, "max_ns")));
}

// status()'s forwarding lcores: their loop's busy passes (dataplane/README.md, "Loop passes")
// and the CPU time other threads took from them ("CPU taken from an lcore").
void add_lcore(Exposition& out, const json& lcore) {
    if (!lcore.contains("busy_passes")) return;  // the control lcore runs no loop
    const Labels labels{{"lcore", std::to_string(u64_of(field(lcore, "lcore")))},
                        {"role", text_of(lcore, "role")}};
    add_log2_histogram(out, "twinlane_lcore_busy_pass_seconds",
                       "Busy passes of the lcore's loop (received, admitted or sent a packet), "
                       "first to last TSC read.",
                       labels, field(lcore, "pass_log2_histogram"),
                       u64_of(field(lcore, "pass_sum_ns")));
    out.seconds("twinlane_lcore_busy_pass_max_seconds", "gauge",
                "The lcore's longest busy pass since start.", labels,
                u64_of(field(lcore, "pass_max_ns")));
    out.seconds("twinlane_lcore_poll_gap_max_seconds", "gauge",
                "The longest time between two passes' starts, idle passes included: the longest "
                "the lcore's inputs went unpolled.",
                labels, u64_of(field(lcore, "poll_gap_max_ns")));
    if (!lcore.contains("runqueue_wait_ns")) return;  // /proc could not say
    out.seconds("twinlane_lcore_run_seconds_total", "counter",
                "Time the lcore's thread ran on its CPU since its loop started.", labels,
                u64_of(field(lcore, "run_ns")));
    out.seconds("twinlane_lcore_runqueue_wait_seconds_total", "counter",
                "Time the lcore's thread was runnable but other threads had its CPU.", labels,
                u64_of(field(lcore, "runqueue_wait_ns")));
    out.counter("twinlane_lcore_preemptions_total",
                "Times the kernel took the lcore's CPU from it (involuntary context switches).",
                labels, field(lcore, "involuntary_switches"));
}

// twinlane_class_slo_*: one SLO of a class on one egress port (stats_json.h's
// slo_stats_to_json), labelled {class, port}.
void add_slo(Exposition& out, const std::string& class_name, const json& slo) {
    const Labels labels{{"class", class_name}, {"port", text_of(slo, "port")}};
    const json& objective = field(slo, "objective");
    if (objective.is_object()) {
        if (objective.contains("target_ns")) {
            Labels with_percentile = labels;
            with_percentile.emplace_back("percentile", text_of(objective, "percentile"));
            out.seconds("twinlane_class_slo_target_seconds", "gauge",
                        "The latency the class's SLO allows at its percentile.", with_percentile,
                        u64_of(field(objective, "target_ns")));
        }
        out.seconds("twinlane_class_slo_window_seconds", "gauge",
                    "The window over which the SLO is judged.", labels,
                    u64_of(field(objective, "window_ns")));
        if (objective.contains("min_share"))
            out.gauge("twinlane_class_slo_min_share_ratio",
                      "The throughput floor, as a share of the port rate.", labels,
                      field(objective, "min_share"));
    }
    for (const auto& [result, key] :
         {std::pair{"met", "windows_met"}, std::pair{"missed", "windows_missed"},
          std::pair{"idle", "windows_idle"}}) {
        Labels with_result = labels;
        with_result.emplace_back("result", result);
        out.counter("twinlane_class_slo_windows_total",
                    "Windows judged against the SLO, by result (idle: nothing to judge).",
                    with_result, field(slo, key));
    }
    for (const auto& [result, key] :
         {std::pair{"met", "share_windows_met"}, std::pair{"missed", "share_windows_missed"}}) {
        Labels with_result = labels;
        with_result.emplace_back("result", result);
        out.counter("twinlane_class_slo_share_windows_total",
                    "Windows judged against the min_share floor, by result.", with_result,
                    field(slo, key));
    }
    out.gauge("twinlane_class_slo_attainment_ratio", "Windows met over windows judged.", labels,
              field(slo, "attainment"));
    const json& last = field(slo, "last_window");
    if (last.is_object()) {
        out.seconds("twinlane_class_slo_last_window_latency_seconds", "gauge",
                    "The latency at the SLO's percentile in the last judged window.", labels,
                    u64_of(field(last, "percentile_ns")));
        out.gauge("twinlane_class_slo_last_window_met", "1 if the last judged window met the SLO.",
                  labels, field(last, "met"));
    }
    const json& worst = field(slo, "worst_window");
    if (worst.is_object()) {
        out.seconds("twinlane_class_slo_worst_window_latency_seconds", "gauge",
                    "The highest latency at the SLO's percentile over every judged window.", labels,
                    u64_of(field(worst, "percentile_ns")));
    }
    const json& cap = field(slo, "cap_bits_per_sec");
    if (cap.is_number())
        out.gauge("twinlane_class_slo_cap_bits_per_second",
                  "The class's shaper rate as the SLO controller set it (adapt_cap).", labels, cap);
    const json& floor = field(slo, "cap_floor_bits_per_sec");
    if (floor.is_number())
        out.gauge("twinlane_class_slo_cap_floor_bits_per_second",
                  "The cap the controller does not step down to: bursts pressed it (0: none).",
                  labels, floor);
    out.counter("twinlane_class_slo_cap_changes_total", "Changes of the cap by the controller.",
                labels, field(slo, "cap_changes"));
    out.gauge("twinlane_class_slo_downgraded_flows", "Flows of the class downgraded now.", labels,
              field(slo, "downgraded_flows"));
    out.counter("twinlane_class_slo_downgrades_total", "Flows downgraded to the lower class.",
                labels, field(slo, "downgrades"));
    out.counter("twinlane_class_slo_returns_total", "Downgraded flows that came back.", labels,
                field(slo, "returns"));
    out.counter("twinlane_class_slo_downgraded_packets_total",
                "Packets placed in or moved to the lower class by a downgrade.", labels,
                field(slo, "downgraded_packets"));
    out.counter("twinlane_class_slo_downgraded_bytes_total",
                "Bytes placed in or moved to the lower class by a downgrade.", labels,
                field(slo, "downgraded_bytes"));
    out.counter("twinlane_class_slo_pressure_events_total",
                "Packets that waited, or would wait, more than half the target.", labels,
                field(slo, "pressure_events"));
}

// status()'s "classifier" (control/stats_json.h): what the parser refused, by reason, and how
// the flow table and the heuristics fared.
void add_classifier(Exposition& out, const json& value) {
    const json& malformed = field(value, "malformed");
    if (malformed.is_object()) {
        for (const auto& [reason, packets] : malformed.items())
            out.counter("twinlane_malformed_packets_total",
                        "Packets the parser found malformed, by reason (dropped or sent in the "
                        "default class, as the policy says).",
                        {{"reason", reason}}, packets);
    }
    out.counter("twinlane_classifier_flows_inserted_total",
                "Flows added to the classifiers' flow tables.", {}, field(value, "flows_inserted"));
    out.counter("twinlane_classifier_flow_table_overflows_total",
                "New flows not cached because a flow table was full (classified per packet).", {},
                field(value, "flow_table_overflows"));
    const std::pair<const char*, const char*> fragments[] = {{"followed", "fragments_followed"},
                                                             {"unmatched", "fragments_unmatched"}};
    for (const auto& [result, key] : fragments) {
        out.counter("twinlane_classifier_fragments_total",
                    "Later IP fragments: followed their first fragment's class, or unmatched "
                    "(classified on addresses and protocol).",
                    {{"result", result}}, field(value, key));
    }
    out.counter("twinlane_classifier_elephants_total", "Flows the elephant heuristic detected.", {},
                field(value, "elephants_detected"));
    out.counter("twinlane_classifier_reclassifications_total",
                "Class changes of flows applied (elephants, their returns, new rules).", {},
                field(value, "reclassifications"));
}

void add_status(Exposition& out, const json& value) {
    out.gauge("twinlane_build_info", "Always 1; the version is the label.",
              {{"version", text_of(value, "version")}}, 1);
    const json& uptime = field(value, "uptime_ns");
    out.gauge("twinlane_uptime_seconds", "Seconds since the daemon started.", {},
              json(uptime.is_number() ? uptime.get<double>() / 1e9 : 0.0));
    out.gauge("twinlane_policy_epoch", "Version of the running policy (+1 per change).", {},
              field(value, "policy_epoch"));
    if (value.contains("applied_epoch")) {
        out.gauge("twinlane_policy_applied_epoch",
                  "Policy epoch the lcores confirmed running (equals policy_epoch between "
                  "changes).",
                  {}, value["applied_epoch"]);
    }
    const json& changes = field(value, "policy_changes");
    if (changes.is_object()) {
        for (const auto& [change, outcomes] : changes.items()) {
            if (!outcomes.is_object()) continue;
            for (const char* result : {"applied", "refused"}) {
                out.counter("twinlane_policy_changes_total",
                            "Policy change requests (load is policy.load, the reload path), "
                            "by outcome.",
                            {{"change", change}, {"result", result}}, field(outcomes, result));
            }
        }
    }
    // The daemon's reloads of its policy file (SIGHUP, --watch-policy); each is also a `load`
    // change above.
    const json& reloads = field(value, "reloads");
    if (reloads.is_object()) {
        out.counter("twinlane_policy_reloads_total",
                    "Reloads of the policy file (SIGHUP, --watch-policy), applied or refused.", {},
                    field(reloads, "attempts"));
        out.counter("twinlane_policy_reload_failures_total",
                    "Reloads of the policy file that were refused (the running policy kept).", {},
                    field(reloads, "failures"));
    }
    const json& classifier = field(value, "classifier");  // the daemon's RX classifiers
    if (classifier.is_object()) add_classifier(out, classifier);
    if (value.contains("policy_last_load_ok")) {
        out.gauge("twinlane_policy_last_load_successful",
                  "0 after a policy load was refused (the previous policy still runs), 1 "
                  "otherwise.",
                  {}, value["policy_last_load_ok"]);
    }
    const json& lcores = field(value, "lcores");
    if (lcores.is_array()) {
        for (const json& lcore : lcores)
            if (lcore.is_object()) add_lcore(out, lcore);
    }
    const json& ports = field(value, "ports");
    if (!ports.is_array()) return;
    for (const json& port : ports) {
        const Labels labels{{"port", text_of(port, "name")}};
        out.gauge("twinlane_port_up", "1 while the port's link is up.", labels,
                  field(port, "link_up"));
        out.gauge("twinlane_port_speed_bits_per_second", "Link speed the NIC reports.", labels,
                  u64_of(field(port, "speed_mbps")) * 1'000'000);
        out.gauge("twinlane_port_policy_rate_bits_per_second",
                  "The port rate in the policy: what its scheduling tree sends at most.", labels,
                  field(port, "rate_bits_per_sec"));
    }
}

void add_port_stats(Exposition& out, const json& port) {
    const Labels labels{{"port", text_of(port, "name")}};
    for (const auto& [direction, key] : {std::pair{"receive", "rx"}, std::pair{"transmit", "tx"}}) {
        const std::string name = std::string("twinlane_port_") + direction;
        const std::string k(key);
        out.counter(name + "_packets_total",
                    std::string_view(key) == "rx" ? "Packets received." : "Packets transmitted.",
                    labels, field(port, (k + "_packets").c_str()));
        out.counter(name + "_bytes_total",
                    std::string_view(key) == "rx" ? "Bytes received." : "Bytes transmitted.",
                    labels, field(port, (k + "_bytes").c_str()));
        out.counter(name + "_drops_total",
                    std::string_view(key) == "rx"
                        ? "Packets the NIC or driver lost on receive (missed, errors, no mbuf)."
                        : "Packets the port's scheduler dropped plus NIC transmit errors.",
                    labels, field(port, (k + "_dropped").c_str()));
        out.gauge(name + "_bits_per_second", "Rate the daemon sampled over its last interval.",
                  labels, field(port, (k + "_bits_per_sec").c_str()));
    }
    out.counter("twinlane_port_link_bound_seconds_total",
                "Time the port's rate held back packets queued in its tree (link-bound).", labels,
                json(static_cast<double>(u64_of(field(port, "tx_link_bound_ns"))) / 1e9));
    // Priority flow control: the daemon lists a priority once it has paused, been paused,
    // stormed or held lossless bytes, so its series start then (PFC off: none).
    const json& pfc = field(port, "pfc");
    if (!pfc.is_array()) return;
    for (const json& entry : pfc) {
        const Labels with_priority =
            with(labels, "priority", std::to_string(u64_of(field(entry, "priority"))));
        for (const auto& [direction, key] :
             {std::pair{"transmit", "tx"}, std::pair{"receive", "rx"}}) {
            const Labels with_direction = with(with_priority, "direction", direction);
            const std::string k(key);
            out.counter("twinlane_port_pfc_pause_frames_total",
                        "PFC pause frames (XOFF, refresh, XON): transmit = sent to the peer, "
                        "receive = from it.",
                        with_direction, field(entry, (k + "_pause_frames").c_str()));
            const uint64_t paused_ns = u64_of(field(entry, (k + "_pause_duration_ns").c_str()));
            out.counter("twinlane_port_pfc_paused_seconds_total",
                        "Time paused: transmit = the peer was asked to hold, receive = this "
                        "port's priority was held.",
                        with_direction, json(static_cast<double>(paused_ns) / 1e9));
        }
        out.counter("twinlane_port_pfc_storms_total",
                    "PFC watchdog storm detections (a pause held too long was released).",
                    with_priority, field(entry, "storms"));
        out.gauge("twinlane_port_pfc_lossless_backlog_bytes",
                  "Lossless bytes of this ingress port and priority inside twinlane now.",
                  with_priority, field(entry, "lossless_queued_bytes"));
    }
}

}  // namespace

std::string prometheus_text(DaemonApi& api) {
    Exposition out;
    out.gauge("twinlane_up", "1 while the daemon answers.", {}, 1);
    auto scrape_error = [&](const char* section, bool failed) {
        out.gauge("twinlane_scrape_error", "1 when a section could not be read this scrape.",
                  {{"section", section}}, failed ? 1 : 0);
    };

    const ApiResult status = api.status();
    scrape_error("status", !status.ok());
    if (status.ok()) add_status(out, status.value());

    const ApiResult ports = api.stats(StatsScope::ports);
    scrape_error("ports", !ports.ok() || !ports.value().is_array());
    if (ports.ok() && ports.value().is_array()) {
        for (const json& port : ports.value())
            add_port_stats(out, port);
    }

    const ApiResult classes = api.stats(StatsScope::classes);
    scrape_error("classes", !classes.ok() || !classes.value().is_array());
    if (classes.ok() && classes.value().is_array()) {
        for (const json& cls : classes.value()) {
            const Labels labels{{"class", text_of(cls, "name")}};
            out.counter("twinlane_class_classified_packets_total",
                        "Packets the classifier put in this class.", labels,
                        field(cls, "classified_packets"));
            out.counter("twinlane_class_classified_bytes_total",
                        "Bytes the classifier put in this class.", labels,
                        field(cls, "classified_bytes"));
            out.counter("twinlane_class_malformed_drops_total",
                        "Malformed packets of this class dropped by policy.", labels,
                        field(cls, "malformed_drops"));
            const json& queue = field(cls, "queue");
            if (queue.is_object()) {
                add_queue_counters(out, "twinlane_class", labels, queue);
                add_sojourn_histogram(out, labels, queue);
            }
            const json& latency = field(cls, "latency");
            if (latency.is_object()) add_pipeline_latency(out, labels, latency);
            const json& slos = field(cls, "slo");
            if (slos.is_array()) {
                for (const json& slo : slos)
                    if (slo.is_object()) add_slo(out, text_of(cls, "name"), slo);
            }
        }
    }

    const ApiResult queues = api.stats(StatsScope::queues);
    scrape_error("queues", !queues.ok() || !queues.value().is_array());
    if (queues.ok() && queues.value().is_array()) {
        for (const json& node : queues.value()) {
            Labels labels{{"port", text_of(node, "port")},
                          {"queue", text_of(node, "node")},
                          {"kind", text_of(node, "kind")}};
            // Inner nodes carry no class: an empty label would read as a class named "".
            const std::string cls = text_of(node, "class");
            if (!cls.empty()) labels.emplace_back("class", cls);
            const json& counters = field(node, "counters");
            if (counters.is_object()) add_queue_counters(out, "twinlane_queue", labels, counters);
        }
    }
    return out.text();
}

}  // namespace twinlane::control
