#include "dataplane/daemon_control.h"

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

// A new tree's pool: its leaves' limits, but never smaller than the running tree's, so that
// migrate_from always finds room for whatever is queued.
uint32_t pool_for(const sched::TreeSpec& tree, uint32_t running_pool) {
    uint64_t sum = 0;
    for (const sched::NodeSpec& node : tree.nodes)
        if (node.kind == sched::NodeKind::fifo || node.kind == sched::NodeKind::fq)
            sum += node.limit_packets;
    return static_cast<uint32_t>(
        std::min<uint64_t>(std::max<uint64_t>(sum, running_pool), uint64_t{1} << 28));
}

const char* node_kind(sched::NodeKind kind) {
    return sched::to_string(kind);
}

}  // namespace

DaemonControl::DaemonControl(std::vector<uint16_t> dpdk_port_ids, DaemonPipeline pipeline,
                             DaemonControlOptions options)
    : PolicyStore(std::move(dpdk_port_ids)),
      pipeline_(std::move(pipeline)),
      options_(options),
      rates_(pipeline_.dpdk_ports.size()) {}

DaemonControl::CreateResult DaemonControl::create(std::shared_ptr<const control::Policy> policy,
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

    const control::Policy& policy = *candidate.policy;
    std::vector<std::string> restart = restart_only_changes(
        *running.policy, policy, running.compiled->classifier, candidate.compiled->classifier);
    if (!restart.empty()) {
        return ApiResult::failure(
            "the new policy changes what only a restart can change (ports, forwarding, lcores, "
            "classes, classifier heuristics and flow table); the running policy is unchanged",
            std::move(restart));
    }

    // Plan every egress tree and build what is new before touching any lcore.
    struct Step {
        size_t egress = 0;
        EgressChange change = EgressChange::none;
        std::unique_ptr<SchedulerUpdate> request = std::make_unique<SchedulerUpdate>();
        sched::Scheduler* new_tree = nullptr;
        control::CompiledEgress compiled;  // what the egress runs afterwards
    };
    std::vector<std::string> class_names;
    for (const control::ClassPolicy& cls : policy.classes)
        class_names.push_back(cls.name);
    std::vector<Step> steps;
    std::vector<std::string> refusals;
    for (size_t e = 0; e < live_.size(); ++e) {
        const LiveEgress& live = live_[e];  // written only under the change mutex (here)
        const std::string& port = policy.ports[candidate.compiled->egress[e].port].name;
        const EgressPlan plan =
            plan_egress_change(live.compiled, candidate.compiled->egress[e], class_names);
        if (!plan.refusal.empty()) {
            refusals.push_back("port '" + port + "': " + plan.refusal);
            continue;
        }
        if (plan.change == EgressChange::none) continue;
        Step step;
        step.egress = e;
        step.change = plan.change;
        step.compiled = candidate.compiled->egress[e];
        if (plan.change == EgressChange::apply) {
            step.compiled.tree.pool_packets = live.compiled.tree.pool_packets;
            step.request->params = step.compiled.tree;
        } else {
            step.compiled.tree.pool_packets =
                pool_for(step.compiled.tree, live.compiled.tree.pool_packets);
            sched::Scheduler::BuildResult built = sched::Scheduler::build(step.compiled.tree);
            if (!built.scheduler) {
                refusals.push_back("port '" + port + "': scheduler: " + built.error->to_string());
                continue;
            }
            step.new_tree = built.scheduler.get();
            step.request->replacement = std::move(built.scheduler);
            step.request->mapping = step.compiled;
        }
        steps.push_back(std::move(step));
    }
    if (!refusals.empty()) {
        return ApiResult::failure(
            "the change cannot be applied while running; the running policy is unchanged",
            std::move(refusals));
    }
    std::unique_ptr<classifier::CompiledRuleTable> table;
    if (!same_rules(*running.policy, policy)) {
        try {
            table = std::make_unique<classifier::CompiledRuleTable>(
                classifier::CompiledRuleTable::build(candidate.compiled->classifier.rules,
                                                     ++rules_generation_));
        } catch (const std::exception& e) {
            return ApiResult::failure(std::string("cannot build the rule table: ") + e.what());
        }
    }

    // Schedulers first, each by its owning lcore between bursts.
    size_t applied = 0;
    std::string failure;
    for (Step& step : steps) {
        failure = hand_over(step.egress, step.request);
        if (!failure.empty()) break;
        ++applied;
    }
    if (!failure.empty()) {
        // Put back, in reverse, what already changed: the lcores keep running the old policy.
        for (size_t i = applied; i-- > 0;) {
            Step& step = steps[i];
            LiveEgress& live = live_[step.egress];
            auto back = std::make_unique<SchedulerUpdate>();
            if (step.change == EgressChange::apply) {
                back->params = live.compiled.tree;
            } else {
                back->replacement = std::move(step.request->replacement);  // the old tree
                back->mapping = std::move(step.request->mapping);          // and its mapping
            }
            const std::string problem = hand_over(step.egress, back);
            if (!problem.empty()) {
                if (wedged_.empty()) wedged_ = "undoing a failed change: " + problem;
                spdlog::critical("policy epoch {}: {}", candidate.epoch, wedged_);
                break;
            }
            if (step.change == EgressChange::rebuild && back && back->replacement) {
                std::lock_guard lock(live_mutex_);
                retire(live, step.compiled.tree, *back->replacement);  // the short-lived tree
            }
        }
        spdlog::warn("policy epoch {} refused: {}", candidate.epoch, failure);
        return ApiResult::failure("the change could not be applied: " + failure +
                                  "; the running policy is unchanged");
    }
    if (table) {
        failure = hand_over_rules(*table);
        if (!failure.empty()) {
            // Some RX lcores may run the new rules: keep the table alive, accept no more changes.
            abandoned_tables_.push_back(std::move(table));
            spdlog::critical("policy epoch {}: {}", candidate.epoch, failure);
            return ApiResult::failure("the change was only partly applied: " + failure +
                                      "; restart the daemon");
        }
    }

    // Every lcore runs the candidate: swap the bookkeeping, then free what was replaced.
    size_t rebuilt = 0;
    uint64_t migrated = 0;  // packets queued at the swap, moved into the new trees in order
    {
        std::lock_guard lock(live_mutex_);
        for (Step& step : steps) {
            LiveEgress& live = live_[step.egress];
            if (step.change == EgressChange::rebuild) {
                sched::Scheduler& old_tree = *step.request->replacement;     // handed back
                migrated += old_tree.node_counters(0).migrated_out_packets;  // node 0: the root
                retire(live, live.compiled.tree, old_tree);
                live.scheduler = step.new_tree;
                live.node_ids = node_ids_of(step.compiled.tree);
                ++rebuilt;
            }
            live.compiled = std::move(step.compiled);
        }
        live_policy_ = candidate.policy;
        applied_epoch_.store(candidate.epoch, std::memory_order_release);
    }
    steps.clear();  // frees the old trees and mappings the lcores handed back
    const bool rules_swapped = table != nullptr;
    if (table) rules_ = std::move(table);  // the previous table is no longer used by anyone

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
        candidate.epoch, policy.source, rebuilt, migrated, applied - rebuilt,
        rules_swapped ? "swapped" : "unchanged", micros);
    return std::nullopt;
}

// ---- live reads ------------------------------------------------------------------------------

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
    for (const DaemonLcore& role : pipeline_.roles)
        lcores.push_back({{"lcore", role.lcore}, {"role", role.role}, {"ports", role.ports}});
    out["lcores"] = std::move(lcores);
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
    return ApiResult::success(std::move(out));
}

ApiResult DaemonControl::stats(control::StatsScope scope) {
    try {
        const CounterSnapshot snap = counters();
        std::lock_guard lock(live_mutex_);
        const control::Policy& policy = *live_policy_;
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
                         {"rx_bits_per_sec", rates[i].rx_bits_per_sec},
                         {"tx_bits_per_sec", rates[i].tx_bits_per_sec}});
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
                return ApiResult::success(control::class_stats_json(policy, read, classified));
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
