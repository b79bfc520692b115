#include "dataplane/paced_input.h"

#include <rte_cycles.h>
#include <rte_ethdev.h>

#include <algorithm>

namespace twinlane::dataplane {

void PacedInput::stage(rte_mbuf* const* read, uint16_t n, uint64_t read_tsc) {
    const auto capacity = static_cast<uint32_t>(staged_.size());
    for (uint16_t i = 0; i < n; ++i) {
        rte_mbuf* m = read[i];
        // Read during the run, the capture's clock starts with its first frame.
        if (!started_ && !preloaded_) {
            started_ = true;
            origin_tsc_ = read_tsc;
        }
        uint64_t due = started_ ? read_tsc - origin_tsc_ : schedule_.last_end();
        if ((m->ol_flags & timestamp_flag_) != 0) [[likely]] {
            const uint32_t length =
                frames_ + i < wire_lengths_.size() ? wire_lengths_[frames_ + i] : m->pkt_len;
            schedule_.next(*RTE_MBUF_DYNFIELD(m, timestamp_offset_, rte_mbuf_timestamp_t*) *
                               timestamp_unit_ns_,
                           length);
            due = schedule_.last_end();
        } else {
            ++unstamped_;
        }
        if (started_ && origin_tsc_ + due < read_tsc) {
            ++read_late_;
            max_late_tsc_ = std::max(max_late_tsc_, read_tsc - origin_tsc_ - due);
        }
        const uint32_t slot = (head_ + count_) % capacity;
        staged_[slot] = m;
        arrival_[slot] = due;
        ++count_;
    }
    frames_ += n;
}

bool PacedInput::preload(uint16_t port, uint16_t queue, std::string& error,
                         std::span<const uint32_t> wire_lengths) {
    wire_lengths_ = wire_lengths;
    rte_eth_stats before{};
    rte_eth_stats_get(port, &before);
    const auto capacity = static_cast<uint32_t>(staged_.size());
    preloaded_ = true;  // the clock starts at the first receive(), not with these reads
    rte_mbuf* read[32];
    for (;;) {
        const uint16_t room = static_cast<uint16_t>(std::min<uint32_t>(capacity - count_, 32));
        const uint16_t n = rte_eth_rx_burst(port, queue, read, std::max<uint16_t>(room, 1));
        if (n == 0) break;
        if (n > room) {  // room 0: the queue had more than the capture's count
            rte_pktmbuf_free_bulk(read, n);
            error = "more frames than the " + std::to_string(capacity) + " counted in its capture";
            return false;
        }
        stage(read, n, 0);
    }
    rte_eth_stats after{};
    rte_eth_stats_get(port, &after);
    if (after.rx_nombuf != before.rx_nombuf) {
        error = "the mbuf pool ran dry after " + std::to_string(frames_) + " frames";
        return false;
    }
    wire_lengths_ = {};
    if (!wire_lengths.empty() && frames_ != wire_lengths.size()) {
        error = "read " + std::to_string(frames_) + " frames of the " +
                std::to_string(wire_lengths.size()) + " in its capture";
        return false;
    }
    waiting_.store(count_, std::memory_order_relaxed);
    return true;
}

std::optional<uint64_t> PacedInput::first_timestamp_ns() const {
    if (!preloaded_ || !schedule_.started()) return std::nullopt;
    return schedule_.first_timestamp_ns();
}

void PacedInput::align(uint64_t epoch_ns, std::atomic<uint64_t>* origin) {
    shared_origin_ = origin;
    const std::optional<uint64_t> first = first_timestamp_ns();
    if (!first || *first <= epoch_ns) return;
    // Every due time moves by the same amount: the schedule's first frame, then each link
    // serialisation after it, start that much later (at most the max gap, as any jump).
    const uint64_t later_ns = schedule_.cut(*first - epoch_ns);
    const auto shift =
        static_cast<uint64_t>(static_cast<double>(later_ns) * static_cast<double>(tsc_hz_) / 1e9);
    const auto capacity = static_cast<uint32_t>(staged_.size());
    for (uint32_t i = 0; i < count_; ++i)
        arrival_[(head_ + i) % capacity] += shift;
}

uint16_t PacedInput::receive(uint16_t port, uint16_t queue, BurstSizer& sizer, rte_mbuf** out,
                             uint16_t max, uint64_t* arrival_tsc) {
    const auto capacity = static_cast<uint32_t>(staged_.size());
    if (!preloaded_ && count_ < capacity / 2) {
        rte_mbuf* read[kAhead];
        const uint16_t room =
            static_cast<uint16_t>(std::min<uint32_t>({capacity - count_, kAhead, sizer.size()}));
        const uint64_t call_tsc = sizer.enabled() ? rte_rdtsc() : 0;
        const uint16_t n = rte_eth_rx_burst(port, queue, read, room);
        const uint64_t read_tsc = rte_rdtsc();
        if (n != 0) sizer.record(read_tsc - call_tsc, n);
        stage(read, n, read_tsc);
    }
    if (count_ == 0) {
        waiting_.store(0, std::memory_order_relaxed);
        return 0;
    }
    const uint64_t now = rte_rdtsc();
    if (!started_) {  // preloaded: the capture starts at the run's first poll
        started_ = true;
        origin_tsc_ = now;
        uint64_t first = 0;  // or at the first poll of any input it shares the clock with
        if (shared_origin_ != nullptr &&
            !shared_origin_->compare_exchange_strong(first, now, std::memory_order_relaxed))
            origin_tsc_ = first;
    }
    uint16_t released = 0;
    while (count_ != 0 && released < max && origin_tsc_ + arrival_[head_] <= now) {
        arrival_tsc[released] = origin_tsc_ + arrival_[head_];
        out[released++] = staged_[head_];
        if (++head_ == capacity) head_ = 0;
        --count_;
    }
    waiting_.store(count_, std::memory_order_relaxed);
    return released;
}

void PacedInput::free_staged() {
    const auto capacity = static_cast<uint32_t>(staged_.size());
    freed_at_stop_ += count_;
    while (count_ != 0) {
        rte_pktmbuf_free(staged_[head_]);
        head_ = (head_ + 1) % capacity;
        --count_;
    }
    waiting_.store(0, std::memory_order_relaxed);
}

}  // namespace twinlane::dataplane
