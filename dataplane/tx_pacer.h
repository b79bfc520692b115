// TX pacing with a NIC backlog budget, in the manner of Linux BQL.
//
// The NIC's TX ring is a FIFO after the scheduler: whatever sits there delays every later
// packet, inference included (1024 jumbo frames are 7 ms at 10G). The pacer therefore models
// the ring as a bucket that drains at the port's rate: each packet handed to the NIC adds its
// wire bytes, time removes rate x elapsed. The scheduler may hand over packets only while the
// modelled backlog is below `budget_bytes`, so the ring never holds more than about one budget
// of link time, and the long-run release rate equals the port rate (a token bucket on the
// clock). If the real NIC is slower than modelled, it refuses packets and the caller re-offers
// them; the model is then an under-estimate only until the NIC catches up.
//
// Like BQL, the budget adapts to how often the caller comes back: if one pass of the lcore loop
// takes longer than the budget lasts at the port rate (AF_XDP on veth: a syscall per TX burst,
// tens of microseconds), a fixed budget would cap throughput at budget / pass time. So the
// effective budget is the larger of the configured one and twice what the link drains during
// the last interval between calls (capped at kMaxPassNs of link time; twice, so whole frames
// always fit), which keeps the link busy without letting a fast loop build a deeper NIC
// backlog than configured.
//
// Pure logic over an explicit clock (ns): no DPDK here. One instance per egress port, owned by
// its scheduler lcore. Not thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>

#include "sched/ethernet_wire.h"
#include "sched/scheduler.h"

namespace twinlane::dataplane {

class TxPacer {
  public:
    // The pacer counts a frame as sched::wire_bytes; the scheduler's dequeue_burst charges it
    // the same with this cost.
    static constexpr sched::WireCost kWireCost{sched::kMinFrameBytesWithoutFcs,
                                               sched::kWireOverheadBytes};
    // Longest loop pass the budget grows to cover (link time).
    static constexpr uint64_t kMaxPassNs = 1'000'000;

    TxPacer(uint64_t rate_bits_per_sec, uint64_t budget_bytes)
        : rate_bits_per_sec_(rate_bits_per_sec), budget_bytes_(budget_bytes) {}

    // Bytes that may be handed to the NIC now (0 while the modelled backlog is at the budget).
    uint64_t allowance_bytes(uint64_t now_ns) {
        if (last_call_ns_ == kNoCall ||
            now_ns > last_call_ns_) {  // a new pass (calls may share one)
            if (last_call_ns_ != kNoCall) {
                const uint64_t pass_ns = std::min(now_ns - last_call_ns_, kMaxPassNs);
                pass_budget_bytes_ = 2 * pass_ns * rate_bits_per_sec_ / 8'000'000'000ULL;
            }
            last_call_ns_ = now_ns;
        }
        drain(now_ns);
        const uint64_t budget = std::max(budget_bytes_, pass_budget_bytes_);
        return backlog_bytes_ >= budget ? 0 : budget - backlog_bytes_;
    }

    // Records a frame of `frame_bytes` accepted by the NIC.
    void on_transmit(uint32_t frame_bytes) { backlog_bytes_ += sched::wire_bytes(frame_bytes); }

    // When the modelled backlog will be below the budget again (now_ns if it already is).
    uint64_t next_allowance_ns(uint64_t now_ns) {
        drain(now_ns);
        if (backlog_bytes_ < budget_bytes_) return now_ns;
        const uint64_t excess_bits = (backlog_bytes_ - budget_bytes_ + 1) * 8;
        return now_ns +
               (excess_bits * 1'000'000'000ULL + rate_bits_per_sec_ - 1) / rate_bits_per_sec_;
    }

    uint64_t backlog_bytes() const { return backlog_bytes_; }
    uint64_t budget_bytes() const { return budget_bytes_; }
    void set(uint64_t rate_bits_per_sec, uint64_t budget_bytes) {
        rate_bits_per_sec_ = rate_bits_per_sec;
        budget_bytes_ = budget_bytes;
    }

  private:
    void drain(uint64_t now_ns) {
        if (now_ns <= last_ns_) return;
        // Exact over time: carry the sub-byte remainder of drained bits (no drift over hours).
        const uint64_t elapsed_ns = now_ns - last_ns_;
        last_ns_ = now_ns;
        if (backlog_bytes_ == 0) {
            remainder_ = 0;
            return;
        }
        const unsigned long long drained_bit_ns =
            static_cast<unsigned long long>(std::min<uint64_t>(elapsed_ns, 1'000'000'000ULL)) *
                rate_bits_per_sec_ +
            remainder_;
        const uint64_t drained_bytes = drained_bit_ns / 8'000'000'000ULL;
        remainder_ = drained_bit_ns % 8'000'000'000ULL;
        if (drained_bytes >= backlog_bytes_) {
            backlog_bytes_ = 0;
            remainder_ = 0;
        } else {
            backlog_bytes_ -= drained_bytes;
        }
    }

    uint64_t rate_bits_per_sec_;
    uint64_t budget_bytes_;
    uint64_t backlog_bytes_ = 0;
    uint64_t last_ns_ = 0;
    static constexpr uint64_t kNoCall = UINT64_MAX;
    uint64_t last_call_ns_ = kNoCall;
    uint64_t pass_budget_bytes_ = 0;
    uint64_t remainder_ = 0;  // bit-nanoseconds drained but not yet a whole byte
};

}  // namespace twinlane::dataplane
