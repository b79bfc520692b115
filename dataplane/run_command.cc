#include "dataplane/run_command.h"

#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "conf/units.h"
#include "dataplane/daemon.h"
#include "dataplane/eal.h"
#include "dataplane/fifo_forwarder.h"
#include "dataplane/port.h"
#include "dataplane/stop_signal.h"

namespace twinlane::dataplane {
namespace {

// A day: beyond it "idle" means something else than the end of a capture.
constexpr uint64_t kMaxIdleExitNs = 86'400'000'000'000;
// A year: --duration, --drain-timeout, --stats-interval (the clock's nanoseconds hold 584).
constexpr uint64_t kMaxTimeOptionNs = 365 * 86'400'000'000'000;

struct RunArgs {
    std::string policy_path;
    std::string stop_mode = "drain";
    std::string drain_timeout = "100ms";
    std::string duration = "0";
    std::string stats_interval = "0";
    uint32_t lane_ring_slots = 1024;
    std::optional<std::string> pace_input;
    bool preload_input = false;
    std::string pace_max_gap = "1s";
    std::string in_port;
    std::string out_port;
    uint32_t fifo_packets = 4096;
    uint32_t mbufs = 8191;
    std::string idle_exit = "auto";
    bool json = false;
    std::string control_socket;
    bool no_control = false;
    bool watch_policy = false;
    int metrics_port = -1;  // -1: the policy's
    bool explicit_log_level = false;
    std::vector<std::string> eal_args;
};

bool resolve(const std::string& name, uint16_t fallback_index, uint16_t& port_id) {
    std::string error;
    if (find_port_or_nth(name, fallback_index, port_id, error)) return true;
    spdlog::error("{}", error);
    return false;
}

// A time option once its validator accepted it: a duration, or a bare number of `bare_unit_ns`.
uint64_t option_ns(const std::string& text, uint64_t bare_unit_ns) {
    return *conf::parse_option_duration_ns(text, bare_unit_ns);
}

// Why a time option is refused, or "": a duration with its unit, or a bare number of
// `bare_unit` (the unit the option has always taken), at most `max_ns`.
std::string time_option_error(const std::string& text, uint64_t bare_unit_ns, const char* bare_unit,
                              uint64_t max_ns) {
    auto ns = conf::parse_option_duration_ns(text, bare_unit_ns);
    if (!ns)
        return ns.error() + "; give a duration such as 500ms or 2s, or a number of " + bare_unit;
    if (*ns > max_ns) return "'" + text + "' is more than " + conf::duration_text(max_ns);
    return {};
}

CLI::Validator time_option(uint64_t bare_unit_ns, const char* bare_unit) {
    return CLI::Validator(
        [=](const std::string& text) {
            return time_option_error(text, bare_unit_ns, bare_unit, kMaxTimeOptionNs);
        },
        "DURATION");
}

// End of input is only knowable for file-backed input: a pcap RX device stops delivering.
uint64_t idle_exit_ns(const std::string& setting, uint16_t rx_port) {
    if (setting == "never") return 0;
    if (setting == "auto") {
        rte_eth_dev_info info{};
        if (rte_eth_dev_info_get(rx_port, &info) == 0 && info.driver_name != nullptr &&
            std::string(info.driver_name) == "net_pcap")
            return 200'000'000;
        return 0;
    }
    return option_ns(setting, 1'000'000);
}

void print_counters(const RunArgs& args, const std::string& rx, const std::string& tx,
                    const FifoForwarderCounters& c) {
    if (args.json) {
        nlohmann::json j = {
            {"rx_port", rx},
            {"tx_port", tx},
            {"rx_packets", c.rx_packets},
            {"rx_bytes", c.rx_bytes},
            {"tx_packets", c.tx_packets},
            {"tx_bytes", c.tx_bytes},
            {"dropped", {{"fifo_full", c.dropped_fifo_full}, {"shutdown", c.dropped_shutdown}}},
            {"queued", c.queued},
        };
        std::printf("%s\n", j.dump().c_str());
        return;
    }
    std::printf("twinlane run: %s -> %s (FIFO)\n", rx.c_str(), tx.c_str());
    std::printf("  %-22s %12llu packets %14llu bytes\n", "received",
                static_cast<unsigned long long>(c.rx_packets),
                static_cast<unsigned long long>(c.rx_bytes));
    std::printf("  %-22s %12llu packets %14llu bytes\n", "transmitted",
                static_cast<unsigned long long>(c.tx_packets),
                static_cast<unsigned long long>(c.tx_bytes));
    std::printf("  %-22s %12llu packets\n", "dropped: fifo full",
                static_cast<unsigned long long>(c.dropped_fifo_full));
    std::printf("  %-22s %12llu packets\n", "dropped: shutdown",
                static_cast<unsigned long long>(c.dropped_shutdown));
    std::printf("  %-22s %12llu packets\n", "still queued",
                static_cast<unsigned long long>(c.queued));
    std::fflush(stdout);
}

int run_policy(const RunArgs& args) {
    DaemonOptions options;
    options.policy_path = args.policy_path;
    options.eal_args = args.eal_args;
    options.json = args.json;
    options.stop_mode = args.stop_mode == "drop" ? StopMode::drop : StopMode::drain;
    options.drain_timeout_ns = option_ns(args.drain_timeout, 1'000'000);
    options.idle_exit_auto = args.idle_exit == "auto";
    options.idle_exit_ns = 0;
    if (options.idle_exit_auto) {
        options.idle_exit_ns = 200'000'000;
    } else if (args.idle_exit != "never") {
        options.idle_exit_ns = option_ns(args.idle_exit, 1'000'000);
    }
    options.duration_ns = option_ns(args.duration, 1'000'000'000);
    options.stats_interval_ns = option_ns(args.stats_interval, 1'000'000'000);
    options.lane_ring_slots = args.lane_ring_slots;
    if (args.pace_input) {
        auto rate = conf::parse_rate_bits_per_sec(*args.pace_input);
        if (!rate || *rate == 0) {
            spdlog::error("--pace-input {}: {}", *args.pace_input,
                          rate ? std::string("must be above 0") : rate.error());
            return 2;
        }
        options.pace_input_bps = *rate;
    }
    options.preload_input = args.preload_input;
    options.pace_max_gap_ns = option_ns(args.pace_max_gap, 1'000'000'000);
    options.control = !args.no_control;
    options.watch_policy = args.watch_policy;
    if (!args.control_socket.empty()) options.control_socket = args.control_socket;
    if (args.metrics_port >= 0) options.metrics_port = static_cast<uint16_t>(args.metrics_port);
    options.explicit_log_level = args.explicit_log_level;
    return run_daemon(options);
}

int run(const RunArgs& args) {
    if (!args.policy_path.empty()) return run_policy(args);
    Eal eal(args.eal_args);
    if (!eal.ok()) {
        spdlog::error("{}", eal.error());
        return 2;
    }
    uint16_t rx = 0;
    uint16_t tx = 0;
    if (!resolve(args.in_port, 0, rx) || !resolve(args.out_port, 1, tx)) return 2;
    if (rx == tx) {
        spdlog::error("input and output are the same port ({})", port_name(rx));
        return 2;
    }
    const int socket = rte_eth_dev_socket_id(rx);
    std::unique_ptr<rte_mempool, decltype(&rte_mempool_free)> pool(
        rte_pktmbuf_pool_create("twinlane_mbufs", args.mbufs, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                                socket < 0 ? static_cast<int>(rte_socket_id()) : socket),
        &rte_mempool_free);
    if (!pool) {
        spdlog::error("cannot create a pool of {} mbufs: {}", args.mbufs, rte_strerror(rte_errno));
        return 2;
    }
    std::string error;
    for (uint16_t port : {rx, tx}) {
        if (!start_port(port, PortSettings{}, pool.get(), error)) {
            spdlog::error("{}", error);
            return 2;
        }
        spdlog::info("port {} started", port_name(port));
    }
    const unsigned in_use_before = rte_mempool_in_use_count(pool.get());

    FifoForwarderOptions options;
    options.rx_port = rx;
    options.tx_port = tx;
    options.fifo_packets = args.fifo_packets;
    options.idle_exit_ns = idle_exit_ns(args.idle_exit, rx);
    install_stop_handlers();
    spdlog::info("forwarding {} -> {}{}", port_name(rx), port_name(tx),
                 options.idle_exit_ns ? " until end of input" : " until SIGINT/SIGTERM");
    const FifoForwarderCounters counters = run_fifo_forwarder(options);

    const std::string rx_name = port_name(rx);
    const std::string tx_name = port_name(tx);
    for (uint16_t port : {rx, tx})
        stop_port(port);
    const unsigned in_use_after = rte_mempool_in_use_count(pool.get());
    print_counters(args, rx_name, tx_name, counters);

    int rc = 0;
    if (counters.rx_packets != counters.tx_packets + counters.dropped() + counters.queued) {
        spdlog::error("accounting mismatch: rx {} != tx {} + dropped {} + queued {}",
                      counters.rx_packets, counters.tx_packets, counters.dropped(),
                      counters.queued);
        rc = 1;
    }
    if (in_use_after > in_use_before) {
        spdlog::error("mbuf leak: {} in use at start, {} at exit", in_use_before, in_use_after);
        rc = 1;
    }
    return rc;
}
}  // namespace

void add_run_command(CLI::App& app, const std::vector<std::string>& eal_args, int& exit_code) {
    auto args = std::make_shared<RunArgs>();
    // Options of one mode only: `twinlane run -c POLICY` (the scheduled pipeline) or without it
    // (the FIFO slice between two ports); each is marked where it is added.
    using Options = std::vector<const CLI::Option*>;
    auto policy_only = std::make_shared<Options>();
    auto fifo_only = std::make_shared<Options>();
    const auto marker = [](Options& mode) {
        return [&mode](CLI::Option* o) {
            mode.push_back(o);
            return o;
        };
    };
    const auto for_policy = marker(*policy_only);
    const auto for_fifo = marker(*fifo_only);
    CLI::App* cmd = app.add_subcommand(
        "run",
        "Forward packets between DPDK ports.\n"
        "With -c POLICY: the scheduled pipeline (ports, lanes, lcores from the policy).\n"
        "Without: the FIFO slice between two ports. DPDK EAL arguments follow `--`, e.g.\n"
        "  twinlane run -c conf/default.yaml -- --no-huge --no-pci -l 0-1\n"
        "  twinlane run -- --no-huge --no-pci --vdev=net_pcap0,rx_pcap=in.pcap "
        "--vdev=net_pcap1,tx_pcap=out.pcap");
    cmd->add_option("-c,--policy", args->policy_path, "Policy file (see conf/README.md)")
        ->check(CLI::ExistingFile);
    for_policy(
        cmd->add_option("--stop-mode", args->stop_mode,
                        "On SIGINT/SIGTERM (-c): 'drain' queued packets (up to --drain-timeout) or "
                        "'drop' them (counted)")
            ->check(CLI::IsMember({"drain", "drop"}))
            ->capture_default_str());
    for_policy(cmd->add_option("--drain-timeout", args->drain_timeout,
                               "Drain limit: a duration (e.g. 2s) or ms (-c)")
                   ->check(time_option(1'000'000, "ms"))
                   ->capture_default_str());
    for_policy(cmd->add_option("--duration", args->duration,
                               "Stop after this long: a duration (e.g. 90s, 10min) or seconds "
                               "(-c; 0: never)")
                   ->check(time_option(1'000'000'000, "seconds")));
    for_policy(cmd->add_option("--stats-interval", args->stats_interval,
                               "Log rx/tx rates this often: a duration (e.g. 500ms) or seconds "
                               "(-c; 0: off)")
                   ->check(time_option(1'000'000'000, "seconds")));
    for_policy(cmd->add_option("--lane-ring-slots", args->lane_ring_slots,
                               "Slots per (egress port, class) ring between RX and scheduler (-c)")
                   ->check(CLI::Range(64u, 1u << 20))
                   ->capture_default_str());
    CLI::Option* pace = for_policy(
        cmd->add_option("--pace-input", args->pace_input,
                        "Hand each input frame over at its capture timing, serialised at this "
                        "link rate (e.g. 25G), and time it from its arrival on that link (-c; "
                        "net_pcap inputs)"));
    for_policy(
        cmd->add_flag("--preload-input", args->preload_input,
                      "With --pace-input: read each capture into the mbuf pool before the run, so "
                      "the lcore does not read files during it (-c; needs memory for the whole "
                      "capture); several ports' captures then share one clock")
            ->needs(pace));
    for_policy(cmd->add_option("--pace-max-gap", args->pace_max_gap,
                               "With --pace-input: a jump of a capture's clock longer than this "
                               "(an idle hour, a clock step, a corrupt record) waits only this "
                               "long, counted in the end-of-run log; a duration or seconds (-c; "
                               "0: keep every gap)")
                   ->check(time_option(1'000'000'000, "seconds"))
                   ->capture_default_str()
                   ->needs(pace));
    for_fifo(cmd->add_option("--in", args->in_port,
                             "Input port by DPDK device name (without -c; default: first port)"));
    for_fifo(cmd->add_option("--out", args->out_port,
                             "Output port by DPDK device name (without -c; default: second port)"));
    for_fifo(
        cmd->add_option("--fifo-packets", args->fifo_packets, "FIFO limit in packets (without -c)")
            ->check(CLI::Range(1u, 1u << 20))
            ->capture_default_str());
    for_fifo(cmd->add_option("--mbufs", args->mbufs, "Mbufs in the packet pool (without -c)")
                 ->check(CLI::Range(1023u, 1u << 24))
                 ->capture_default_str());
    cmd->add_option("--idle-exit", args->idle_exit,
                    "Stop after this long without input: a duration (e.g. 2s) or ms (0: "
                    "never), 'never', or 'auto' (200 ms for a pcap input, else never)")
        ->check(CLI::Validator(
            [](const std::string& text) -> std::string {
                if (text == "auto" || text == "never") return {};
                const std::string error = time_option_error(text, 1'000'000, "ms", kMaxIdleExitNs);
                return error.empty() ? error : error + ", 'never' or 'auto'";
            },
            "DURATION|never|auto"))
        ->capture_default_str();
    cmd->add_flag("--json", args->json, "Print final counters as one JSON object");
    for_policy(cmd->add_option("--control-socket", args->control_socket,
                               "Control socket path instead of the policy's control.socket (-c)")
                   ->check([](const std::string& path) {
                       return path.size() > 1 && path.front() == '/' && path.size() < 108
                                  ? std::string()
                                  : std::string("an absolute path shorter than 108 bytes");
                   }));
    for_policy(cmd->add_flag("--no-control", args->no_control, "No control socket (-c)"));
    for_policy(cmd->add_flag(
        "--watch-policy", args->watch_policy,
        "Apply the policy file when it changes on disk (-c; SIGHUP always reloads it)"));
    for_policy(
        cmd->add_option("--metrics-port", args->metrics_port,
                        "Metrics HTTP port instead of the policy's metrics.port; 0: off (-c)")
            ->check(CLI::Range(0, 65535)));
    cmd->callback([args, &eal_args, &exit_code, &app, policy_only, fifo_only]() {
        args->eal_args = eal_args;
        // An option of the other mode would be silently ignored: refuse it, named.
        const bool policy = !args->policy_path.empty();
        for (const CLI::Option* option : policy ? *fifo_only : *policy_only) {
            if (option->count() == 0) continue;
            const std::string name = option->get_name();
            if (policy)
                spdlog::error(
                    "{} applies to the FIFO slice (without -c); with a policy, its "
                    "ports and lanes say what is used",
                    name);
            else
                spdlog::error("{} applies to the policy pipeline: give it with -c POLICY", name);
            exit_code = 2;
            return;
        }
        // A --log-level given on the command line wins over the policy's log_level.
        const CLI::Option* level = app.get_option_no_throw("--log-level");
        args->explicit_log_level = level != nullptr && level->count() > 0;
        exit_code = run(*args);
    });
}

}  // namespace twinlane::dataplane
