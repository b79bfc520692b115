#include "dataplane/lcore_plan.h"

#include <algorithm>

namespace twinlane::dataplane {
namespace {

bool contains(const std::vector<uint32_t>& ids, uint32_t id) {
    return std::find(ids.begin(), ids.end(), id) != ids.end();
}

LcoreRole& role_for(LcorePlan& plan, uint32_t lcore) {
    for (LcoreRole& role : plan.lcores)
        if (role.lcore == lcore) return role;
    plan.lcores.push_back(LcoreRole{.lcore = lcore, .rx = {}, .egress = {}});
    return plan.lcores.back();
}

std::vector<RxQueueAssignment> all_queues(const std::vector<std::pair<size_t, uint16_t>>& ingress) {
    std::vector<RxQueueAssignment> queues;
    for (const auto& [port, count] : ingress)
        for (uint16_t q = 0; q < count; ++q)
            queues.push_back({port, q});
    return queues;
}

LcorePlan plan_explicit(const conf::LcorePolicy& policy,
                        const std::vector<std::pair<size_t, uint16_t>>& ingress,
                        const std::vector<size_t>& egress, const std::vector<uint32_t>& available) {
    LcorePlan plan;
    auto check = [&](uint32_t lcore) {
        if (contains(available, lcore)) return true;
        plan.error = "lcore " + std::to_string(lcore) +
                     " named in the policy is not enabled in the EAL (pass it with -l)";
        return false;
    };
    for (const conf::RxLcore& rx : policy.rx) {
        if (!check(rx.lcore)) return plan;
        for (const conf::RxQueueRef& ref : rx.queues)
            role_for(plan, rx.lcore).rx.push_back({ref.port, ref.queue});
    }
    for (const conf::SchedulerLcore& s : policy.scheduler) {
        if (!check(s.lcore)) return plan;
        for (size_t port : s.egress_ports)
            role_for(plan, s.lcore).egress.push_back(port);
    }
    for (const RxQueueAssignment& q : all_queues(ingress)) {
        size_t owners = 0;
        for (const LcoreRole& role : plan.lcores)
            for (const RxQueueAssignment& r : role.rx)
                owners += r.port == q.port && r.queue == q.queue;
        if (owners != 1) {
            plan.error = "RX queue " + std::to_string(q.queue) + " of port #" +
                         std::to_string(q.port) + " is polled by " + std::to_string(owners) +
                         " lcores (must be exactly one)";
            return plan;
        }
    }
    for (size_t port : egress) {
        size_t owners = 0;
        for (const LcoreRole& role : plan.lcores)
            owners += static_cast<size_t>(std::count(role.egress.begin(), role.egress.end(), port));
        if (owners != 1) {
            plan.error = "egress port #" + std::to_string(port) + " is scheduled by " +
                         std::to_string(owners) + " lcores (must be exactly one)";
            return plan;
        }
    }
    return plan;
}

}  // namespace

LcorePlan plan_lcores(const conf::LcorePolicy& policy,
                      const std::vector<std::pair<size_t, uint16_t>>& ingress,
                      const std::vector<size_t>& egress, const std::vector<uint32_t>& available) {
    using Mode = conf::LcorePolicy::Mode;
    LcorePlan plan;
    if (available.empty()) {
        plan.error = "no lcores enabled";
        return plan;
    }
    if (policy.mode == Mode::explicit_roles)
        return plan_explicit(policy, ingress, egress, available);

    const auto queues = all_queues(ingress);
    if (policy.mode == Mode::run_to_completion || available.size() == 1 || egress.empty()) {
        const uint32_t lcore =
            policy.mode == Mode::run_to_completion ? policy.single_lcore : available.front();
        if (!contains(available, lcore)) {
            plan.error = "lcore " + std::to_string(lcore) +
                         " named in the policy is not enabled in the EAL (pass it with -l)";
            return plan;
        }
        LcoreRole& role = role_for(plan, lcore);
        role.rx = queues;
        role.egress = egress;
        return plan;
    }

    // Automatic: schedulers at the end of the list, RX lcores at the front (the main lcore,
    // first, then polls RX: its housekeeping-free loop is the same as a worker's).
    const size_t sched_count = std::clamp<size_t>(available.size() / 2, 1, egress.size());
    const size_t rx_count = available.size() - sched_count;
    for (size_t i = 0; i < rx_count; ++i)
        role_for(plan, available[i]);
    for (size_t i = 0; i < sched_count; ++i)
        role_for(plan, available[rx_count + i]);
    for (size_t i = 0; i < queues.size(); ++i)
        plan.lcores[i % rx_count].rx.push_back(queues[i]);
    for (size_t i = 0; i < egress.size(); ++i)
        plan.lcores[rx_count + i % sched_count].egress.push_back(egress[i]);
    std::erase_if(plan.lcores,
                  [](const LcoreRole& role) { return role.rx.empty() && role.egress.empty(); });
    return plan;
}

}  // namespace twinlane::dataplane
