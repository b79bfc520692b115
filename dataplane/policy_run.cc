#include "dataplane/policy_run.h"

#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <pcap/pcap.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <regex>
#include <stdexcept>
#include <thread>

#include "control/compile.h"
#include "control/control_server.h"
#include "control/policy.h"
#include "control/telemetry.h"
#include "dataplane/daemon_control.h"
#include "dataplane/eal.h"
#include "dataplane/lcore_plan.h"
#include "dataplane/memory_check.h"
#include "dataplane/packet_meta.h"
#include "dataplane/port.h"
#include "dataplane/run_report.h"
#include "dataplane/stop_signal.h"

#if TWINLANE_METRICS_SERVER
#include "control/metrics_server.h"
#endif

namespace twinlane::dataplane {

static_assert(kMaxPolicyPorts == control::kMaxPorts);
namespace {

constexpr uint32_t kFrameOverheadBytes = 18;  // Ethernet header + one VLAN tag beyond the MTU

bool is_pci_address(const std::string& device) {
    static const std::regex pci("^([0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\\.[0-7]$");
    return std::regex_match(device, pci);
}

// The ethdev name DPDK gives the device: the vdev name before its arguments, or the full
// PCI address.
std::string ethdev_name(const std::string& device) {
    if (is_pci_address(device)) return device.size() == 7 ? "0000:" + device : device;
    return device.substr(0, device.find(','));
}

// EAL arguments: the user's, plus `-a` for each policy PCI device the user did not name
// (virtual devices are probed after EAL init, so that a failure can name the policy port).
std::vector<std::string> eal_arguments(const control::Policy& policy,
                                       const std::vector<std::string>& user) {
    std::vector<std::string> args = user;
    for (const control::PortPolicy& port : policy.ports) {
        if (!is_pci_address(port.device)) continue;
        const bool given = std::any_of(user.begin(), user.end(), [&](const std::string& a) {
            return a.find(port.device) != std::string::npos;
        });
        if (given) continue;
        args.push_back("-a");
        args.push_back(port.device);
    }
    return args;
}

// DPDK's pcap device hands a capture's bytes to the pipeline as Ethernet frames whatever the
// file's link type, so a `tcpdump -i any` capture (Linux cooked) would be classified as
// garbage. Refused up front with what to do instead; unreadable files and pipes are left to
// the PMD, which reports them.
bool check_pcap_input(const control::PortPolicy& port, std::string& error) {
    if (port.device.rfind("net_pcap", 0) != 0) return true;
    const size_t at = port.device.find("rx_pcap=");
    if (at == std::string::npos) return true;
    const size_t start = at + 8;
    const std::string path = port.device.substr(start, port.device.find(',', start) - start);
    // Regular files only: reading a FIFO's header here would take it from the PMD.
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return true;
    char errbuf[PCAP_ERRBUF_SIZE] = {};
    pcap_t* handle = pcap_open_offline(path.c_str(), errbuf);
    if (handle == nullptr) return true;
    const int link_type = pcap_datalink(handle);
    pcap_close(handle);
    if (link_type == DLT_EN10MB) return true;
    const char* link_name = pcap_datalink_val_to_name(link_type);
    error = "port '" + port.name + "': rx_pcap '" + path + "' has link type " +
            (link_name ? link_name : "?") + " (" + std::to_string(link_type) +
            "); the pcap device reads only Ethernet captures (capture with tcpdump -i IFACE, "
            "not -i any; `twinlane replay` reads this file as it is)";
    return false;
}

// The DPDK port of a policy port: already probed (PCI, or a --vdev the user passed), else
// hot-plugged from the policy's vdev string.
bool resolve_port(const control::PortPolicy& port, uint16_t& id, std::string& error) {
    const std::string name = ethdev_name(port.device);
    if (rte_eth_dev_get_port_by_name(name.c_str(), &id) == 0) return true;
    if (!is_pci_address(port.device)) {
        if (!check_pcap_input(port, error)) return false;
        const int rc = rte_dev_probe(port.device.c_str());
        if (rc != 0) {
            error = "port '" + port.name + "': cannot probe device '" + port.device +
                    "': " + rte_strerror(-rc);
            return false;
        }
    }
    if (find_port(name, id, error)) return true;
    error = "port '" + port.name + "': " + error;
    return false;
}

struct RingDeleter {
    void operator()(rte_ring* r) const { rte_ring_free(r); }
};
struct PoolDeleter {
    void operator()(rte_mempool* p) const { rte_mempool_free(p); }
};

// Everything a run owns; destroyed in reverse order of construction after the lcores stop.
struct Pipeline {
    std::shared_ptr<const control::Policy> policy;
    control::CompiledPolicy compiled;
    std::vector<uint16_t> dpdk_ports;              // by policy port index
    std::vector<std::optional<size_t>> egress_of;  // policy port -> index into egress
    std::map<int, std::unique_ptr<rte_mempool, PoolDeleter>> pools;  // by socket
    std::vector<std::unique_ptr<rte_ring, RingDeleter>> rings;
    std::vector<std::unique_ptr<EgressTask>> egress;  // same order as compiled.egress
    std::vector<std::unique_ptr<LcoreContext>> lcores;
    std::vector<uint16_t> started_ports;
    PipelineShared shared;

    ~Pipeline() {
        for (uint16_t port : started_ports)
            stop_port(port);
    }
};

// A port only transmitted to is never read: frames waiting in its RX queues (a net_ring port
// loops its TX back to its own RX; a NIC may receive on an egress-only port) hold mbufs of the
// pool until freed here, at shutdown, before the pools' count is compared with the start.
// Bounded: a device that never runs dry (a pcap read in a loop) gives up after 2^20 bursts.
void drain_unpolled_rx(const Pipeline& p) {
    std::vector<bool> polled(p.policy->ports.size(), false);
    for (const control::ForwardingPolicy& f : p.policy->forwarding) polled[f.from_port] = true;
    for (size_t i = 0; i < p.policy->ports.size() && i < p.dpdk_ports.size(); ++i) {
        if (polled[i]) continue;
        for (uint16_t queue = 0; queue < p.policy->ports[i].rx_queues; ++queue) {
            rte_mbuf* burst[kBurst];
            for (uint32_t round = 0; round < (1u << 20); ++round) {
                const uint16_t n = rte_eth_rx_burst(p.dpdk_ports[i], queue, burst, kBurst);
                if (n == 0) break;
                rte_pktmbuf_free_bulk(burst, n);
            }
        }
    }
}

uint64_t pools_in_use(const Pipeline& p) {
    uint64_t total = 0;
    for (const auto& [socket, pool] : p.pools)
        total += rte_mempool_in_use_count(pool.get());
    return total;
}

int socket_of(uint16_t port) {
    const int socket = rte_eth_dev_socket_id(port);
    return socket < 0 ? static_cast<int>(rte_socket_id()) : socket;
}

bool create_pools(Pipeline& p, std::string& error) {
    std::map<int, uint64_t> mbufs;
    for (size_t i = 0; i < p.policy->ports.size(); ++i)
        mbufs[socket_of(p.dpdk_ports[i])] += p.policy->ports[i].mempool_mbufs;
    for (const auto& [socket, count] : mbufs) {
        const std::string name = "twinlane_s" + std::to_string(socket);
        rte_mempool* pool = rte_pktmbuf_pool_create(name.c_str(), static_cast<unsigned>(count), 256,
                                                    0, RTE_MBUF_DEFAULT_BUF_SIZE, socket);
        if (pool == nullptr) {
            error = "cannot create a pool of " + std::to_string(count) + " mbufs on socket " +
                    std::to_string(socket) + ": " + rte_strerror(rte_errno);
            return false;
        }
        p.pools[socket].reset(pool);
    }
    return true;
}

bool start_ports(Pipeline& p, std::string& error) {
    for (size_t i = 0; i < p.policy->ports.size(); ++i) {
        const control::PortPolicy& port = p.policy->ports[i];
        const PortSettings settings{.rx_queues = port.rx_queues,
                                    .tx_queues = port.tx_queues,
                                    .rx_descriptors = port.rx_descriptors,
                                    .tx_descriptors = port.tx_descriptors,
                                    .mtu = port.mtu};
        std::string reason;
        if (!start_port(p.dpdk_ports[i], settings, p.pools[socket_of(p.dpdk_ports[i])].get(),
                        reason)) {
            error = "port '" + port.name + "' (" + port.device + ") failed to start: " + reason;
            return false;
        }
        p.started_ports.push_back(p.dpdk_ports[i]);
        spdlog::info(
            "port '{}' ({}) started: {} RX / {} TX queues, MTU {}, rate {} bit/s, "
            "tx_budget {} B",
            port.name, port_name(p.dpdk_ports[i]), port.rx_queues, port.tx_queues, port.mtu,
            port.rate_bits_per_sec, port.tx_budget_bytes);
    }
    return true;
}

// Lanes ordered by where their class enters the tree: a pre-order leaf id, so the strict
// root's first child (highest priority) comes first.
std::vector<uint8_t> lane_order(const control::CompiledEgress& egress) {
    std::vector<uint8_t> order(egress.class_entries.size());
    for (size_t i = 0; i < order.size(); ++i)
        order[i] = static_cast<uint8_t>(i);
    auto first_leaf = [&](uint8_t lane) {
        const auto& leaves = egress.class_entries[lane].leaves;
        return leaves.empty() ? UINT16_MAX : *std::min_element(leaves.begin(), leaves.end());
    };
    std::stable_sort(order.begin(), order.end(),
                     [&](uint8_t a, uint8_t b) { return first_leaf(a) < first_leaf(b); });
    return order;
}

bool build_egress(Pipeline& p, const LcorePlan& plan, uint32_t ring_slots, std::string& error) {
    // Each tree's packet pool is allocated below: refuse what would end in an out-of-memory kill.
    if (auto too_big = scheduler_trees_exceed_memory(*p.policy, p.compiled.egress)) {
        error = *too_big;
        return false;
    }
    const size_t lanes = p.policy->classes.size();
    p.egress_of.assign(p.policy->ports.size(), std::nullopt);
    for (size_t e = 0; e < p.compiled.egress.size(); ++e) {
        control::CompiledEgress& compiled = p.compiled.egress[e];
        const control::PortPolicy& port = p.policy->ports[compiled.port];
        p.egress_of[compiled.port] = e;
        auto task = std::make_unique<EgressTask>();
        task->dpdk_port = p.dpdk_ports[compiled.port];
        task->policy_port = static_cast<uint16_t>(compiled.port);
        auto built = sched::Scheduler::build(compiled.tree);
        if (!built.scheduler) {
            error = "port '" + port.name + "': scheduler: " + built.error->to_string();
            return false;
        }
        task->scheduler = std::move(built.scheduler);
        task->mapping = compiled;
        task->lane_order = lane_order(compiled);
        task->pacer.set(port.rate_bits_per_sec, port.tx_budget_bytes);
        task->max_frame_bytes = port.mtu + kFrameOverheadBytes;

        // One producer lcore lets the ring skip the multi-producer compare-and-swap.
        size_t producers = 0;
        for (const LcoreRole& role : plan.lcores) {
            producers +=
                std::any_of(role.rx.begin(), role.rx.end(), [&](const RxQueueAssignment& q) {
                    for (const control::ForwardingPolicy& f : p.policy->forwarding)
                        if (f.from_port == q.port && f.to_port == compiled.port) return true;
                    return false;
                });
        }
        const unsigned flags = RING_F_SC_DEQ | (producers <= 1 ? RING_F_SP_ENQ : 0);
        for (size_t lane = 0; lane < lanes; ++lane) {
            const std::string name = "tl_e" + std::to_string(e) + "_l" + std::to_string(lane);
            rte_ring* ring = rte_ring_create(name.c_str(), std::bit_ceil(ring_slots),
                                             socket_of(task->dpdk_port), flags);
            if (ring == nullptr) {
                error = "cannot create lane ring " + name + ": " + rte_strerror(rte_errno);
                return false;
            }
            p.rings.emplace_back(ring);
            task->lanes.push_back(ring);
        }
        size_t held_by_rings = kBurst;
        for (rte_ring* ring : task->lanes) held_by_rings += rte_ring_get_capacity(ring);
        task->arrival_scratch.reserve(held_by_rings);
        p.egress.push_back(std::move(task));
    }
    return true;
}

bool build_lcores(Pipeline& p, const LcorePlan& plan, std::string& error) {
    size_t rx_lcores = 0;
    for (const LcoreRole& role : plan.lcores) rx_lcores += role.rx.empty() ? 0 : 1;
    // Each RX lcore's flow table is allocated and touched below.
    if (auto too_big = flow_tables_exceed_memory(*p.policy, p.compiled.classifier, rx_lcores)) {
        error = *too_big;
        return false;
    }
    for (const LcoreRole& role : plan.lcores) {
        auto ctx = std::make_unique<LcoreContext>();
        ctx->lcore = role.lcore;
        for (const RxQueueAssignment& q : role.rx) {
            const auto forward = std::find_if(
                p.policy->forwarding.begin(), p.policy->forwarding.end(),
                [&](const control::ForwardingPolicy& f) { return f.from_port == q.port; });
            if (forward == p.policy->forwarding.end()) continue;
            RxTask task;
            task.dpdk_port = p.dpdk_ports[q.port];
            task.queue = q.queue;
            task.policy_port = static_cast<uint16_t>(q.port);
            task.lanes = p.egress[*p.egress_of[forward->to_port]]->lanes;
            ctx->rx.push_back(std::move(task));
        }
        for (size_t port : role.egress)
            ctx->egress.push_back(p.egress[*p.egress_of[port]].get());
        for (RxTask& task : ctx->rx) {
            for (EgressTask* e : ctx->egress)
                if (e->lanes == task.lanes) task.local_egress = e;
        }
        if (!ctx->rx.empty()) {
            try {
                ctx->classifier = std::make_unique<classifier::Classifier>(p.compiled.classifier);
            } catch (const std::exception& e) {
                error = std::string("classifier: ") + e.what();
                return false;
            }
        }
        p.lcores.push_back(std::move(ctx));
    }
    for (const std::unique_ptr<EgressTask>& e : p.egress) {
        e->ring_fed = false;
        for (const std::unique_ptr<LcoreContext>& ctx : p.lcores)
            for (const RxTask& task : ctx->rx)
                if (task.lanes == e->lanes && task.local_egress != e.get()) e->ring_fed = true;
    }
    return true;
}

std::string describe_role(const Pipeline& p, const LcoreContext& ctx) {
    std::string text = "lcore " + std::to_string(ctx.lcore) + ":";
    for (const RxTask& t : ctx.rx)
        text += " rx " + p.policy->ports[t.policy_port].name + "/" + std::to_string(t.queue);
    for (const EgressTask* e : ctx.egress)
        text += " sched " + p.policy->ports[e->policy_port].name;
    return text;
}

int launch_lcore(void* arg) {
    auto* pair = static_cast<std::pair<LcoreContext*, PipelineShared*>*>(arg);
    run_lcore(*pair->first, *pair->second);
    return 0;
}

std::vector<const LcoreCounters*> counter_blocks(const Pipeline& p) {
    std::vector<const LcoreCounters*> blocks;
    for (const auto& ctx : p.lcores)
        blocks.push_back(ctx->counters.get());
    return blocks;
}

// Off the hot path: link status, periodic stats, end-of-input and duration limits. Reads the
// lcores' counters with relaxed loads while they run.
class Monitor {
  public:
    Monitor(const Pipeline& p, const PolicyRunOptions& options, bool idle_exit)
        : pipeline_(p), options_(options), idle_exit_(idle_exit), thread_([this] { run(); }) {}
    ~Monitor() {
        {
            std::lock_guard lock(mutex_);
            done_ = true;
        }
        wake_.notify_one();
        thread_.join();
    }

  private:
    using Clock = std::chrono::steady_clock;

    void run() {
        const auto start = Clock::now();
        auto last_rx_change = start;
        auto next_stats = start + std::chrono::nanoseconds(options_.stats_interval_ns);
        auto next_link = start;
        uint64_t last_rx = 0;
        uint64_t stats_rx = 0, stats_tx = 0;
        auto stats_at = start;
        std::vector<int> link_up(pipeline_.dpdk_ports.size(), -1);
        std::unique_lock lock(mutex_);
        while (!done_) {
            wake_.wait_for(lock, std::chrono::milliseconds(10));
            const auto now = Clock::now();
            if (now >= next_link) {
                next_link = now + std::chrono::milliseconds(500);
                poll_links(link_up);
            }
            const CounterSnapshot s =
                snapshot(counter_blocks(pipeline_), static_cast<uint32_t>(link_up.size()),
                         static_cast<uint32_t>(pipeline_.policy->classes.size()));
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
            if (s.rx_packets() != last_rx) {
                last_rx = s.rx_packets();
                last_rx_change = now;
            } else if (idle_exit_ && s.rx_packets() == s.tx_packets() + s.dropped() &&
                       now - last_rx_change > std::chrono::nanoseconds(options_.idle_exit_ns)) {
                spdlog::info("input idle for {} ms with nothing queued: stopping",
                             options_.idle_exit_ns / 1'000'000);
                request_stop();
            }
            if (options_.duration_ns != 0 &&
                now - start >= std::chrono::nanoseconds(options_.duration_ns))
                request_stop();
        }
    }

    void poll_links(std::vector<int>& link_up) {
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

    const Pipeline& pipeline_;
    const PolicyRunOptions& options_;
    const bool idle_exit_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool done_ = false;
    std::thread thread_;  // last: starts after the fields above exist
};

bool driver_is(uint16_t port, const char* driver) {
    rte_eth_dev_info info{};
    return rte_eth_dev_info_get(port, &info) == 0 && info.driver_name != nullptr &&
           std::string(info.driver_name) == driver;
}

bool every_input_is_pcap(const Pipeline& p) {
    for (const control::ForwardingPolicy& f : p.policy->forwarding) {
        if (!driver_is(p.dpdk_ports[f.from_port], "net_pcap")) return false;
    }
    return true;
}

// The daemon's control surfaces around the running pipeline: DaemonApi, control socket,
// metrics endpoint, DPDK telemetry. Started before the lcores launch, stopped after they return
// (before the pipeline they read is torn down).
class ControlSurfaces {
  public:
    ~ControlSurfaces() { stop(); }

    bool start(const Pipeline& p, const PolicyRunOptions& options,
               const std::vector<DaemonLcore>& roles, std::string& error) {
        DaemonPipeline view;
        view.dpdk_ports = p.dpdk_ports;
        for (const auto& e : p.egress)
            view.egress.push_back(e.get());
        for (const auto& ctx : p.lcores)
            view.lcores.push_back(ctx.get());
        view.roles = roles;
        DaemonControlOptions daemon_options;
        daemon_options.explicit_log_level = options.explicit_log_level;
        auto created = DaemonControl::create(p.policy, std::move(view), daemon_options);
        if (!created.control) {
            error = "control: ";
            for (const std::string& e : created.errors)
                error += e + "; ";
            return false;
        }
        api_ = std::move(created.control);

        const control::Policy& policy = *p.policy;
        if (options.control) {
            control::ControlServerOptions server_options;
            server_options.socket_path =
                options.control_socket.value_or(policy.control.socket_path);
            server_options.socket_mode = policy.control.socket_mode;
            server_ = std::make_unique<control::ControlServer>(*api_, server_options);
            if (auto problem = server_->start()) {
                error = "control socket " + server_options.socket_path + ": " + *problem +
                        " (--control-socket PATH to use another, --no-control for none)";
                return false;
            }
        }
        const uint16_t metrics_port = options.metrics_port.value_or(policy.metrics.port);
        if (policy.metrics.enabled && metrics_port != 0) {
#if TWINLANE_METRICS_SERVER
            metrics_ = std::make_unique<control::MetricsServer>(
                *api_, policy.metrics.listen_address, metrics_port);
            if (auto problem = metrics_->start()) {
                error = "metrics on " + policy.metrics.listen_address + ":" +
                        std::to_string(metrics_port) + ": " + *problem +
                        " (--metrics-port N to use another, 0 for none)";
                return false;
            }
#else
            spdlog::warn("metrics: this build has no HTTP server (cpp-httplib); endpoint off");
#endif
        }
        const std::string telemetry = control::register_telemetry(*api_);
        if (telemetry.empty())
            telemetry_ = true;
        else
            spdlog::warn("DPDK telemetry /twinlane/...: {}", telemetry);
        return true;
    }

    // After the lcores have returned; idempotent.
    void stop() {
        if (telemetry_) control::unregister_telemetry();
        telemetry_ = false;
#if TWINLANE_METRICS_SERVER
        if (metrics_) metrics_->stop();
        metrics_.reset();
#endif
        if (server_) server_->stop();
        server_.reset();
    }

  private:
    std::unique_ptr<DaemonControl> api_;
    std::unique_ptr<control::ControlServer> server_;
#if TWINLANE_METRICS_SERVER
    std::unique_ptr<control::MetricsServer> metrics_;
#endif
    bool telemetry_ = false;
};

std::vector<DaemonLcore> daemon_roles(const Pipeline& p) {
    std::vector<DaemonLcore> roles;
    for (const auto& ctx : p.lcores) {
        DaemonLcore role;
        role.lcore = ctx->lcore;
        role.role = ctx->rx.empty()       ? "scheduler"
                    : ctx->egress.empty() ? "rx"
                                          : "run_to_completion";
        auto add = [&](uint16_t port) {
            const std::string& name = p.policy->ports[port].name;
            if (std::find(role.ports.begin(), role.ports.end(), name) == role.ports.end())
                role.ports.push_back(name);
        };
        for (const RxTask& t : ctx->rx)
            add(t.policy_port);
        for (const EgressTask* e : ctx->egress)
            add(e->policy_port);
        roles.push_back(std::move(role));
    }
    return roles;
}

}  // namespace

int run_with_policy(const PolicyRunOptions& options) {
    // First: a SIGINT/SIGTERM during set-up (EAL, ports: a fraction of a second) then stops the
    // run as soon as it starts, with the final report, instead of killing the process.
    install_stop_handlers();
    const control::PolicyResult loaded = control::load_policy(options.policy_path);
    if (!loaded.ok()) {
        for (const auto& e : loaded.errors)
            spdlog::error("{}", e.to_string());
        return 2;
    }
    if (loaded.policy->ports.size() > kMaxPolicyPorts ||
        loaded.policy->classes.size() > kMaxLanes) {
        spdlog::error("{}: at most {} ports and {} classes", options.policy_path, kMaxPolicyPorts,
                      kMaxLanes);
        return 2;
    }
    if (!options.explicit_log_level)
        spdlog::set_level(static_cast<spdlog::level::level_enum>(loaded.policy->log_level));
    Eal eal(eal_arguments(*loaded.policy, options.eal_args));
    if (!eal.ok()) {
        spdlog::error("{}", eal.error());
        return 2;
    }
    Pipeline p;  // after the EAL: its rings, pools and ports go before rte_eal_cleanup()
    p.policy = loaded.policy;
    std::string error;
    p.shared.meta_offset = register_packet_meta(error);
    if (p.shared.meta_offset < 0) {
        spdlog::error("{}", error);
        return 2;
    }
    for (const control::PortPolicy& port : p.policy->ports) {
        uint16_t id = 0;
        if (!resolve_port(port, id, error)) {
            spdlog::error("{}", error);
            return 2;
        }
        p.dpdk_ports.push_back(id);
    }
    p.compiled = control::compile_policy(*p.policy, p.dpdk_ports);
    if (!p.compiled.ok()) {
        for (const std::string& e : p.compiled.errors)
            spdlog::error("{}", e);
        return 2;
    }

    std::vector<std::pair<size_t, uint16_t>> ingress;
    for (const control::ForwardingPolicy& f : p.policy->forwarding)
        ingress.emplace_back(f.from_port, p.policy->ports[f.from_port].rx_queues);
    std::vector<size_t> egress_ports;
    for (const control::CompiledEgress& e : p.compiled.egress)
        egress_ports.push_back(e.port);
    std::vector<uint32_t> available{rte_get_main_lcore()};
    unsigned worker = 0;
    RTE_LCORE_FOREACH_WORKER(worker) {
        available.push_back(worker);
    }
    const LcorePlan plan = plan_lcores(p.policy->lcores, ingress, egress_ports, available);
    if (!plan.ok()) {
        spdlog::error("{}: lcores: {}", options.policy_path, plan.error);
        return 2;
    }

    if (!create_pools(p, error)) {
        spdlog::error("{}", error);
        return 2;
    }
    const uint64_t in_use_start = pools_in_use(p);
    if (!start_ports(p, error) || !build_egress(p, plan, options.lane_ring_slots, error) ||
        !build_lcores(p, plan, error)) {
        spdlog::error("{}", error);
        return 2;
    }
    // DPDK 22.11's af_xdp PMD fills its fill rings from the pool at start and, at close,
    // neither gives those back nor reaps the TX completions still outstanding (its TX ring has
    // the fill ring's size). Every other driver returns what it holds. So the leak check
    // allows af_xdp ports up to twice what their fill rings took at start.
    bool any_af_xdp = false;
    for (uint16_t port : p.started_ports)
        any_af_xdp = any_af_xdp || driver_is(port, "net_af_xdp");
    const uint64_t held_by_af_xdp = any_af_xdp ? 2 * (pools_in_use(p) - in_use_start) : 0;

    p.shared.clock = TscClock(rte_rdtsc(), rte_get_tsc_hz());
    p.shared.lane_count = static_cast<uint32_t>(p.policy->classes.size());
    p.shared.stop_mode = options.stop_mode;
    p.shared.drain_timeout_ns = options.drain_timeout_ns;
    uint32_t rx_lcores = 0;
    for (const auto& ctx : p.lcores)
        rx_lcores += ctx->rx.empty() ? 0 : 1;
    p.shared.rx_lcores_running.store(rx_lcores);
    std::vector<std::string> roles;
    for (const auto& ctx : p.lcores) {
        roles.push_back(describe_role(p, *ctx));
        spdlog::info("{}", roles.back());
    }

    ControlSurfaces surfaces;  // before the lcores launch; stopped after they return
    if (!surfaces.start(p, options, daemon_roles(p), error)) {
        spdlog::error("{}", error);
        return 2;
    }

    const bool idle_exit =
        options.idle_exit_ns != 0 && (!options.idle_exit_auto || every_input_is_pcap(p));
    spdlog::info("forwarding with policy {}{}", options.policy_path,
                 idle_exit ? " until end of input" : " until SIGINT/SIGTERM");
    const auto started = std::chrono::steady_clock::now();
    {
        Monitor monitor(p, options, idle_exit);
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
        if (main_context != nullptr) run_lcore(*main_context, p.shared);
        // Sleep, not spin, while the workers run: rte_eal_mp_wait_lcore busy-waits, and a main
        // lcore without a role (e.g. `-l 0-1` with one forwarding lcore) then took a CPU the
        // machine may not have to spare (2 vCPUs: the forwarding lcore ran at half its rate).
        unsigned worker = 0;
        RTE_LCORE_FOREACH_WORKER(worker) {
            while (rte_eal_get_lcore_state(worker) == RUNNING) {
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
        }
        rte_eal_mp_wait_lcore();
        request_stop();  // ends the monitor's idle/duration checks too
    }
    surfaces.stop();
    const double elapsed_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

    RunReport report;
    for (size_t i = 0; i < p.policy->ports.size(); ++i) {
        report.port_names.push_back(p.policy->ports[i].name);
        report.port_devices.push_back(p.policy->ports[i].device);
        NicCounters nic;
        rte_eth_stats eth{};
        if (i < p.dpdk_ports.size() && rte_eth_stats_get(p.dpdk_ports[i], &eth) == 0) {
            nic = {true, eth.imissed, eth.ierrors, eth.rx_nombuf, eth.oerrors};
            if (eth.imissed + eth.ierrors + eth.rx_nombuf != 0) {
                spdlog::warn("port '{}': the NIC lost {} received packets before twinlane saw "
                             "them (missed {}, errors {}, no mbuf {})",
                             p.policy->ports[i].name, eth.imissed + eth.ierrors + eth.rx_nombuf,
                             eth.imissed, eth.ierrors, eth.rx_nombuf);
            }
        }
        report.port_nic.push_back(nic);
    }
    for (const control::ClassPolicy& cls : p.policy->classes)
        report.class_names.push_back(cls.name);
    report.lcore_roles = roles;
    report.counters = snapshot(counter_blocks(p), static_cast<uint32_t>(p.policy->ports.size()),
                               static_cast<uint32_t>(p.policy->classes.size()));
    for (const auto& e : p.egress) {
        report.queued += e->scheduler->queued_packets() + e->held_count;
        for (rte_ring* ring : e->lanes)
            report.queued += rte_ring_count(ring);
    }
    report.elapsed_s = elapsed_s;
    report.tsc_hz = rte_get_tsc_hz();
    report.mbufs_in_use_start = in_use_start;
    drain_unpolled_rx(p);
    for (uint16_t port : p.started_ports)
        stop_port(port);  // flushes pcap output, frees RX rings
    p.started_ports.clear();
    report.mbufs_in_use_end = pools_in_use(p);
    report.mbufs_held_by_af_xdp = held_by_af_xdp;
    print_report(report, options.json);

    const CounterSnapshot& c = report.counters;
    int rc = 0;
    if (c.rx_packets() != c.tx_packets() + c.dropped() + report.queued) {
        spdlog::error("accounting mismatch: rx {} != tx {} + dropped {} + queued {}",
                      c.rx_packets(), c.tx_packets(), c.dropped(), report.queued);
        rc = 1;
    }
    if (report.mbufs_in_use_end > report.mbufs_in_use_start + held_by_af_xdp ||
        report.mbufs_in_use_end < report.mbufs_in_use_start) {
        spdlog::error("mbuf leak: {} in use at start, {} at exit{}", report.mbufs_in_use_start,
                      report.mbufs_in_use_end,
                      held_by_af_xdp ? fmt::format( " (af_xdp rings may keep {})",
                                                   held_by_af_xdp)
                                     : std::string());
        rc = 1;
    } else if (report.mbufs_in_use_end != report.mbufs_in_use_start) {
        spdlog::info("{} mbufs stay on the af_xdp fill and completion rings (DPDK's af_xdp "
                     "driver does not return them at close; at most {} allowed)",
                     report.mbufs_in_use_end - report.mbufs_in_use_start, held_by_af_xdp);
    }
    return rc;
}

}  // namespace twinlane::dataplane
