// One tail-drop FIFO with the same total buffer (packets and bytes) as the policy's tree:
// the baseline that shows what a plain switch queue does to inference latency.
#pragma once

#include <deque>

#include "replay/discipline.h"

namespace twinlane::replay {

class FifoDiscipline final : public Discipline {
  public:
    FifoDiscipline(uint64_t limit_packets, uint64_t limit_bytes)
        : limit_packets_(limit_packets), limit_bytes_(limit_bytes) {}

    std::string_view name() const override { return "fifo"; }
    void enqueue(sched::Packet& packet, uint8_t, uint32_t, uint64_t now_ns,
                 std::vector<ReplayDrop>& drops) override {
        if (queue_.size() >= limit_packets_) {
            drops.push_back({packet, "queue_full_packets"});
        } else if (bytes_ + packet.length_bytes > limit_bytes_) {
            drops.push_back({packet, "queue_full_bytes"});
        } else {
            bytes_ += packet.length_bytes;
            packet.arrival_ns = now_ns;
            queue_.push_back(packet);
        }
    }
    bool dequeue(uint64_t, sched::Packet& out, std::vector<ReplayDrop>&) override {
        if (queue_.empty()) return false;
        out = queue_.front();
        queue_.pop_front();
        bytes_ -= out.length_bytes;
        return true;
    }
    uint64_t next_eligible_ns(uint64_t now_ns) override {
        return queue_.empty() ? UINT64_MAX : now_ns;
    }
    uint64_t queued_packets() const override { return queue_.size(); }

  private:
    uint64_t limit_packets_;
    uint64_t limit_bytes_;
    uint64_t bytes_ = 0;
    std::deque<sched::Packet> queue_;
};

}  // namespace twinlane::replay
