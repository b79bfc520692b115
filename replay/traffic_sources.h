// The per-source generators behind TrafficGenerator (internal to replay/).
//
// Contract: a FrameSource produces frames with non-decreasing timestamps, one at a time; its
// current frame and timestamp are valid until the next advance(). Every frame it produces
// ends before the source's duration, so a class's byte budget is fully inside [0, duration).
//   BulkBurstSource: training traffic. Flows of one job send synchronised bursts (one message
//     per flow per step); steps follow each other back to back inside an iteration (ring
//     all-reduce: 2(F-1) steps), iterations repeat at a fixed period (compute, then
//     communicate). Senders transmit at their NIC rate, faster than the bottleneck, so the
//     job is on/off at the bottleneck with the requested mean.
//   TransactionSource: request/response traffic of one client connection, one direction per
//     instance. Both directions replay the same transaction sequence from the same seed, so
//     they agree on sizes and times without sharing state. Arrivals are Poisson (or Poisson
//     during exponential on/off periods) conditioned on the transaction count that spends the
//     byte budget, so the offered load is exact up to one small transaction per client.
// Thread-safety: none.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "replay/frame_builder.h"
#include "replay/prng.h"

namespace twinlane::replay {

class FrameSource {
  public:
    virtual ~FrameSource() = default;
    // Produces the next frame; false when exhausted.
    virtual bool advance() = 0;
    uint64_t timestamp_ns() const { return timestamp_ns_; }
    std::span<const uint8_t> frame() const { return frame_; }

  protected:
    uint64_t timestamp_ns_ = 0;
    std::vector<uint8_t> frame_;
};

enum class BulkTransport { roce, tcp };

struct BulkFlow {
    IpAddress src;
    IpAddress dst;
    uint16_t src_port = 0;
    uint16_t dst_port = 0;
    uint32_t dest_qp = 0;  // RoCE only
};

struct BulkBurstSpec {
    BulkTransport transport = BulkTransport::roce;
    std::vector<BulkFlow> flows;
    uint32_t payload_bytes = 4096;  // per packet: RoCE path MTU payload or TCP MSS
    uint8_t traffic_class = 0;      // IPv4 TOS
    int pcp = -1;                   // 0-7: an 802.1Q priority tag (VLAN 0) with this PCP
    uint32_t steps_per_iteration = 1;
    uint32_t target_packets_per_burst = 32;
    uint64_t target_iteration_period_ns = 0;  // if set, decides the iteration count instead
    double offered_bps = 0;
    uint64_t duration_ns = 0;
    double nominal_sender_rate_bps = 100e9;
    uint64_t seed = 0;
};

class BulkBurstSource final : public FrameSource {
  public:
    explicit BulkBurstSource(const BulkBurstSpec& spec);
    bool advance() override;

    uint64_t planned_packets() const { return total_packets_; }
    double sender_rate_bps() const { return sender_rate_bps_; }

  private:
    struct FlowState {
        uint32_t packets_in_burst = 0;
        uint32_t next_packet = 0;
        double burst_start_ns = 0;
        double bits_sent = 0;
        uint32_t psn = 0;
        uint32_t tcp_seq = 0;
        uint16_t ipv4_id = 0;
        uint64_t message_offset = 0;
    };

    size_t frame_bytes(uint32_t packet_in_burst) const;
    bool start_next_step();
    void build(size_t flow_index);

    BulkBurstSpec spec_;
    Prng jitter_rng_;
    uint64_t total_packets_ = 0;
    uint64_t total_bursts_ = 0;
    uint32_t iterations_ = 0;
    double iteration_period_ns_ = 0;
    double first_iteration_ns_ = 0;
    double sender_rate_bps_ = 0;
    double max_jitter_ns_ = 0;
    double step_gap_ns_ = 0;

    uint32_t iteration_ = 0;
    uint32_t step_ = 0;
    bool step_open_ = false;
    double step_end_ns_ = 0;
    std::vector<FlowState> flows_;
};

enum class ArrivalPattern { poisson, on_off };
enum class AppFraming { grpc, dns, ssh, http };
enum class TransactionDirection { requests, responses };

struct TransactionSpec {
    IpAddress client;
    IpAddress server;
    uint16_t client_port = 0;
    uint16_t server_port = 0;
    L4Protocol protocol = L4Protocol::tcp;
    AppFraming framing = AppFraming::grpc;
    uint8_t traffic_class = 0;
    uint32_t request_min_bytes = 100;  // application payload sizes
    uint32_t request_max_bytes = 600;
    uint32_t response_min_bytes = 1000;
    uint32_t response_max_bytes = 16000;
    uint32_t mss_bytes = 1448;  // TCP segment payload; UDP messages are one datagram
    uint64_t service_min_ns = 20'000;
    uint64_t service_max_ns = 200'000;
    double client_rate_bps = 25e9;
    double server_rate_bps = 25e9;
    double budget_bytes = 0;  // frame bytes of both directions within the duration
    uint64_t duration_ns = 0;
    uint64_t start_ns = 0;  // the duration starts here (a surge client's interval)
    ArrivalPattern pattern = ArrivalPattern::poisson;
    double on_mean_ns = 1e6;
    double off_mean_ns = 3e6;
    uint64_t seed = 0;
};

class TransactionSource final : public FrameSource {
  public:
    TransactionSource(const TransactionSpec& spec, TransactionDirection direction);
    bool advance() override;

    uint64_t planned_transactions() const { return transactions_; }

  private:
    struct Transaction {
        double arrival_ns = 0;
        uint32_t request_bytes = 0;
        uint32_t response_bytes = 0;
        double service_ns = 0;
        uint64_t request_bytes_before = 0;   // client bytes sent by earlier transactions
        uint64_t response_bytes_before = 0;  // server bytes sent by earlier transactions
    };

    // Walks on/off periods and maps "time spent on" to real time.
    class OnTimeClock {
      public:
        OnTimeClock(const TransactionSpec& spec, double window_ns);
        double total_on_ns() const { return total_on_ns_; }
        double real_time(double on_time_ns);  // on_time must not decrease between calls

      private:
        void next_period();
        Prng rng_;
        bool always_on_;
        double on_mean_ns_, off_mean_ns_, window_ns_;
        bool on_ = true;
        double period_start_ns_ = 0, period_length_ns_ = 0, on_before_ns_ = 0;
        double total_on_ns_ = 0;
    };

    bool next_transaction();
    uint64_t message_frame_bytes(uint32_t payload) const;
    void build(uint32_t segment);

    TransactionSpec spec_;
    TransactionDirection direction_;
    double window_ns_ = 0;
    uint64_t transactions_ = 0;
    uint32_t last_response_bytes_ = 0;
    size_t header_bytes_ = 0;

    Prng size_rng_;
    Prng arrival_rng_;
    Prng service_rng_;
    OnTimeClock clock_;
    double order_statistic_ = 0;

    uint64_t index_ = 0;  // transactions started
    Transaction current_{};
    uint32_t segments_ = 0;
    uint32_t next_segment_ = 0;
    double message_start_ns_ = 0;
    double bits_sent_ = 0;
    double link_free_ns_ = 0;  // this direction's connection is busy until then
    uint16_t ipv4_id_ = 0;
    uint32_t client_isn_ = 0, server_isn_ = 0;
};

}  // namespace twinlane::replay
