// The realtime packet path: the per-lcore contexts and the loop every lcore runs.
//
//   rx_stage:    rte_eth_rx_burst (sized to the port's burst_time: burst_sizer.h) → headers
//                linearised if multi-segment → classify_burst → stamp (mbuf metadata, DSCP
//                remark) and bucket by lane (admission/classified_burst.h) → admit: one rte_ring
//                per (egress port, class) lane, or straight into the scheduler when this lcore also
//                runs the egress port (admission/scheduler_admission.h) → publish the burst's
//                tallies
//   sched stage: between-bursts updates → drain lanes, highest priority first, into the
//                scheduler (lane_admission.h, the same scheduler admission) → dequeue within
//                the TX pacer's allowance (port rate, NIC backlog budget) → rte_eth_tx_burst;
//                refused packets held, in order, and offered again before anything new
//
// One LcoreContext per lcore; it may hold RX tasks, egress tasks, or both (run-to-completion).
// Each egress task (its scheduler, pacer and held packets) belongs to exactly one lcore.
// Everything is allocated before launch; the loop allocates nothing, takes no lock, makes no
// syscall and logs nothing. The stop flag (stop_signal.h) ends the run; then the lcore drains
// (or drops, by option) and accounts for every packet still in its lanes, scheduler and hold.
#pragma once

#include <rte_mbuf.h>
#include <rte_ring.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "admission/leaf_map.h"
#include "admission/scheduler_admission.h"
#include "classifier/classifier.h"
#include "dataplane/burst_sizer.h"
#include "dataplane/lane_admission.h"
#include "dataplane/paced_input.h"
#include "dataplane/pfc_port.h"
#include "dataplane/pipeline_counters.h"
#include "dataplane/tsc_clock.h"
#include "dataplane/tx_pacer.h"
#include "dataplane/update_mailbox.h"
#include "sched/scheduler.h"
#include "slo/governor.h"

namespace twinlane::dataplane {

inline constexpr uint16_t kBurst = 32;
// Headers the classifier may read: enough for VLAN + IPv6 + extension headers + L4 + VXLAN.
inline constexpr uint32_t kHeaderCopyBytes = 256;

// A change to an egress port's scheduling, applied by its scheduler lcore between bursts.
// Either `replacement` (a freshly built tree: queued packets migrate into it; on success the
// old tree and leaf map come back in these fields for the poster to free) or `params` (same
// topology: Scheduler::apply). `error` holds the outcome.
struct SchedulerUpdate {
    std::unique_ptr<sched::Scheduler> replacement;
    admission::LeafMap leaves;  // with `replacement`: where each class and job enter it
    std::optional<sched::TreeSpec> params;
    std::optional<sched::ValidationError> error;
    std::atomic<bool> completed{false};
};

// A classifier rule-table swap for one RX lcore (the table outlives the swap; see use_rules).
struct ClassifierUpdate {
    const classifier::CompiledRuleTable* rules = nullptr;
    std::atomic<bool> completed{false};
};

struct RxTask {
    uint16_t dpdk_port = 0;
    uint16_t queue = 0;
    uint16_t policy_port = 0;      // index for counters
    std::vector<rte_ring*> lanes;  // the egress port's lanes, by class id
    // The egress task, when this lcore also runs it (run to completion): packets then go
    // straight into its scheduler, skipping the lane rings. The scheduler orders them by
    // priority all the same; rings only exist to cross lcores.
    struct EgressTask* local_egress = nullptr;
    PfcRx pfc;                                  // MAC control frames; lossless packets' tags
    const PfcAccounts* pfc_accounts = nullptr;  // the egress tree's (to count tags in)
    BurstSizer rx_burst{kBurst};        // how many packets one rx_burst asks for (port burst_time)
    std::unique_ptr<PacedInput> paced;  // `--pace-input`: frames handed over when due
};

// What TX accounting needs of a packet, taken from its scheduler descriptor.
struct TxInfo {
    uint64_t rx_ns = 0;  // RX arrival (TscClock ns)
    uint32_t length_bytes = 0;
    uint8_t lane = 0;  // class id
    uint8_t pfc_tag = 0;
};

struct EgressTask {
    uint16_t dpdk_port = 0;
    uint16_t policy_port = 0;
    std::vector<rte_ring*> lanes;     // by class id (the lane ring owner frees them)
    std::vector<uint8_t> lane_order;  // class ids, highest scheduling priority first
    // False when every RX queue forwarding here runs on the owning lcore (run to completion):
    // the loop then does not poll the lanes, which stay empty.
    bool ring_fed = true;
    std::unique_ptr<sched::Scheduler> scheduler;
    admission::LeafMap leaves;  // (class, job) -> leaf of `scheduler`
    TxPacer pacer{1, 1};
    uint32_t max_frame_bytes = 1518;
    std::array<rte_mbuf*, kBurst> held{};    // refused by the NIC, oldest first
    std::array<TxInfo, kBurst> held_info{};  // what the TX tallies need of each held packet
    uint16_t held_count = 0;
    // Scratch for one scheduler call. Members, not locals: the descriptors' default member
    // initialisers would zero 2 KiB per call (1.5% of a 64 B run).
    std::array<sched::Packet, kBurst> scratch_packets;
    std::array<sched::DroppedPacket, kBurst + admission::kPushOutRoom> scratch_drops;
    // Packets admitted into the tree in the current loop pass: that pass's TX sends at least as
    // many (pipeline.cc, transmit_pass).
    uint32_t admitted_in_pass = 0;
    // Whether the last pass ended with the port's rate holding back packets the tree had
    // queued, and when it ended (transmit_pass; PortCounters::tx_link_bound_ns).
    bool link_bound = false;
    uint64_t link_bound_since_ns = 0;
    // Admission in arrival order after a class change (lane_admission.h): room for every lane
    // ring's capacity plus a burst, reserved before launch.
    ArrivalOrderScratch<rte_mbuf*> arrival_scratch;
    UpdateMailbox<SchedulerUpdate> updates;
    // The tree's SLOs (slo/governor.h), when the policy has any for it: measured at dequeue,
    // acted on at admission and between bursts, by this lcore. Null: nothing runs.
    std::unique_ptr<slo::SloGovernor> governor;
    PfcPort pfc;               // this port's PFC, when software
    PfcAccounts pfc_accounts;  // tags of the lossless packets in this tree
};

struct LcoreContext {
    uint32_t lcore = 0;
    std::vector<RxTask> rx;
    std::vector<EgressTask*> egress;
    std::unique_ptr<classifier::Classifier> classifier;      // set iff rx is non-empty
    std::array<classifier::Result, kBurst> scratch_results;  // one classify_burst (see above)
    UpdateMailbox<ClassifierUpdate> classifier_updates;
    std::unique_ptr<LcoreCounters> counters = std::make_unique<LcoreCounters>();
};

// The classifiers of `lcores` (pointers to LcoreContext, raw or owning) summed: another thread
// may call this while they run (classifier::accumulate reads only what is sized once).
template <typename LcorePointers>
classifier::ClassifierCounters classifier_totals(const LcorePointers& lcores) {
    classifier::ClassifierCounters total;
    for (const auto& ctx : lcores)
        if (ctx->classifier) classifier::accumulate(total, ctx->classifier->counters());
    return total;
}

enum class StopMode { drain, drop };

// Read-only for lcores while they run, except the RX-lcore countdown.
struct PipelineShared {
    TscClock clock{0, 1'000'000'000};
    int meta_offset = -1;
    uint32_t lane_count = 1;
    StopMode stop_mode = StopMode::drain;
    uint64_t drain_timeout_ns = 100'000'000;
    // Lcores with RX tasks that have not yet finished their last burst after the stop request;
    // egress tasks stop draining lanes only when it is 0 (nothing can arrive any more).
    std::atomic<uint32_t> rx_lcores_running{0};
    // Every lcore's counters: a PFC port's lossless bytes inside twinlane are the sum over them.
    std::vector<const LcoreCounters*> all_counters;
};

// The lcore body: runs until stop_requested(), then drains/drops its egress tasks.
void run_lcore(LcoreContext& context, PipelineShared& shared);

}  // namespace twinlane::dataplane
