// Deterministic generator of a mixed AI-gateway workload, as a time-ordered frame stream or a
// nanosecond pcap.
//
// Contract:
//   - Classes: training (RoCEv2 all-reduce bursts to UDP 4791, NCCL-over-TCP bursts to TCP
//     5201+flow, checkpoint bursts to NFS 2049 / S3 443), inference (gRPC/HTTP2 request and
//     response on 8001, 50051, 8080, 8000, DSCP 0) and other (DNS 53, SSH 22, HTTP 80).
//   - Offered load per class, as a fraction of `link_rate_bps`, counts Ethernet frame bytes
//     (no preamble, inter-frame gap or FCS) inside [0, duration): the generator budgets whole
//     frames so the measured load is within a few tenths of a percent of the request.
//   - Same options (including seed) give byte-identical output; only the generator's own PRNG
//     and IEEE double arithmetic (log1p, pow from libm) decide the values.
//   - Addresses: IPv4 198.18.0.0/15, IPv6 2001:2::/48, MACs locally administered.
//   - Frames come out sorted by timestamp (ties broken by source order) through a k-way merge
//     over per-source generators, each holding one pending frame: memory does not grow with
//     the duration.
//   - Invalid options throw std::invalid_argument naming the option.
// Thread-safety: a TrafficGenerator is single-threaded; separate instances are independent.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <queue>
#include <span>
#include <string>
#include <vector>

namespace twinlane::replay {

enum class TrafficClass : uint8_t { training = 0, inference = 1, other = 2 };
inline constexpr size_t kTrafficClassCount = 3;
const char* traffic_class_name(TrafficClass traffic_class);

struct GenOptions {
    double link_rate_bps = 10e9;
    uint64_t duration_ns = 50'000'000;
    double training_load = 1.10;  // fractions of the link rate
    double inference_load = 0.05;
    double other_load = 0.02;
    uint32_t training_jobs = 4;
    uint32_t flows_per_job = 4;
    uint32_t inference_clients = 32;
    double ipv6_fraction = 0.1;  // share of inference clients that use IPv6
    // Inference and other traffic reach the gateway through an edge ingress link of the link
    // rate (frontends, users), so together they never arrive faster than that link carries;
    // training comes from many fast GPU hosts at once and is not limited this way.
    bool edge_ingress_link = true;
    // An inference surge: during [surge_start_ns, surge_end_ns) the inference load is
    // surge_factor times inference_load. The extra (factor - 1) x inference_load comes from
    // surge_clients clients of their own (0: as many as inference_clients), steady (Poisson)
    // over the interval, spread over many or few of them; they reach the gateway through
    // ingress links of their own (many frontends at once), not the edge link, so a surge can
    // exceed the link rate. Off while surge_factor is 1.
    double surge_factor = 1.0;
    uint64_t surge_start_ns = 0;
    uint64_t surge_end_ns = 0;
    uint32_t surge_clients = 0;
    // Lossless training: only RoCEv2 collectives (no NCCL-over-TCP jobs, no checkpoint writes),
    // marked with `roce_dscp`, and with `roce_pcp` (0-7) an 802.1Q priority tag (VLAN 0).
    bool roce_only = false;
    uint8_t roce_dscp = 26;  // AF31, the usual lossless-class marking for RoCEv2
    int roce_pcp = -1;       // -1: untagged
    uint64_t seed = 1;
    std::string output_path;  // used by write_traffic_pcap()
};

void validate(const GenOptions& options);

struct PacketByteCount {
    uint64_t packets = 0;
    uint64_t bytes = 0;  // Ethernet frame bytes
};

// One traffic component (e.g. "job0 roce", "inference grpc", "dns") and what it produced.
struct ComponentSummary {
    std::string name;
    TrafficClass traffic_class = TrafficClass::other;
    int job = -1;  // training job index, -1 for non-training components
    PacketByteCount sent;
};

struct GenSummary {
    uint64_t duration_ns = 0;
    double link_rate_bps = 0;
    std::array<PacketByteCount, kTrafficClassCount> per_class{};
    std::vector<PacketByteCount> per_job;  // training jobs, collective + checkpoint
    std::vector<ComponentSummary> components;
    PacketByteCount total;
    uint64_t last_timestamp_ns = 0;

    double offered_bps(TrafficClass traffic_class) const;
    double offered_load(TrafficClass traffic_class) const;  // fraction of link_rate_bps
};

struct GeneratedFrame {
    uint64_t timestamp_ns = 0;
    std::span<const uint8_t> bytes;  // valid until the next call to next()
    TrafficClass traffic_class = TrafficClass::other;
    int job = -1;
};

class FrameSource;

class TrafficGenerator {
  public:
    explicit TrafficGenerator(const GenOptions& options);
    ~TrafficGenerator();
    TrafficGenerator(const TrafficGenerator&) = delete;
    TrafficGenerator& operator=(const TrafficGenerator&) = delete;

    // The next frame in timestamp order, or false when every source is exhausted.
    bool next(GeneratedFrame& frame);
    // Counts of frames returned so far (complete after next() returned false).
    const GenSummary& summary() const { return summary_; }

  private:
    struct HeapEntry {
        uint64_t timestamp_ns;
        uint32_t source;
        bool operator>(const HeapEntry& other) const {
            return timestamp_ns != other.timestamp_ns ? timestamp_ns > other.timestamp_ns
                                                      : source > other.source;
        }
    };

    std::vector<std::unique_ptr<FrameSource>> sources_;
    std::vector<uint32_t> component_of_source_;
    std::vector<uint8_t> through_edge_link_;  // per source: shares the edge ingress link
    std::priority_queue<HeapEntry, std::vector<HeapEntry>, std::greater<>> heap_;
    int32_t last_source_ = -1;  // advanced lazily so its frame stays valid for the caller
    bool edge_ingress_link_ = true;
    double link_rate_bps_ = 10e9;
    uint64_t edge_link_free_ns_ = 0;  // when the edge ingress link can start the next frame
    GenSummary summary_;
};

// Generates into options.output_path (nanosecond pcap) and returns the summary.
GenSummary write_traffic_pcap(const GenOptions& options);

}  // namespace twinlane::replay
