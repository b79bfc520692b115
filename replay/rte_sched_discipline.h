// DPDK's rte_sched as a replay discipline, configured from the same policy as closely as its
// fixed hierarchy allows: one subport, one pipe, 13 traffic classes. Strict lanes map to
// traffic classes 0..11 in priority order; the bulk lane with per-job children maps to the
// best-effort class (4 queues, WRR, job id modulo 4). rte_sched reads the TSC itself, so its
// shapers run far above the link rate and the virtual link paces it: one dequeue per free
// link slot. It frees refused packets itself, so the discipline enqueues one packet at a time
// to learn which were refused. Needs an initialised EAL. Single-threaded.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "replay/discipline.h"

struct rte_mempool;
struct rte_sched_port;

namespace twinlane::replay {

struct RteSchedLayout {
    // Per class id: traffic class (0..12; 12 is best effort) and whether the job id picks one
    // of the 4 best-effort queues (a class the policy splits per job; any other best-effort
    // class uses queue 0).
    std::vector<uint8_t> traffic_class_of_class;
    std::vector<bool> job_picks_queue;
    std::array<uint8_t, 4> best_effort_weights{1, 1, 1, 1};
    std::array<uint16_t, 13> queue_packets{};  // per traffic class; rounded up to a power of 2
    uint64_t link_rate_bps = 10'000'000'000ULL;
};

class RteSchedDiscipline final : public Discipline {
  public:
    explicit RteSchedDiscipline(const RteSchedLayout& layout);
    ~RteSchedDiscipline() override;
    RteSchedDiscipline(const RteSchedDiscipline&) = delete;
    RteSchedDiscipline& operator=(const RteSchedDiscipline&) = delete;

    bool ok() const { return port_ != nullptr; }
    const std::string& error() const { return error_; }

    std::string_view name() const override { return "rte_sched"; }
    void enqueue(sched::Packet& packet, uint8_t class_id, uint32_t job_id, uint64_t now_ns,
                 std::vector<ReplayDrop>& drops) override;
    bool dequeue(uint64_t now_ns, sched::Packet& out, std::vector<ReplayDrop>& drops) override;
    uint64_t next_eligible_ns(uint64_t now_ns) override {
        return queued_ == 0 ? UINT64_MAX : now_ns;
    }
    uint64_t queued_packets() const override { return queued_; }

  private:
    RteSchedLayout layout_;
    rte_mempool* pool_ = nullptr;
    rte_sched_port* port_ = nullptr;
    uint64_t queued_ = 0;
    std::string error_;
};

}  // namespace twinlane::replay
