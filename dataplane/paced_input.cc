#include "dataplane/paced_input.h"

#include <rte_cycles.h>
#include <rte_ethdev.h>

#include <algorithm>

namespace twinlane::dataplane {

uint16_t PacedInput::receive(uint16_t port, uint16_t queue, BurstSizer& sizer, rte_mbuf** out,
                             uint16_t max, uint64_t& arrival_tsc) {
    if (count_ < kAhead / 2) {
        rte_mbuf* read[kAhead];
        const uint16_t room =
            static_cast<uint16_t>(std::min<uint32_t>(kAhead - count_, sizer.size()));
        const uint64_t call_tsc = sizer.enabled() ? rte_rdtsc() : 0;
        const uint16_t n = rte_eth_rx_burst(port, queue, read, room);
        const uint64_t read_tsc = rte_rdtsc();
        if (n != 0) sizer.record(read_tsc - call_tsc, n);
        for (uint16_t i = 0; i < n; ++i) {
            rte_mbuf* m = read[i];
            if (!started_) {
                started_ = true;
                origin_tsc_ = read_tsc;
            }
            uint64_t arrival = read_tsc;  // a frame without a capture time arrives when read
            if ((m->ol_flags & timestamp_flag_) != 0) [[likely]] {
                schedule_.next(*RTE_MBUF_DYNFIELD(m, timestamp_offset_, rte_mbuf_timestamp_t*) *
                                   timestamp_unit_ns_,
                               m->pkt_len);
                arrival = origin_tsc_ + schedule_.last_end();
            } else {
                ++unstamped_;
            }
            if (arrival < read_tsc) {
                ++read_late_;
                max_late_tsc_ = std::max(max_late_tsc_, read_tsc - arrival);
            }
            const uint32_t slot = (head_ + count_) % kAhead;
            staged_[slot] = m;
            arrival_[slot] = arrival;
            ++count_;
        }
        frames_ += n;
    }
    if (count_ == 0) return 0;
    const uint64_t now = rte_rdtsc();
    uint16_t released = 0;
    arrival_tsc = arrival_[head_];
    while (count_ != 0 && released < max && arrival_[head_] <= now) {
        out[released++] = staged_[head_];
        head_ = (head_ + 1) % kAhead;
        --count_;
    }
    return released;
}

void PacedInput::free_staged() {
    while (count_ != 0) {
        rte_pktmbuf_free(staged_[head_]);
        head_ = (head_ + 1) % kAhead;
        --count_;
    }
}

}  // namespace twinlane::dataplane
