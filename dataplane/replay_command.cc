#include "dataplane/replay_command.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "classifier/classifier.h"
#include "conf/compile.h"
#include "conf/load_policy.h"
#include "conf/lossless.h"
#include "conf/policy.h"
#include "conf/units.h"
#include "dataplane/eal.h"
#include "dataplane/memory_check.h"
#include "replay/fifo_discipline.h"
#include "replay/output_file.h"
#include "replay/pcap_io.h"
#include "replay/replay_engine.h"
#include "replay/replay_report.h"
#include "replay/rte_sched_discipline.h"
#include "replay/rte_sched_layout.h"
#include "replay/scheduler_discipline.h"
#include "slo/governor.h"

namespace twinlane::dataplane {
namespace {

struct ReplayArgs {
    std::string policy;
    std::vector<std::string> inputs;  // FILE or PORT=FILE
    std::string output;
    std::string report;
    std::optional<std::string> link_rate;
    std::optional<std::string> ingress_rate;
    std::string discipline = "twinlane";
    std::vector<std::string> compare;
    std::string port;
    std::string bulk_class;               // empty: bulk_class_of(policy)
    std::vector<std::string> pfc_pauses;  // AT:PRIORITY:DURATION
    bool json = false;
    bool slo_measure_only = false;
};

// `out.pcap` + `fifo` -> `out.fifo.pcap`: one file per discipline when several run.
std::string per_discipline(const std::string& path, const std::string& discipline, bool several) {
    if (path.empty() || !several) return path;
    const size_t dot = path.find_last_of('.');
    const size_t slash = path.find_last_of('/');
    if (dot == std::string::npos || (slash != std::string::npos && dot < slash))
        return path + "." + discipline;
    return path.substr(0, dot) + "." + discipline + path.substr(dot);
}

// --compare replays the input once per discipline: stdin and pipes cannot be read again, and
// the second run used to fail after the first had finished. Said before anything runs.
std::optional<std::string> not_rereadable(const std::string& input, size_t disciplines) {
    if (disciplines < 2) return std::nullopt;
    const std::string why = "--compare replays the input once for each of the " +
                            std::to_string(disciplines) + " disciplines, ";
    if (input == "-")
        return why + "and stdin ('-i -') cannot be read again: save it to a file and give that";
    struct stat info {};
    if (stat(input.c_str(), &info) == 0 && !S_ISREG(info.st_mode) && !S_ISBLK(info.st_mode)) {
        return why + "and '" + input + "' is not a regular file (a pipe?), which cannot be " +
               "read again: save it to a file and give that";
    }
    return std::nullopt;  // a missing file is PcapReader's error to give
}

// `-i PORT=FILE`: the FILE part. A file that exists under the whole name, or a '/' before the
// '=', make it a plain path; the policy says later whether PORT is one of its ports.
std::string input_path(const std::string& input) {
    const size_t eq = input.find('=');
    if (eq == std::string::npos || eq == 0 || input.find('/') < eq) return input;
    std::error_code ignored;
    if (std::filesystem::exists(input, ignored)) return input;
    return input.substr(eq + 1);
}

struct NamedPath {
    std::string option;  // how the command line named it: "-o", "--report", ...
    std::string path;
};

// Outputs must not be the command's inputs (same inode: also through a symlink or a hard link;
// `-o IN` truncated the mapped input, a bus error and an empty file), nor one another (one
// would silently replace the other).
std::optional<std::string> outputs_clash(const ReplayArgs& args,
                                         const std::vector<NamedPath>& outputs) {
    std::vector<NamedPath> inputs = {{"-c", args.policy}};
    for (const std::string& input : args.inputs)
        inputs.push_back({"-i", input_path(input)});
    for (const NamedPath& output : outputs) {
        for (const NamedPath& input : inputs) {
            const bool same = input.path == "-" ? replay::same_file(output.path, STDIN_FILENO)
                                                : replay::same_file(output.path, input.path);
            if (same) {
                return output.option + " '" + output.path + "' is the input " + input.option +
                       " '" + input.path + "' (the same file): writing it would destroy what " +
                       "the replay reads; choose another output path";
            }
        }
    }
    std::error_code ignored;
    for (size_t i = 0; i < outputs.size(); ++i) {
        for (size_t j = i + 1; j < outputs.size(); ++j) {
            const auto a = std::filesystem::weakly_canonical(outputs[i].path, ignored);
            const auto b = std::filesystem::weakly_canonical(outputs[j].path, ignored);
            if (a == b || replay::same_file(outputs[i].path, outputs[j].path)) {
                return outputs[i].option + " '" + outputs[i].path + "' and " + outputs[j].option +
                       " '" + outputs[j].path + "' are the same file: give each its own path";
            }
        }
    }
    return std::nullopt;
}

struct Setup {
    std::shared_ptr<const conf::Policy> policy;
    const conf::EgressTree* tree = nullptr;
    conf::CompiledPolicy compiled;
    size_t egress_index = 0;
    const conf::CompiledEgress& egress() const { return compiled.egress.at(egress_index); }
    uint64_t link_rate_bps = 0;
    uint64_t ingress_rate_bps = 0;  // --ingress-rate; 0: records arrive at their timestamps
    uint16_t ingress_port = 0;      // the first input's
    struct Input {
        std::string path;
        uint16_t port = 0;  // the ingress port the classifier sees for its records
    };
    std::vector<Input> inputs;
    uint8_t bulk_class = 0;
    bool slo_measure_only = false;
    replay::LosslessOptions lossless;
};

// A peer's pause is refreshed every half of the longest pause (168 us at 100G): an hour is
// some 10^7 frames to replay; no real pause lasts nearly as long, and a watchdog ends it.
constexpr uint64_t kMaxPeerPauseNs = 3'600'000'000'000ULL;

// `--pfc-pause 10ms:3:2ms`: the egress peer pauses priority 3 for 2 ms at 10 ms.
std::optional<replay::InjectedPause> parse_pause(const std::string& text) {
    const size_t first = text.find(':');
    const size_t second = first == std::string::npos ? first : text.find(':', first + 1);
    if (second == std::string::npos) return std::nullopt;
    const auto at = conf::parse_duration_ns(text.substr(0, first));
    const auto priority = conf::parse_unsigned(text.substr(first + 1, second - first - 1), 7);
    const auto duration = conf::parse_duration_ns(text.substr(second + 1));
    if (!at || !priority || !duration || *duration == 0 || *duration > kMaxPeerPauseNs)
        return std::nullopt;
    return replay::InjectedPause{*at, static_cast<uint8_t>(*priority), *duration};
}

// The class whose fairness a replay reports when --bulk-class is not given: the policy's bulk
// class by name, else where it sends elephants, else where RoCEv2 goes.
std::optional<size_t> bulk_class_of(const conf::Policy& policy) {
    if (const auto training = policy.find_class("training")) return training;
    const conf::HeuristicsPolicy& h = policy.classifier.heuristics;
    if (h.elephant) return h.elephant->class_index;
    return h.roce_class;
}

// Whether records arriving on `port` meet lossless senders in the replay: the port runs PFC and
// the replayed tree has a lossless class.
bool pfc_modelled(const Setup& s, uint16_t port) {
    return s.compiled.pfc.ports[port].mode != conf::PfcMode::off &&
           !s.egress().pfc_accounts.empty();
}

// Lossless senders on each input's ingress port that runs PFC, when a class is lossless: the
// same thresholds, priorities, account tags and watchdog as `twinlane run`, each sender reacting
// after its cable one way and its response (pfc/headroom.h's terms).
bool lossless_options(const ReplayArgs& args, Setup& s) {
    const conf::Policy& policy = *s.policy;
    const conf::CompiledEgress& egress = s.egress();
    replay::LosslessOptions& o = s.lossless;
    o.dscp_priority = s.compiled.pfc.dscp_priority;
    std::copy(egress.lane_priority.begin(), egress.lane_priority.end(), o.class_priority.begin());
    for (const Setup::Input& input : s.inputs) {
        if (!pfc_modelled(s, input.port)) continue;
        const bool seen = std::any_of(o.ingress.begin(), o.ingress.end(),
                                      [&](const auto& in) { return in.port == input.port; });
        if (seen) continue;
        const conf::PortPolicy& port = policy.ports[input.port];
        replay::LosslessIngress in;
        in.port = input.port;
        in.name = port.name;
        in.thresholds = s.compiled.pfc.ports[input.port].thresholds;
        in.rate_bps = port.rate_bits_per_sec;
        const pfc::Headroom h = conf::auto_headroom(policy, input.port);
        in.sender_reaction_ns =
            port.rate_bits_per_sec == 0
                ? 0
                : (h.cable_bytes / 2 + h.peer_bytes) * 8'000'000'000ULL / port.rate_bits_per_sec;
        for (size_t c = 0; c < in.class_tag.size(); ++c)
            in.class_tag[c] =
                egress.pfc_tag(input.port, static_cast<uint8_t>(c), egress.lane_priority[c]);
        o.ingress.push_back(std::move(in));
    }
    o.enabled = !o.ingress.empty();
    o.egress_rate_bps = s.link_rate_bps;
    o.pause_node = egress.pause_node;
    o.watchdog = s.compiled.pfc.watchdog;
    for (const std::string& text : args.pfc_pauses) {
        const auto pause = parse_pause(text);
        if (!pause) {
            spdlog::error(
                "--pfc-pause '{}': expected AT:PRIORITY:DURATION, e.g. 10ms:3:2ms "
                "(priority 0 to 7, a duration above 0 and at most 1h)",
                text);
            return false;
        }
        if (egress.pause_node[pause->priority] < 0) {
            spdlog::error("--pfc-pause '{}': no lossless class of {} is bound to priority {}", text,
                          args.policy, int{pause->priority});
            return false;
        }
        o.pauses.push_back(*pause);
    }
    if (!o.pauses.empty()) o.enabled = true;
    return true;
}

// The egress tree `args` selects (--port, else the first), or nullptr with an error logged.
const conf::EgressTree* select_tree(const conf::Policy& policy, const ReplayArgs& args) {
    if (policy.egress_trees.empty()) {
        spdlog::error("{}: no egress port with a scheduling tree", args.policy);
        return nullptr;
    }
    if (args.port.empty()) return &policy.egress_trees.front();
    const auto index = policy.find_port(args.port);
    const conf::EgressTree* tree = index ? policy.tree_for_port(*index) : nullptr;
    if (tree == nullptr) spdlog::error("{}: no egress port named '{}'", args.policy, args.port);
    return tree;
}

// The inputs as messages name them: "a.pcap", or "a.pcap + b.pcap" when several are merged.
std::string input_list(const Setup& s) {
    std::string list;
    for (const Setup::Input& input : s.inputs)
        list += (list.empty() ? "" : " + ") + input.path;
    return list;
}

// Each -i's ingress port: `PORT=FILE` names a port forwarding to the replayed egress port; a
// plain FILE arrives on the first port that does (or port 0 if none does).
bool resolve_inputs(const ReplayArgs& args, Setup& s) {
    const conf::Policy& policy = *s.policy;
    std::optional<uint16_t> first_source;
    for (const auto& f : policy.forwarding)
        if (f.to_port == s.tree->port) {
            first_source = static_cast<uint16_t>(f.from_port);
            break;
        }
    for (const std::string& text : args.inputs) {
        Setup::Input input{input_path(text), first_source.value_or(0)};
        if (input.path.empty()) {
            spdlog::error("-i '{}': no FILE after '=' (PORT=FILE)", text);
            return false;
        }
        if (input.path != text) {
            const std::string name = text.substr(0, text.size() - input.path.size() - 1);
            const auto port = policy.find_port(name);
            if (!port) {
                spdlog::error("-i '{}': {} has no port named '{}' (PORT=FILE)", text, args.policy,
                              name);
                return false;
            }
            const bool forwards = std::any_of(
                policy.forwarding.begin(), policy.forwarding.end(),
                [&](const auto& f) { return f.from_port == *port && f.to_port == s.tree->port; });
            if (!forwards) {
                spdlog::error("-i '{}': port '{}' does not forward to the replayed port '{}'", text,
                              name, policy.ports[s.tree->port].name);
                return false;
            }
            input.port = static_cast<uint16_t>(*port);
        }
        s.inputs.push_back(std::move(input));
    }
    s.ingress_port = s.inputs.front().port;
    return true;
}

// A rate option's value: above 0, at most 10T (the policy's bounds for a port rate); nothing,
// with the error logged, otherwise.
std::optional<uint64_t> parse_link_rate(const char* option, const std::string& text) {
    auto rate = conf::parse_rate_bits_per_sec(text);
    if (!rate) {
        spdlog::error("{}: {}", option, rate.error());
        return std::nullopt;
    }
    if (*rate == 0 || *rate > 10'000'000'000'000ULL) {
        spdlog::error("{}: '{}' is not a link rate (above 0, at most 10T)", option, text);
        return std::nullopt;
    }
    return *rate;
}

std::optional<Setup> prepare(const ReplayArgs& args) {
    std::optional<uint64_t> link_rate;
    if (args.link_rate) {
        link_rate = parse_link_rate("--link-rate", *args.link_rate);
        if (!link_rate) return std::nullopt;
    }
    std::optional<uint64_t> ingress_rate;
    if (args.ingress_rate) {
        ingress_rate = parse_link_rate("--ingress-rate", *args.ingress_rate);
        if (!ingress_rate) return std::nullopt;
    }
    conf::PolicyResult loaded = conf::load_policy(args.policy);
    if (!loaded.ok()) {
        for (const auto& e : loaded.errors)
            spdlog::error("{}", e.to_string());
        return std::nullopt;
    }
    const conf::EgressTree* tree = select_tree(*loaded.policy, args);
    if (tree == nullptr) return std::nullopt;
    // --link-rate replays the port at another rate: the policy is read again as if the port's
    // `rate` said so, so that its percentages (shapers, bursts, budgets) mean the same share of
    // the link they are replayed on. Reading them against the file's rate capped, e.g., the
    // default policy's 50% inference shaper at 5G on a 100G replay.
    const conf::PortPolicy& port = loaded.policy->ports[tree->port];
    if (link_rate && *link_rate != port.rate_bits_per_sec) {
        spdlog::info(
            "--link-rate {}: port '{}' replayed at that rate instead of the policy's "
            "{:.6g} Gbit/s (its percentages follow; absolute shaper rates above it are "
            "capped)",
            *args.link_rate, port.name, static_cast<double>(port.rate_bits_per_sec) / 1e9);
        loaded = conf::load_policy(args.policy, {port.name, *link_rate});
        if (!loaded.ok()) {
            for (const auto& e : loaded.errors)
                spdlog::error("with --link-rate {}: {}", *args.link_rate, e.to_string());
            return std::nullopt;
        }
        tree = select_tree(*loaded.policy, args);
        if (tree == nullptr) return std::nullopt;
    }
    Setup s;
    s.policy = loaded.policy;
    const conf::Policy& policy = *s.policy;
    s.compiled = conf::compile_policy(policy);
    if (!s.compiled.ok()) {
        for (const auto& e : s.compiled.errors)
            spdlog::error("{}: {}", args.policy, e);
        return std::nullopt;
    }
    s.tree = tree;
    s.egress_index = static_cast<size_t>(tree - policy.egress_trees.data());
    s.link_rate_bps = link_rate.value_or(policy.ports[tree->port].rate_bits_per_sec);
    s.ingress_rate_bps = ingress_rate.value_or(0);
    if (!resolve_inputs(args, s)) return std::nullopt;
    const auto bulk =
        args.bulk_class.empty() ? bulk_class_of(policy) : policy.find_class(args.bulk_class);
    if (!bulk) {
        if (args.bulk_class.empty())
            spdlog::error(
                "{} has no class named 'training', no elephant and no RoCE class: name "
                "the class whose fairness to report with --bulk-class",
                args.policy);
        else
            spdlog::error("--bulk-class: no class named '{}' in {}", args.bulk_class, args.policy);
        return std::nullopt;
    }
    s.bulk_class = static_cast<uint8_t>(*bulk);
    s.slo_measure_only = args.slo_measure_only;
    if (!lossless_options(args, s)) return std::nullopt;
    return s;
}

std::unique_ptr<replay::Discipline> make_discipline(const std::string& name, const Setup& s) {
    if (name == "fifo") {
        // The same total buffer as the tree: the sum of its leaves' limits.
        uint64_t packets = 0;
        uint64_t bytes = 0;
        for (const auto& node : s.egress().tree.nodes) {
            if (node.kind != sched::NodeKind::fifo && node.kind != sched::NodeKind::fq) continue;
            packets += node.limit_packets;
            bytes += node.limit_bytes;
        }
        return std::make_unique<replay::FifoDiscipline>(packets, bytes);
    }
    if (name == "rte_sched") {
        replay::RteSchedLayout layout = replay::rte_sched_layout_from(*s.policy, *s.tree);
        layout.link_rate_bps = s.link_rate_bps;
        auto d = std::make_unique<replay::RteSchedDiscipline>(layout);
        if (!d->ok()) {
            spdlog::error("{}", d->error());
            return nullptr;
        }
        return d;
    }
    slo::SloTreeSpec slo = s.egress().slo;
    if (s.slo_measure_only) {
        for (slo::SloClassSpec& c : slo.classes)
            c.adapt_cap = c.downgrade = false;
    }
    auto built = replay::SchedulerDiscipline::build(s.egress().tree, s.egress().leaves, slo);
    if (!built.discipline) {
        spdlog::error("{}", built.error);
        return nullptr;
    }
    for (const std::string& note : slo::targets_within_blocking(slo))
        spdlog::warn("slo: {}", note);
    return std::move(built.discipline);
}

int run(const ReplayArgs& args) {
    std::vector<std::string> disciplines{args.discipline};
    for (const auto& d : args.compare) {
        if (std::count(args.compare.begin(), args.compare.end(), d) > 1) {
            spdlog::error("--compare names '{}' twice", d);
            return 2;
        }
        if (d != args.discipline) disciplines.push_back(d);
    }
    const bool several = disciplines.size() > 1;
    if (several && args.output == "-") {
        spdlog::error(
            "-o -: --compare writes one pcap per discipline, and stdout takes one; "
            "give -o a file name (each discipline's gets its name added)");
        return 2;
    }

    for (const std::string& input : args.inputs) {
        if (auto problem = not_rereadable(input_path(input), disciplines.size())) {
            spdlog::error("{}", *problem);
            return 2;
        }
    }
    const bool reads_stdin = std::any_of(args.inputs.begin(), args.inputs.end(),
                                         [](const std::string& i) { return input_path(i) == "-"; });
    if (args.inputs.size() > 1 && reads_stdin) {
        spdlog::error(
            "-i -: stdin is one input of its own; save it to a file to merge it with others");
        return 2;
    }
    std::vector<NamedPath> outputs;
    for (const auto& name : disciplines) {
        const std::string pcap = per_discipline(args.output, name, several);
        if (!pcap.empty() && pcap != "-") outputs.push_back({"-o", pcap});
        const std::string report = per_discipline(args.report, name, several);
        if (!report.empty()) outputs.push_back({"--report", report});
    }
    if (auto problem = outputs_clash(args, outputs)) {
        spdlog::error("{}", *problem);
        return 2;
    }

    std::optional<Setup> setup = prepare(args);
    if (!setup) return 2;

    // rte_sched needs DPDK's memory: an EAL without hugepages, PCI or shared files.
    std::unique_ptr<Eal> eal;
    for (const auto& d : disciplines) {
        if (d == "rte_sched" && !eal) {
            eal = std::make_unique<Eal>(
                std::vector<std::string>{"--no-huge", "--no-pci", "--no-shconf", "--no-telemetry",
                                         "-m", "512", "-l", "0", "--log-level=error"});
            if (!eal->ok()) {
                spdlog::error("rte_sched needs DPDK's EAL: {}", eal->error());
                return 2;
            }
        }
    }

    if (auto too_big = flow_tables_exceed_memory(*setup->policy, setup->compiled.classifier, 1)) {
        spdlog::error("{}", *too_big);
        return 2;
    }
    if (auto too_big = scheduler_trees_exceed_memory(*setup->policy, {&setup->egress(), 1})) {
        spdlog::error("{}", *too_big);
        return 2;
    }
    std::vector<std::unique_ptr<replay::ReplayReport>> reports;
    // Written under temporary names and renamed once every run has finished: a failure (exit 2)
    // leaves no output file behind, and never a partial one in place of a good one.
    std::vector<std::unique_ptr<replay::OutputFile>> written;
    int rc = 0;
    for (const auto& name : disciplines) {
        classifier::Classifier classifier(setup->compiled.classifier);
        std::unique_ptr<replay::Discipline> discipline = make_discipline(name, *setup);
        if (!discipline) return 2;
        classifier.set_held_flows(discipline->held_flows());
        auto report = std::make_unique<replay::ReplayReport>(name, setup->link_rate_bps,
                                                             setup->compiled.classifier.class_names,
                                                             setup->bulk_class, 1'000'000);
        if (!setup->egress().slo.empty()) report->track_shares_by_class();
        try {
            std::vector<std::unique_ptr<replay::PcapReader>> readers;
            std::vector<replay::ReplayInput> inputs;
            for (const Setup::Input& input : setup->inputs) {
                readers.push_back(std::make_unique<replay::PcapReader>(input.path));
                inputs.push_back({readers.back().get(), input.port});
            }
            std::unique_ptr<replay::OutputFile> pcap_file;
            std::unique_ptr<replay::PcapWriter> writer;
            const std::string out_path = per_discipline(args.output, name, several);
            if (out_path == "-") {
                writer = std::make_unique<replay::PcapWriter>(out_path);  // stdout
            } else if (!out_path.empty()) {
                pcap_file = std::make_unique<replay::OutputFile>(out_path);
                writer = std::make_unique<replay::PcapWriter>(pcap_file->temporary_path());
            }
            replay::ReplayOptions options;
            options.link_rate_bps = setup->link_rate_bps;
            options.ingress_rate_bps = setup->ingress_rate_bps;
            options.ingress_port = setup->ingress_port;
            options.keep_payload = writer != nullptr;
            options.max_frame_bytes = setup->egress().tree.max_packet_bytes;
            options.lossless = setup->lossless;
            replay::replay_pcaps(options, classifier, *discipline, *report, writer.get(), inputs);
            if (writer) writer->close();
            const auto* governed =
                dynamic_cast<const replay::SchedulerDiscipline*>(discipline.get());
            if (governed != nullptr && governed->governor() != nullptr) {
                replay::SloReport slo = replay::SloReport::from(*governed->governor());
                for (const slo::SloEvent& e : slo.events)
                    spdlog::debug("slo at {:.6f} s: {}", static_cast<double>(e.time_ns) / 1e9,
                                  slo::describe(e, slo.classes.at(e.class_index).spec));
                report->set_slo(std::move(slo));
            }
            if (pcap_file) written.push_back(std::move(pcap_file));
            if (report->records_back_in_time() != 0 && name == disciplines.front()) {
                spdlog::warn(
                    "{}: {} records stamped earlier than the record before them "
                    "(by up to {:.1f} us: an unsorted merge of captures, or one bad "
                    "timestamp?) were replayed at that record's time; `reordercap` "
                    "sorts a capture",
                    input_list(*setup), report->records_back_in_time(),
                    static_cast<double>(report->max_back_in_time_ns()) / 1e3);
            }
            for (size_t k = 0; k < readers.size() && name == disciplines.front(); ++k) {
                const replay::PcapReader& reader = *readers[k];
                if (reader.truncated_tail().empty()) continue;
                spdlog::warn(
                    "pcap '{}' ends inside record {} ({}): replayed the {} complete "
                    "records before it",
                    setup->inputs[k].path, reader.records_read() + 1, reader.truncated_tail(),
                    reader.records_read());
            }
        } catch (const replay::PcapError& e) {
            spdlog::error("{}", e.what());
            return 2;
        } catch (const replay::OutputError& e) {
            spdlog::error("{}", e.what());
            return 2;
        }
        const std::string report_path = per_discipline(args.report, name, several);
        if (!report_path.empty()) {
            try {
                auto report_file = std::make_unique<replay::OutputFile>(report_path);
                std::ofstream f(report_file->temporary_path());
                f << report->to_json().dump(2) << "\n";
                f.close();
                if (!f) {
                    spdlog::error("cannot write {}", report_path);
                    return 2;
                }
                written.push_back(std::move(report_file));
            } catch (const replay::OutputError& e) {
                spdlog::error("{}", e.what());
                return 2;
            }
        }
        if (!report->accounts_for_every_packet()) {
            spdlog::error("{}: accounting mismatch", name);
            rc = 1;
        }
        reports.push_back(std::move(report));
    }
    // Also after an accounting mismatch (exit 1): the run finished, and its files show it.
    for (const auto& file : written) {
        try {
            file->commit();
        } catch (const replay::OutputError& e) {
            spdlog::error("{}", e.what());
            return 2;
        }
    }

    if (args.json) {
        nlohmann::json all = nlohmann::json::array();
        for (const auto& r : reports)
            all.push_back(r->to_json());
        std::printf("%s\n", all.dump().c_str());
    } else {
        std::vector<const replay::ReplayReport*> views;
        for (const auto& r : reports)
            views.push_back(r.get());
        std::printf("replay of %s at %.3g Gbit/s, policy %s\n", input_list(*setup).c_str(),
                    static_cast<double>(setup->link_rate_bps) / 1e9, args.policy.c_str());
        std::printf("%s", replay::format_comparison(views).c_str());
    }
    std::fflush(stdout);
    return rc;
}
}  // namespace

void add_replay_command(CLI::App& app, int& exit_code) {
    auto args = std::make_shared<ReplayArgs>();
    CLI::App* cmd = app.add_subcommand(
        "replay",
        "Replay a pcap in virtual time through the classifier and a scheduling discipline.\n"
        "Timestamps are arrival times; a virtual link of --link-rate gives departure times.");
    cmd->add_option("-c,--policy", args->policy, "Policy file (YAML)")->required();
    cmd->add_option("input,-i,--input", args->inputs,
                    "Input pcap (microsecond or nanosecond); repeatable: captures of several "
                    "links on one clock, merged by arrival, each on its own ingress link; "
                    "PORT=FILE: arriving on the policy's port PORT (default: the first port "
                    "forwarding to the replayed one)")
        ->required()
        ->take_all();
    cmd->add_option("-o,--output", args->output,
                    "Output pcap with departure timestamps (per discipline with --compare)");
    cmd->add_option("--report", args->report, "JSON report (per discipline with --compare)");
    cmd->add_option("--link-rate", args->link_rate,
                    "Link rate, e.g. 10G, 400Mbps (default: the egress port's rate); the "
                    "port is replayed at this rate, the policy's percentages follow it");
    cmd->add_option("--ingress-rate", args->ingress_rate,
                    "Records arrive over an ingress link of this rate, e.g. 25G: each when the "
                    "link has carried it, no sooner than its timestamp (as `twinlane run "
                    "--pace-input` hands them over; default: at their timestamps)");
    cmd->add_option("--discipline", args->discipline, "twinlane, fifo or rte_sched")
        ->check(CLI::IsMember({"twinlane", "fifo", "rte_sched"}))
        ->capture_default_str();
    cmd->add_option("--compare", args->compare, "Also run these disciplines, e.g. fifo,rte_sched")
        ->delimiter(',')
        ->check(CLI::IsMember({"twinlane", "fifo", "rte_sched"}));
    cmd->add_option("--port", args->port, "Egress port of the policy (default: the first)");
    cmd->add_option("--pfc-pause", args->pfc_pauses,
                    "The egress peer pauses a lossless priority: AT:PRIORITY:DURATION, e.g. "
                    "10ms:3:2ms (repeatable)");
    cmd->add_option("--bulk-class", args->bulk_class,
                    "Class whose fairness is reported (default: 'training', else the policy's "
                    "elephant class, else its RoCE class; a policy with none of these needs it)");
    cmd->add_flag("--json", args->json, "Print the reports as a JSON array instead of a table");
    cmd->add_flag("--slo-measure-only", args->slo_measure_only,
                  "Measure the policy's SLOs but take none of their actions (adapt_cap, "
                  "downgrade): the run without the controller");
    cmd->callback([args, &exit_code]() { exit_code = run(*args); });
}

}  // namespace twinlane::dataplane
