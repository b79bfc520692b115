#include "replay/traffic_gen.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "replay/pcap_io.h"
#include "replay/roce.h"
#include "replay/traffic_sources.h"
#include "replay/virtual_link.h"

namespace twinlane::replay {
namespace {

constexpr uint32_t kCheckpointFirstSourcePort = 33000;  // + job (at most 64 jobs)
// How the training load splits between collectives and checkpoint writes.
constexpr double kCheckpointShareOfTraining = 0.10;
// Every fourth job runs NCCL over TCP sockets instead of RoCE (clusters without RDMA NICs).
constexpr uint32_t kTcpJobEvery = 4;
constexpr uint64_t kCheckpointPeriodNs = 10'000'000;

constexpr uint32_t kRocePayloadBytes = 4096;
constexpr uint32_t kJumboMssBytes = 8948;  // 9000-byte MTU
// 1500-byte MTU minus IP, TCP and the 12 bytes of the TCP timestamp option senders negotiate.
constexpr uint32_t kMssBytes = 1448;
constexpr uint32_t kMssBytesIpv6 = 1428;

constexpr uint16_t kInferencePorts[] = {8001, 50051, 8080, 8000};
constexpr const char* kInferencePortNames[] = {"inference triton:8001", "inference grpc:50051",
                                               "inference kserve:8080", "inference vllm:8000"};

uint32_t ipv4(uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
    return a << 24 | b << 16 | c << 8 | d;
}

IpAddress benchmark_v4(uint32_t third, uint32_t fourth) {
    return IpAddress::v4(ipv4(198, 18, third, fourth));
}

IpAddress inference_client_v4(uint32_t client) {
    return IpAddress::v4(ipv4(198, 19, client / 250, 1 + client % 250));
}

// 2001:2:0:<subnet>::<host>, inside the 2001:2::/48 benchmarking range.
IpAddress benchmark_v6(uint16_t subnet, uint16_t host) {
    std::array<uint8_t, 16> bytes{0x20, 0x01, 0x00, 0x02, 0x00, 0x00};
    bytes[6] = static_cast<uint8_t>(subnet >> 8);
    bytes[7] = static_cast<uint8_t>(subnet);
    bytes[14] = static_cast<uint8_t>(host >> 8);
    bytes[15] = static_cast<uint8_t>(host);
    return IpAddress::v6(bytes);
}

// Independent, reproducible seed per traffic source.
uint64_t source_seed(uint64_t seed, uint64_t source_id) {
    return Prng(seed, 0x5EED'0000ULL + source_id).next_u64();
}

void require(bool condition, const std::string& message) {
    if (!condition) throw std::invalid_argument(message);
}

// "12.5 ms": the generator's options are durations the user gave in any unit.
std::string milliseconds_text(uint64_t ns) {
    char text[32];
    std::snprintf(text, sizeof text, "%g ms", static_cast<double>(ns) / 1e6);
    return text;
}

}  // namespace

const char* traffic_class_name(TrafficClass traffic_class) {
    switch (traffic_class) {
        case TrafficClass::training:
            return "training";
        case TrafficClass::inference:
            return "inference";
        case TrafficClass::other:
            return "other";
    }
    return "unknown";
}

void validate(const GenOptions& options) {
    require(std::isfinite(options.link_rate_bps) && options.link_rate_bps >= 1e6 &&
                options.link_rate_bps <= 10e12,
            "link rate must be between 1 Mb/s and 10 Tb/s");
    require(options.duration_ns >= 2'000'000 && options.duration_ns <= 600'000'000'000ULL,
            "duration must be between 2 ms and 600 s");
    for (const auto& [load, name] : {std::pair{options.training_load, "training load"},
                                     std::pair{options.inference_load, "inference load"},
                                     std::pair{options.other_load, "other load"}}) {
        require(std::isfinite(load) && load >= 0 && load <= 10,
                std::string(name) + " must be between 0 and 10 (fraction of the link rate)");
    }
    require(options.training_jobs <= 64, "jobs must be at most 64");
    require(options.flows_per_job >= 1 && options.flows_per_job <= 64,
            "flows per job must be between 1 and 64");
    require(options.inference_clients <= 4000, "clients must be at most 4000");
    require(std::isfinite(options.ipv6_fraction) && options.ipv6_fraction >= 0 &&
                options.ipv6_fraction <= 1,
            "ipv6 fraction must be between 0 and 1");
    require(std::isfinite(options.surge_factor) && options.surge_factor >= 1 &&
                options.surge_factor <= 1000,
            "surge factor must be between 1 and 1000");
    if (options.surge_factor > 1) {
        // The defaults (10-30 ms) outlast a short --duration: the values say which bound to move.
        const std::string interval = "surge interval " + milliseconds_text(options.surge_start_ns) +
                                     " to " + milliseconds_text(options.surge_end_ns);
        require(options.surge_end_ns > options.surge_start_ns,
                interval + ": the start must come before the end");
        require(
            options.surge_end_ns <= options.duration_ns,
            interval + " must end within the duration, " + milliseconds_text(options.duration_ns));
        require(options.surge_end_ns - options.surge_start_ns >= 2'000'000,
                interval + " must last at least 2 ms");
        require(options.surge_clients <= 4000, "surge clients must be at most 4000");
        require(options.surge_clients != 0 || options.inference_clients != 0,
                "a surge needs clients (surge clients, or inference clients)");
        require(options.inference_load > 0, "a surge multiplies the inference load: it is 0");
    }
}

double GenSummary::offered_bps(TrafficClass traffic_class) const {
    if (duration_ns == 0) return 0;
    return static_cast<double>(per_class[static_cast<size_t>(traffic_class)].bytes) * 8e9 /
           static_cast<double>(duration_ns);
}

double GenSummary::offered_load(TrafficClass traffic_class) const {
    return link_rate_bps > 0 ? offered_bps(traffic_class) / link_rate_bps : 0;
}

TrafficGenerator::TrafficGenerator(const GenOptions& options) {
    validate(options);
    edge_ingress_link_ = options.edge_ingress_link;
    link_rate_bps_ = options.link_rate_bps;
    summary_.duration_ns = options.duration_ns;
    summary_.link_rate_bps = options.link_rate_bps;
    summary_.per_job.resize(options.training_jobs);

    uint64_t next_source_id = 0;
    const auto add_component = [&](std::string name, TrafficClass traffic_class, int job) {
        summary_.components.push_back({std::move(name), traffic_class, job, {}});
        return static_cast<uint32_t>(summary_.components.size() - 1);
    };
    const auto add_source = [&](std::unique_ptr<FrameSource> source, uint32_t component,
                                bool edge = true) {
        sources_.push_back(std::move(source));
        component_of_source_.push_back(component);
        through_edge_link_.push_back(edge && summary_.components[component].traffic_class !=
                                                 TrafficClass::training);
    };
    const double link = options.link_rate_bps;
    const double duration = static_cast<double>(options.duration_ns);

    // Training: per job, collective bursts on a ring plus periodic checkpoint writes.
    const uint32_t jobs = options.training_jobs;
    const uint32_t flows = options.flows_per_job;
    for (uint32_t job = 0; job < jobs; ++job) {
        const double job_bps = options.training_load * link / jobs;
        const bool tcp_job = !options.roce_only && job % kTcpJobEvery == kTcpJobEvery - 1;
        BulkBurstSpec collective;
        collective.transport = tcp_job ? BulkTransport::tcp : BulkTransport::roce;
        collective.payload_bytes = tcp_job ? kJumboMssBytes : kRocePayloadBytes;
        collective.traffic_class =
            static_cast<uint8_t>((tcp_job ? 0 : options.roce_dscp << 2) | kEcnEct0);
        if (!tcp_job) collective.pcp = options.roce_pcp;
        collective.steps_per_iteration = flows > 1 ? 2 * (flows - 1) : 1;  // ring all-reduce
        collective.target_packets_per_burst = 32;
        collective.offered_bps =
            job_bps * (options.roce_only ? 1.0 : 1 - kCheckpointShareOfTraining);
        collective.duration_ns = options.duration_ns;
        collective.nominal_sender_rate_bps = tcp_job ? 25e9 : 100e9;
        collective.seed = source_seed(options.seed, next_source_id++);
        for (uint32_t f = 0; f < flows; ++f) {
            BulkFlow flow;
            flow.src = benchmark_v4(16 + job, 1 + f);
            flow.dst = benchmark_v4(16 + job, 1 + (f + 1) % std::max<uint32_t>(flows, 2));
            if (tcp_job) {
                flow.src_port = static_cast<uint16_t>(40000 + f);
                flow.dst_port = static_cast<uint16_t>(5201 + f);
            } else {
                flow.dest_qp = 0x100 + job * 256 + f;
                // RoCEv2 puts flow entropy in the UDP source port (0xC000-0xFFFF).
                flow.src_port =
                    static_cast<uint16_t>(0xC000 | ((flow.dest_qp * 2654435761U) >> 18 & 0x3FFF));
                flow.dst_port = kRoceV2UdpPort;
            }
            collective.flows.push_back(flow);
        }
        const uint32_t collective_component =
            add_component("job" + std::to_string(job) + (tcp_job ? " nccl-tcp" : " roce"),
                          TrafficClass::training, static_cast<int>(job));
        add_source(std::make_unique<BulkBurstSource>(collective), collective_component);

        if (options.roce_only) continue;  // checkpoint writes are TCP: lossy
        const bool nfs = job % 2 == 0;
        BulkBurstSpec checkpoint;
        checkpoint.transport = BulkTransport::tcp;
        checkpoint.payload_bytes = nfs ? kJumboMssBytes : kMssBytes;
        checkpoint.steps_per_iteration = 1;
        checkpoint.target_iteration_period_ns = kCheckpointPeriodNs;
        checkpoint.offered_bps = job_bps * kCheckpointShareOfTraining;
        checkpoint.duration_ns = options.duration_ns;
        checkpoint.nominal_sender_rate_bps = 25e9;
        checkpoint.seed = source_seed(options.seed, next_source_id++);
        // Source ports in the Linux ephemeral range and clear of every model-serving port
        // (50000 + job reached gRPC's 50051 at job 51: a checkpoint counted as inference).
        checkpoint.flows.push_back({benchmark_v4(16 + job, 1), benchmark_v4(100, nfs ? 10 : 11),
                                    static_cast<uint16_t>(kCheckpointFirstSourcePort + job),
                                    static_cast<uint16_t>(nfs ? 2049 : 443), 0});
        const uint32_t checkpoint_component = add_component(
            "job" + std::to_string(job) + (nfs ? " checkpoint-nfs" : " checkpoint-s3"),
            TrafficClass::training, static_cast<int>(job));
        add_source(std::make_unique<BulkBurstSource>(checkpoint), checkpoint_component);
    }

    // A request/response profile becomes two sources per client, one per direction.
    const auto add_client = [&](TransactionSpec spec, uint32_t component, bool edge = true) {
        if (spec.duration_ns == 0) spec.duration_ns = options.duration_ns;
        spec.seed = source_seed(options.seed, next_source_id++);
        add_source(std::make_unique<TransactionSource>(spec, TransactionDirection::requests),
                   component, edge);
        add_source(std::make_unique<TransactionSource>(spec, TransactionDirection::responses),
                   component, edge);
    };

    // Inference: gRPC/HTTP2 clients of model servers, DSCP 0 (untrusted marking).
    const uint32_t clients = options.inference_clients;
    uint32_t inference_components[4];
    for (size_t port = 0; port < 4; ++port) {
        inference_components[port] =
            add_component(kInferencePortNames[port], TrafficClass::inference, -1);
    }
    for (uint32_t client = 0; client < clients; ++client) {
        const uint32_t port = client % 4;
        const bool v6 = std::floor((client + 1) * options.ipv6_fraction) >
                        std::floor(client * options.ipv6_fraction);
        TransactionSpec spec;
        spec.client =
            v6 ? benchmark_v6(1, static_cast<uint16_t>(client + 1)) : inference_client_v4(client);
        spec.server =
            v6 ? benchmark_v6(2, static_cast<uint16_t>(port + 1)) : benchmark_v4(200, 1 + port);
        spec.client_port = static_cast<uint16_t>(49152 + client);
        spec.server_port = kInferencePorts[port];
        spec.protocol = L4Protocol::tcp;
        spec.framing = AppFraming::grpc;
        spec.request_min_bytes = 100;
        spec.request_max_bytes = 600;
        spec.response_min_bytes = 1000;
        spec.response_max_bytes = 16000;
        spec.mss_bytes = v6 ? kMssBytesIpv6 : kMssBytes;
        // Model servers and clients reach the gateway through links no faster than its own:
        // an RPC's segments arrive at most at the link rate (bulk senders aggregate faster).
        spec.client_rate_bps = std::min(spec.client_rate_bps, link);
        spec.server_rate_bps = std::min(spec.server_rate_bps, link);
        spec.service_min_ns = 50'000;
        spec.service_max_ns = 500'000;
        spec.budget_bytes = options.inference_load * link * duration / 8e9 / clients;
        // Half the clients are steady (Poisson), half bursty (on 2 ms / off 6 ms).
        spec.pattern = client % 2 == 0 ? ArrivalPattern::poisson : ArrivalPattern::on_off;
        spec.on_mean_ns = 2e6;
        spec.off_mean_ns = 6e6;
        add_client(spec, inference_components[port]);
    }

    // Other: DNS, interactive SSH and background HTTP, from a small office-like subnet.
    struct OtherProfile {
        const char* name;
        double share;
        uint32_t clients;
        uint16_t port;
        L4Protocol protocol;
        AppFraming framing;
        uint32_t request_min, request_max, response_min, response_max;
        uint64_t service_min_ns, service_max_ns;
        double server_rate_bps;
        ArrivalPattern pattern;
    };
    const OtherProfile other_profiles[] = {
        {"dns", 0.1, 4, 53, L4Protocol::udp, AppFraming::dns, 45, 80, 80, 300, 50'000, 500'000,
         10e9, ArrivalPattern::poisson},
        {"ssh", 0.1, 2, 22, L4Protocol::tcp, AppFraming::ssh, 36, 120, 36, 400, 100'000, 1'000'000,
         10e9, ArrivalPattern::on_off},
        {"http", 0.8, 4, 80, L4Protocol::tcp, AppFraming::http, 60, 200, 8000, 64000, 200'000,
         1'000'000, 10e9, ArrivalPattern::poisson},
    };
    uint32_t profile_index = 0;
    for (const OtherProfile& profile : other_profiles) {
        const uint32_t component = add_component(profile.name, TrafficClass::other, -1);
        for (uint32_t client = 0; client < profile.clients; ++client) {
            TransactionSpec spec;
            spec.client = benchmark_v4(250, 1 + profile_index * 10 + client);
            spec.server = benchmark_v4(251, profile.port);
            spec.client_port = static_cast<uint16_t>(53000 + profile_index * 100 + client);
            spec.server_port = profile.port;
            spec.protocol = profile.protocol;
            spec.framing = profile.framing;
            spec.request_min_bytes = profile.request_min;
            spec.request_max_bytes = profile.request_max;
            spec.response_min_bytes = profile.response_min;
            spec.response_max_bytes = profile.response_max;
            spec.mss_bytes = kMssBytes;
            spec.service_min_ns = profile.service_min_ns;
            spec.service_max_ns = profile.service_max_ns;
            spec.server_rate_bps = profile.server_rate_bps;
            spec.budget_bytes =
                options.other_load * profile.share * link * duration / 8e9 / profile.clients;
            spec.pattern = profile.pattern;
            spec.on_mean_ns = 3e6;
            spec.off_mean_ns = 10e6;
            add_client(spec, component);
        }
        ++profile_index;
    }

    // The surge, after every other source so that their seeds do not move.
    if (options.surge_factor > 1) {
        const uint32_t surge_clients =
            options.surge_clients != 0 ? options.surge_clients : options.inference_clients;
        const uint64_t surge_ns = options.surge_end_ns - options.surge_start_ns;
        const double extra_load = (options.surge_factor - 1) * options.inference_load;
        const uint32_t component = add_component("inference surge", TrafficClass::inference, -1);
        for (uint32_t client = 0; client < surge_clients; ++client) {
            const uint32_t port = client % 4;
            TransactionSpec spec;
            // 198.19.16.0 and up: clear of the base clients (at most 4000: 198.19.0-15.x).
            spec.client = IpAddress::v4(ipv4(198, 19, 16 + client / 250, 1 + client % 250));
            spec.server = benchmark_v4(200, 1 + port);
            spec.client_port = static_cast<uint16_t>(49152 + 4000 + client);
            spec.server_port = kInferencePorts[port];
            spec.protocol = L4Protocol::tcp;
            spec.framing = AppFraming::grpc;
            spec.request_min_bytes = 100;
            spec.request_max_bytes = 600;
            spec.response_min_bytes = 1000;
            spec.response_max_bytes = 16000;
            spec.mss_bytes = kMssBytes;
            spec.client_rate_bps = std::min(spec.client_rate_bps, link);
            spec.server_rate_bps = std::min(spec.server_rate_bps, link);
            spec.service_min_ns = 50'000;
            spec.service_max_ns = 500'000;
            spec.start_ns = options.surge_start_ns;
            spec.duration_ns = surge_ns;
            spec.budget_bytes =
                extra_load * link * static_cast<double>(surge_ns) / 8e9 / surge_clients;
            spec.pattern = ArrivalPattern::poisson;
            add_client(spec, component, false);
        }
    }

    for (uint32_t source = 0; source < sources_.size(); ++source) {
        if (sources_[source]->advance()) heap_.push({sources_[source]->timestamp_ns(), source});
    }
}

TrafficGenerator::~TrafficGenerator() = default;

bool TrafficGenerator::next(GeneratedFrame& frame) {
    // The previous frame's source advances only now, so the span handed out stayed valid.
    if (last_source_ >= 0) {
        FrameSource& previous = *sources_[static_cast<size_t>(last_source_)];
        if (previous.advance()) {
            heap_.push({previous.timestamp_ns(), static_cast<uint32_t>(last_source_)});
        }
        last_source_ = -1;
    }
    if (heap_.empty()) return false;
    HeapEntry top = heap_.top();
    heap_.pop();
    // Edge traffic shares one ingress link: a frame that would arrive while that link is still
    // carrying an earlier one arrives when it is free (per-source order is kept, as each
    // source's next frame enters the heap only after this one is handed out).
    while (edge_ingress_link_ && through_edge_link_[top.source] != 0 &&
           top.timestamp_ns < edge_link_free_ns_) {
        heap_.push({edge_link_free_ns_, top.source});
        top = heap_.top();
        heap_.pop();
    }
    const FrameSource& source = *sources_[top.source];
    ComponentSummary& component = summary_.components[component_of_source_[top.source]];
    if (edge_ingress_link_ && through_edge_link_[top.source] != 0) {
        const double bits =
            8.0 * static_cast<double>(wire_bytes(static_cast<uint32_t>(source.frame().size())));
        edge_link_free_ns_ =
            top.timestamp_ns + static_cast<uint64_t>(std::ceil(bits * 1e9 / link_rate_bps_));
    }
    frame.timestamp_ns = top.timestamp_ns;
    frame.bytes = source.frame();
    frame.traffic_class = component.traffic_class;
    frame.job = component.job;

    const uint64_t bytes = frame.bytes.size();
    const auto count = [bytes](PacketByteCount& counter) {
        ++counter.packets;
        counter.bytes += bytes;
    };
    count(component.sent);
    count(summary_.per_class[static_cast<size_t>(component.traffic_class)]);
    if (component.job >= 0) count(summary_.per_job[static_cast<size_t>(component.job)]);
    count(summary_.total);
    summary_.last_timestamp_ns = top.timestamp_ns;
    last_source_ = static_cast<int32_t>(top.source);
    return true;
}

GenSummary write_traffic_pcap(const GenOptions& options) {
    if (options.output_path.empty()) throw std::invalid_argument("output path is required");
    TrafficGenerator generator(options);
    PcapWriter writer(options.output_path, TimestampPrecision::nanosecond);
    GeneratedFrame frame;
    while (generator.next(frame))
        writer.write(frame.timestamp_ns, frame.bytes);
    writer.close();
    return generator.summary();
}

}  // namespace twinlane::replay
