#include "dataplane/pipeline_setup.h"

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf_dyn.h>
#include <rte_mbuf_pool_ops.h>
#include <rte_mempool.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <bit>
#include <span>
#include <string_view>

#include "conf/device_name.h"
#include "conf/mbuf_demand.h"
#include "dataplane/memory_check.h"
#include "dataplane/port.h"
#include "dataplane/tsc_clock.h"
#include "replay/pcap_io.h"
#include "slo/governor.h"

namespace twinlane::dataplane {
namespace {

int socket_of(uint16_t port) {
    const int socket = rte_eth_dev_socket_id(port);
    return socket < 0 ? static_cast<int>(rte_socket_id()) : socket;
}

// Lanes ordered by where their class enters the tree: a pre-order leaf id, so the strict
// root's first child (highest priority) comes first.
std::vector<uint8_t> lane_order(const conf::CompiledEgress& egress) {
    std::vector<uint8_t> order(egress.leaves.class_count());
    for (size_t i = 0; i < order.size(); ++i)
        order[i] = static_cast<uint8_t>(i);
    auto first_leaf = [&](uint8_t lane) { return egress.leaves.class_leaves(lane).first_leaf; };
    std::stable_sort(order.begin(), order.end(),
                     [&](uint8_t a, uint8_t b) { return first_leaf(a) < first_leaf(b); });
    return order;
}

// The port's burst_time in TSC cycles (0: full bursts always).
bool forwards(const Pipeline& p, size_t port) {
    return std::any_of(p.policy->forwarding.begin(), p.policy->forwarding.end(),
                       [&](const conf::ForwardingPolicy& f) { return f.from_port == port; });
}

uint64_t burst_cycles(const conf::PortPolicy& port) {
    return TscClock(0, rte_get_tsc_hz()).tsc_for_ns(port.burst_time_ns);
}

}  // namespace

// A port only transmitted to is never read: frames waiting in its RX queues (a net_ring port
// loops its TX back to its own RX; a NIC may receive on an egress-only port) hold mbufs of the
// pool until freed here, at shutdown, before the pools' count is compared with the start.
// Bounded: a device that never runs dry (a pcap read in a loop) gives up after 2^20 bursts.
void drain_unpolled_rx(const Pipeline& p) {
    std::vector<bool> polled(p.policy->ports.size(), false);
    for (const conf::ForwardingPolicy& f : p.policy->forwarding)
        polled[f.from_port] = true;
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

static_assert(conf::kMbufDataRoomBytes == RTE_MBUF_DEFAULT_DATAROOM);
static_assert(conf::kMbufFootprintBytes == RTE_MBUF_DEFAULT_BUF_SIZE + sizeof(rte_mbuf) + 64);
constexpr unsigned kPoolCacheMbufs = 256;

namespace {

// Egress ports whose lane rings carry packets: some RX lcore forwarding to them does not
// schedule them itself (run to completion admits directly and leaves its rings empty). The
// pools' ring share and the scheduler lcore's polling of the rings both follow this.
std::vector<bool> ring_fed_egress(const Pipeline& p, const LcorePlan& plan) {
    std::vector<bool> fed(p.policy->ports.size(), false);
    for (const LcoreRole& role : plan.lcores) {
        for (const RxQueueAssignment& q : role.rx) {
            for (const conf::ForwardingPolicy& f : p.policy->forwarding) {
                if (f.from_port == q.port && std::find(role.egress.begin(), role.egress.end(),
                                                       f.to_port) == role.egress.end())
                    fed[f.to_port] = true;
            }
        }
    }
    return fed;
}

}  // namespace

bool size_preloaded_inputs(Pipeline& p, std::string& error) {
    p.input_captures.assign(p.policy->ports.size(), {});
    for (size_t i = 0; i < p.policy->ports.size(); ++i) {
        if (!forwards(p, i)) continue;
        const conf::PortPolicy& port = p.policy->ports[i];
        const std::vector<std::string> files = conf::pcap_input_files(port.device);
        if (files.empty()) {
            error = "--preload-input: port '" + port.name + "' (" + port.device +
                    ") does not read a capture file (net_pcap0,rx_pcap=FILE)";
            return false;
        }
        for (const std::string& path : files) {
            struct stat st {};
            if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
                error = "--preload-input: port '" + port.name + "': rx_pcap '" + path +
                        "' is not a regular file";
                return false;
            }
            CaptureSize size;
            size.path = path;
            try {
                replay::PcapReader reader(path);
                replay::PcapRecord record;
                bool cut = false;
                while (reader.next(record)) {
                    const auto captured = static_cast<uint32_t>(record.captured.size());
                    cut = cut || record.wire_length > captured;
                    size.wire_lengths.push_back(std::max(record.wire_length, captured));
                    ++size.frames;
                    size.mbufs += conf::mbufs_per_frame(captured);
                }
                if (!cut) std::vector<uint32_t>().swap(size.wire_lengths);
            } catch (const replay::PcapError& e) {
                error = "--preload-input: port '" + port.name + "': " + e.what();
                return false;
            }
            p.input_captures[i].push_back(std::move(size));
        }
    }
    return true;
}

// Virtual devices that read and write frames with the CPU (never an mbuf's IOVA).
bool copies_frames(std::string_view driver) {
    for (const std::string_view copying :
         {"net_pcap", "net_null", "net_ring", "net_af_packet", "net_memif", "net_tap"})
        if (driver == copying) return true;
    return false;
}

// rte_pktmbuf_pool_create_by_ops (`ops` nullptr: DPDK's default store) with mempool `flags`,
// which it does not take; nullptr with rte_errno set.
rte_mempool* create_mbuf_pool(const std::string& name, unsigned count, int socket, const char* ops,
                              unsigned flags) {
    rte_mempool* pool =
        rte_mempool_create_empty(name.c_str(), count, sizeof(rte_mbuf) + RTE_MBUF_DEFAULT_BUF_SIZE,
                                 kPoolCacheMbufs, sizeof(rte_pktmbuf_pool_private), socket, flags);
    if (pool == nullptr) return nullptr;
    int rc = rte_mempool_set_ops_byname(pool, ops != nullptr ? ops : rte_mbuf_best_mempool_ops(),
                                        nullptr);
    if (rc == 0) {
        rte_pktmbuf_pool_private private_data{};
        private_data.mbuf_data_room_size = RTE_MBUF_DEFAULT_BUF_SIZE;
        rte_pktmbuf_pool_init(pool, &private_data);
        rc = rte_mempool_populate_default(pool);
        if (rc >= 0) {
            rte_mempool_obj_iter(pool, rte_pktmbuf_init, nullptr);
            return pool;
        }
    }
    rte_mempool_free(pool);
    rte_errno = -rc;
    return nullptr;
}

bool create_pools(Pipeline& p, const LcorePlan& plan, uint32_t ring_slots, std::string& error) {
    // By socket: the ports' `mempool`, lane rings, preloaded captures.
    std::map<int, uint64_t> mbufs, ring_share, capture_share;
    std::map<int, bool> serves_af_xdp, serves_dma;
    const std::vector<bool> ring_fed = ring_fed_egress(p, plan);
    // A full lane ring holds its slots' frames, each up to the largest frame's chain.
    const uint64_t ring_mbufs = uint64_t{std::bit_ceil(ring_slots)} *
                                conf::mbufs_per_frame(conf::largest_frame_bytes(*p.policy));
    for (size_t i = 0; i < p.policy->ports.size(); ++i) {
        const int socket = socket_of(p.dpdk_ports[i]);
        mbufs[socket] += p.policy->ports[i].mempool_mbufs;
        if (ring_fed[i]) ring_share[socket] += ring_mbufs * p.policy->classes.size();
        if (p.preload_input) {
            for (const CaptureSize& capture : p.input_captures[i])
                capture_share[socket] += capture.mbufs;
        }
        rte_eth_dev_info info{};
        const bool known = rte_eth_dev_info_get(p.dpdk_ports[i], &info) == 0;
        if (known && info.driver_name != nullptr &&
            std::string_view(info.driver_name) == "net_af_xdp")
            serves_af_xdp[socket] = true;
        // Only PMDs known to copy frames in and out of mbufs: a NIC, or a virtual device over
        // one (bonding, failsafe), may DMA into the pool's buffers.
        if (!known || info.driver_name == nullptr || !copies_frames(info.driver_name))
            serves_dma[socket] = true;
    }
    // The pool's store is LIFO ("stack") unless EAL's --mbuf-pool-ops-name says otherwise:
    // across lcores, buffers freed by TX return to RX through that store, and a FIFO ring
    // would cycle through the whole pool, so every RX write (a PMD's copy, the header) would
    // miss the cache. The store is touched once per mempool-cache refill or flush, not per
    // packet. AF_XDP's PMD hands the pool's memory to the kernel as its UMEM and receives
    // nothing from a pool with the stack store (DPDK 22.11), so its pools keep the default.
    const char* user_ops = rte_eal_mbuf_user_pool_ops();
    for (const auto& [socket, ports_share] : mbufs) {
        // Each lcore's cache may keep up to 1.5x its size out of the others' reach.
        const uint64_t caches = uint64_t{rte_lcore_count()} * kPoolCacheMbufs * 3 / 2;
        const uint64_t count = ports_share + ring_share[socket] + capture_share[socket] + caches;
        const std::string name = "twinlane_s" + std::to_string(socket);
        const auto n = static_cast<unsigned>(count);
        rte_mempool* pool = nullptr;
        // Without hugepages DPDK puts no mbuf across a 4 KiB page boundary, in case a device
        // DMAs into it: each 2.4 KiB mbuf then takes a page of its own (1.7x the memory), and
        // every mbuf's header sits at the same offset of its page, where the headers compete
        // for the same few cache sets. Devices that copy need no IOVA: their pools are packed.
        // (AF_XDP hands the pool's memory to the kernel: unchanged.)
        const bool packed =
            !rte_eal_has_hugepages() && !serves_dma[socket] && !serves_af_xdp[socket];
        const unsigned flags = packed ? RTE_MEMPOOL_F_NO_IOVA_CONTIG : 0;
        if (user_ops == nullptr && !serves_af_xdp[socket]) {
            pool = create_mbuf_pool(name, n, socket, "stack", flags);
            if (pool == nullptr)
                spdlog::warn("mbuf pool {}: no LIFO store ({}), using DPDK's default", name,
                             rte_strerror(rte_errno));
        }
        if (pool == nullptr) pool = create_mbuf_pool(name, n, socket, user_ops, flags);
        if (pool == nullptr) {
            const uint64_t mib = conf::mbufs_mib(count);
            error = "cannot create a pool of " + std::to_string(count) + " mbufs (about " +
                    std::to_string(mib) + " MiB) on socket " + std::to_string(socket) + ": " +
                    rte_strerror(rte_errno) +
                    " (EAL -m / hugepages, or the ports' `mempool` and the leaves' limits" +
                    (capture_share[socket] != 0
                         ? ", or --preload-input's " + std::to_string(capture_share[socket]) +
                               " mbufs of captures"
                         : std::string()) +
                    ")";
            return false;
        }
        spdlog::info(
            "mbuf pool {}: {} mbufs on socket {} (ports {}, lane rings {}, preloaded captures "
            "{}, lcore caches {}), store {}{}",
            name, n, socket, ports_share, ring_share[socket], capture_share[socket], caches,
            rte_mempool_get_ops(pool->ops_index)->name,
            packed ? ", packed (no IOVA: virtual devices without hugepages)" : "");
        p.pools[socket].reset(pool);
    }
    return true;
}

bool start_ports(Pipeline& p, std::string& error) {
    if (p.pace_input_bps != 0 &&
        rte_mbuf_dyn_rx_timestamp_register(&p.rx_timestamp_offset, &p.rx_timestamp_flag) != 0) {
        error = std::string("--pace-input: cannot register the RX timestamp field: ") +
                rte_strerror(rte_errno);
        return false;
    }
    for (size_t i = 0; i < p.policy->ports.size(); ++i) {
        const conf::PortPolicy& port = p.policy->ports[i];
        const PortSettings settings{.rx_queues = port.rx_queues,
                                    .tx_queues = port.tx_queues,
                                    .rx_descriptors = port.rx_descriptors,
                                    .tx_descriptors = port.tx_descriptors,
                                    .mtu = port.mtu,
                                    .rx_timestamps = p.pace_input_bps != 0 && forwards(p, i)};
        std::string reason;
        if (!start_port(p.dpdk_ports[i], settings, p.pools[socket_of(p.dpdk_ports[i])].get(),
                        reason)) {
            error = "port '" + port.name + "' (" + port.device + ") failed to start: " + reason;
            return false;
        }
        p.started_ports.push_back(p.dpdk_ports[i]);
        // The device's own counts: start_port gives it fewer TX queues than asked if it has fewer.
        rte_eth_dev_info info{};
        rte_eth_dev_info_get(p.dpdk_ports[i], &info);
        spdlog::info(
            "port '{}' ({}) started: {} RX / {} TX queues, MTU {}, rate {} bit/s, "
            "tx_budget {} B",
            port.name, port_name(p.dpdk_ports[i]), info.nb_rx_queues, info.nb_tx_queues, port.mtu,
            port.rate_bits_per_sec, port.tx_budget_bytes);
    }
    return true;
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
        conf::CompiledEgress& compiled = p.compiled.egress[e];
        const conf::PortPolicy& port = p.policy->ports[compiled.port];
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
        task->leaves = compiled.leaves;
        if (!compiled.slo.empty()) {
            task->governor =
                std::make_unique<slo::SloGovernor>(compiled.slo, static_cast<uint32_t>(lanes));
            task->governor->set_held_flows(p.held_flows.get());
            if (auto problem = task->governor->bind(task->scheduler.get(), &task->leaves)) {
                error = "port '" + port.name + "': slo: " + *problem;
                return false;
            }
            for (const std::string& note : slo::targets_within_blocking(compiled.slo))
                spdlog::warn("port '{}': slo: {}", port.name, note);
        }
        task->lane_order = lane_order(compiled);
        task->pacer.set(port.rate_bits_per_sec, port.tx_budget_bytes);
        task->max_frame_bytes = port.max_frame_bytes();

        // One producer lcore lets the ring skip the multi-producer compare-and-swap.
        size_t producers = 0;
        for (const LcoreRole& role : plan.lcores) {
            producers +=
                std::any_of(role.rx.begin(), role.rx.end(), [&](const RxQueueAssignment& q) {
                    for (const conf::ForwardingPolicy& f : p.policy->forwarding)
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
        for (rte_ring* ring : task->lanes)
            held_by_rings += rte_ring_get_capacity(ring);
        task->arrival_scratch.reserve(held_by_rings);
        p.egress.push_back(std::move(task));
    }
    return true;
}

bool build_lcores(Pipeline& p, const LcorePlan& plan, std::string& error) {
    size_t rx_lcores = 0;
    for (const LcoreRole& role : plan.lcores)
        rx_lcores += role.rx.empty() ? 0 : 1;
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
                [&](const conf::ForwardingPolicy& f) { return f.from_port == q.port; });
            if (forward == p.policy->forwarding.end()) continue;
            RxTask task;
            task.dpdk_port = p.dpdk_ports[q.port];
            task.queue = q.queue;
            task.policy_port = static_cast<uint16_t>(q.port);
            task.rx_burst = BurstSizer(burst_cycles(p.policy->ports[q.port]), kBurst);
            if (p.pace_input_bps != 0) {
                uint64_t capacity = PacedInput::kAhead;
                if (p.preload_input && q.queue < p.input_captures[q.port].size())
                    capacity = std::max<uint64_t>(p.input_captures[q.port][q.queue].frames, 1);
                if (capacity > UINT32_MAX) {
                    error = "--preload-input: " + p.input_captures[q.port][q.queue].path +
                            " has more than 2^32 frames";
                    return false;
                }
                task.paced = std::make_unique<PacedInput>(
                    rte_get_tsc_hz(), p.pace_input_bps, p.pace_max_gap_ns, p.rx_timestamp_offset,
                    p.rx_timestamp_flag, rx_timestamp_unit_ns(task.dpdk_port),
                    static_cast<uint32_t>(capacity));
            }
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
                ctx->classifier->set_held_flows(p.held_flows.get());
            } catch (const std::exception& e) {
                error = std::string("classifier: ") + e.what();
                return false;
            }
        }
        p.lcores.push_back(std::move(ctx));
    }
    const std::vector<bool> ring_fed = ring_fed_egress(p, plan);
    for (const std::unique_ptr<EgressTask>& e : p.egress)
        e->ring_fed = ring_fed[e->policy_port];
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

std::vector<const LcoreCounters*> counter_blocks(const Pipeline& p) {
    std::vector<const LcoreCounters*> blocks;
    for (const auto& ctx : p.lcores)
        blocks.push_back(ctx->counters.get());
    return blocks;
}

bool driver_is(uint16_t port, const char* driver) {
    rte_eth_dev_info info{};
    return rte_eth_dev_info_get(port, &info) == 0 && info.driver_name != nullptr &&
           std::string(info.driver_name) == driver;
}

bool every_input_is_pcap(const Pipeline& p) {
    for (const conf::ForwardingPolicy& f : p.policy->forwarding) {
        if (!driver_is(p.dpdk_ports[f.from_port], "net_pcap")) return false;
    }
    return true;
}

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

namespace {

// `pfc: nic`: the NIC generates and honours PFC itself for the lossless priorities.
bool hand_pfc_to_nic(const Pipeline& p, size_t port, std::string& error) {
    const conf::PortPolicy& policy_port = p.policy->ports[port];
    for (const conf::ClassPolicy& cls : p.policy->classes) {
        if (!cls.lossless) continue;
        rte_eth_pfc_conf conf{};
        conf.fc.mode = RTE_ETH_FC_FULL;
        // The NIC's watermarks are in KiB of its RX buffer.
        conf.fc.high_water = static_cast<uint32_t>(cls.lossless->xoff_bytes >> 10);
        conf.fc.low_water = static_cast<uint32_t>(cls.lossless->xon_bytes >> 10);
        conf.fc.pause_time = pfc::kMaxQuanta;
        conf.priority = cls.lossless->priority;
        const int rc = rte_eth_dev_priority_flow_ctrl_set(p.dpdk_ports[port], &conf);
        if (rc != 0) {
            error = "port '" + policy_port.name + "' (" + port_name(p.dpdk_ports[port]) +
                    "): pfc: nic: the device cannot do priority flow control for priority " +
                    std::to_string(cls.lossless->priority) + " (" + rte_strerror(-rc) +
                    "); use pfc: software";
            return false;
        }
    }
    spdlog::info("port '{}': priority flow control handed to the NIC", policy_port.name);
    return true;
}

bool build_port_pfc(Pipeline& p, EgressTask& e, const conf::CompiledEgress& compiled,
                    std::string& error) {
    PfcPort& port = e.pfc;
    const conf::PortPolicy& policy_port = p.policy->ports[compiled.port];
    port.enabled = true;
    port.dpdk_port = e.dpdk_port;
    port.policy_port = e.policy_port;
    port.rate_bits_per_sec = policy_port.rate_bits_per_sec;
    rte_ether_addr mac{};
    if (rte_eth_macaddr_get(e.dpdk_port, &mac) != 0) {
        error = "port '" + policy_port.name + "': pfc: no MAC address to send PFC frames from";
        return false;
    }
    std::copy(std::begin(mac.addr_bytes), std::end(mac.addr_bytes), port.mac.begin());
    port.pool = p.pools[socket_of(e.dpdk_port)].get();
    port.meta_offset = p.shared.meta_offset;
    port.generator = pfc::PauseGenerator(p.compiled.pfc.ports[compiled.port].thresholds,
                                         policy_port.rate_bits_per_sec);
    port.receiver = pfc::PauseReceiver(policy_port.rate_bits_per_sec, p.compiled.pfc.watchdog);
    port.pause_node = compiled.pause_node;
    std::copy(compiled.lane_priority.begin(), compiled.lane_priority.end(),
              port.lane_priority.begin());
    const std::string name = "tl_pfc" + std::to_string(compiled.port);
    rte_ring* ring = rte_ring_create(name.c_str(), 64, socket_of(e.dpdk_port), RING_F_SC_DEQ);
    if (ring == nullptr) {
        error = "cannot create ring " + name + ": " + rte_strerror(rte_errno);
        return false;
    }
    p.rings.emplace_back(ring);
    port.received = ring;
    return true;
}

}  // namespace

bool build_pfc(Pipeline& p, std::string& error) {
    p.shared.all_counters = counter_blocks(p);
    for (size_t i = 0; i < p.compiled.egress.size(); ++i) {
        const conf::CompiledEgress& compiled = p.compiled.egress[i];
        EgressTask& e = *p.egress[i];
        e.pfc_accounts.count = static_cast<uint32_t>(compiled.pfc_accounts.size());
        for (size_t k = 0; k < compiled.pfc_accounts.size(); ++k) {
            e.pfc_accounts.ingress_port[k] =
                static_cast<uint16_t>(compiled.pfc_accounts[k].ingress_port);
            e.pfc_accounts.priority[k] = compiled.pfc_accounts[k].priority;
        }
        switch (p.compiled.pfc.ports[compiled.port].mode) {
            case conf::PfcMode::off:
                break;
            case conf::PfcMode::software:
                if (!build_port_pfc(p, e, compiled, error)) return false;
                break;
            case conf::PfcMode::nic:
                if (!hand_pfc_to_nic(p, compiled.port, error)) return false;
                break;
        }
    }
    for (const auto& ctx : p.lcores) {
        for (RxTask& task : ctx->rx) {
            const auto forward = std::find_if(
                p.policy->forwarding.begin(), p.policy->forwarding.end(),
                [&](const conf::ForwardingPolicy& f) { return f.from_port == task.policy_port; });
            const size_t to = *p.egress_of[forward->to_port];
            const conf::CompiledEgress& compiled = p.compiled.egress[to];
            task.pfc_accounts = &p.egress[to]->pfc_accounts;
            task.pfc.dscp_priority = &p.compiled.pfc.dscp_priority;
            if (const auto own = p.egress_of[task.policy_port]; own && p.egress[*own]->pfc.enabled)
                task.pfc.received = p.egress[*own]->pfc.received;
            for (uint8_t lane = 0; lane < kMaxLanes; ++lane) {
                const uint8_t priority = compiled.lane_priority[lane];
                const uint8_t tag = compiled.pfc_tag(task.policy_port, lane, priority);
                if (tag == 0) continue;
                task.pfc.lossless_lanes |= 1u << lane;
                task.pfc.lane_priority[lane] = priority;
                task.pfc.lane_tag[lane] = tag;
            }
        }
    }
    return true;
}

bool preload_inputs(Pipeline& p, std::string& error) {
    if (!p.preload_input) return true;
    for (const std::unique_ptr<LcoreContext>& ctx : p.lcores) {
        for (RxTask& task : ctx->rx) {
            if (!task.paced) continue;
            const conf::PortPolicy& port = p.policy->ports[task.policy_port];
            const uint64_t start = rte_rdtsc();
            const std::vector<CaptureSize>& captures = p.input_captures[task.policy_port];
            const std::span<const uint32_t> wire_lengths =
                task.queue < captures.size()
                    ? std::span<const uint32_t>(captures[task.queue].wire_lengths)
                    : std::span<const uint32_t>();
            std::string reason;
            if (!task.paced->preload(task.dpdk_port, task.queue, reason, wire_lengths)) {
                error = "--preload-input: port '" + port.name + "' RX queue " +
                        std::to_string(task.queue) + ": " + reason;
                return false;
            }
            if (!wire_lengths.empty())
                spdlog::info(
                    "preloaded input '{}'/{}: its capture cut frames (a snap length): "
                    "paced at their lengths on the wire, as recorded",
                    port.name, task.queue);
            spdlog::info("preloaded input '{}'/{}: {} frames ({} mbufs) in {:.0f} ms", port.name,
                         task.queue, task.paced->frames(),
                         task.queue < captures.size() ? captures[task.queue].mbufs : 0,
                         static_cast<double>(rte_rdtsc() - start) * 1e3 /
                             static_cast<double>(rte_get_tsc_hz()));
        }
    }
    // Recorded on one clock, the captures keep their relative timing.
    std::optional<uint64_t> epoch;
    for (const std::unique_ptr<LcoreContext>& ctx : p.lcores)
        for (const RxTask& task : ctx->rx)
            if (task.paced)
                if (const std::optional<uint64_t> first = task.paced->first_timestamp_ns())
                    epoch = std::min(epoch.value_or(*first), *first);
    for (const std::unique_ptr<LcoreContext>& ctx : p.lcores)
        for (RxTask& task : ctx->rx)
            if (task.paced) task.paced->align(epoch.value_or(0), &p.paced_origin_tsc);
    return true;
}

}  // namespace twinlane::dataplane
