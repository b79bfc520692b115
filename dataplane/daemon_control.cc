#include "dataplane/daemon_control.h"

#include <pthread.h>
#include <rte_ethdev.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <span>

#include "control/stats_json.h"
#include "dataplane/daemon_plan.h"
#include "dataplane/stop_signal.h"

namespace twinlane::dataplane {
namespace {

using control::ApiResult;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::map<std::string, uint32_t> node_ids_of(const sched::TreeSpec& tree) {
    std::map<std::string, uint32_t> ids;
    for (uint32_t i = 0; i < tree.nodes.size(); ++i)
        ids.emplace(tree.nodes[i].name, i);
    return ids;
}

const char* node_kind(sched::NodeKind kind) {
    return sched::to_string(kind);
}

// A port's priority flow control, per priority it speaks or hears (mlx5's ethtool counters
// tx_prioN_pause, tx_prioN_pause_duration, rx_prioN_pause, rx_prioN_pause_duration).
json pfc_json(const conf::PortPolicy& port, const CounterSnapshot::Pfc& c) {
    json out = json::array();
    if (port.pfc.mode == conf::PfcMode::off) return out;
    for (uint32_t p = 0; p < 8; ++p) {
        if (c.tx_frames[p] + c.rx_frames[p] + c.storms[p] + c.queued_bytes[p] == 0) continue;
        out.push_back({{"priority", p},
                       {"tx_pause_frames", c.tx_frames[p]},
                       {"tx_pause_duration_ns", c.tx_pause_ns[p]},
                       {"rx_pause_frames", c.rx_frames[p]},
                       {"rx_pause_duration_ns", c.rx_pause_ns[p]},
                       {"storms", c.storms[p]},
                       {"lossless_queued_bytes", c.queued_bytes[p]}});
    }
    return out;
}

}  // namespace

DaemonControl::DaemonControl(std::vector<uint16_t> dpdk_port_ids, DaemonPipeline pipeline,
                             DaemonControlOptions options)
    : PolicyStore(std::move(dpdk_port_ids)),
      pipeline_(std::move(pipeline)),
      options_(options),
      rates_(pipeline_.dpdk_ports.size()) {}

DaemonControl::CreateResult DaemonControl::create(std::shared_ptr<const conf::Policy> policy,
                                                  DaemonPipeline pipeline,
                                                  DaemonControlOptions options) {
    CreateResult result;
    if (!policy) {
        result.errors.push_back("no policy");
        return result;
    }
    std::vector<uint16_t> ids = pipeline.dpdk_ports;
    std::unique_ptr<DaemonControl> control(
        new DaemonControl(std::move(ids), std::move(pipeline), options));
    const ApiResult first = control->install_first(std::move(policy));
    if (!first.ok()) {
        result.errors.push_back(first.error());
        for (const std::string& detail : first.details())
            result.errors.push_back(detail);
        return result;
    }
    const auto version = control->current();
    if (version->compiled->egress.size() != control->pipeline_.egress.size()) {
        result.errors.push_back(
            "control: the pipeline has " + std::to_string(control->pipeline_.egress.size()) +
            " egress trees, the policy " + std::to_string(version->compiled->egress.size()));
        return result;
    }
    control->initialise_live(*version);
    control->rate_thread_ = std::thread([raw = control.get()] { raw->sample_rates(); });
    result.control = std::move(control);
    return result;
}

DaemonControl::~DaemonControl() {
    {
        std::lock_guard lock(rate_mutex_);
        rate_stop_ = true;
    }
    rate_wake_.notify_all();
    if (rate_thread_.joinable()) rate_thread_.join();
}

void DaemonControl::initialise_live(const control::PolicyVersion& first) {
    std::lock_guard lock(live_mutex_);
    live_.resize(pipeline_.egress.size());
    for (size_t e = 0; e < live_.size(); ++e) {
        LiveEgress& live = live_[e];
        live.scheduler = pipeline_.egress[e]->scheduler.get();
        live.compiled = first.compiled->egress[e];
        live.compiled.tree.pool_packets = live.scheduler->pool_capacity();
        live.node_ids = node_ids_of(live.compiled.tree);
    }
    live_policy_ = first.policy;
    applied_epoch_.store(first.epoch, std::memory_order_release);
}

CounterSnapshot DaemonControl::counters() const {
    std::vector<const LcoreCounters*> blocks;
    for (const LcoreContext* ctx : pipeline_.lcores)
        blocks.push_back(ctx->counters.get());
    const auto policy = current()->policy;
    return snapshot(blocks, static_cast<uint32_t>(policy->ports.size()),
                    static_cast<uint32_t>(policy->classes.size()));
}

sched::QueueCounters DaemonControl::read_node(size_t egress, const std::string& name) const {
    sched::QueueCounters total;
    if (egress >= live_.size()) return total;
    const LiveEgress& live = live_[egress];
    if (auto retired = live.retired.find(name); retired != live.retired.end())
        total = retired->second;
    if (auto id = live.node_ids.find(name); id != live.node_ids.end())
        total.add(live.scheduler->node_counters(id->second));
    return total;
}

void DaemonControl::retire(LiveEgress& live, const sched::TreeSpec& spec, sched::Scheduler& tree) {
    for (uint32_t i = 0; i < spec.nodes.size(); ++i)
        live.retired[spec.nodes[i].name].add(retire_counters(tree.node_counters(i)));
}

namespace {

template <typename Request>
bool wait_for_lcore(const Request& request, std::chrono::milliseconds timeout) {
    auto deadline = Clock::now() + timeout;
    bool stopping = false;
    while (!UpdateMailbox<Request>::done(request)) {
        const auto now = Clock::now();
        if (now >= deadline) return false;
        if (!stopping && stop_requested()) {
            // Lcores stop taking requests once they leave their loop: give them a moment only.
            stopping = true;
            deadline = std::min(deadline, now + std::chrono::milliseconds(100));
        }
        std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    return true;
}

}  // namespace

std::string DaemonControl::hand_over(size_t e, std::unique_ptr<SchedulerUpdate>& request) {
    const std::string port = current()->policy->ports[pipeline_.egress[e]->policy_port].name;
    if (!pipeline_.egress[e]->updates.post(*request))
        return "port '" + port + "': an earlier update is still pending";
    if (!wait_for_lcore(*request, options_.apply_timeout)) {
        wedged_ = "the scheduler lcore of port '" + port + "' did not take an update within " +
                  std::to_string(options_.apply_timeout.count()) + " ms";
        abandoned_sched_.push_back(std::move(request));
        return wedged_;
    }
    if (request->error) return "port '" + port + "': " + request->error->to_string();
    return "";
}

std::string DaemonControl::hand_over_rules(const classifier::CompiledRuleTable& table) {
    for (LcoreContext* ctx : pipeline_.lcores) {
        if (!ctx->classifier) continue;
        auto request = std::make_unique<ClassifierUpdate>();
        request->rules = &table;
        if (!ctx->classifier_updates.post(*request))
            return "lcore " + std::to_string(ctx->lcore) + ": an earlier update is still pending";
        if (!wait_for_lcore(*request, options_.apply_timeout)) {
            wedged_ = "RX lcore " + std::to_string(ctx->lcore) + " did not take new rules within " +
                      std::to_string(options_.apply_timeout.count()) + " ms";
            abandoned_rules_.push_back(std::move(request));
            return wedged_;
        }
    }
    return "";
}

std::optional<ApiResult> DaemonControl::before_publish(const control::PolicyVersion& running,
                                                       const control::PolicyVersion& candidate) {
    const auto started = Clock::now();
    if (!wedged_.empty())
        return ApiResult::failure("no change can be applied: " + wedged_ + "; restart the daemon");
    if (stop_requested()) return ApiResult::failure("the daemon is stopping; nothing was changed");

    // Plan: decide and build everything before touching any lcore (live_ is written only here,
    // under PolicyStore's change mutex).
    std::vector<conf::CompiledEgress> now;
    for (const LiveEgress& live : live_)
        now.push_back(live.compiled);
    UpdatePlan plan = plan_update(*running.policy, running.compiled->classifier, now,
                                  *candidate.policy, *candidate.compiled);
    if (plan.refused()) return ApiResult::failure(plan.refusal, std::move(plan.details));
    std::unique_ptr<classifier::CompiledRuleTable> table;
    if (plan.rules_change) {
        try {
            table = std::make_unique<classifier::CompiledRuleTable>(
                classifier::CompiledRuleTable::build(candidate.compiled->classifier.rules,
                                                     ++rules_generation_));
        } catch (const std::exception& e) {
            return ApiResult::failure(std::string("cannot build the rule table: ") + e.what());
        }
    }

    // Apply: schedulers first, each by its owning lcore between bursts, then the rules.
    std::vector<std::unique_ptr<SchedulerUpdate>> requests;
    const std::string failure = apply(plan, requests);
    if (!failure.empty()) {
        roll_back(plan, requests, candidate.epoch);
        spdlog::warn("policy epoch {} refused: {}", candidate.epoch, failure);
        return ApiResult::failure("the change could not be applied: " + failure +
                                  "; the running policy is unchanged");
    }
    if (table) {
        const std::string problem = hand_over_rules(*table);
        if (!problem.empty()) {
            // Some RX lcores may run the new rules: keep the table alive, accept no more changes.
            abandoned_tables_.push_back(std::move(table));
            spdlog::critical("policy epoch {}: {}", candidate.epoch, problem);
            return ApiResult::failure("the change was only partly applied: " + problem +
                                      "; restart the daemon");
        }
    }
    finish(plan, requests, std::move(table), running, candidate, started);
    return std::nullopt;
}

std::string DaemonControl::apply(UpdatePlan& plan,
                                 std::vector<std::unique_ptr<SchedulerUpdate>>& requests) {
    for (UpdateStep& step : plan.steps) {
        auto request = std::make_unique<SchedulerUpdate>();
        if (step.change == EgressChange::apply) {
            request->params = step.compiled.tree;
        } else {
            request->replacement = std::move(step.new_tree);
            request->leaves = step.compiled.leaves;
        }
        std::string failure = hand_over(step.egress, request);
        if (!failure.empty()) {
            // A rebuilt tree the lcore refused (or never took) comes back for the rollback.
            if (request && request->replacement) step.new_tree = std::move(request->replacement);
            return failure;
        }
        requests.push_back(std::move(request));
    }
    return "";
}

// Puts back, in reverse, what apply() changed: the lcores keep running the old policy. A
// rebuilt step's request holds the old tree and leaf map the lcore handed back.
void DaemonControl::roll_back(UpdatePlan& plan,
                              std::vector<std::unique_ptr<SchedulerUpdate>>& requests,
                              uint64_t epoch) {
    for (size_t i = requests.size(); i-- > 0;) {
        const UpdateStep& step = plan.steps[i];
        LiveEgress& live = live_[step.egress];
        auto back = std::make_unique<SchedulerUpdate>();
        if (step.change == EgressChange::apply) {
            back->params = live.compiled.tree;
        } else {
            back->replacement = std::move(requests[i]->replacement);  // the old tree
            back->leaves = std::move(requests[i]->leaves);            // and its leaf map
        }
        const std::string problem = hand_over(step.egress, back);
        if (!problem.empty()) {
            if (wedged_.empty()) wedged_ = "undoing a failed change: " + problem;
            spdlog::critical("policy epoch {}: {}", epoch, wedged_);
            return;
        }
        if (step.change == EgressChange::rebuild && back && back->replacement) {
            std::lock_guard lock(live_mutex_);
            retire(live, step.compiled.tree, *back->replacement);  // the short-lived tree
        }
    }
}

// Every lcore runs the candidate: swap the bookkeeping, then free what was replaced.
void DaemonControl::finish(UpdatePlan& plan,
                           std::vector<std::unique_ptr<SchedulerUpdate>>& requests,
                           std::unique_ptr<classifier::CompiledRuleTable> table,
                           const control::PolicyVersion& running,
                           const control::PolicyVersion& candidate, Clock::time_point started) {
    size_t rebuilt = 0;
    uint64_t migrated = 0;  // packets queued at the swap, moved into the new trees in order
    {
        std::lock_guard lock(live_mutex_);
        for (size_t i = 0; i < plan.steps.size(); ++i) {
            UpdateStep& step = plan.steps[i];
            LiveEgress& live = live_[step.egress];
            if (step.change == EgressChange::rebuild) {
                sched::Scheduler& old_tree = *requests[i]->replacement;      // handed back
                migrated += old_tree.node_counters(0).migrated_out_packets;  // node 0: the root
                retire(live, live.compiled.tree, old_tree);
                live.scheduler = pipeline_.egress[step.egress]->scheduler.get();
                live.node_ids = node_ids_of(step.compiled.tree);
                ++rebuilt;
            }
            live.compiled = std::move(step.compiled);
        }
        live_policy_ = candidate.policy;
        applied_epoch_.store(candidate.epoch, std::memory_order_release);
    }
    requests.clear();  // frees the old trees and leaf maps the lcores handed back
    const bool rules_swapped = table != nullptr;
    if (table) rules_ = std::move(table);  // the previous table is no longer used by anyone

    const conf::Policy& policy = *candidate.policy;
    if (policy.log_level != running.policy->log_level && !options_.explicit_log_level)
        spdlog::set_level(static_cast<spdlog::level::level_enum>(policy.log_level));
    if (policy.control.socket_path != running.policy->control.socket_path ||
        policy.control.socket_mode != running.policy->control.socket_mode ||
        policy.metrics.enabled != running.policy->metrics.enabled ||
        policy.metrics.listen_address != running.policy->metrics.listen_address ||
        policy.metrics.port != running.policy->metrics.port)
        spdlog::info("policy epoch {}: control/metrics settings take effect at the next start",
                     candidate.epoch);
    const auto micros =
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - started).count();
    spdlog::info(
        "policy epoch {} applied ({}): {} tree(s) rebuilt ({} queued packets migrated), "
        "{} updated in place, rules {} ({} us)",
        candidate.epoch, policy.source, rebuilt, migrated, plan.steps.size() - rebuilt,
        rules_swapped ? "swapped" : "unchanged", micros);
}

// ---- live reads ------------------------------------------------------------------------------

void DaemonControl::note_reload(bool ok, std::string error) {
    std::lock_guard lock(reload_mutex_);
    ++reloads_;
    if (!ok) {
        ++reload_failures_;
        last_reload_error_ = std::move(error);
    } else {
        last_reload_error_.clear();
    }
}

ApiResult DaemonControl::status() {
    ApiResult base = PolicyStore::status();
    if (!base.ok()) return base;
    json out = base.value();
    const auto policy = current()->policy;
    json ports = json::array();
    for (size_t i = 0; i < policy->ports.size(); ++i) {
        rte_eth_link link{};
        const bool known = rte_eth_link_get_nowait(pipeline_.dpdk_ports[i], &link) == 0;
        ports.push_back({{"name", policy->ports[i].name},
                         {"port_id", pipeline_.dpdk_ports[i]},
                         {"device", policy->ports[i].device},
                         {"link_up", known && link.link_status == RTE_ETH_LINK_UP},
                         {"speed_mbps", known ? link.link_speed : 0},
                         {"rate_bits_per_sec", policy->ports[i].rate_bits_per_sec}});
    }
    out["ports"] = std::move(ports);
    json lcores = json::array();
    for (size_t i = 0; i < pipeline_.roles.size(); ++i) {
        const DaemonLcore& role = pipeline_.roles[i];
        json entry = {{"lcore", role.lcore}, {"role", role.role}, {"ports", role.ports}};
        if (i < pipeline_.lcores.size()) {  // its loop's busy passes so far (pipeline.h)
            const LoopSnapshot loop = loop_snapshot(*pipeline_.lcores[i]->counters);
            entry["busy_passes"] = loop.busy_passes;
            entry["pass_p50_ns"] = loop.percentile_ns(kP50Ppm);
            entry["pass_p99_ns"] = loop.percentile_ns(kP99Ppm);
            entry["pass_max_ns"] = loop.max_ns;
            entry["poll_gap_max_ns"] = loop.poll_gap_max_ns;
            entry["pass_sum_ns"] = loop.sum_ns;
            entry["pass_log2_histogram"] = log2_histogram(loop.buckets);
            if (loop.cpu) add_thread_cpu(entry, *loop.cpu);
        }
        lcores.push_back(std::move(entry));
    }
    out["lcores"] = std::move(lcores);
    out["classifier"] = control::classifier_counters_to_json(classifier_totals(pipeline_.lcores));
    // What the lcores run, as they confirmed it: per egress tree, its nodes' parameters.
    json egress = json::array();
    {
        std::lock_guard lock(live_mutex_);
        for (const LiveEgress& live : live_) {
            json nodes = json::array();
            for (const sched::NodeSpec& node : live.compiled.tree.nodes) {
                nodes.push_back({{"name", node.name},
                                 {"kind", node_kind(node.kind)},
                                 {"parent", node.parent},
                                 {"weight", node.weight},
                                 {"rate_bits_per_sec", node.shaper.rate_bits_per_sec},
                                 {"limit_packets", node.limit_packets}});
            }
            egress.push_back({{"port", policy->ports[live.compiled.port].name},
                              {"pool_packets", live.compiled.tree.pool_packets},
                              {"nodes", std::move(nodes)}});
        }
    }
    out["applied_epoch"] = applied_epoch();
    out["egress"] = std::move(egress);
    {
        std::lock_guard lock(reload_mutex_);
        out["reloads"] = {{"attempts", reloads_},
                          {"failures", reload_failures_},
                          {"last_error", last_reload_error_}};
    }
    return ApiResult::success(std::move(out));
}

ApiResult DaemonControl::stats(control::StatsScope scope) {
    try {
        const CounterSnapshot snap = counters();
        std::lock_guard lock(live_mutex_);
        const conf::Policy& policy = *live_policy_;
        const control::NodeCountersReader read = [this](size_t e, const std::string& name) {
            return read_node(e, name);
        };
        switch (scope) {
            case control::StatsScope::ports: {
                std::vector<PortRates> rates;
                {
                    std::lock_guard rate_lock(rate_mutex_);
                    rates = rates_;
                }
                json ports = json::array();
                for (size_t i = 0; i < policy.ports.size(); ++i) {
                    rte_eth_stats eth{};
                    const bool known = rte_eth_stats_get(pipeline_.dpdk_ports[i], &eth) == 0;
                    uint64_t sched_drops = 0;
                    for (size_t e = 0; e < live_.size(); ++e) {
                        if (live_[e].compiled.port == i && !live_[e].compiled.tree.nodes.empty())
                            sched_drops += read_node(e, live_[e].compiled.tree.nodes.front().name)
                                               .dropped_packets();
                    }
                    const CounterSnapshot::Port& c = snap.ports[i];
                    ports.push_back(
                        {{"name", policy.ports[i].name},
                         {"port_id", pipeline_.dpdk_ports[i]},
                         {"rx_packets", c.rx_packets},
                         {"rx_bytes", c.rx_bytes},
                         {"tx_packets", c.tx_packets},
                         {"tx_bytes", c.tx_bytes},
                         {"rx_dropped", known ? eth.imissed + eth.ierrors + eth.rx_nombuf : 0},
                         {"tx_dropped", sched_drops + (known ? eth.oerrors : 0)},
                         {"tx_link_bound_ns", c.tx_link_bound_ns},
                         {"rx_bits_per_sec", rates[i].rx_bits_per_sec},
                         {"tx_bits_per_sec", rates[i].tx_bits_per_sec},
                         {"pfc", pfc_json(policy.ports[i], snap.pfc[i])}});
                }
                return ApiResult::success(std::move(ports));
            }
            case control::StatsScope::classes: {
                const control::ClassifiedCountersReader classified = [&](size_t cls) {
                    classifier::ClassCounters c;
                    if (cls < snap.lanes.size()) {
                        c.packets = snap.lanes[cls].rx_packets;
                        c.bytes = snap.lanes[cls].rx_bytes;
                    }
                    for (const LcoreContext* ctx : pipeline_.lcores) {
                        // per_class is sized once at construction: a torn-tolerant read.
                        if (ctx->classifier && cls < ctx->classifier->counters().per_class.size())
                            c.drops += ctx->classifier->counters().per_class[cls].drops;
                    }
                    return c;
                };
                // Governors live as long as their egress task; their counters are relaxed
                // atomics with one writer (the scheduler lcore).
                const control::SloReader slo = [&](size_t cls) {
                    std::vector<control::SloStatsEntry> entries;
                    for (const EgressTask* e : pipeline_.egress) {
                        if (!e->governor) continue;
                        const slo::SloTreeSpec& spec = e->governor->spec();
                        for (size_t i = 0; i < spec.classes.size(); ++i) {
                            if (spec.classes[i].class_id != cls) continue;
                            entries.push_back({policy.ports[e->policy_port].name, spec.classes[i],
                                               e->governor->stats(i)});
                        }
                    }
                    return entries;
                };
                const control::ClassLatencyReader latency = [&](size_t cls) {
                    control::ClassLatency l;
                    if (cls >= snap.lanes.size()) return l;
                    const CounterSnapshot::Lane& s = snap.lanes[cls];
                    l.packets = s.tx_packets;
                    l.mean_ns = s.latency_mean_ns();
                    l.p50_ns = s.latency_percentile_ns(kP50Ppm);
                    l.p99_ns = s.latency_percentile_ns(kP99Ppm);
                    l.p999_ns = s.latency_percentile_ns(kP999Ppm);
                    l.max_ns = s.latency_max_ns;
                    l.sum_ns = s.latency_sum_ns;
                    l.log2_histogram = log2_histogram(s.latency_buckets);
                    return l;
                };
                return ApiResult::success(
                    control::class_stats_json(policy, read, classified, slo, latency));
            }
            case control::StatsScope::queues:
                return ApiResult::success(control::queue_stats_json(policy, read));
        }
        return ApiResult::failure("unknown stats scope");
    } catch (const std::exception& e) {
        return ApiResult::failure(std::string("stats: ") + e.what());
    }
}

ApiResult DaemonControl::flows_top(size_t count) {
    try {
        std::vector<const classifier::FlowTable*> tables;
        for (const LcoreContext* ctx : pipeline_.lcores)
            if (ctx->classifier) tables.push_back(&ctx->classifier->flows());
        const auto version = current();
        return ApiResult::success(control::flows_top_json(
            *version->policy, std::span<const classifier::FlowTable* const>(tables), count));
    } catch (const std::exception& e) {
        return ApiResult::failure(std::string("flows: ") + e.what());
    }
}

void DaemonControl::sample_rates() {
    pthread_setname_np(pthread_self(), "tl-rates");  // as `top -H` and /proc show it
    CounterSnapshot last = counters();
    auto last_at = Clock::now();
    std::unique_lock lock(rate_mutex_);
    while (!rate_wake_.wait_for(lock, options_.rate_interval, [this] { return rate_stop_; })) {
        lock.unlock();
        const CounterSnapshot now = counters();
        const auto now_at = Clock::now();
        const double seconds = std::chrono::duration<double>(now_at - last_at).count();
        std::vector<PortRates> rates(now.ports.size());
        for (size_t i = 0; i < now.ports.size() && i < last.ports.size() && seconds > 0; ++i) {
            rates[i].rx_bits_per_sec = static_cast<uint64_t>(
                static_cast<double>(now.ports[i].rx_bytes - last.ports[i].rx_bytes) * 8 / seconds);
            rates[i].tx_bits_per_sec = static_cast<uint64_t>(
                static_cast<double>(now.ports[i].tx_bytes - last.ports[i].tx_bytes) * 8 / seconds);
        }
        last = now;
        last_at = now_at;
        lock.lock();
        rates_ = std::move(rates);
    }
}

}  // namespace twinlane::dataplane
