#include "dataplane/run_monitor.h"

#include <pthread.h>
#include <rte_ethdev.h>
#include <spdlog/spdlog.h>

#include "dataplane/stop_signal.h"

namespace twinlane::dataplane {

Monitor::~Monitor() {
    {
        std::lock_guard lock(mutex_);
        done_ = true;
    }
    wake_.notify_one();
    thread_.join();
}

// SLO events the scheduler lcores queued (slo/governor.h), logged here: an lcore never logs.
void Monitor::log_slo_events() {
    slo_events_dropped_.resize(pipeline_.egress.size(), 0);
    for (size_t i = 0; i < pipeline_.egress.size(); ++i) {
        const auto& e = pipeline_.egress[i];
        if (!e->governor) continue;
        slo::SloGovernor& governor = *e->governor;
        const std::string& port = pipeline_.policy->ports[e->policy_port].name;
        slo::SloEvent event;
        while (governor.events().pop(event)) {
            const std::string line =
                slo::describe(event, governor.spec().classes.at(event.class_index));
            if (event.kind == slo::EventKind::missed) {
                spdlog::warn("slo: port '{}': {}", port, line);
            } else {
                spdlog::info("slo: port '{}': {}", port, line);
            }
        }
        const uint64_t dropped = governor.events().dropped();
        if (dropped > slo_events_dropped_[i]) {
            spdlog::warn("slo: port '{}': {} events not logged (more than {} within 10 ms)", port,
                         dropped - slo_events_dropped_[i], slo::EventRing::kCapacity);
            slo_events_dropped_[i] = dropped;
        }
    }
}

// A frame above its egress port's largest frame is dropped, counted as sched_oversize. Most
// often the whole input is like it (a capture of a 9000-MTU fabric, or a host capture whose
// TSO/GRO records `twinlane replay` would split into wire segments), so say so once, early.
void Monitor::warn_oversize(const CounterSnapshot& s) {
    const uint64_t dropped = s.drops[static_cast<size_t>(DropCause::sched_oversize)];
    if (oversize_warned_ || dropped == 0) return;
    oversize_warned_ = true;
    std::string ports;
    for (const std::unique_ptr<EgressTask>& e : pipeline_.egress) {
        const conf::PortPolicy& port = pipeline_.policy->ports[e->policy_port];
        ports += fmt::format("{}'{}' mtu {} ({} B)", ports.empty() ? "" : ", ", port.name, port.mtu,
                             port.max_frame_bytes());
    }
    spdlog::warn(
        "frames above their egress port's largest frame are dropped as oversize ({} so far; {}): "
        "jumbo frames need the ports' `mtu` (e.g. 9000); `twinlane replay` splits a host "
        "capture's TCP/UDP records above it into wire segments, `run` does not",
        dropped, ports);
}

void Monitor::run() {
    pthread_setname_np(pthread_self(), "tl-monitor");  // as `top -H` and /proc show it
    const auto start = Clock::now();
    auto last_rx_change = start;
    auto next_stats = start + std::chrono::nanoseconds(options_.stats_interval_ns);
    auto next_link = start;
    uint64_t last_rx = 0;
    uint64_t stats_rx = 0, stats_tx = 0;
    auto stats_at = start;
    std::vector<int> link_up(pipeline_.dpdk_ports.size(), -1);
    const std::vector<const LcoreCounters*> blocks = counter_blocks(pipeline_);
    std::unique_lock lock(mutex_);
    while (!done_) {
        wake_.wait_for(lock, std::chrono::milliseconds(10));
        const auto now = Clock::now();
        if (now >= next_link) {
            next_link = now + std::chrono::milliseconds(500);
            poll_links(link_up);
        }
        const CounterSnapshot s = snapshot_totals(blocks, static_cast<uint32_t>(link_up.size()));
        if (options_.stats_interval_ns != 0 && now >= next_stats) {
            const double dt = std::chrono::duration<double>(now - stats_at).count();
            spdlog::info("stats: rx {:.3f} Mpps, tx {:.3f} Mpps, dropped {}, rx total {}",
                         static_cast<double>(s.rx_packets() - stats_rx) / dt / 1e6,
                         static_cast<double>(s.tx_packets() - stats_tx) / dt / 1e6, s.dropped(),
                         s.rx_packets());
            stats_rx = s.rx_packets();
            stats_tx = s.tx_packets();
            stats_at = now;
            next_stats = now + std::chrono::nanoseconds(options_.stats_interval_ns);
        }
        // A paced input holding frames not yet due is not idle: its next frame is a gap away.
        if (s.rx_packets() != last_rx || paced_frames_waiting()) {
            last_rx = s.rx_packets();
            last_rx_change = now;
        } else if (idle_exit_ && !stop_requested() &&
                   s.rx_packets() == s.tx_packets() + s.dropped() &&
                   now - last_rx_change > std::chrono::nanoseconds(options_.idle_exit_ns)) {
            spdlog::info("input idle for {} ms with nothing queued: stopping",
                         options_.idle_exit_ns / 1'000'000);
            request_stop();
        }
        if (options_.duration_ns != 0 &&
            now - start >= std::chrono::nanoseconds(options_.duration_ns))
            request_stop();
        log_slo_events();
        warn_oversize(s);
    }
    log_slo_events();
    warn_oversize(snapshot_totals(blocks, static_cast<uint32_t>(link_up.size())));
}

bool Monitor::paced_frames_waiting() const {
    for (const std::unique_ptr<LcoreContext>& ctx : pipeline_.lcores)
        for (const RxTask& task : ctx->rx)
            if (task.paced && task.paced->waiting() != 0) return true;
    return false;
}

void Monitor::poll_links(std::vector<int>& link_up) {
    for (size_t i = 0; i < link_up.size(); ++i) {
        rte_eth_link link{};
        if (rte_eth_link_get_nowait(pipeline_.dpdk_ports[i], &link) != 0) continue;
        if (link.link_status == link_up[i]) continue;
        link_up[i] = link.link_status;
        const std::string& name = pipeline_.policy->ports[i].name;
        if (link.link_status)
            spdlog::info("port '{}' link up: {} Mbps {}", name, link.link_speed,
                         link.link_duplex ? "full-duplex" : "half-duplex");
        else
            spdlog::warn("port '{}' link down", name);
    }
}

}  // namespace twinlane::dataplane
