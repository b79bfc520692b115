// The first forwarding slice: every packet received on one port is sent on another, in
// arrival order, through a bounded FIFO (no classification, no scheduling). It is the baseline
// the scheduled pipeline is measured against; it reads no header, so MAC control frames pass
// too (the pipeline consumes them). Runs on the calling lcore until a stop signal or,
// with `idle_exit_ns`, until the input has been idle that long (end of a pcap file).
#pragma once

#include <cstdint>

namespace twinlane::dataplane {

struct FifoForwarderOptions {
    uint16_t rx_port = 0;
    uint16_t tx_port = 1;
    uint32_t fifo_packets = 4096;  // bounded backlog between RX and TX; overflow is tail-dropped
    uint64_t idle_exit_ns = 0;     // 0: run until signalled
    uint64_t drain_timeout_ns = 100'000'000;  // at stop, keep transmitting the backlog this long
};

struct FifoForwarderCounters {
    uint64_t rx_packets = 0;
    uint64_t rx_bytes = 0;
    uint64_t tx_packets = 0;
    uint64_t tx_bytes = 0;
    uint64_t dropped_fifo_full = 0;  // backlog at its limit when the packet arrived
    uint64_t dropped_shutdown = 0;   // still queued when the drain timeout expired
    uint64_t queued = 0;             // left in the FIFO (0 after a completed run)

    uint64_t dropped() const { return dropped_fifo_full + dropped_shutdown; }
};

FifoForwarderCounters run_fifo_forwarder(const FifoForwarderOptions& options);

}  // namespace twinlane::dataplane
