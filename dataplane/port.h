// Ethernet port bring-up: find a DPDK port by device name, configure its queues, start it,
// and stop/close it at shutdown (which also flushes file-backed PMDs such as net_pcap).
// Control-path only; not thread-safe.
#pragma once

#include <cstdint>
#include <string>

struct rte_mempool;

namespace twinlane::dataplane {

struct PortSettings {
    uint16_t rx_queues = 1;
    uint16_t tx_queues = 1;
    uint16_t rx_descriptors = 1024;
    uint16_t tx_descriptors = 1024;
    uint32_t mtu = 1500;         // L3 MTU; jumbo frames enable RX scatter where the PMD offers it
    bool rx_timestamps = false;  // the PMD stamps each frame (net_pcap: its capture time)
};

// Resolves a DPDK device name (e.g. "net_pcap0" or "0000:3b:00.0") to a port id.
// Returns false and fills `error` when no such port was probed.
bool find_port(const std::string& device_name, uint16_t& port_id, std::string& error);

// `device_name`'s port, or with an empty name the `n`th probed port (from 0). Returns false
// and fills `error` when there is no such port.
bool find_port_or_nth(const std::string& device_name, uint16_t n, uint16_t& port_id,
                      std::string& error);

// Configures and starts `port_id` with RX queues fed from `pool`. On failure returns false
// and fills `error` with the port's name and the reason.
bool start_port(uint16_t port_id, const PortSettings& settings, rte_mempool* pool,
                std::string& error);

// The unit of the RX timestamps a started port gives its frames (DPDK's timestamp dynfield),
// in ns: 1 where the PMD offers the timestamp offload, else 1000 (DPDK 22.11's net_pcap stamps
// every frame with its capture time in microseconds without offering it).
uint64_t rx_timestamp_unit_ns(uint16_t port_id);

// Stops and closes the port (flushing buffered output). Safe to call on a stopped port.
void stop_port(uint16_t port_id);

std::string port_name(uint16_t port_id);

}  // namespace twinlane::dataplane
