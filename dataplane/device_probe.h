// The DPDK ports of a policy's devices (conf/device_name.h parses them, for check and run
// alike): PCI devices are allowed on the EAL command line; virtual devices are hot-plugged
// after EAL init (so that a failure names the policy port), and every port is then found by its
// ethdev name. Control path only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "conf/policy.h"

namespace twinlane::dataplane {

// The user's EAL arguments plus `-a DEVICE` for each policy PCI device the user did not name.
std::vector<std::string> eal_arguments(const conf::Policy& policy,
                                       const std::vector<std::string>& user);

// The DPDK port id of a policy port (probing a vdev first if needed); false with `error`
// naming the port otherwise.
bool resolve_port(const conf::PortPolicy& port, uint16_t& id, std::string& error);

}  // namespace twinlane::dataplane
