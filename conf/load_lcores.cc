// The lcores section: which lcore polls which RX queues and which schedules which egress port
// (or `auto`, or everything on one lcore). Every RX queue of an ingress port must be polled and
// every egress port scheduled, each exactly once.
#include <algorithm>
#include <map>
#include <set>

#include "conf/policy_loader.h"

namespace twinlane::conf {

void PolicyLoader::read_lcores(const Field& field) {
    if (field.node.IsScalar()) {
        if (read_choice(field, {"auto"}, errors_)) {
            policy_.lcores.mode = LcorePolicy::Mode::automatic;
        }
        return;
    }
    const MapFields map(field, {"single", "rx", "scheduler"}, errors_);
    if (!map.is_map()) return;
    auto single = map.get("single");
    auto rx = map.get("rx");
    auto scheduler = map.get("scheduler");
    if (single) {
        if (rx || scheduler) {
            errors_.add(single->mark, single->path,
                        "'single' runs everything on one lcore; drop 'rx' and 'scheduler'");
            return;
        }
        policy_.lcores.mode = LcorePolicy::Mode::run_to_completion;
        if (auto lcore = read_unsigned(*single, 0, kMaxLcore, errors_)) {
            policy_.lcores.single_lcore = static_cast<uint32_t>(*lcore);
        }
        return;
    }
    if (!rx || !scheduler) {
        errors_.add(field.mark, field.path,
                    "give 'auto', {single: LCORE}, or both 'rx' and 'scheduler' lists");
        return;
    }
    policy_.lcores.mode = LcorePolicy::Mode::explicit_roles;
    std::set<uint32_t> used_lcores;
    read_rx_lcores(*rx, used_lcores);
    read_scheduler_lcores(*scheduler, used_lcores);
}

std::optional<uint32_t> PolicyLoader::claim_lcore(const Field& field,
                                                  std::set<uint32_t>& used_lcores) {
    auto lcore = read_unsigned(field, 0, kMaxLcore, errors_);
    if (!lcore) return std::nullopt;
    if (!used_lcores.insert(static_cast<uint32_t>(*lcore)).second) {
        errors_.add(field.mark, field.path,
                    "lcore " + std::to_string(*lcore) +
                        " already has a role (use 'single' to run everything on one lcore)");
    }
    return static_cast<uint32_t>(*lcore);
}

void PolicyLoader::read_rx_lcores(const Field& field, std::set<uint32_t>& used_lcores) {
    std::map<std::pair<size_t, uint16_t>, uint32_t> queue_owner;
    if (auto entries = read_sequence(field, errors_)) {
        for (const Field& entry : *entries) {
            const MapFields rx_map(entry, {"lcore", "poll"}, errors_);
            RxLcore rx_lcore;
            if (auto lcore = rx_map.require("lcore")) {
                rx_lcore.lcore = claim_lcore(*lcore, used_lcores).value_or(0);
            }
            auto poll = rx_map.require("poll");
            auto polls = poll ? read_sequence(*poll, errors_) : std::nullopt;
            for (const Field& item : polls.value_or(std::vector<Field>{})) {
                const MapFields poll_map(item, {"port", "queues"}, errors_);
                auto port_field = poll_map.require("port");
                auto queues_field = poll_map.require("queues");
                if (!port_field || !queues_field) continue;
                const std::optional<size_t> port = lookup_port(*port_field);
                const auto queues = read_sequence(*queues_field, errors_);
                if (!port || !queues) continue;
                const uint16_t queue_count = policy_.ports[*port].rx_queues;
                for (const Field& queue_field : *queues) {
                    auto queue = read_unsigned(queue_field, 0, 65535, errors_);
                    if (!queue) continue;
                    if (*queue >= queue_count) {
                        errors_.add(queue_field.mark, queue_field.path,
                                    "port '" + port_names_[*port] + "' has " +
                                        std::to_string(queue_count) + " rx queue(s), no queue " +
                                        std::to_string(*queue));
                        continue;
                    }
                    const auto key = std::make_pair(*port, static_cast<uint16_t>(*queue));
                    if (queue_owner.count(key)) {
                        errors_.add(queue_field.mark, queue_field.path,
                                    "rx queue " + port_names_[*port] + ":" +
                                        std::to_string(*queue) + " is already polled by lcore " +
                                        std::to_string(queue_owner[key]));
                        continue;
                    }
                    queue_owner[key] = rx_lcore.lcore;
                    rx_lcore.queues.push_back(RxQueueRef{*port, key.second});
                }
            }
            policy_.lcores.rx.push_back(std::move(rx_lcore));
        }
    }
    // Every queue of every ingress port must be polled, or RSS sends traffic into a black hole.
    for (const ForwardingPolicy& forwarding : policy_.forwarding) {
        const PortPolicy& port = policy_.ports[forwarding.from_port];
        for (uint16_t queue = 0; queue < port.rx_queues; ++queue) {
            if (!queue_owner.count({forwarding.from_port, queue})) {
                errors_.add(field.mark, field.path,
                            "rx queue " + port.name + ":" + std::to_string(queue) +
                                " is polled by no lcore");
            }
        }
    }
}

void PolicyLoader::read_scheduler_lcores(const Field& field, std::set<uint32_t>& used_lcores) {
    std::map<size_t, uint32_t> egress_owner;
    if (auto entries = read_sequence(field, errors_)) {
        for (const Field& entry : *entries) {
            const MapFields sched_map(entry, {"lcore", "ports"}, errors_);
            SchedulerLcore sched_lcore;
            if (auto lcore = sched_map.require("lcore")) {
                sched_lcore.lcore = claim_lcore(*lcore, used_lcores).value_or(0);
            }
            auto ports_field = sched_map.require("ports");
            auto ports = ports_field ? read_sequence(*ports_field, errors_) : std::nullopt;
            for (const Field& port_field : ports.value_or(std::vector<Field>{})) {
                auto port = lookup_port(port_field);
                if (!port) continue;
                const bool is_egress =
                    std::any_of(policy_.forwarding.begin(), policy_.forwarding.end(),
                                [&](const ForwardingPolicy& f) { return f.to_port == *port; });
                if (!is_egress) {
                    errors_.add(port_field.mark, port_field.path,
                                "port '" + port_names_[*port] +
                                    "' is no forwarding destination, nothing to schedule");
                    continue;
                }
                if (egress_owner.count(*port)) {
                    errors_.add(port_field.mark, port_field.path,
                                "port '" + port_names_[*port] + "' is already scheduled by lcore " +
                                    std::to_string(egress_owner[*port]));
                    continue;
                }
                egress_owner[*port] = sched_lcore.lcore;
                sched_lcore.egress_ports.push_back(*port);
            }
            policy_.lcores.scheduler.push_back(std::move(sched_lcore));
        }
    }
    for (const ForwardingPolicy& forwarding : policy_.forwarding) {
        if (!egress_owner.count(forwarding.to_port)) {
            errors_.add(
                field.mark, field.path,
                "egress port '" + port_names_[forwarding.to_port] + "' has no scheduler lcore");
            egress_owner[forwarding.to_port] = 0;  // report once per port
        }
    }
}

}  // namespace twinlane::conf
