#include "dataplane/daemon.h"

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <spdlog/spdlog.h>

#include <thread>

#include "conf/compile.h"
#include "conf/load_policy.h"
#include "dataplane/device_probe.h"
#include "dataplane/housekeeping_cpus.h"
#include "dataplane/packet_meta.h"
#include "dataplane/policy_reload.h"
#include "dataplane/port.h"
#include "dataplane/run_monitor.h"
#include "dataplane/run_report.h"
#include "dataplane/stop_signal.h"

namespace twinlane::dataplane {
namespace {

int launch_lcore(void* arg) {
    auto* pair = static_cast<std::pair<LcoreContext*, PipelineShared*>*>(arg);
    run_lcore(*pair->first, *pair->second);
    return 0;
}

std::vector<NicCounters> nic_counters(const Pipeline& p) {
    std::vector<NicCounters> out;
    for (size_t i = 0; i < p.policy->ports.size(); ++i) {
        NicCounters nic;
        rte_eth_stats eth{};
        if (i < p.dpdk_ports.size() && rte_eth_stats_get(p.dpdk_ports[i], &eth) == 0) {
            nic = {true, eth.imissed, eth.ierrors, eth.rx_nombuf, eth.oerrors};
            if (eth.imissed + eth.ierrors + eth.rx_nombuf != 0) {
                spdlog::warn(
                    "port '{}': the NIC lost {} received packets before twinlane saw "
                    "them (missed {}, errors {}, no mbuf {})",
                    p.policy->ports[i].name, eth.imissed + eth.ierrors + eth.rx_nombuf, eth.imissed,
                    eth.ierrors, eth.rx_nombuf);
            }
        }
        out.push_back(nic);
    }
    return out;
}

uint64_t still_queued(const Pipeline& p) {
    uint64_t queued = 0;
    for (const auto& e : p.egress) {
        queued += e->scheduler->queued_packets() + e->held_count;
        for (rte_ring* ring : e->lanes)
            queued += rte_ring_count(ring);
    }
    return queued;
}

// `--pace-input`: whether each input kept its timing. A frame read only after its arrival on
// the modelled link was handed over late, and that wait counts as the pipeline's.
void log_paced_inputs(const Pipeline& p) {
    const double tsc_per_us = static_cast<double>(rte_get_tsc_hz()) / 1e6;
    for (const std::unique_ptr<LcoreContext>& ctx : p.lcores) {
        for (const RxTask& task : ctx->rx) {
            if (!task.paced) continue;
            const PacedInput& in = *task.paced;
            const auto level = in.read_late() == 0 && in.unstamped() == 0 &&
                                       in.freed_at_stop() == 0 && in.gaps_cut() == 0
                                   ? spdlog::level::info
                                   : spdlog::level::warn;
            spdlog::log(level,
                        "paced input '{}'/{}: {} frames, {} read after their arrival on the link "
                        "(at most {:.1f} us late), {} without a capture time, {} not yet arrived "
                        "when the run stopped (freed, not received), {} jumps of its clock "
                        "longer than --pace-max-gap cut to it ({:.3f} s taken out)",
                        p.policy->ports[task.policy_port].name, task.queue, in.frames(),
                        in.read_late(), static_cast<double>(in.max_late_tsc()) / tsc_per_us,
                        in.unstamped(), in.freed_at_stop(), in.gaps_cut(),
                        static_cast<double>(in.cut_ns()) / 1e9);
        }
    }
}

}  // namespace

std::unique_ptr<Daemon> Daemon::open(const DaemonOptions& options) {
    // First: a SIGINT/SIGTERM during set-up (EAL, ports: a fraction of a second) then stops the
    // run as soon as it starts, with the final report, instead of killing the process.
    install_stop_handlers();
    install_reload_handler();  // a SIGHUP reloads (as `systemctl reload` sends it), never kills
    const conf::PolicyResult loaded = conf::load_policy(options.policy_path);
    if (!loaded.ok()) {
        for (const auto& e : loaded.errors)
            spdlog::error("{}", e.to_string());
        return nullptr;
    }
    std::unique_ptr<Daemon> daemon(new Daemon(options));
    if (!daemon->start_eal(loaded.policy) || !daemon->resolve_and_compile()) return nullptr;
    const std::optional<LcorePlan> plan = daemon->plan_roles();
    if (!plan || !daemon->build(*plan)) return nullptr;
    std::string error;
    // From here the main thread starts the daemon's own threads (housekeeping_cpus.h).
    const cpu_set_t housekeeping = housekeeping_cpus(daemon->eal_->process_cpus());
    if (!move_calling_thread(housekeeping, error)) {
        spdlog::error("{}", error);
        return nullptr;
    }
    spdlog::info("daemon threads on CPUs {}", cpu_list(housekeeping));
    if (!daemon->surfaces_.start(*daemon->pipeline_, options, daemon_roles(*daemon->pipeline_),
                                 error)) {
        spdlog::error("{}", error);
        return nullptr;
    }
    return daemon;
}

bool Daemon::start_eal(std::shared_ptr<const conf::Policy> policy) {
    if (!options_.explicit_log_level)
        spdlog::set_level(static_cast<spdlog::level::level_enum>(policy->log_level));
    eal_ = std::make_unique<Eal>(eal_arguments(*policy, options_.eal_args));
    if (!eal_->ok()) {
        spdlog::error("{}", eal_->error());
        return false;
    }
    pipeline_ = std::make_unique<Pipeline>();
    pipeline_->policy = std::move(policy);
    std::string error;
    pipeline_->shared.meta_offset = register_packet_meta(error);
    if (pipeline_->shared.meta_offset < 0) {
        spdlog::error("{}", error);
        return false;
    }
    return true;
}

bool Daemon::resolve_and_compile() {
    Pipeline& p = *pipeline_;
    std::string error;
    for (const conf::PortPolicy& port : p.policy->ports) {
        uint16_t id = 0;
        if (!resolve_port(port, id, error)) {
            spdlog::error("{}", error);
            return false;
        }
        p.dpdk_ports.push_back(id);
    }
    p.compiled = conf::compile_policy(*p.policy, p.dpdk_ports);
    for (const std::string& e : p.compiled.errors)
        spdlog::error("{}", e);
    return p.compiled.ok();
}

std::optional<LcorePlan> Daemon::plan_roles() const {
    const Pipeline& p = *pipeline_;
    std::vector<std::pair<size_t, uint16_t>> ingress;
    for (const conf::ForwardingPolicy& f : p.policy->forwarding)
        ingress.emplace_back(f.from_port, p.policy->ports[f.from_port].rx_queues);
    std::vector<size_t> egress_ports;
    for (const conf::CompiledEgress& e : p.compiled.egress)
        egress_ports.push_back(e.port);
    std::vector<uint32_t> available{rte_get_main_lcore()};
    unsigned worker = 0;
    RTE_LCORE_FOREACH_WORKER(worker) {
        available.push_back(worker);
    }
    LcorePlan plan = plan_lcores(p.policy->lcores, ingress, egress_ports, available);
    if (!plan.ok()) {
        spdlog::error("{}: lcores: {}", options_.policy_path, plan.error);
        return std::nullopt;
    }
    return plan;
}

bool Daemon::build(const LcorePlan& plan) {
    Pipeline& p = *pipeline_;
    std::string error;
    p.pace_input_bps = options_.pace_input_bps;
    p.pace_max_gap_ns = options_.pace_max_gap_ns;
    p.preload_input = options_.preload_input;
    if ((p.preload_input && !size_preloaded_inputs(p, error)) ||
        !create_pools(p, plan, options_.lane_ring_slots, error)) {
        spdlog::error("{}", error);
        return false;
    }
    mbufs_at_start_ = pools_in_use(p);
    if (!start_ports(p, error) || !build_egress(p, plan, options_.lane_ring_slots, error) ||
        !build_lcores(p, plan, error) || !build_pfc(p, error) || !preload_inputs(p, error)) {
        spdlog::error("{}", error);
        return false;
    }
    // DPDK 22.11's af_xdp PMD fills its fill rings from the pool at start and, at close,
    // neither gives those back nor reaps the TX completions still outstanding (its TX ring has
    // the fill ring's size). Every other driver returns what it holds. So the leak check
    // allows af_xdp ports up to twice what their fill rings took at start.
    bool any_af_xdp = false;
    for (uint16_t port : p.started_ports)
        any_af_xdp = any_af_xdp || driver_is(port, "net_af_xdp");
    mbufs_held_by_af_xdp_ = any_af_xdp ? 2 * (pools_in_use(p) - mbufs_at_start_) : 0;

    p.shared.clock = TscClock(rte_rdtsc(), rte_get_tsc_hz());
    p.shared.lane_count = static_cast<uint32_t>(p.policy->classes.size());
    p.shared.stop_mode = options_.stop_mode;
    p.shared.drain_timeout_ns = options_.drain_timeout_ns;
    uint32_t rx_lcores = 0;
    for (const auto& ctx : p.lcores)
        rx_lcores += ctx->rx.empty() ? 0 : 1;
    p.shared.rx_lcores_running.store(rx_lcores);
    for (const auto& ctx : p.lcores) {
        roles_.push_back(describe_role(p, *ctx));
        spdlog::info("{}", roles_.back());
    }
    return true;
}

void Daemon::serve() {
    Pipeline& p = *pipeline_;
    const bool idle_exit =
        options_.idle_exit_ns != 0 && (!options_.idle_exit_auto || every_input_is_pcap(p));
    spdlog::info("forwarding with policy {}{}", options_.policy_path,
                 idle_exit ? " until end of input" : " until SIGINT/SIGTERM");
    const auto started = std::chrono::steady_clock::now();
    {
        Monitor monitor(p, options_, idle_exit);
        PolicyReloader reloader(*surfaces_.api(), options_.policy_path, options_.watch_policy);
        launch_and_wait();
        request_stop();  // ends the monitor's idle/duration checks too
    }
    surfaces_.stop();
    served_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

// Workers on their lcores, the main lcore's own role (if any) on this thread; returns when
// every lcore has stopped.
void Daemon::launch_and_wait() {
    Pipeline& p = *pipeline_;
    std::vector<std::pair<LcoreContext*, PipelineShared*>> args;
    args.reserve(p.lcores.size());
    LcoreContext* main_context = nullptr;
    for (const auto& ctx : p.lcores) {
        if (ctx->lcore == rte_get_main_lcore()) {
            main_context = ctx.get();
            continue;
        }
        args.emplace_back(ctx.get(), &p.shared);
        const int rc = rte_eal_remote_launch(launch_lcore, &args.back(), ctx->lcore);
        if (rc != 0) {
            // Stop the run; the lanes this lcore would have served stay counted as queued.
            spdlog::error("cannot launch lcore {}: {}", ctx->lcore, rte_strerror(-rc));
            if (!ctx->rx.empty()) p.shared.rx_lcores_running.fetch_sub(1);
            request_stop();
        }
    }
    if (main_context != nullptr) {
        pin_to_main_lcore();
        run_lcore(*main_context, p.shared);
    }
    // Sleep, not spin, while the workers run: rte_eal_mp_wait_lcore busy-waits, and a main
    // lcore without a role (e.g. `-l 0-1` with one forwarding lcore) then took a CPU the
    // machine may not have to spare (2 vCPUs: the forwarding lcore ran at half its rate).
    unsigned worker = 0;
    RTE_LCORE_FOREACH_WORKER(worker) {
        while (rte_eal_get_lcore_state(worker) == RUNNING)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    rte_eal_mp_wait_lcore();
}

int Daemon::report() {
    Pipeline& p = *pipeline_;
    RunReport report;
    for (const conf::PortPolicy& port : p.policy->ports) {
        report.port_names.push_back(port.name);
        report.port_devices.push_back(port.device);
    }
    report.port_nic = nic_counters(p);
    for (const conf::ClassPolicy& cls : p.policy->classes)
        report.class_names.push_back(cls.name);
    for (size_t i = 0; i < p.lcores.size(); ++i)  // roles_ as p.lcores
        report.lcores.push_back(
            {p.lcores[i]->lcore, roles_[i], loop_snapshot(*p.lcores[i]->counters)});
    report.counters = snapshot(counter_blocks(p), static_cast<uint32_t>(p.policy->ports.size()),
                               static_cast<uint32_t>(p.policy->classes.size()));
    report.classifier = classifier_totals(p.lcores);
    report.queued = still_queued(p);
    report.elapsed_s = served_s_;
    report.tsc_hz = rte_get_tsc_hz();
    report.mbufs_in_use_start = mbufs_at_start_;
    drain_unpolled_rx(p);
    for (uint16_t port : p.started_ports)
        stop_port(port);  // flushes pcap output, frees RX rings
    p.started_ports.clear();
    report.mbufs_in_use_end = pools_in_use(p);
    report.mbufs_held_by_af_xdp = mbufs_held_by_af_xdp_;
    print_report(report, options_.json);
    log_paced_inputs(p);

    const CounterSnapshot& c = report.counters;
    int rc = 0;
    if (c.rx_packets() != c.tx_packets() + c.dropped() + report.queued) {
        spdlog::error("accounting mismatch: rx {} != tx {} + dropped {} + queued {}",
                      c.rx_packets(), c.tx_packets(), c.dropped(), report.queued);
        rc = 1;
    }
    const uint64_t start = report.mbufs_in_use_start, end = report.mbufs_in_use_end;
    if (end > start + mbufs_held_by_af_xdp_ || end < start) {
        spdlog::error("mbuf leak: {} in use at start, {} at exit{}", start, end,
                      mbufs_held_by_af_xdp_
                          ? fmt::format(" (af_xdp rings may keep {})", mbufs_held_by_af_xdp_)
                          : std::string());
        rc = 1;
    } else if (end != start) {
        spdlog::info(
            "{} mbufs stay on the af_xdp fill and completion rings (DPDK's af_xdp "
            "driver does not return them at close; at most {} allowed)",
            end - start, mbufs_held_by_af_xdp_);
    }
    return rc;
}

int run_daemon(const DaemonOptions& options) {
    std::unique_ptr<Daemon> daemon = Daemon::open(options);
    if (!daemon) return 2;
    daemon->serve();
    return daemon->report();
}

}  // namespace twinlane::dataplane
