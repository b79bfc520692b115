#include "replay/rte_sched_discipline.h"

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_sched.h>

#include <algorithm>
#include <bit>
#include <cstring>

namespace twinlane::replay {
namespace {
sched::Packet& packet_of(rte_mbuf* m) {
    return *static_cast<sched::Packet*>(rte_mbuf_to_priv(m));
}
}  // namespace

RteSchedDiscipline::RteSchedDiscipline(const RteSchedLayout& layout) : layout_(layout) {
    // Rates far above the link's: rte_sched reads the TSC, the virtual link does the pacing.
    // rte_sched needs at least one TSC cycle per byte (scaled by 2^8), or its reciprocal
    // arithmetic divides by zero: cap the rate well inside that.
    const uint64_t rate_bytes = std::min<uint64_t>(
        std::max<uint64_t>(layout.link_rate_bps / 8, 1'000'000) * 10, rte_get_tsc_hz() * 32);

    uint32_t total_packets = 0;
    rte_sched_subport_params subport{};
    for (uint32_t tc = 0; tc < RTE_SCHED_TRAFFIC_CLASSES_PER_PIPE; ++tc) {
        const uint16_t q = layout.queue_packets[tc] == 0
                               ? 0
                               : std::bit_ceil(std::max<uint16_t>(layout.queue_packets[tc], 2));
        subport.qsize[tc] = q;
        total_packets += q * (tc == RTE_SCHED_TRAFFIC_CLASS_BE ? RTE_SCHED_BE_QUEUES_PER_PIPE : 1);
    }
    // rte_sched requires the best-effort class to exist.
    if (subport.qsize[RTE_SCHED_TRAFFIC_CLASS_BE] == 0) {
        subport.qsize[RTE_SCHED_TRAFFIC_CLASS_BE] = 64;
        total_packets += 64 * RTE_SCHED_BE_QUEUES_PER_PIPE;
    }

    pool_ = rte_pktmbuf_pool_create("replay_rte_sched", std::bit_ceil(total_packets + 1024) - 1, 0,
                                    sizeof(sched::Packet), 128, static_cast<int>(rte_socket_id()));
    if (pool_ == nullptr) {
        error_ = std::string("rte_sched: mbuf pool: ") + rte_strerror(rte_errno);
        return;
    }

    rte_sched_pipe_params pipe{};
    pipe.tb_rate = rate_bytes;
    pipe.tb_size = 1'000'000;
    for (uint32_t tc = 0; tc < RTE_SCHED_TRAFFIC_CLASSES_PER_PIPE; ++tc)
        pipe.tc_rate[tc] = subport.qsize[tc] == 0 ? 0 : rate_bytes;  // unused classes: no rate
    pipe.tc_period = 10;
    pipe.tc_ov_weight = 1;
    std::copy(layout.best_effort_weights.begin(), layout.best_effort_weights.end(),
              pipe.wrr_weights);

    rte_sched_subport_profile_params subport_profile{};
    subport_profile.tb_rate = rate_bytes;
    subport_profile.tb_size = 1'000'000;
    for (auto& r : subport_profile.tc_rate)
        r = rate_bytes;
    subport_profile.tc_period = 10;

    rte_sched_port_params port{};
    port.name = "replay_rte_sched";
    port.socket = static_cast<int>(rte_socket_id());
    port.rate = rate_bytes;
    port.mtu = 9216;
    port.frame_overhead = RTE_SCHED_FRAME_OVERHEAD_DEFAULT;
    port.n_subports_per_port = 1;
    port.subport_profiles = &subport_profile;
    port.n_subport_profiles = 1;
    port.n_max_subport_profiles = 1;
    port.n_pipes_per_subport = 1;  // must be a power of two; one pipe carries everything

    subport.n_pipes_per_subport_enabled = 1;
    subport.pipe_profiles = &pipe;
    subport.n_pipe_profiles = 1;
    subport.n_max_pipe_profiles = 1;

    port_ = rte_sched_port_config(&port);
    if (port_ == nullptr) {
        error_ = "rte_sched: port configuration refused";
        return;
    }
    if (rte_sched_subport_config(port_, 0, &subport, 0) != 0 ||
        rte_sched_pipe_config(port_, 0, 0, 0) != 0) {
        error_ = "rte_sched: subport/pipe configuration refused";
        rte_sched_port_free(port_);
        port_ = nullptr;
    }
}

RteSchedDiscipline::~RteSchedDiscipline() {
    if (port_ != nullptr) {
        rte_mbuf* m = nullptr;
        while (rte_sched_port_dequeue(port_, &m, 1) == 1)
            rte_pktmbuf_free(m);
        rte_sched_port_free(port_);
    }
    if (pool_ != nullptr) rte_mempool_free(pool_);
}

void RteSchedDiscipline::enqueue(sched::Packet& packet, uint8_t class_id, uint32_t job_id,
                                 uint64_t now_ns, std::vector<ReplayDrop>& drops) {
    packet.arrival_ns = now_ns;
    rte_mbuf* m = rte_pktmbuf_alloc(pool_);
    if (m == nullptr) {
        drops.push_back({packet, "pool_exhausted"});
        return;
    }
    packet_of(m) = packet;
    m->pkt_len = packet.length_bytes;  // rte_sched only reads the length; bytes stay in replay
    m->data_len = 0;
    const uint8_t tc = class_id < layout_.traffic_class_of_class.size()
                           ? layout_.traffic_class_of_class[class_id]
                           : RTE_SCHED_TRAFFIC_CLASS_BE;
    const bool by_job = tc == RTE_SCHED_TRAFFIC_CLASS_BE &&
                        class_id < layout_.job_picks_queue.size() &&
                        layout_.job_picks_queue[class_id];
    const uint32_t queue = by_job ? job_id % RTE_SCHED_BE_QUEUES_PER_PIPE : 0;
    rte_sched_port_pkt_write(port_, m, 0, 0, tc, queue, RTE_COLOR_GREEN);
    if (rte_sched_port_enqueue(port_, &m, 1) == 1) {
        ++queued_;
    } else {
        drops.push_back({packet, "queue_full_packets"});  // rte_sched freed the mbuf
    }
}

bool RteSchedDiscipline::dequeue(uint64_t, sched::Packet& out, std::vector<ReplayDrop>&) {
    if (queued_ == 0) return false;
    rte_mbuf* m = nullptr;
    // rte_sched's grinders may need a few passes after an idle period to find the queue.
    for (int attempt = 0; attempt < 64; ++attempt) {
        if (rte_sched_port_dequeue(port_, &m, 1) == 1) {
            out = packet_of(m);
            rte_pktmbuf_free(m);
            --queued_;
            return true;
        }
    }
    return false;
}

}  // namespace twinlane::replay
