// Whether the flow tables a run builds fit the machine: each is allocated and touched at
// start (classifier::FlowTable), so a capacity or slots_per_flow beyond the memory available
// would end in an out-of-memory kill rather than an error. Control path.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>

#include "classifier/config.h"
#include "conf/compile.h"
#include "conf/policy.h"

namespace twinlane::dataplane {

// MemAvailable from /proc/meminfo, in bytes; 0 when unknown.
uint64_t available_memory_bytes();

// An error naming the policy's flow-table settings when `tables` flow tables (one per RX lcore,
// or one for a replay) need more than the memory available; nullopt when they fit or the
// available memory is unknown.
std::optional<std::string> flow_tables_exceed_memory(const conf::Policy& policy,
                                                     const classifier::ClassifierConfig& config,
                                                     size_t tables);

// The same for the scheduling trees of `trees` (their packet pools dominate: the sum of their
// leaves' limit.packets unless the tree sets a pool), naming the largest tree's port.
std::optional<std::string> scheduler_trees_exceed_memory(
    const conf::Policy& policy, std::span<const conf::CompiledEgress> trees);

}  // namespace twinlane::dataplane
