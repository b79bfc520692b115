#include "dataplane/memory_check.h"

#include <fstream>

#include "classifier/flow_table.h"
#include "sched/scheduler.h"

namespace twinlane::dataplane {
namespace {

std::string mib(uint64_t bytes) {
    return std::to_string(bytes >> 20) + " MiB";
}

}  // namespace

uint64_t available_memory_bytes() {
    std::ifstream meminfo("/proc/meminfo");
    std::string key;
    std::string unit;
    uint64_t kib = 0;
    while (meminfo >> key >> kib >> unit)
        if (key == "MemAvailable:") return kib * 1024;
    return 0;
}

std::optional<std::string> flow_tables_exceed_memory(const conf::Policy& policy,
                                                     const classifier::ClassifierConfig& config,
                                                     size_t tables) {
    const uint64_t each =
        classifier::FlowTable::memory_bytes(config.flow_table_capacity, config.flow_slots_per_flow);
    const uint64_t needed = each * tables;
    const uint64_t available = available_memory_bytes();
    if (available == 0 || needed <= available) return std::nullopt;
    return "classifier.flow_table: " + std::to_string(tables) + " flow table(s) x " + mib(each) +
           " (capacity " + std::to_string(policy.classifier.flow_table.capacity) +
           " x slots_per_flow " + std::to_string(policy.classifier.flow_table.slots_per_flow) +
           " x 128 B) = " + mib(needed) + ", more than the " + mib(available) +
           " this machine has available; lower capacity or slots_per_flow";
}

std::optional<std::string> scheduler_trees_exceed_memory(
    const conf::Policy& policy, std::span<const conf::CompiledEgress> trees) {
    uint64_t needed = 0;
    uint64_t largest = 0;
    const conf::CompiledEgress* largest_tree = nullptr;
    for (const conf::CompiledEgress& egress : trees) {
        const uint64_t bytes = sched::Scheduler::memory_bytes(egress.tree);
        needed += bytes;
        if (bytes >= largest) {
            largest = bytes;
            largest_tree = &egress;
        }
    }
    const uint64_t available = available_memory_bytes();
    if (available == 0 || needed <= available || largest_tree == nullptr) return std::nullopt;
    return "scheduler: " + std::to_string(trees.size()) + " tree(s) need " + mib(needed) +
           ", more than the " + mib(available) + " this machine has available; port '" +
           policy.ports[largest_tree->port].name + "' alone needs " + mib(largest) +
           " (its packet pool holds the sum of its leaves' limit.packets, ~48 B each): lower "
           "the leaves' limit.packets";
}

}  // namespace twinlane::dataplane
