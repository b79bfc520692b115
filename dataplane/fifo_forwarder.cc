#include "dataplane/fifo_forwarder.h"

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <bit>
#include <vector>

#include "dataplane/stop_signal.h"

namespace twinlane::dataplane {
namespace {
constexpr uint16_t kBurst = 32;

// Single-producer single-consumer on one lcore: a power-of-two ring of mbuf pointers.
class MbufFifo {
  public:
    explicit MbufFifo(uint32_t capacity)
        : slots_(std::bit_ceil(std::max<uint32_t>(capacity, kBurst))),
          mask_(slots_.size() - 1),
          limit_(std::max<uint32_t>(capacity, 1)) {}

    bool push(rte_mbuf* m) {
        if (tail_ - head_ >= limit_) return false;
        slots_[tail_++ & mask_] = m;
        return true;
    }
    // Contiguous run of queued mbufs starting at the head (may be shorter than size()).
    uint16_t peek(rte_mbuf** out, uint16_t max) const {
        const uint32_t n = std::min<uint32_t>(max, static_cast<uint32_t>(tail_ - head_));
        for (uint32_t i = 0; i < n; ++i)
            out[i] = slots_[(head_ + i) & mask_];
        return static_cast<uint16_t>(n);
    }
    void pop(uint32_t n) { head_ += n; }
    uint64_t size() const { return tail_ - head_; }

  private:
    std::vector<rte_mbuf*> slots_;
    uint64_t mask_;
    uint64_t limit_;
    uint64_t head_ = 0;
    uint64_t tail_ = 0;
};

uint64_t ns_to_tsc(uint64_t ns) {
    return static_cast<uint64_t>(static_cast<double>(ns) * static_cast<double>(rte_get_tsc_hz()) /
                                 1e9);
}
}  // namespace

FifoForwarderCounters run_fifo_forwarder(const FifoForwarderOptions& options) {
    FifoForwarderCounters c;
    MbufFifo fifo(options.fifo_packets);
    rte_mbuf* burst[kBurst];
    const uint64_t idle_tsc = ns_to_tsc(options.idle_exit_ns);
    uint64_t last_activity = rte_rdtsc();

    auto transmit = [&]() {
        rte_mbuf* out[kBurst];
        const uint16_t n = fifo.peek(out, kBurst);
        if (n == 0) return uint16_t{0};
        const uint16_t sent = rte_eth_tx_burst(options.tx_port, 0, out, n);
        for (uint16_t i = 0; i < sent; ++i)
            c.tx_bytes += rte_pktmbuf_pkt_len(out[i]);
        c.tx_packets += sent;
        fifo.pop(sent);
        return sent;
    };

    while (!stop_requested()) {
        const uint16_t n = rte_eth_rx_burst(options.rx_port, 0, burst, kBurst);
        for (uint16_t i = 0; i < n; ++i) {
            c.rx_bytes += rte_pktmbuf_pkt_len(burst[i]);
            if (!fifo.push(burst[i])) {
                rte_pktmbuf_free(burst[i]);
                ++c.dropped_fifo_full;
            }
        }
        c.rx_packets += n;
        const uint16_t sent = transmit();
        if (n != 0 || sent != 0) {
            last_activity = rte_rdtsc();
        } else if (idle_tsc != 0 && fifo.size() == 0 && rte_rdtsc() - last_activity > idle_tsc) {
            break;  // input exhausted (e.g. end of a pcap file) and nothing left to send
        }
    }

    const uint64_t drain_deadline = rte_rdtsc() + ns_to_tsc(options.drain_timeout_ns);
    while (fifo.size() != 0 && rte_rdtsc() < drain_deadline)
        transmit();
    while (fifo.size() != 0) {
        rte_mbuf* out[kBurst];
        const uint16_t n = fifo.peek(out, kBurst);
        rte_pktmbuf_free_bulk(out, n);
        fifo.pop(n);
        c.dropped_shutdown += n;
    }
    c.queued = fifo.size();
    return c;
}

}  // namespace twinlane::dataplane
