#include "control/twinlanectl.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "conf/policy_document.h"
#include "conf/units.h"
#include "control/control_client.h"
#include "control/protocol.h"

namespace twinlane::control {
namespace {

using nlohmann::json;
using Row = std::vector<std::string>;

constexpr const char* kDefaultSocket = "/run/twinlane/twinlane.sock";

uint64_t u64(const json& object, const char* key) {
    if (!object.is_object()) return 0;
    const auto it = object.find(key);
    if (it == object.end() || !it->is_number()) return 0;
    return it->is_number_unsigned()
               ? it->get<uint64_t>()
               : static_cast<uint64_t>(std::max<int64_t>(0, it->get<int64_t>()));
}

std::string str(const json& object, const char* key) {
    if (!object.is_object()) return "";
    const auto it = object.find(key);
    if (it == object.end() || it->is_null()) return "-";
    return it->is_string() ? it->get<std::string>() : it->dump();
}

std::string rate_text(double bits_per_sec) {
    const char* units[] = {"bps", "Kbps", "Mbps", "Gbps", "Tbps"};
    size_t unit = 0;
    while (bits_per_sec >= 1000 && unit + 1 < std::size(units)) {
        bits_per_sec /= 1000;
        ++unit;
    }
    char text[32];
    std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.2f %s", bits_per_sec, units[unit]);
    return text;
}

std::string seconds_text(double seconds) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3f s", seconds);
    return text;
}

// An SLO's cap, with the floor its controller keeps under it when there is one.
std::string cap_text(const json& cap, const json& floor) {
    if (!cap.is_number()) return "-";
    std::string text = rate_text(static_cast<double>(cap.get<uint64_t>()));
    if (floor.is_number() && floor.get<uint64_t>() != 0)
        text += " (floor " + rate_text(static_cast<double>(floor.get<uint64_t>())) + ")";
    return text;
}

std::string micros_text(double ns) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f", ns / 1000.0);
    return text;
}

// Columns padded to their widest cell; the first column left-aligned, the rest right-aligned
// (numbers).
void print_table(std::ostream& out, const Row& header, const std::vector<Row>& rows) {
    std::vector<size_t> widths(header.size(), 0);
    auto widen = [&](const Row& row) {
        for (size_t i = 0; i < row.size() && i < widths.size(); ++i) {
            widths[i] = std::max(widths[i], row[i].size());
        }
    };
    widen(header);
    for (const Row& row : rows)
        widen(row);
    auto print_row = [&](const Row& row) {
        std::string line;
        for (size_t i = 0; i < widths.size(); ++i) {
            const std::string cell = i < row.size() ? row[i] : "";
            const std::string pad(widths[i] - cell.size(), ' ');
            if (i) line += "  ";
            line += i == 0 ? cell + pad : pad + cell;
        }
        while (!line.empty() && line.back() == ' ')
            line.pop_back();
        out << line << '\n';
    };
    print_row(header);
    for (const Row& row : rows)
        print_row(row);
}

uint64_t ecn_marks(const json& counters) {
    return u64(counters, "ecn_marked_red") + u64(counters, "ecn_marked_codel");
}

void print_status(std::ostream& out, const json& status) {
    out << "twinlane " << str(status, "version") << ", up "
        << u64(status, "uptime_ns") / 1'000'000'000 << "s, policy " << str(status, "policy_source")
        << " (epoch " << u64(status, "policy_epoch") << "), log level " << str(status, "log_level")
        << "\n\n";
    std::vector<Row> ports;
    for (const json& port : status.value("ports", json::array())) {
        const bool up = port.value("link_up", false);
        ports.push_back({str(port, "name"), std::to_string(u64(port, "port_id")),
                         str(port, "device"), up ? "up" : "down",
                         std::to_string(u64(port, "speed_mbps")) + " Mbps",
                         rate_text(static_cast<double>(u64(port, "rate_bits_per_sec")))});
    }
    print_table(out, {"PORT", "ID", "DEVICE", "LINK", "SPEED", "POLICY RATE"}, ports);
    std::vector<Row> lcores;
    for (const json& lcore : status.value("lcores", json::array())) {
        std::string ports_text;
        for (const json& name : lcore.value("ports", json::array())) {
            if (!ports_text.empty()) ports_text += ",";
            ports_text += name.is_string() ? name.get<std::string>() : name.dump();
        }
        // The loop's busy passes (a daemon; a policy-only status has none).
        std::string passes = "-";
        if (lcore.contains("busy_passes")) {
            char text[96];
            std::snprintf(text, sizeof text, "%.1f / %.1f / %.1f",
                          static_cast<double>(u64(lcore, "pass_p50_ns")) / 1e3,
                          static_cast<double>(u64(lcore, "pass_p99_ns")) / 1e3,
                          static_cast<double>(u64(lcore, "pass_max_ns")) / 1e3);
            passes = std::to_string(u64(lcore, "busy_passes")) + "  " + text;
        }
        // The longest its inputs went unpolled, idle passes included.
        std::string gap = "-";
        if (lcore.contains("poll_gap_max_ns")) {
            char text[32];
            std::snprintf(text, sizeof text, "%.1f",
                          static_cast<double>(u64(lcore, "poll_gap_max_ns")) / 1e3);
            gap = text;
        }
        // What other threads took from its CPU since the loop started (a daemon on Linux).
        std::string taken = "-";
        if (lcore.contains("runqueue_wait_ns")) {
            char text[64];
            std::snprintf(text, sizeof text, "%.1f ms / %llu",
                          static_cast<double>(u64(lcore, "runqueue_wait_ns")) / 1e6,
                          static_cast<unsigned long long>(u64(lcore, "involuntary_switches")));
            taken = text;
        }
        lcores.push_back({std::to_string(u64(lcore, "lcore")), str(lcore, "role"),
                          ports_text.empty() ? "-" : ports_text, passes, gap, taken});
    }
    if (!lcores.empty()) {
        out << '\n';
        print_table(out,
                    {"LCORE", "ROLE", "PORTS", "BUSY PASSES  P50 / P99 / MAX us", "UNPOLLED MAX us",
                     "CPU TAKEN / PREEMPTIONS"},
                    lcores);
    }
    // The daemon's classifiers (a policy-only status has none): malformed packets by reason,
    // flow table, heuristics.
    if (const auto it = status.find("classifier"); it != status.end() && it->is_object()) {
        const json& c = *it;
        out << "\nclassifier: " << u64(c, "flows_inserted") << " flows inserted, "
            << u64(c, "flow_table_overflows") << " not cached (table full), "
            << u64(c, "fragments_followed") + u64(c, "fragments_unmatched") << " later fragments ("
            << u64(c, "fragments_unmatched") << " unmatched), " << u64(c, "elephants_detected")
            << " elephants, " << u64(c, "reclassifications")
            << " reclassifications\nmalformed: " << u64(c, "malformed_packets");
        std::string reasons;
        const json malformed = c.value("malformed", json::object());
        for (const auto& [reason, packets] : malformed.items()) {
            if (!packets.is_number_unsigned() || packets.get<uint64_t>() == 0) continue;
            reasons += (reasons.empty() ? "" : ", ") + reason + " " + packets.dump();
        }
        out << (reasons.empty() ? "" : " (" + reasons + ")") << '\n';
    }
}

void print_ports(std::ostream& out, const json& ports) {
    std::vector<Row> rows;
    for (const json& port : ports) {
        rows.push_back(
            {str(port, "name"), std::to_string(u64(port, "rx_packets")),
             std::to_string(u64(port, "rx_bytes")), std::to_string(u64(port, "tx_packets")),
             std::to_string(u64(port, "tx_bytes")), std::to_string(u64(port, "rx_dropped")),
             std::to_string(u64(port, "tx_dropped")),
             rate_text(static_cast<double>(u64(port, "rx_bits_per_sec"))),
             rate_text(static_cast<double>(u64(port, "tx_bits_per_sec"))),
             seconds_text(static_cast<double>(u64(port, "tx_link_bound_ns")) / 1e9)});
    }
    // LINK-BOUND: how long the port's rate held back packets queued in its tree.
    print_table(out,
                {"PORT", "RX PKTS", "RX BYTES", "TX PKTS", "TX BYTES", "RX DROP", "TX DROP",
                 "RX RATE", "TX RATE", "LINK-BOUND"},
                rows);
    // Priority flow control, where a port runs it: pauses sent (and how long the peer was held),
    // pauses received (and how long this port's priority was held), storms, lossless bytes in.
    std::vector<Row> pfc;
    for (const json& port : ports) {
        for (const json& p : port.value("pfc", json::array())) {
            const auto ms = [&](const char* key) {
                return fmt::format("{:.3f}", static_cast<double>(u64(p, key)) / 1e6);
            };
            pfc.push_back({str(port, "name"), std::to_string(u64(p, "priority")),
                           std::to_string(u64(p, "tx_pause_frames")), ms("tx_pause_duration_ns"),
                           std::to_string(u64(p, "rx_pause_frames")), ms("rx_pause_duration_ns"),
                           std::to_string(u64(p, "storms")),
                           std::to_string(u64(p, "lossless_queued_bytes"))});
        }
    }
    if (pfc.empty()) return;
    out << "\n";
    print_table(out,
                {"PFC PORT", "PRIO", "PAUSES SENT", "PEER HELD MS", "PAUSES RECV", "HELD MS",
                 "STORMS", "LOSSLESS BYTES"},
                pfc);
}

// The classes' SLOs (stats classes' "slo" entries), one row per class and egress port; nothing
// when no class has one.
void print_slos(std::ostream& out, const json& classes) {
    std::vector<Row> rows;
    for (const json& cls : classes) {
        if (!cls.is_object() || !cls.contains("slo") || !cls["slo"].is_array()) continue;
        for (const json& slo : cls["slo"]) {
            const json& objective = slo.contains("objective") ? slo["objective"] : json::object();
            std::string goal;
            if (objective.contains("target_ns"))
                goal = str(objective, "percentile") +
                       "<=" + micros_text(static_cast<double>(u64(objective, "target_ns"))) + "us";
            if (objective.contains("min_share") && objective["min_share"].is_number()) {
                char share[32];
                std::snprintf(share, sizeof share, "share>=%.1f%%",
                              objective["min_share"].get<double>() * 100);
                goal += (goal.empty() ? "" : ",") + std::string(share);
            }
            std::string actions;
            if (objective.contains("actions") && objective["actions"].is_array())
                for (const json& a : objective["actions"])
                    actions += (actions.empty() ? "" : "+") + a.get<std::string>();
            const uint64_t met = u64(slo, "windows_met");
            const uint64_t missed = u64(slo, "windows_missed");
            char attainment[32];
            std::snprintf(attainment, sizeof attainment, "%.2f%%",
                          met + missed == 0 ? 100.0
                                            : 100.0 * static_cast<double>(met) /
                                                  static_cast<double>(met + missed));
            const json& last = slo.contains("last_window") ? slo["last_window"] : json();
            const json& worst = slo.contains("worst_window") ? slo["worst_window"] : json();
            std::string last_text = "-";
            if (last.is_object())
                last_text = micros_text(static_cast<double>(u64(last, "percentile_ns"))) +
                            (last.value("met", true) ? " met" : " MISSED");
            const json& cap = slo.contains("cap_bits_per_sec") ? slo["cap_bits_per_sec"] : json();
            rows.push_back(
                {str(cls, "name"), str(slo, "port"), goal,
                 micros_text(static_cast<double>(u64(objective, "window_ns")) / 1000.0) + "ms",
                 actions, std::to_string(met) + "/" + std::to_string(missed), attainment, last_text,
                 worst.is_object() ? micros_text(static_cast<double>(u64(worst, "percentile_ns")))
                                   : "-",
                 cap_text(cap, slo.contains("cap_floor_bits_per_sec")
                                   ? slo["cap_floor_bits_per_sec"]
                                   : json()),
                 std::to_string(u64(slo, "cap_changes")),
                 std::to_string(u64(slo, "downgraded_flows")) + " (" +
                     std::to_string(u64(slo, "downgrades")) + ")",
                 std::to_string(u64(slo, "downgraded_bytes"))});
        }
    }
    if (rows.empty()) return;
    out << "\n";
    print_table(out,
                {"SLO CLASS", "PORT", "OBJECTIVE", "WINDOW", "ACTION", "MET/MISSED", "ATTAINED",
                 "LAST us", "WORST us", "CAP", "CAP CHANGES", "DOWN FLOWS (ALL)", "DOWN BYTES"},
                rows);
}

// `previous` (same shape, earlier sample) adds an output-rate column.
void print_classes(std::ostream& out, const json& classes, const json* previous,
                   double interval_seconds) {
    std::vector<Row> rows;
    for (size_t i = 0; i < classes.size(); ++i) {
        const json& cls = classes[i];
        const json& queue = cls.contains("queue") ? cls["queue"] : json::object();
        const uint64_t packets_out = u64(queue, "packets_out");
        const double mean_ns =
            packets_out ? static_cast<double>(u64(queue, "sojourn_sum_ns")) / packets_out : 0.0;
        Row row{str(cls, "name"),
                std::to_string(u64(queue, "packets_in")),
                std::to_string(packets_out),
                std::to_string(u64(queue, "bytes_out")),
                std::to_string(u64(queue, "dropped_packets")),
                std::to_string(ecn_marks(queue)),
                std::to_string(u64(queue, "depth_packets")),
                std::to_string(u64(queue, "depth_bytes")),
                micros_text(mean_ns),
                micros_text(static_cast<double>(u64(queue, "sojourn_max_ns")))};
        const json& latency = cls.contains("latency") ? cls["latency"] : json::object();
        for (const char* field : {"p50_ns", "p99_ns", "p999_ns", "max_ns"})
            row.push_back(micros_text(static_cast<double>(u64(latency, field))));
        if (previous != nullptr) {
            double rate = 0;
            if (i < previous->size() && interval_seconds > 0) {
                const json& before =
                    (*previous)[i].contains("queue") ? (*previous)[i]["queue"] : json::object();
                const uint64_t now_bytes = u64(queue, "bytes_out");
                const uint64_t then_bytes = u64(before, "bytes_out");
                if (now_bytes >= then_bytes) {
                    rate = static_cast<double>(now_bytes - then_bytes) * 8 / interval_seconds;
                }
            }
            row.push_back(rate_text(rate));
        }
        rows.push_back(std::move(row));
    }
    // SOJOURN: in the scheduler's queues; RX-TX: RX burst -> accepted by tx_burst (pipeline).
    Row header{"CLASS",        "PKTS IN",      "PKTS OUT",      "BYTES OUT",      "DROPS",
               "ECN MARKS",    "DEPTH PKTS",   "DEPTH BYTES",   "SOJOURN AVG us", "SOJOURN MAX us",
               "RX-TX P50 us", "RX-TX P99 us", "RX-TX P999 us", "RX-TX MAX us"};
    if (previous != nullptr) header.push_back("OUT RATE");
    print_table(out, header, rows);
    print_slos(out, classes);
}

void print_queues(std::ostream& out, const json& queues) {
    std::vector<Row> rows;
    for (const json& node : queues) {
        const json& counters = node.contains("counters") ? node["counters"] : json::object();
        rows.push_back({str(node, "port") + "/" + str(node, "node"), str(node, "kind"),
                        str(node, "class"), std::to_string(u64(counters, "packets_in")),
                        std::to_string(u64(counters, "packets_out")),
                        std::to_string(u64(counters, "dropped_packets")),
                        std::to_string(ecn_marks(counters)),
                        std::to_string(u64(counters, "depth_packets")),
                        std::to_string(u64(counters, "depth_bytes"))});
    }
    print_table(out,
                {"PORT/NODE", "KIND", "CLASS", "PKTS IN", "PKTS OUT", "DROPS", "ECN MARKS",
                 "DEPTH PKTS", "DEPTH BYTES"},
                rows);
}

void print_flows(std::ostream& out, const json& flows) {
    std::vector<Row> rows;
    for (const json& flow : flows) {
        rows.push_back({str(flow, "src") + ":" + std::to_string(u64(flow, "src_port")),
                        str(flow, "dst") + ":" + std::to_string(u64(flow, "dst_port")),
                        std::to_string(u64(flow, "proto")), str(flow, "class"),
                        std::to_string(u64(flow, "job")), std::to_string(u64(flow, "packets")),
                        std::to_string(u64(flow, "bytes"))});
    }
    print_table(out, {"SOURCE", "DESTINATION", "PROTO", "CLASS", "JOB", "PACKETS", "BYTES"}, rows);
}

void print_rules(std::ostream& out, const json& rules) {
    std::vector<Row> rows;
    for (const json& rule : rules) {
        rows.push_back({std::to_string(u64(rule, "priority")), str(rule, "name"),
                        rule.value("match", json::object()).dump(),
                        rule.value("action", json::object()).dump()});
    }
    print_table(out, {"PRIORITY", "NAME", "MATCH", "ACTION"}, rows);
}

struct Options {
    std::string socket;
    bool json_output = false;
    std::string timeout_text = "5s";
    std::chrono::milliseconds timeout{5000};
};

class Session {
  public:
    Session(const Options& options, std::ostream& out, std::ostream& err)
        : options_(options), out_(out), err_(err) {}

    // Sends one request. On success returns the result; otherwise prints why (unless
    // quiet_transport and the daemon could not be reached) and sets exit_code. Throws
    // json::exception when the reply has the wrong shape.
    std::optional<json> call(const std::string& command, const json& args) {
        command_ = command;
        if (!client_) {
            auto connected = ControlClient::connect(options_.socket, options_.timeout);
            if (!connected.client) {
                if (connected.not_running) {
                    if (!quiet_transport)
                        err_ << "twinlane daemon not running at " << options_.socket << " ("
                             << connected.error << ")\n";
                    exit_code = kExitNotRunning;
                } else {
                    if (!quiet_transport)
                        err_ << "cannot reach the twinlane daemon at " << options_.socket << " ("
                             << connected.error << ")\n";
                    exit_code = kExitTransport;
                }
                return std::nullopt;
            }
            client_ = std::move(connected.client);
        }
        auto reply = client_->request(command, args, options_.timeout);
        if (!reply.message) {
            if (!quiet_transport) err_ << "twinlanectl: " << command << ": " << reply.error << '\n';
            exit_code = kExitTransport;
            client_.reset();  // a broken connection is not reused
            return std::nullopt;
        }
        const json& message = *reply.message;
        if (!message.value("ok", false)) {
            if (options_.json_output) out_ << message.dump(2) << '\n';
            err_ << "twinlanectl: " << command << ": " << str(message, "error") << '\n';
            for (const json& detail : message.value("details", json::array())) {
                err_ << "  " << (detail.is_string() ? detail.get<std::string>() : detail.dump())
                     << '\n';
            }
            exit_code = kExitRefused;
            return std::nullopt;
        }
        return message.contains("result") ? message["result"] : json();
    }

    // Prints the result as JSON (--json) or with `human`.
    template <typename Human>
    void run(const std::string& command, const json& args, Human&& human) {
        auto result = call(command, args);
        if (!result) return;
        if (options_.json_output) {
            out_ << result->dump(2) << '\n';
        } else {
            human(*result);
        }
    }

    // The next call connects afresh.
    void disconnect() { client_.reset(); }

    // The command of the last request, for messages.
    const std::string& command() const { return command_; }

    int exit_code = kExitOk;
    bool quiet_transport = false;  // an unreachable daemon sets exit_code without a message

  private:
    const Options& options_;
    std::ostream& out_;
    std::ostream& err_;
    std::unique_ptr<ControlClient> client_;
    std::string command_;
};

// A duration ("500ms", "2s") or, as `watch -n` and `ping -i` take it, a number of seconds.
std::optional<std::chrono::nanoseconds> parse_interval(const std::string& text) {
    auto ns = conf::parse_option_duration_ns(text, 1'000'000'000);
    if (!ns) return std::nullopt;
    return std::chrono::nanoseconds(*ns);
}

}  // namespace

int run_twinlanectl(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
    CLI::App app{"twinlanectl: inspect and change a running twinlane daemon"};
    app.require_subcommand(1);
    Options options;
    const char* env_socket = std::getenv("TWINLANE_SOCKET");
    options.socket = env_socket != nullptr && *env_socket != '\0' ? env_socket : kDefaultSocket;
    app.add_option("-s,--socket", options.socket, "control socket of the daemon")
        ->capture_default_str();
    app.add_flag("-j,--json", options.json_output, "print the raw JSON result");
    app.add_option("--timeout", options.timeout_text, "per-request timeout (e.g. 500ms, 5s)")
        ->capture_default_str();

    auto* status = app.add_subcommand("status", "version, uptime, policy, ports and lcores");
    auto* stats = app.add_subcommand("stats", "counters of ports, classes or scheduler queues");
    std::string stats_scope = "classes";
    stats->add_option("scope", stats_scope, "ports | classes | queues")
        ->check(CLI::IsMember({"ports", "classes", "queues"}))
        ->capture_default_str();
    auto* flows = app.add_subcommand("flows", "largest cached flows by bytes");
    size_t flows_top = 10;
    flows->add_option("--top", flows_top, "how many flows")
        ->check(CLI::Range(size_t{1}, size_t{10'000}))
        ->capture_default_str();
    auto* rules = app.add_subcommand("rules", "classifier rules");
    rules->require_subcommand(1);
    auto* rules_list = rules->add_subcommand("list", "the rules in evaluation order");
    auto* rules_add = rules->add_subcommand("add", "add a rule (policy-file YAML/JSON syntax)");
    std::string rule_text;
    rules_add
        ->add_option("rule", rule_text,
                     "e.g. '{name: x, priority: 5, match: {dst_port: "
                     "9000}, action: {class: inference}}'")
        ->required();
    auto* rules_del = rules->add_subcommand("del", "delete a rule by name");
    std::string rule_name;
    rules_del->add_option("name", rule_name, "rule name")->required();
    auto* cls = app.add_subcommand("class", "scheduler parameters of a class");
    cls->require_subcommand(1);
    auto* class_set = cls->add_subcommand("set", "set one parameter (units as in the policy)");
    std::string class_name, class_key, class_value;
    class_set->add_option("class", class_name, "class name")->required();
    class_set
        ->add_option("key", class_key,
                     "weight | rate | burst | limit_packets | limit_bytes | ecn | ecn_kmin | "
                     "ecn_kmax | ecn_pmax | ecn_drop_non_ect | codel | codel_target | "
                     "codel_interval | codel_ecn")
        ->required();
    class_set->add_option("value", class_value, "e.g. 8G, 4, 2MiB, 500us, 20%, on, off")
        ->required();
    auto* policy = app.add_subcommand("policy", "the running policy");
    policy->require_subcommand(1);
    auto* policy_load = policy->add_subcommand("load", "validate FILE, then swap it in");
    std::string policy_file;
    policy_load->add_option("file", policy_file, "policy file")->required();
    auto* policy_show = policy->add_subcommand("show", "print the running policy");
    std::string policy_format = "yaml";
    policy_show->add_option("--format", policy_format, "yaml | json")
        ->check(CLI::IsMember({"yaml", "json"}))
        ->capture_default_str();
    auto* log = app.add_subcommand("log", "daemon logging");
    log->require_subcommand(1);
    auto* log_level = log->add_subcommand("level", "print or set the log level");
    std::string level;
    log_level->add_option("level", level, "trace | debug | info | warn | error | critical | off")
        ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
    auto* watch = app.add_subcommand("watch", "refreshing view of class statistics");
    std::string watch_interval = "1s";
    uint64_t watch_count = 0;
    watch->add_option("--interval", watch_interval, "refresh period")->capture_default_str();
    // CLI11 reads "-1" into an unsigned as its largest value (strtoull): refuse the sign first.
    const CLI::Validator not_negative(
        [](const std::string& text) {
            return text.starts_with('-') ? "'" + text + "' is negative" : std::string();
        },
        "N >= 0");
    watch->add_option("--count", watch_count, "stop after N refreshes (0: until interrupted)")
        ->check(not_negative)
        ->capture_default_str();

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int code = app.exit(e, out, err);
        return code == 0 ? kExitOk : kExitUsage;
    }
    auto timeout = parse_interval(options.timeout_text);
    if (!timeout || *timeout < std::chrono::milliseconds(1)) {
        err << "twinlanectl: --timeout: '" << options.timeout_text
            << "' is not a duration such as 500ms or 5s (or a number of seconds) of at least "
               "1ms\n";
        return kExitUsage;
    }
    options.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(*timeout);

    Session session(options, out, err);
    try {
        if (status->parsed()) {
            session.run("status", json::object(), [&](const json& r) { print_status(out, r); });
        } else if (stats->parsed()) {
            session.run("stats", {{"scope", stats_scope}}, [&](const json& r) {
                if (stats_scope == "ports") print_ports(out, r);
                if (stats_scope == "classes") print_classes(out, r, nullptr, 0);
                if (stats_scope == "queues") print_queues(out, r);
            });
        } else if (flows->parsed()) {
            session.run("flows", {{"top", flows_top}}, [&](const json& r) { print_flows(out, r); });
        } else if (rules_list->parsed()) {
            session.run("rules.list", json::object(), [&](const json& r) { print_rules(out, r); });
        } else if (rules_add->parsed()) {
            session.run("rules.add", {{"rule", rule_text}}, [&](const json& r) {
                out << "rule added (policy epoch " << u64(r, "policy_epoch") << ")\n";
            });
        } else if (rules_del->parsed()) {
            session.run("rules.delete", {{"name", rule_name}}, [&](const json& r) {
                out << "rule '" << rule_name << "' deleted (policy epoch " << u64(r, "policy_epoch")
                    << ")\n";
            });
        } else if (class_set->parsed()) {
            session.run("class.set",
                        {{"class", class_name}, {"key", class_key}, {"value", class_value}},
                        [&](const json& r) {
                            out << class_name << ": " << class_key << " = " << class_value
                                << " (policy epoch " << u64(r, "policy_epoch") << ")\n";
                        });
        } else if (policy_load->parsed()) {
            // The daemon resolves paths in its own working directory: send an absolute one.
            std::error_code error;
            const std::filesystem::path absolute = std::filesystem::absolute(policy_file, error);
            if (error) {
                err << "twinlanectl: " << policy_file << ": " << error.message() << '\n';
                return kExitUsage;
            }
            session.run("policy.load", {{"path", absolute.string()}}, [&](const json& r) {
                out << "policy " << str(r, "policy_source") << " loaded (policy epoch "
                    << u64(r, "policy_epoch") << ")\n";
            });
        } else if (policy_show->parsed()) {
            auto result = session.call("policy.show", json::object());
            if (result) {
                const json document = result->value("document", json::object());
                if (options.json_output) {
                    out << result->dump(2) << '\n';
                } else if (policy_format == "json") {
                    out << document.dump(2) << '\n';
                } else {
                    out << "# running policy from " << str(*result, "policy_source") << ", epoch "
                        << u64(*result, "policy_epoch") << "\n"
                        << conf::render_yaml(document);
                }
            }
        } else if (log_level->parsed()) {
            const bool set = !level.empty();
            session.run(set ? "log.set" : "log.get", set ? json{{"level", level}} : json::object(),
                        [&](const json& r) { out << str(r, "log_level") << '\n'; });
        } else if (watch->parsed()) {
            auto interval = parse_interval(watch_interval);
            if (!interval || *interval < std::chrono::milliseconds(10)) {
                err << "twinlanectl: --interval: '" << watch_interval
                    << "' is not a duration such as 500ms or 2s (or a number of seconds) of at "
                       "least 10ms\n";
                return kExitUsage;
            }
            const bool terminal = &out == &std::cout && isatty(STDOUT_FILENO);
            const double seconds = std::chrono::duration<double>(*interval).count();
            std::optional<json> previous;
            bool answered = false;  // once the daemon has answered, an outage is waited out
            for (uint64_t round = 0; watch_count == 0 || round < watch_count; ++round) {
                if (round > 0) std::this_thread::sleep_for(*interval);
                // The daemon closes connections idle for kClientIdleTimeout.
                if (*interval >= kClientIdleTimeout / 2) session.disconnect();
                auto result = session.call("stats", {{"scope", "classes"}});
                if (!result) {
                    const bool unreachable =
                        session.exit_code == kExitNotRunning || session.exit_code == kExitTransport;
                    if (!answered || !unreachable) break;
                    // Stopped or restarting (systemctl restart): poll on, as watch(1) does.
                    if (!session.quiet_transport)
                        err << "twinlanectl: watch: waiting for the daemon at " << options.socket
                            << '\n';
                    session.quiet_transport = true;
                    previous.reset();  // a restarted daemon counts from zero: no rates across
                    continue;
                }
                if (session.quiet_transport)
                    err << "twinlanectl: watch: the daemon answers again\n";
                session.quiet_transport = false;
                session.exit_code = kExitOk;
                answered = true;
                if (options.json_output) {
                    out << result->dump() << '\n';
                } else {
                    if (terminal) out << "\033[H\033[2J";
                    print_classes(out, *result, previous ? &*previous : nullptr, seconds);
                    if (!terminal) out << '\n';
                }
                out.flush();
                previous = std::move(result);
            }
        }
    } catch (const json::exception& e) {
        // Valid JSON of the wrong shape (another daemon version, or not twinlane at all) is a
        // bad reply like unparsable text, not a crash.
        err << "twinlanectl: " << session.command() << ": the daemon sent a malformed reply ("
            << e.what() << ")\n";
        return kExitTransport;
    }
    return session.exit_code;
}

}  // namespace twinlane::control
