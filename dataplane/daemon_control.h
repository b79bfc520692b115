// DaemonControl: control::DaemonApi for the running `twinlane run -c` pipeline.
//
// Everything that is policy (rules, class set, policy load/show, log level) is PolicyStore's:
// DaemonControl is a PolicyStore whose before_publish() hook turns each new version (epoch)
// into lcore updates before it is published, as a two-phase commit:
//
//   plan      plan_update() (daemon_plan.h, pure): refuse what needs a restart (ports,
//             forwarding, lcores, classes, classifier settings other than rules) or would move
//             a class to other leaves; per egress tree nothing, Scheduler::apply(TreeSpec)
//             (same topology) or a freshly built Scheduler with its leaf map; then the rule
//             table (CompiledRuleTable::build)
//   apply     post a SchedulerUpdate to each changed egress task's mailbox, wait for done();
//             then a ClassifierUpdate to every RX lcore's (the owning lcore applies it between
//             bursts: queued packets migrate by leaf, in order, nothing dropped)
//   roll_back on an lcore-side error, the trees already changed are changed back in reverse
//             and the candidate is refused
//   finish    the old trees (handed back in the requests) are freed, their counters kept as a
//             retired base, the previous rule table freed; PolicyStore then publishes the
//             version: epoch() moves, policy show/rules list see it.
// A refused change leaves the lcores and the published policy as they were.
//
// Live reads (status, stats, flows) are reads from the control thread, never a request to the
// lcores: per-lcore counter blocks and the schedulers' leaf counters (relaxed atomics, one
// writer: each value whole, race-free; a set of them is not one snapshot) and the classifiers'
// flow tables (fixed arrays; an entry being rewritten while read may show mixed fields). A mutex
// (never taken by an lcore) keeps a tree alive while it is read and serialises it with the
// swap bookkeeping. Scheduler counters restart with each new tree; the retired trees' totals
// are added back by node name, so stats stay monotonic across topology changes.
//
// Lifetime: create after the pipeline is built, before the lcores launch; destroy after they
// have stopped (rule tables handed to classifiers live here). Thread-safety: all DaemonApi
// methods from any thread (control server, metrics, telemetry).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "control/policy_store.h"
#include "dataplane/daemon_plan.h"
#include "dataplane/pipeline.h"

namespace twinlane::dataplane {

struct DaemonLcore {
    uint32_t lcore = 0;
    std::string role;                // "rx", "scheduler" or "run_to_completion"
    std::vector<std::string> ports;  // policy port names it serves
};

// The running pipeline, borrowed: every pointer outlives the DaemonControl.
struct DaemonPipeline {
    std::vector<uint16_t> dpdk_ports;  // by policy port
    std::vector<EgressTask*> egress;   // by compiled egress index (Policy::egress_trees)
    std::vector<LcoreContext*> lcores;
    std::vector<DaemonLcore> roles;
};

struct DaemonControlOptions {
    bool explicit_log_level = false;  // --log-level given: a loaded policy's log_level is ignored
    std::chrono::milliseconds apply_timeout{10000};  // per mailbox hand-over
    std::chrono::milliseconds rate_interval{1000};   // port rate sampling
};

class DaemonControl final : public control::PolicyStore {
  public:
    struct CreateResult {
        std::unique_ptr<DaemonControl> control;  // null on error
        std::vector<std::string> errors;
    };
    static CreateResult create(std::shared_ptr<const conf::Policy> policy, DaemonPipeline pipeline,
                               DaemonControlOptions options);
    ~DaemonControl() override;

    control::ApiResult status() override;
    control::ApiResult stats(control::StatsScope scope) override;
    control::ApiResult flows_top(size_t count) override;

    // The epoch whose trees and rules the lcores are running (== epoch() between changes).
    uint64_t applied_epoch() const { return applied_epoch_.load(std::memory_order_acquire); }

    // A reload of the policy file (SIGHUP, --watch-policy: policy_reload.h) and its outcome,
    // for status (`reloads`) and the metrics.
    void note_reload(bool ok, std::string error);

  protected:
    std::optional<control::ApiResult> before_publish(
        const control::PolicyVersion& running, const control::PolicyVersion& candidate) override;

  private:
    struct LiveEgress {
        sched::Scheduler* scheduler = nullptr;  // owned by the EgressTask
        conf::CompiledEgress compiled;          // what it runs (pool_packets as built)
        std::map<std::string, uint32_t> node_ids;
        std::map<std::string, sched::QueueCounters> retired;  // by node name
    };
    struct PortRates {
        uint64_t rx_bits_per_sec = 0, tx_bits_per_sec = 0;
    };

    DaemonControl(std::vector<uint16_t> dpdk_port_ids, DaemonPipeline pipeline,
                  DaemonControlOptions options);
    void initialise_live(const control::PolicyVersion& first);
    CounterSnapshot counters() const;
    sched::QueueCounters read_node(size_t egress, const std::string& name) const;  // mutex held
    // Adds the counters of `tree` (built from `spec`), now out of service, to live.retired.
    static void retire(LiveEgress& live, const sched::TreeSpec& spec, sched::Scheduler& tree);
    using Clock = std::chrono::steady_clock;
    // The commit's phases (see the top of this file); "" from apply() on success, else why.
    std::string apply(UpdatePlan& plan, std::vector<std::unique_ptr<SchedulerUpdate>>& requests);
    void roll_back(UpdatePlan& plan, std::vector<std::unique_ptr<SchedulerUpdate>>& requests,
                   uint64_t epoch);
    void finish(UpdatePlan& plan, std::vector<std::unique_ptr<SchedulerUpdate>>& requests,
                std::unique_ptr<classifier::CompiledRuleTable> table,
                const control::PolicyVersion& running, const control::PolicyVersion& candidate,
                Clock::time_point started);
    // Posts `request` to egress `e`'s mailbox and waits for done(): "" on success, else why.
    // On a timeout the request is kept alive (the lcore may still read it) and wedged_ is set.
    std::string hand_over(size_t e, std::unique_ptr<SchedulerUpdate>& request);
    // Switches every RX lcore to `table`; "" on success, else why (wedged_ set).
    std::string hand_over_rules(const classifier::CompiledRuleTable& table);
    void sample_rates();

    const DaemonPipeline pipeline_;
    const DaemonControlOptions options_;

    mutable std::mutex live_mutex_;  // live_, live_policy_; never taken by an lcore
    std::vector<LiveEgress> live_;
    std::shared_ptr<const conf::Policy> live_policy_;
    std::atomic<uint64_t> applied_epoch_{0};

    // Changes (serialised by PolicyStore's change mutex).
    std::unique_ptr<classifier::CompiledRuleTable> rules_;  // in use by the RX lcores, if set
    uint64_t rules_generation_ = 1;  // Classifier's own first table is generation 1
    std::string wedged_;             // why no further change can be made (an lcore never answered)
    // Requests an lcore never completed: kept alive in case it still reads them.
    std::vector<std::unique_ptr<SchedulerUpdate>> abandoned_sched_;
    std::vector<std::unique_ptr<ClassifierUpdate>> abandoned_rules_;
    std::vector<std::unique_ptr<classifier::CompiledRuleTable>> abandoned_tables_;

    mutable std::mutex reload_mutex_;
    uint64_t reloads_ = 0;
    uint64_t reload_failures_ = 0;
    std::string last_reload_error_;

    // Port rates, sampled every rate_interval by rate_thread_.
    mutable std::mutex rate_mutex_;
    std::condition_variable rate_wake_;
    bool rate_stop_ = false;
    std::vector<PortRates> rates_;
    std::thread rate_thread_;
};

}  // namespace twinlane::dataplane
