// How many packets one rx_burst call should ask for so that the call takes about a time budget.
//
// Why: an lcore's pass is one RX burst per queue, then the scheduler and the TX burst; a packet
// received in a pass goes out in the same pass unless the TX budget is spent, and then waits
// for a later pass. With a NIC a burst of 32 costs well under a microsecond, but drivers that
// copy each frame through the kernel (net_pcap reads a frame per syscall, af_packet and AF_XDP
// in copy mode copy every frame) spend microseconds per packet: 32 jumbo frames from net_pcap
// take ~90 us on the development VM, and that became the pass and the wait (inference p99
// RX->TX 220-340 us at a saturated 10G port). Like Linux's netdev_budget_usecs for a NAPI
// round, the burst is sized so that one call takes about `budget` cycles: NIC-class drivers keep
// their full bursts, slow ones are cut to what fits (at least one packet).
//
// Only RX is sized. What one TX burst carries is set by the pacer (the link's rate times the
// pass's time), so a short pass already means a short TX burst; cutting TX below that would
// hold the link below its rate (measured: TX bursts cut to 3 jumbo frames, whose mbufs are cold
// when freed, left the 10G port at 6 Gbit/s and inference p99 at 0.4-1.6 ms).
//
// The cost per packet is an exponentially weighted mean of cycles / packets over the calls that
// returned packets (weight 1/16: a few dozen calls follow a change of frame sizes). A partial
// burst counts its call's fixed cost against few packets, which can only make the estimate
// larger: for a NIC that is still tens of cycles per packet, far below what would cut a burst.
//
// Pure logic, no DPDK. One instance per RX queue, owned by its lcore. Not thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>

namespace twinlane::dataplane {

class BurstSizer {
  public:
    // Disabled: always max_burst.
    explicit BurstSizer(uint16_t max_burst = 32) : max_(max_burst), size_(max_burst) {}
    // budget_cycles 0: disabled.
    BurstSizer(uint64_t budget_cycles, uint16_t max_burst)
        : budget_(static_cast<double>(budget_cycles)), max_(max_burst), size_(max_burst) {}

    uint16_t size() const { return size_; }
    bool enabled() const { return budget_ > 0; }

    // A call that returned `packets` took `cycles` (calls that returned nothing are ignored).
    void record(uint64_t cycles, uint16_t packets) {
        if (budget_ <= 0 || packets == 0) return;
        const double per_packet = static_cast<double>(cycles) / packets;
        per_packet_ =
            per_packet_ == 0 ? per_packet : per_packet_ + kWeight * (per_packet - per_packet_);
        const double fits = per_packet_ > 0 ? budget_ / per_packet_ : max_;
        size_ = static_cast<uint16_t>(std::clamp(fits, 1.0, static_cast<double>(max_)));
    }

    double per_packet_cycles() const { return per_packet_; }

  private:
    static constexpr double kWeight = 1.0 / 16;

    double budget_ = 0;
    uint16_t max_;
    uint16_t size_;
    double per_packet_ = 0;
};

}  // namespace twinlane::dataplane
