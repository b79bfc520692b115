#include "replay/traffic_sources.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string_view>

#include "replay/roce.h"
#include "replay/virtual_link.h"

namespace twinlane::replay {
namespace {

// A sender's frames are spaced by their time on its wire (frame, FCS, preamble, SFD, gap):
// without the overhead a "line-rate" sender would outrun a link of the same rate.
double wire_bits(size_t frame_bytes) {
    return 8.0 * static_cast<double>(wire_bytes(static_cast<uint32_t>(frame_bytes)));
}

constexpr double kNsPerSecond = 1e9;

// Bursts start within this much of the step barrier: NCCL's proxies do not start in lockstep.
constexpr double kBurstJitterNs = 1000;
// Barrier between ring steps: a step's data must arrive before the next chunk is reduced.
constexpr double kStepGapNs = 2000;
// One iteration's communication must fit in this share of the iteration period.
constexpr double kMaxCommunicationShare = 0.8;

uint64_t to_ns(double time_ns) {
    return static_cast<uint64_t>(std::llround(time_ns));
}

void put16(uint8_t* at, uint32_t value) {
    at[0] = static_cast<uint8_t>(value >> 8);
    at[1] = static_cast<uint8_t>(value);
}

void put32(uint8_t* at, uint32_t value) {
    put16(at, value >> 16);
    put16(at + 2, value & 0xFFFF);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// BulkBurstSource

BulkBurstSource::BulkBurstSource(const BulkBurstSpec& spec)
    : spec_(spec), jitter_rng_(spec.seed, 1), flows_(spec.flows.size()) {
    const uint64_t flow_count = spec_.flows.size();
    const uint64_t steps = std::max<uint32_t>(1, spec_.steps_per_iteration);
    spec_.steps_per_iteration = static_cast<uint32_t>(steps);
    const double packets_per_burst = std::max<uint32_t>(1, spec_.target_packets_per_burst);
    const double budget_bytes =
        spec_.offered_bps * static_cast<double>(spec_.duration_ns) / (8 * kNsPerSecond);
    // RETH rides on the first packet of each message only.
    const double mean_frame_bytes =
        static_cast<double>(frame_bytes(1)) +
        static_cast<double>(frame_bytes(0) - frame_bytes(1)) / packets_per_burst;
    total_packets_ = static_cast<uint64_t>(std::llround(budget_bytes / mean_frame_bytes));
    if (total_packets_ == 0 || flow_count == 0) return;

    const double duration_ns = static_cast<double>(spec_.duration_ns);
    max_jitter_ns_ = kBurstJitterNs;
    step_gap_ns_ = kStepGapNs;
    const double barrier_ns_per_iteration =
        static_cast<double>(steps) * (max_jitter_ns_ + step_gap_ns_);
    const double wanted_iterations =
        spec_.target_iteration_period_ns > 0
            ? duration_ns / static_cast<double>(spec_.target_iteration_period_ns)
            : static_cast<double>(total_packets_) /
                  (packets_per_burst * static_cast<double>(steps * flow_count));
    iterations_ = static_cast<uint32_t>(std::max<int64_t>(1, std::llround(wanted_iterations)));
    // Few long iterations rather than barriers eating the period.
    while (iterations_ > 1 &&
           barrier_ns_per_iteration > 0.5 * duration_ns / static_cast<double>(iterations_)) {
        iterations_ /= 2;
    }
    iteration_period_ns_ = duration_ns / static_cast<double>(iterations_);
    total_bursts_ = static_cast<uint64_t>(iterations_) * steps * flow_count;
    const uint64_t max_packets_per_burst = (total_packets_ + total_bursts_ - 1) / total_bursts_;
    const double transmit_budget_ns =
        kMaxCommunicationShare * iteration_period_ns_ - barrier_ns_per_iteration;
    if (transmit_budget_ns <= 0) {
        throw std::invalid_argument("duration too short for a training iteration of " +
                                    std::to_string(steps) + " steps");
    }
    const double max_step_bits = static_cast<double>(max_packets_per_burst * frame_bytes(0)) * 8.0;
    // Senders are NICs faster than the bottleneck; speed them up if the schedule needs it.
    sender_rate_bps_ =
        std::max(spec_.nominal_sender_rate_bps,
                 static_cast<double>(steps) * max_step_bits * kNsPerSecond / transmit_budget_ns);
    const double communication_ns =
        static_cast<double>(steps) * max_step_bits * kNsPerSecond / sender_rate_bps_ +
        barrier_ns_per_iteration;
    first_iteration_ns_ = jitter_rng_.uniform01() * (iteration_period_ns_ - communication_ns);
    for (FlowState& flow : flows_)
        flow.tcp_seq = static_cast<uint32_t>(jitter_rng_.next_u64());
}

size_t BulkBurstSource::frame_bytes(uint32_t packet_in_burst) const {
    if (spec_.transport == BulkTransport::tcp) {
        return header_bytes(4, L4Protocol::tcp) + spec_.payload_bytes;
    }
    return header_bytes(4, L4Protocol::udp) + kBthBytes + (packet_in_burst == 0 ? kRethBytes : 0) +
           spec_.payload_bytes + kIcrcBytes;
}

bool BulkBurstSource::start_next_step() {
    const uint64_t flow_count = flows_.size();
    while (iteration_ < iterations_) {
        const double start = step_ == 0 ? first_iteration_ns_ + iteration_ * iteration_period_ns_
                                        : step_end_ns_ + step_gap_ns_;
        const uint64_t first_burst =
            (static_cast<uint64_t>(iteration_) * spec_.steps_per_iteration + step_) * flow_count;
        step_end_ns_ = start;
        bool any_packets = false;
        for (uint64_t f = 0; f < flow_count; ++f) {
            // Spread packets over bursts evenly so the total is exact (Bresenham).
            const uint64_t burst = first_burst + f;
            FlowState& flow = flows_[f];
            flow.packets_in_burst =
                static_cast<uint32_t>((burst + 1) * total_packets_ / total_bursts_ -
                                      burst * total_packets_ / total_bursts_);
            flow.next_packet = 0;
            flow.bits_sent = 0;
            flow.burst_start_ns = start + jitter_rng_.uniform01() * max_jitter_ns_;
            if (flow.packets_in_burst == 0) continue;
            any_packets = true;
            const double burst_bits =
                wire_bits(frame_bytes(0)) + (flow.packets_in_burst - 1) * wire_bits(frame_bytes(1));
            step_end_ns_ = std::max(
                step_end_ns_, flow.burst_start_ns + burst_bits * kNsPerSecond / sender_rate_bps_);
        }
        if (++step_ == spec_.steps_per_iteration) {
            step_ = 0;
            ++iteration_;
        }
        if (any_packets) return true;
    }
    return false;
}

bool BulkBurstSource::advance() {
    for (;;) {
        size_t best = flows_.size();
        double best_time = std::numeric_limits<double>::infinity();
        for (size_t f = 0; f < flows_.size(); ++f) {
            const FlowState& flow = flows_[f];
            if (flow.next_packet >= flow.packets_in_burst) continue;
            const double time =
                flow.burst_start_ns + flow.bits_sent * kNsPerSecond / sender_rate_bps_;
            if (time < best_time) {
                best_time = time;
                best = f;
            }
        }
        if (best < flows_.size()) {
            timestamp_ns_ = to_ns(best_time);
            build(best);
            return true;
        }
        if (!start_next_step()) return false;
    }
}

void BulkBurstSource::build(size_t flow_index) {
    FlowState& state = flows_[flow_index];
    const BulkFlow& flow = spec_.flows[flow_index];
    const uint32_t packet = state.next_packet;
    const uint32_t count = state.packets_in_burst;
    const bool last = packet + 1 == count;

    FrameHeaders headers;
    headers.src_ip = flow.src;
    headers.dst_ip = flow.dst;
    headers.traffic_class = spec_.traffic_class;
    headers.ipv4_id = state.ipv4_id++;
    headers.src_port = flow.src_port;
    headers.dst_port = flow.dst_port;

    if (spec_.transport == BulkTransport::roce) {
        headers.protocol = L4Protocol::udp;
        headers.udp_checksum_ipv4 = false;  // RoCEv2 relies on the ICRC
        BthFields bth;
        bth.opcode = count == 1    ? bth_opcode::kRcRdmaWriteOnly
                     : packet == 0 ? bth_opcode::kRcRdmaWriteFirst
                     : last        ? bth_opcode::kRcRdmaWriteLast
                                   : bth_opcode::kRcRdmaWriteMiddle;
        bth.ack_request = last;
        bth.dest_qp = flow.dest_qp;
        bth.psn = state.psn;
        state.psn = (state.psn + 1) & 0xFFFFFF;
        RethFields reth;
        reth.virtual_address = 0x7F00'0000'0000ULL + (static_cast<uint64_t>(flow_index) << 32) +
                               (state.message_offset & 0xFFFF'FFFF);
        reth.remote_key = 0x1000 + flow.dest_qp;
        reth.dma_length = count * spec_.payload_bytes;
        std::array<uint8_t, kBthBytes + kRethBytes> transport_headers{};
        const size_t transport_bytes = encode_roce_headers(bth, reth, transport_headers);
        build_frame(headers, std::span<const uint8_t>(transport_headers.data(), transport_bytes),
                    transport_bytes + spec_.payload_bytes + kIcrcBytes,
                    static_cast<uint8_t>(bth.psn), frame_);
        store_icrc(frame_);  // over IP and on: a priority tag after it changes nothing of it
        if (spec_.pcp >= 0) {
            const uint8_t tag[4] = {0x81, 0x00, static_cast<uint8_t>(spec_.pcp << 5), 0x00};
            frame_.insert(frame_.begin() + 12, tag, tag + 4);
        }
        if (last) state.message_offset += reth.dma_length;
    } else {
        headers.protocol = L4Protocol::tcp;
        headers.tcp_seq = state.tcp_seq;
        headers.tcp_ack = 0x1000'0000U + static_cast<uint32_t>(flow_index);
        headers.tcp_flags = static_cast<uint8_t>(tcp_flags::kAck | (last ? tcp_flags::kPsh : 0));
        state.tcp_seq += spec_.payload_bytes;
        build_frame(headers, {}, spec_.payload_bytes, static_cast<uint8_t>(state.tcp_seq), frame_);
    }
    state.bits_sent += wire_bits(frame_.size());
    ++state.next_packet;
}

// ---------------------------------------------------------------------------------------------
// TransactionSource

TransactionSource::OnTimeClock::OnTimeClock(const TransactionSpec& spec, double window_ns)
    : rng_(spec.seed, 15),
      always_on_(spec.pattern == ArrivalPattern::poisson),
      on_mean_ns_(spec.on_mean_ns),
      off_mean_ns_(spec.off_mean_ns),
      window_ns_(window_ns) {
    if (!always_on_) {
        on_ = rng_.uniform01() < on_mean_ns_ / (on_mean_ns_ + off_mean_ns_);
        period_length_ns_ = rng_.exponential(on_ ? on_mean_ns_ : off_mean_ns_);
        // A copy walks the periods once to learn the total on-time without storing them.
        OnTimeClock walker = *this;
        double total = 0;
        while (walker.period_start_ns_ < window_ns_) {
            if (walker.on_) {
                total += std::min(walker.period_length_ns_, window_ns_ - walker.period_start_ns_);
            }
            walker.next_period();
        }
        total_on_ns_ = total;
    }
    if (always_on_ || total_on_ns_ <= 0) {
        always_on_ = true;
        total_on_ns_ = window_ns_;
    }
}

void TransactionSource::OnTimeClock::next_period() {
    if (on_) on_before_ns_ += period_length_ns_;
    period_start_ns_ += period_length_ns_;
    on_ = !on_;
    period_length_ns_ = rng_.exponential(on_ ? on_mean_ns_ : off_mean_ns_);
}

double TransactionSource::OnTimeClock::real_time(double on_time_ns) {
    if (always_on_) return std::min(on_time_ns, window_ns_);
    while (!(on_ && on_time_ns < on_before_ns_ + period_length_ns_)) {
        if (period_start_ns_ >= window_ns_) return window_ns_;  // rounding at the very end
        next_period();
    }
    return std::min(period_start_ns_ + (on_time_ns - on_before_ns_), window_ns_);
}

namespace {

// Arrivals stop early enough that the last response is on the wire before the duration ends.
double arrival_window_ns(const TransactionSpec& spec) {
    const auto longest = [&](uint32_t payload, double rate) {
        const double header = static_cast<double>(header_bytes(spec.client.version, spec.protocol));
        const double segments = std::ceil(static_cast<double>(payload) / spec.mss_bytes);
        return (payload + segments * header) * 8.0 * kNsPerSecond / rate;
    };
    const double tail = static_cast<double>(spec.service_max_ns) +
                        longest(spec.request_max_bytes, spec.client_rate_bps) +
                        longest(spec.response_max_bytes, spec.server_rate_bps) + 10'000.0;
    const double window = static_cast<double>(spec.duration_ns) - tail;
    if (window <= 0) {
        throw std::invalid_argument("duration too short for request/response traffic");
    }
    return window;
}

}  // namespace

TransactionSource::TransactionSource(const TransactionSpec& spec, TransactionDirection direction)
    : spec_(spec),
      direction_(direction),
      window_ns_(arrival_window_ns(spec)),
      header_bytes_(header_bytes(spec.client.version, spec.protocol)),
      size_rng_(spec.seed, 11),
      arrival_rng_(spec.seed, 12),
      service_rng_(spec.seed, 13),
      clock_(spec, window_ns_) {
    Prng isn_rng(spec.seed, 14);
    client_isn_ = static_cast<uint32_t>(isn_rng.next_u64());
    server_isn_ = static_cast<uint32_t>(isn_rng.next_u64());

    // Count the transactions that spend the byte budget; the last one's response is cut to
    // land on the budget. A copy of the size generator looks ahead without storing sizes.
    Prng sizes = size_rng_;
    double used = 0;
    while (spec_.budget_bytes > 0) {
        const auto request = static_cast<uint32_t>(
            sizes.uniform_int(spec_.request_min_bytes, spec_.request_max_bytes));
        const auto response = static_cast<uint32_t>(
            sizes.uniform_int(spec_.response_min_bytes, spec_.response_max_bytes));
        const double cost =
            static_cast<double>(message_frame_bytes(request) + message_frame_bytes(response));
        if (used + cost <= spec_.budget_bytes) {
            used += cost;
            ++transactions_;
            last_response_bytes_ = response;
            continue;
        }
        const double left =
            spec_.budget_bytes - used - static_cast<double>(message_frame_bytes(request));
        if (left >= static_cast<double>(header_bytes_ + 1)) {
            const auto left_bytes = static_cast<uint64_t>(left);
            const uint64_t per_segment = spec_.mss_bytes + header_bytes_;
            const uint64_t segments = spec_.protocol == L4Protocol::udp
                                          ? 1
                                          : (left_bytes + per_segment - 1) / per_segment;
            last_response_bytes_ =
                static_cast<uint32_t>(std::max<uint64_t>(1, left_bytes - segments * header_bytes_));
            ++transactions_;
        }
        break;
    }
}

uint64_t TransactionSource::message_frame_bytes(uint32_t payload) const {
    const uint64_t segments =
        spec_.protocol == L4Protocol::udp ? 1 : (payload + spec_.mss_bytes - 1) / spec_.mss_bytes;
    return payload + segments * header_bytes_;
}

bool TransactionSource::next_transaction() {
    if (index_ >= transactions_) return false;
    Transaction next;
    if (index_ > 0) {
        next.request_bytes_before = current_.request_bytes_before + current_.request_bytes;
        next.response_bytes_before = current_.response_bytes_before + current_.response_bytes;
    }
    next.request_bytes = static_cast<uint32_t>(
        size_rng_.uniform_int(spec_.request_min_bytes, spec_.request_max_bytes));
    const auto response = static_cast<uint32_t>(
        size_rng_.uniform_int(spec_.response_min_bytes, spec_.response_max_bytes));
    next.response_bytes = index_ + 1 == transactions_ ? last_response_bytes_ : response;
    next.service_ns =
        static_cast<double>(service_rng_.uniform_int(spec_.service_min_ns, spec_.service_max_ns));
    // Next uniform order statistic of the remaining count (Poisson given the count), on the
    // on-time axis, then mapped to real time through the on/off periods.
    const double remaining = static_cast<double>(transactions_ - index_);
    const double draw = 1.0 - arrival_rng_.uniform01();  // (0, 1]
    order_statistic_ = 1.0 - (1.0 - order_statistic_) * std::pow(draw, 1.0 / remaining);
    next.arrival_ns = static_cast<double>(spec_.start_ns) +
                      clock_.real_time(order_statistic_ * clock_.total_on_ns());
    current_ = next;
    ++index_;

    const bool requests = direction_ == TransactionDirection::requests;
    const uint32_t payload = requests ? current_.request_bytes : current_.response_bytes;
    segments_ =
        spec_.protocol == L4Protocol::udp ? 1 : (payload + spec_.mss_bytes - 1) / spec_.mss_bytes;
    next_segment_ = 0;
    bits_sent_ = 0;
    double ready_ns = current_.arrival_ns;
    if (!requests) {
        ready_ns += static_cast<double>(message_frame_bytes(current_.request_bytes)) * 8.0 *
                        kNsPerSecond / spec_.client_rate_bps +
                    current_.service_ns;
    }
    // One connection per client: messages in one direction are serialised, as TCP does.
    message_start_ns_ = std::max(ready_ns, link_free_ns_);
    return true;
}

bool TransactionSource::advance() {
    while (next_segment_ >= segments_) {
        if (!next_transaction()) return false;
    }
    const double rate = direction_ == TransactionDirection::requests ? spec_.client_rate_bps
                                                                     : spec_.server_rate_bps;
    timestamp_ns_ = to_ns(message_start_ns_ + bits_sent_ * kNsPerSecond / rate);
    build(next_segment_);
    bits_sent_ += wire_bits(frame_.size());
    link_free_ns_ = message_start_ns_ + bits_sent_ * kNsPerSecond / rate;
    ++next_segment_;
    return true;
}

void TransactionSource::build(uint32_t segment) {
    const bool request = direction_ == TransactionDirection::requests;
    const uint32_t message_bytes = request ? current_.request_bytes : current_.response_bytes;
    const uint32_t offset = segment * spec_.mss_bytes;
    const uint32_t length = spec_.protocol == L4Protocol::udp
                                ? message_bytes
                                : std::min(spec_.mss_bytes, message_bytes - offset);
    const bool last_segment = segment + 1 == segments_;

    FrameHeaders headers;
    headers.src_ip = request ? spec_.client : spec_.server;
    headers.dst_ip = request ? spec_.server : spec_.client;
    headers.src_port = request ? spec_.client_port : spec_.server_port;
    headers.dst_port = request ? spec_.server_port : spec_.client_port;
    headers.protocol = spec_.protocol;
    headers.traffic_class = spec_.traffic_class;
    headers.ipv4_id = ipv4_id_++;
    headers.ipv6_flow_label = (client_isn_ ^ spec_.client_port) & 0xFFFFF;
    if (spec_.protocol == L4Protocol::tcp) {
        const uint32_t request_before = static_cast<uint32_t>(current_.request_bytes_before);
        const uint32_t response_before = static_cast<uint32_t>(current_.response_bytes_before);
        if (request) {
            headers.tcp_seq = client_isn_ + request_before + offset;
            headers.tcp_ack = server_isn_ + response_before;
        } else {
            headers.tcp_seq = server_isn_ + response_before + offset;
            headers.tcp_ack = client_isn_ + request_before + current_.request_bytes;
        }
        headers.tcp_flags =
            static_cast<uint8_t>(tcp_flags::kAck | (last_segment ? tcp_flags::kPsh : 0));
    }

    // Application framing on a message's first segment, so payloads look like the protocol.
    std::array<uint8_t, 96> prefix{};
    size_t prefix_bytes = 0;
    if (segment == 0) {
        switch (spec_.framing) {
            case AppFraming::grpc: {
                // HTTP/2 DATA frame header, then the gRPC length-prefixed message header.
                const uint32_t frame_length = message_bytes > 9 ? message_bytes - 9 : 0;
                prefix[0] = static_cast<uint8_t>(frame_length >> 16);
                put16(&prefix[1], frame_length & 0xFFFF);
                prefix[3] = 0x0;                  // DATA
                prefix[4] = request ? 0x0 : 0x1;  // END_STREAM on the response
                put32(&prefix[5], static_cast<uint32_t>(2 * index_ - 1) & 0x7FFF'FFFF);
                prefix[9] = 0;  // not compressed
                put32(&prefix[10], message_bytes > 14 ? message_bytes - 14 : 0);
                prefix_bytes = 14;
                break;
            }
            case AppFraming::dns: {
                // Header, the question "inference.svc.cluster.local A IN", and in the
                // response one A record pointing back at the question's name.
                constexpr uint8_t kQuestion[] = {9,   'i', 'n', 'f', 'e', 'r', 'e', 'n', 'c',
                                                 'e', 3,   's', 'v', 'c', 7,   'c', 'l', 'u',
                                                 's', 't', 'e', 'r', 5,   'l', 'o', 'c', 'a',
                                                 'l', 0,   0,   1,   0,   1};
                constexpr uint8_t kAnswer[] = {0xC0, 0x0C, 0, 1, 0,   1,  0,   0,
                                               0,    30,   0, 4, 198, 18, 200, 1};
                put16(&prefix[0], static_cast<uint32_t>(index_ & 0xFFFF));
                put16(&prefix[2], request ? 0x0100 : 0x8180);
                put16(&prefix[4], 1);                // one question
                put16(&prefix[6], request ? 0 : 1);  // one answer in the response
                std::memcpy(&prefix[12], kQuestion, sizeof(kQuestion));
                prefix_bytes = 12 + sizeof(kQuestion);
                if (!request) {
                    std::memcpy(&prefix[prefix_bytes], kAnswer, sizeof(kAnswer));
                    prefix_bytes += sizeof(kAnswer);
                }
                break;
            }
            case AppFraming::http: {
                constexpr std::string_view kRequest =
                    "GET /objects/blob HTTP/1.1\r\nHost: bg\r\n\r\n";
                constexpr std::string_view kResponse =
                    "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n";
                const std::string_view text = request ? kRequest : kResponse;
                std::memcpy(prefix.data(), text.data(), text.size());
                prefix_bytes = text.size();
                break;
            }
            case AppFraming::ssh:
                break;  // encrypted: no visible framing
        }
    }
    build_frame(headers, std::span<const uint8_t>(prefix.data(), prefix_bytes), length,
                static_cast<uint8_t>(index_), frame_);
}

}  // namespace twinlane::replay
