// A capture fed to the pipeline as a wire would deliver it (`twinlane run --pace-input RATE`):
// frames are read ahead from the RX queue (net_pcap stamps each with its capture time) and
// handed over only once due, at their recorded timing serialised at RATE (trace_schedule.h),
// stamped with when their last byte arrived rather than when they were read. Without it a
// pcap input runs as fast as the lcore reads it, so frames that read quickly (small ones)
// arrive closer together than on any link and their queueing is the input's, not the
// pipeline's. Read ahead during the run, the lcore still pays the PMD's copies (net_pcap: a
// read() per frame), as a NIC's descriptors do not; `--preload-input` reads the whole capture
// before the run instead, so that handing a frame over costs what a NIC's RX does.
// Per RX task, used only by the lcore that owns the task; no allocation after construction.
// Preloaded captures of several ports or queues share one clock (align()): recorded on one
// clock (a tap on each link of a gateway), they keep their relative timing, the earliest first
// frame due when the first of them is polled. Read during the run, each starts at its own.
#pragma once

#include <rte_mbuf.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dataplane/burst_sizer.h"
#include "replay/trace_schedule.h"

namespace twinlane::dataplane {

class PacedInput {
  public:
    static constexpr uint32_t kAhead = 256;  // frames read before they are due, during the run

    // `max_gap_ns`: a jump of the capture's clock longer than this is cut to it (0: none;
    // trace_schedule.h). `timestamp_offset`/`timestamp_flag`: DPDK's RX timestamp dynfield and
    // flag; its values count `timestamp_unit_ns` each (port.h, rx_timestamp_unit_ns).
    // `capacity`: frames held at once; for a preloaded input, at least the capture's frames.
    PacedInput(uint64_t tsc_hz, uint64_t link_bps, uint64_t max_gap_ns, int timestamp_offset,
               uint64_t timestamp_flag, uint64_t timestamp_unit_ns, uint32_t capacity = kAhead)
        : schedule_(tsc_hz, 1.0, link_bps, max_gap_ns),
          tsc_hz_(tsc_hz),
          timestamp_offset_(timestamp_offset),
          timestamp_flag_(timestamp_flag),
          timestamp_unit_ns_(timestamp_unit_ns),
          staged_(capacity),
          arrival_(capacity) {}

    // Before the run (not on the lcore): reads the queue to its end. The capture's clock then
    // starts at the first receive(). False with `error` if the frames did not fit (capacity,
    // or the pool ran dry: rx_nombuf grew).
    // `wire_lengths`: each frame's length on its wire, in file order, when the capture cut
    // frames (net_pcap hands over only the captured bytes); empty: as handed over.
    bool preload(uint16_t port, uint16_t queue, std::string& error,
                 std::span<const uint32_t> wire_lengths = {});
    // The preloaded capture's first timestamp (ns), if its frames carry one.
    std::optional<uint64_t> first_timestamp_ns() const;
    // After preload(), before the run: due times count from `epoch_ns` (at most this capture's
    // first timestamp: the earliest among the inputs that share the clock), and the clock
    // starts at the first receive() of any input given the same `origin` (0 until then).
    void align(uint64_t epoch_ns, std::atomic<uint64_t>* origin);

    // Tops the read-ahead up (one rx_burst sized by `sizer`, when it is below half; nothing
    // once preloaded), then moves the frames due by now, at most `max`, to `out`, and when each
    // arrived on the modelled wire to `arrival_tsc` (a frame's latency counts from its own
    // arrival, not its burst's first).
    uint16_t receive(uint16_t port, uint16_t queue, BurstSizer& sizer, rte_mbuf** out, uint16_t max,
                     uint64_t* arrival_tsc);

    uint64_t frames() const { return frames_; }
    bool preloaded() const { return preloaded_; }
    // Frames read only after they were due (the lcore fell behind the wire), and by how much
    // at most: the input did not keep its timing for these.
    uint64_t read_late() const { return read_late_; }
    uint64_t max_late_tsc() const { return max_late_tsc_; }
    // Frames the PMD gave no capture time: they arrived when read (preloaded: with the frame
    // before them).
    uint64_t unstamped() const { return unstamped_; }
    // Jumps of the capture's clock cut to the max gap (a later start than the shared clock's
    // included), and the time taken out of it.
    uint64_t gaps_cut() const { return schedule_.gaps_cut(); }
    uint64_t cut_ns() const { return schedule_.cut_ns(); }
    uint32_t staged() const { return count_; }
    // Frames read and not yet due as of the last receive(), for another thread (the run's
    // monitor: an input whose next frame is a long gap away is not idle).
    uint32_t waiting() const { return waiting_.load(std::memory_order_relaxed); }

    // At shutdown: frames read but not yet due never arrived; freed, not counted received.
    void free_staged();
    uint64_t freed_at_stop() const { return freed_at_stop_; }

  private:
    // Appends what rx_burst read at `read_tsc`, with each frame's due time.
    void stage(rte_mbuf* const* read, uint16_t n, uint64_t read_tsc);

    replay::TraceSchedule schedule_;
    uint64_t tsc_hz_;
    std::atomic<uint64_t>* shared_origin_ = nullptr;
    int timestamp_offset_;
    uint64_t timestamp_flag_;
    uint64_t timestamp_unit_ns_;
    bool started_ = false;
    bool preloaded_ = false;
    uint64_t origin_tsc_ = 0;        // when the first frame was due
    std::vector<rte_mbuf*> staged_;  // a ring of `capacity`
    std::vector<uint64_t> arrival_;  // due times, ticks after origin_tsc_
    uint32_t head_ = 0;
    uint32_t count_ = 0;
    uint64_t frames_ = 0;
    uint64_t read_late_ = 0;
    uint64_t max_late_tsc_ = 0;
    uint64_t unstamped_ = 0;
    uint64_t freed_at_stop_ = 0;
    std::span<const uint32_t> wire_lengths_;  // during preload()
    std::atomic<uint32_t> waiting_{0};
};

}  // namespace twinlane::dataplane
