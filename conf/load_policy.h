// Loading a policy: a YAML file (conf/README.md) in, a validated conf::Policy (policy.h) or
// every problem found out, each located as file:line:column plus key path and sorted in file
// order. Pure functions of their input (and of the file they read); thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "conf/policy.h"

namespace twinlane::conf {

// A port rate given outside the file (`twinlane replay --link-rate`): the named port is read as
// if its `rate` said so, so everything resolved against the port rate follows it (percentage
// shapers, time-based bursts and TX budgets), and an absolute shaper rate above what its parent
// now has is capped to it instead of refused (the file is valid; only this run's link is
// slower). Empty `port`: no override.
struct PortRateOverride {
    std::string port;
    uint64_t rate_bits_per_sec = 0;
};

// The most a policy file may hold; real policies are a few KiB.
inline constexpr uint64_t kMaxPolicyFileBytes = 16 << 20;
// The most nodes a policy document may expand to, every YAML alias counted each time it is used
// (a rule is about 17 nodes: room for about 58,000 rules). More is refused before it is read, so
// nested aliases cannot make the loader walk billions of nodes; a document just under the bound
// still takes about a second to reject (its errors are listed up to ErrorList::kMaxListed).
inline constexpr size_t kMaxPolicyNodes = 1'000'000;

// Reads and validates a policy file. An unreadable file, one that is not a regular file (a FIFO
// would block the caller, a device never end) or one larger than kMaxPolicyFileBytes is one
// error with line 0. A document expanding beyond kMaxPolicyNodes is one error at the node where
// it does.
PolicyResult load_policy(const std::string& path, const PortRateOverride& override = {});
// Same, from text; `filename` only names the source in errors.
PolicyResult parse_policy(std::string_view text, const std::string& filename,
                          const PortRateOverride& override = {});

}  // namespace twinlane::conf
