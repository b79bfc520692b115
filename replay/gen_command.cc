#include "replay/gen_command.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <memory>

#include "conf/units.h"
#include "replay/pcap_io.h"

namespace twinlane::replay {
namespace {

// Adapts a conf/units parser (value or reason) to a CLI11 validator (empty or reason).
template <typename Parser>
CLI::Validator parsed_by(Parser parser, const std::string& description) {
    return CLI::Validator(
        [parser](std::string& text) -> std::string {
            const auto result = parser(text);
            return result ? std::string() : result.error();
        },
        description);
}

struct GenArguments {
    GenOptions options;
    std::string link_rate = "10G";
    std::string duration = "50ms";
    std::string surge_start = "10ms";
    std::string surge_end = "30ms";
};

}  // namespace

std::string format_gen_summary(const GenSummary& summary) {
    std::string table = fmt::format("{:<24} {:>10} {:>14} {:>10} {:>8}\n", "component", "packets",
                                    "bytes", "Gb/s", "load");
    const auto row = [&](const std::string& name, const PacketByteCount& sent) {
        const double bps = summary.duration_ns == 0 ? 0.0
                                                    : static_cast<double>(sent.bytes) * 8e9 /
                                                          static_cast<double>(summary.duration_ns);
        table += fmt::format("{:<24} {:>10} {:>14} {:>10.3f} {:>8.3f}\n", name, sent.packets,
                             sent.bytes, bps / 1e9, bps / summary.link_rate_bps);
    };
    for (const ComponentSummary& component : summary.components) {
        if (component.sent.packets > 0) row("  " + component.name, component.sent);
    }
    for (size_t job = 0; job < summary.per_job.size(); ++job) {
        row("job" + std::to_string(job), summary.per_job[job]);
    }
    for (size_t c = 0; c < kTrafficClassCount; ++c) {
        row(traffic_class_name(static_cast<TrafficClass>(c)), summary.per_class[c]);
    }
    row("total", summary.total);
    table +=
        fmt::format("link {:.3f} Gb/s, duration {:.3f} ms (loads are frame bytes / link)\n",
                    summary.link_rate_bps / 1e9, static_cast<double>(summary.duration_ns) / 1e6);
    return table;
}

void add_gen_command(CLI::App& app, std::ostream& out) {
    auto arguments = std::make_shared<GenArguments>();
    GenOptions& options = arguments->options;
    CLI::App* gen = app.add_subcommand(
        "gen", "Generate a deterministic mixed AI workload (training, inference, other) as pcap");
    gen->add_option("-o,--output", options.output_path, "Output pcap (nanosecond timestamps)")
        ->required();
    gen->add_option("--link-rate", arguments->link_rate, "Bottleneck link rate, e.g. 10G, 400M")
        ->check(parsed_by(conf::parse_rate_bits_per_sec, "RATE"))
        ->capture_default_str();
    gen->add_option("--duration", arguments->duration, "Trace duration, e.g. 50ms, 500us, 2s")
        ->check(parsed_by(conf::parse_duration_ns, "DURATION"))
        ->capture_default_str();
    gen->add_option("--training-load", options.training_load,
                    "Training offered load, fraction of the link")
        ->check(CLI::Range(0.0, 10.0))
        ->capture_default_str();
    gen->add_option("--inference-load", options.inference_load,
                    "Inference offered load, fraction of the link")
        ->check(CLI::Range(0.0, 10.0))
        ->capture_default_str();
    gen->add_option("--other-load", options.other_load, "Other offered load, fraction of the link")
        ->check(CLI::Range(0.0, 10.0))
        ->capture_default_str();
    gen->add_option("--jobs", options.training_jobs, "Training jobs")
        ->check(CLI::Range(0, 64))
        ->capture_default_str();
    gen->add_option("--flows-per-job", options.flows_per_job, "Flows (ranks) per training job")
        ->check(CLI::Range(1, 64))
        ->capture_default_str();
    gen->add_option("--clients", options.inference_clients, "Inference clients")
        ->check(CLI::Range(0, 4000))
        ->capture_default_str();
    gen->add_option("--seed", options.seed, "PRNG seed (same seed, same bytes)")
        ->check(CLI::Validator(
            [](const std::string& text) -> std::string {
                // CLI11 alone wrapped "-1" and clamped values above 2^64 - 1.
                auto seed = conf::parse_unsigned(text, UINT64_MAX);
                return seed ? std::string() : seed.error();
            },
            "UINT64"))
        ->capture_default_str();
    gen->add_flag("--roce-only", options.roce_only,
                  "Training is RoCEv2 collectives only (no NCCL-over-TCP jobs, no checkpoints)");
    gen->add_option("--roce-dscp", options.roce_dscp, "DSCP of RoCEv2 training flows")
        ->check(CLI::Range(0, 63))
        ->capture_default_str();
    gen->add_option("--roce-pcp", options.roce_pcp,
                    "Priority-tag RoCEv2 frames (802.1Q, VLAN 0) with this PCP, 0-7")
        ->check(CLI::Range(0, 7));
    gen->add_option("--ipv6-fraction", options.ipv6_fraction,
                    "Share of inference clients using IPv6")
        ->check(CLI::Range(0.0, 1.0))
        ->capture_default_str();

    gen->add_option("--surge", options.surge_factor,
                    "Inference surge: the inference load times this factor during "
                    "[--surge-start, --surge-end), e.g. 25 (1: no surge)")
        ->check(CLI::Range(1.0, 1000.0))
        ->capture_default_str();
    gen->add_option("--surge-start", arguments->surge_start, "When the surge starts")
        ->check(parsed_by(conf::parse_duration_ns, "DURATION"))
        ->capture_default_str();
    gen->add_option("--surge-end", arguments->surge_end, "When the surge ends")
        ->check(parsed_by(conf::parse_duration_ns, "DURATION"))
        ->capture_default_str();
    gen->add_option("--surge-clients", options.surge_clients,
                    "Clients that carry the surge's extra load (many: each light; few: each "
                    "heavy); 0: as many as --clients")
        ->check(CLI::Range(0, 4000))
        ->capture_default_str();

    gen->callback([arguments, &out]() {
        GenOptions run = arguments->options;
        // The strings passed their validators, so the results hold values.
        run.link_rate_bps =
            static_cast<double>(*conf::parse_rate_bits_per_sec(arguments->link_rate));
        run.duration_ns = *conf::parse_duration_ns(arguments->duration);
        run.surge_start_ns = *conf::parse_duration_ns(arguments->surge_start);
        run.surge_end_ns = *conf::parse_duration_ns(arguments->surge_end);
        GenSummary summary;
        try {
            summary = write_traffic_pcap(run);
        } catch (const std::invalid_argument& error) {
            throw CLI::ValidationError("gen", error.what());
        } catch (const PcapError& error) {
            // CLI11 prints nothing for a RuntimeError: the reason is logged here.
            spdlog::error("gen: {}", error.what());
            throw CLI::RuntimeError(1);
        }
        out << "wrote " << summary.total.packets << " packets to " << run.output_path << "\n"
            << format_gen_summary(summary);
        // Each client sends its share of the inference load; below one smallest RPC (a 100 B
        // request and a 1 KB response) its responses are cut short, or it sends nothing.
        if (run.inference_clients != 0 && run.inference_load > 0) {
            const double per_client = run.inference_load * run.link_rate_bps *
                                      static_cast<double>(run.duration_ns) / 8e9 /
                                      run.inference_clients;
            if (per_client < 1100) {
                out << fmt::format(
                    "note: {} inference clients share {:.0f} B each, less than one RPC (1.1 KB):"
                    " responses are cut short; fewer --clients or a longer --duration give "
                    "whole RPCs\n",
                    run.inference_clients, per_client);
            }
        }
    });
}

}  // namespace twinlane::replay
