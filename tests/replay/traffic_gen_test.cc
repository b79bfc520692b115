// TrafficGenerator: determinism, offered load per class, address ranges, checksums, order,
// RoCEv2 framing and TCP sequence continuity, checked by decoding the frames independently.
#include "replay/traffic_gen.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "replay/pcap_io.h"
#include "tests/replay/temp_dir_test.h"
#include "tests/replay/trace_inspect.h"

namespace twinlane::replay {
namespace {

using testing::decode;
using testing::DecodedFrame;
using testing::read32;

// The test's own view of which ports make a class (independent of the generator's tables).
TrafficClass class_by_ports(const DecodedFrame& frame) {
    // The classifier's defaults, in its order: RoCEv2 first, then model-serving ports (either
    // direction).
    if (frame.protocol == 17 && frame.dst_port == 4791) return TrafficClass::training;
    const std::set<uint16_t> inference = {7070, 8000, 8001, 8080, 8500, 8501, 50051};
    const std::set<uint16_t> other = {53, 22, 80};
    const auto either = [&](const std::set<uint16_t>& ports) {
        return ports.count(frame.src_port) > 0 || ports.count(frame.dst_port) > 0;
    };
    if (either(inference)) return TrafficClass::inference;
    if (either(other)) return TrafficClass::other;
    return TrafficClass::training;
}

bool in_benchmark_v4(const uint8_t* address) {
    return address[0] == 198 && (address[1] == 18 || address[1] == 19);  // 198.18.0.0/15
}

bool in_benchmark_v6(const uint8_t* address) {
    const uint8_t prefix[6] = {0x20, 0x01, 0x00, 0x02, 0x00, 0x00};  // 2001:2::/48
    return std::equal(prefix, prefix + 6, address);
}

// Everything the tests assert, gathered in one pass over a generated trace.
struct TraceFacts {
    GenSummary summary;
    uint64_t frames = 0;
    uint64_t undecodable = 0;
    uint64_t out_of_order = 0;
    uint64_t after_duration = 0;
    uint64_t bad_ipv4_checksum = 0;
    uint64_t bad_l4_checksum = 0;
    uint64_t outside_benchmark_range = 0;
    uint64_t class_mismatch = 0;  // generator's class label vs port-based class
    std::array<uint64_t, kTrafficClassCount> bytes_by_ports{};
    // RoCEv2
    uint64_t roce_frames = 0;
    uint64_t roce_not_ect0 = 0;
    uint64_t roce_bad_opcode = 0;
    uint64_t roce_bad_length = 0;
    uint64_t roce_psn_gaps = 0;
    std::set<uint32_t> roce_qps;
    // TCP
    uint64_t tcp_sequence_gaps = 0;
    uint64_t tcp_without_ack = 0;
    uint64_t inference_nonzero_dscp = 0;
    uint64_t inference_requests_over_600 = 0;
    uint64_t inference_segments_over_1500 = 0;
    std::set<std::array<uint8_t, 16>> inference_v6_clients;
    std::set<std::array<uint8_t, 16>> inference_v4_clients;
    // Fastest training arrival rate seen over 20 µs windows, in bits/s.
    double peak_training_bps = 0;
};

TraceFacts collect(const GenOptions& options) {
    TraceFacts facts;
    TrafficGenerator generator(options);
    GeneratedFrame frame;
    uint64_t previous_ns = 0;
    std::map<uint32_t, uint32_t> next_psn;  // by dest QP
    std::map<std::tuple<std::array<uint8_t, 16>, uint16_t, uint16_t>, uint32_t> next_seq;
    constexpr uint64_t kWindowNs = 20'000;
    uint64_t window_start = 0, window_bytes = 0;
    while (generator.next(frame)) {
        ++facts.frames;
        if (frame.timestamp_ns < previous_ns) ++facts.out_of_order;
        previous_ns = frame.timestamp_ns;
        if (frame.timestamp_ns >= options.duration_ns) ++facts.after_duration;
        const DecodedFrame decoded = decode(frame.bytes);
        if (!decoded.valid) {
            ++facts.undecodable;
            continue;
        }
        if (decoded.ip_version == 4 && !decoded.ipv4_checksum_ok) ++facts.bad_ipv4_checksum;
        if (!decoded.l4_checksum_ok) ++facts.bad_l4_checksum;
        const bool v4 = decoded.ip_version == 4;
        const auto in_range = v4 ? in_benchmark_v4 : in_benchmark_v6;
        if (!in_range(decoded.src_ip) || !in_range(decoded.dst_ip)) {
            ++facts.outside_benchmark_range;
        }
        const TrafficClass by_ports = class_by_ports(decoded);
        if (by_ports != frame.traffic_class) ++facts.class_mismatch;
        facts.bytes_by_ports[static_cast<size_t>(by_ports)] += frame.bytes.size();

        if (by_ports == TrafficClass::training) {
            if (frame.timestamp_ns >= window_start + kWindowNs) {
                facts.peak_training_bps = std::max(
                    facts.peak_training_bps, static_cast<double>(window_bytes) * 8e9 / kWindowNs);
                window_start = frame.timestamp_ns;
                window_bytes = 0;
            }
            window_bytes += frame.bytes.size();
        }

        if (decoded.protocol == 17 && decoded.dst_port == 4791) {
            ++facts.roce_frames;
            if ((decoded.traffic_class & 0x3) != 0x2) ++facts.roce_not_ect0;
            const uint8_t* bth = frame.bytes.data() + decoded.l4_payload_offset;
            const uint8_t opcode = bth[0];
            const bool has_reth = opcode == 0x06 || opcode == 0x0A;
            if (opcode != 0x06 && opcode != 0x07 && opcode != 0x08 && opcode != 0x0A) {
                ++facts.roce_bad_opcode;
            }
            if (decoded.l4_payload_length != 12 + (has_reth ? 16 : 0) + 4096 + 4) {
                ++facts.roce_bad_length;
            }
            const uint32_t qp = read32(bth + 4) & 0xFFFFFF;
            const uint32_t psn = read32(bth + 8) & 0xFFFFFF;
            facts.roce_qps.insert(qp);
            const auto expected = next_psn.find(qp);
            if (expected != next_psn.end() && expected->second != psn) ++facts.roce_psn_gaps;
            next_psn[qp] = (psn + 1) & 0xFFFFFF;
        }
        if (decoded.protocol == 6) {
            if ((decoded.tcp_flags & 0x10) == 0) ++facts.tcp_without_ack;
            const size_t address_bytes = v4 ? 4 : 16;
            std::array<uint8_t, 16> src{};  // IPv4 addresses use the first 4 bytes
            std::copy(decoded.src_ip, decoded.src_ip + address_bytes, src.begin());
            const auto key = std::make_tuple(src, decoded.src_port, decoded.dst_port);
            const auto expected = next_seq.find(key);
            if (expected != next_seq.end() && expected->second != decoded.tcp_seq) {
                ++facts.tcp_sequence_gaps;
            }
            next_seq[key] = decoded.tcp_seq + static_cast<uint32_t>(decoded.l4_payload_length);
            if (by_ports == TrafficClass::inference) {
                if ((decoded.traffic_class >> 2) != 0) ++facts.inference_nonzero_dscp;
                if (frame.bytes.size() > 1514) ++facts.inference_segments_over_1500;
                const bool request = decoded.dst_port == 8001 || decoded.dst_port == 50051 ||
                                     decoded.dst_port == 8080 || decoded.dst_port == 8000;
                if (request) {
                    if (decoded.l4_payload_length > 600) ++facts.inference_requests_over_600;
                    (v4 ? facts.inference_v4_clients : facts.inference_v6_clients).insert(src);
                }
            }
        }
    }
    facts.summary = generator.summary();
    return facts;
}

struct LoadCase {
    const char* name;
    double link_rate_bps;
    uint64_t duration_ns;
    double training, inference, other;
    uint32_t jobs, flows, clients;
    double ipv6_fraction;
    uint64_t seed;
};

GenOptions options_for(const LoadCase& c) {
    GenOptions options;
    options.link_rate_bps = c.link_rate_bps;
    options.duration_ns = c.duration_ns;
    options.training_load = c.training;
    options.inference_load = c.inference;
    options.other_load = c.other;
    options.training_jobs = c.jobs;
    options.flows_per_job = c.flows;
    options.inference_clients = c.clients;
    options.ipv6_fraction = c.ipv6_fraction;
    options.seed = c.seed;
    return options;
}

class GeneratedTrace : public ::testing::TestWithParam<LoadCase> {
  protected:
    // One generation per parameter set, shared by the tests that inspect it.
    static const TraceFacts& facts() {
        static std::map<std::string, TraceFacts> cache;
        const LoadCase& c = GetParam();
        auto it = cache.find(c.name);
        if (it == cache.end()) it = cache.emplace(c.name, collect(options_for(c))).first;
        return it->second;
    }
};

TEST_P(GeneratedTrace, OfferedLoadPerClassIsWithinFivePercentOfRequest) {
    const LoadCase& c = GetParam();
    const TraceFacts& f = facts();
    const double requested[] = {c.training, c.inference, c.other};
    for (size_t k = 0; k < kTrafficClassCount; ++k) {
        const double measured = static_cast<double>(f.bytes_by_ports[k]) * 8e9 /
                                static_cast<double>(c.duration_ns) / c.link_rate_bps;
        EXPECT_NEAR(measured, requested[k], 0.05 * requested[k])
            << traffic_class_name(static_cast<TrafficClass>(k));
        EXPECT_GT(f.bytes_by_ports[k], 0U);
    }
}

TEST_P(GeneratedTrace, SummaryAgreesWithTheFrames) {
    const TraceFacts& f = facts();
    EXPECT_EQ(f.summary.total.packets, f.frames);
    EXPECT_EQ(f.class_mismatch, 0U);
    for (size_t k = 0; k < kTrafficClassCount; ++k) {
        EXPECT_EQ(f.summary.per_class[k].bytes, f.bytes_by_ports[k]);
    }
    uint64_t job_bytes = 0;
    for (const auto& job : f.summary.per_job) {
        EXPECT_GT(job.packets, 0U);
        job_bytes += job.bytes;
    }
    EXPECT_EQ(job_bytes, f.summary.per_class[0].bytes);
}

TEST_P(GeneratedTrace, FramesAreValidOrderedAndInsideTheDuration) {
    const TraceFacts& f = facts();
    EXPECT_GT(f.frames, 1000U);
    EXPECT_EQ(f.undecodable, 0U);
    EXPECT_EQ(f.out_of_order, 0U);
    EXPECT_EQ(f.after_duration, 0U);
    EXPECT_EQ(f.bad_ipv4_checksum, 0U);
    EXPECT_EQ(f.bad_l4_checksum, 0U);
}

TEST_P(GeneratedTrace, AllAddressesAreInTheBenchmarkingRanges) {
    EXPECT_EQ(facts().outside_benchmark_range, 0U);
}

TEST_P(GeneratedTrace, RoceFramesCarryWriteBthWithEct0AndContiguousPsns) {
    const LoadCase& c = GetParam();
    const TraceFacts& f = facts();
    ASSERT_GT(f.roce_frames, 0U);
    EXPECT_EQ(f.roce_not_ect0, 0U);
    EXPECT_EQ(f.roce_bad_opcode, 0U);
    EXPECT_EQ(f.roce_bad_length, 0U);
    EXPECT_EQ(f.roce_psn_gaps, 0U);
    const uint32_t roce_jobs = c.jobs - c.jobs / 4;  // every fourth job uses NCCL over TCP
    EXPECT_EQ(f.roce_qps.size(), static_cast<size_t>(roce_jobs) * c.flows);
}

TEST_P(GeneratedTrace, TcpStreamsHaveContiguousSequenceNumbersAndAck) {
    const TraceFacts& f = facts();
    EXPECT_EQ(f.tcp_sequence_gaps, 0U);
    EXPECT_EQ(f.tcp_without_ack, 0U);
}

TEST_P(GeneratedTrace, InferenceIsUnmarkedSmallRequestsMtuSegments) {
    const LoadCase& c = GetParam();
    const TraceFacts& f = facts();
    EXPECT_EQ(f.inference_nonzero_dscp, 0U);
    EXPECT_EQ(f.inference_requests_over_600, 0U);
    EXPECT_EQ(f.inference_segments_over_1500, 0U);
    const auto v6_clients = static_cast<size_t>(c.clients * c.ipv6_fraction);
    EXPECT_EQ(f.inference_v6_clients.size(), v6_clients);
    EXPECT_EQ(f.inference_v4_clients.size(), c.clients - v6_clients);
}

TEST_P(GeneratedTrace, TrainingSendersBurstFasterThanTheLink) {
    const LoadCase& c = GetParam();
    EXPECT_GT(facts().peak_training_bps, 2 * c.link_rate_bps);
}

INSTANTIATE_TEST_SUITE_P(
    Workloads, GeneratedTrace,
    ::testing::Values(LoadCase{"defaults_20ms", 10e9, 20'000'000, 1.10, 0.05, 0.02, 4, 4, 32, 0.1,
                               1},
                      LoadCase{"link25g_mixed", 25e9, 10'000'000, 0.6, 0.2, 0.1, 5, 8, 12, 0.5, 77},
                      LoadCase{"link1g_light", 1e9, 40'000'000, 0.3, 0.1, 0.05, 1, 2, 4, 0.0, 9},
                      // Most jobs allowed: no job's ports may look like a serving port.
                      LoadCase{"jobs64", 100e9, 4'000'000, 1.0, 0.05, 0.02, 64, 4, 16, 0.1, 5}),
    [](const ::testing::TestParamInfo<LoadCase>& info) { return std::string(info.param.name); });

// ----- determinism through the pcap file

class GeneratedFile : public testing::TempDirTest {
  protected:
    std::vector<char> generate(uint64_t seed, const std::string& name,
                               GenSummary* summary = nullptr) {
        GenOptions options;
        options.duration_ns = 8'000'000;
        options.seed = seed;
        options.output_path = (dir_ / name).string();
        const GenSummary result = write_traffic_pcap(options);
        if (summary != nullptr) *summary = result;
        std::ifstream in(options.output_path, std::ios::binary);
        return {std::istreambuf_iterator<char>(in), {}};
    }
};

TEST_F(GeneratedFile, SameSeedGivesIdenticalBytesAndOtherSeedsDiffer) {
    const auto first = generate(42, "a.pcap");
    const auto again = generate(42, "b.pcap");
    const auto other = generate(43, "c.pcap");
    ASSERT_GT(first.size(), 1'000'000U);
    EXPECT_TRUE(first == again);
    EXPECT_FALSE(first == other);
}

TEST_F(GeneratedFile, PcapReadsBackWithNanosecondTimestampsAndFullFrames) {
    GenSummary summary;
    generate(5, "trace.pcap", &summary);
    PcapReader reader((dir_ / "trace.pcap").string());
    PcapRecord record;
    uint64_t packets = 0, bytes = 0, previous = 0, sub_microsecond = 0;
    while (reader.next(record)) {
        ++packets;
        bytes += record.wire_length;
        EXPECT_EQ(record.captured.size(), record.wire_length);
        EXPECT_GE(record.timestamp_ns, previous);
        previous = record.timestamp_ns;
        if (record.timestamp_ns % 1000 != 0) ++sub_microsecond;
    }
    EXPECT_EQ(packets, summary.total.packets);
    EXPECT_EQ(bytes, summary.total.bytes);
    EXPECT_EQ(previous, summary.last_timestamp_ns);
    EXPECT_GT(sub_microsecond, packets / 2);  // ns resolution is really used
}

TEST(GenOptionsValidation, RejectsOutOfRangeValues) {
    const auto rejects = [](auto mutate) {
        GenOptions options;
        mutate(options);
        EXPECT_THROW(validate(options), std::invalid_argument);
    };
    rejects([](GenOptions& o) { o.duration_ns = 1'000'000; });
    rejects([](GenOptions& o) { o.link_rate_bps = 0; });
    rejects([](GenOptions& o) { o.flows_per_job = 0; });
    rejects([](GenOptions& o) { o.inference_load = -0.1; });
    rejects([](GenOptions& o) { o.ipv6_fraction = 1.5; });
    EXPECT_NO_THROW(validate(GenOptions{}));
    GenOptions no_output;
    EXPECT_THROW(write_traffic_pcap(no_output), std::invalid_argument);
}

// gen's default surge (10-30 ms) does not fit a 20 ms trace: the refusal gives the values.
TEST(GenOptionsValidation, ASurgeOutsideTheTraceNamesItsBounds) {
    const auto refusal = [](auto mutate) {
        GenOptions options;
        options.surge_factor = 5;
        options.surge_start_ns = 10'000'000;
        options.surge_end_ns = 30'000'000;
        mutate(options);
        try {
            validate(options);
        } catch (const std::invalid_argument& error) {
            return std::string(error.what());
        }
        return std::string("accepted");
    };
    EXPECT_EQ(refusal([](GenOptions& o) { o.duration_ns = 20'000'000; }),
              "surge interval 10 ms to 30 ms must end within the duration, 20 ms");
    EXPECT_EQ(refusal([](GenOptions& o) { o.surge_end_ns = o.surge_start_ns; }),
              "surge interval 10 ms to 10 ms: the start must come before the end");
    EXPECT_EQ(refusal([](GenOptions& o) { o.surge_end_ns = 11'500'000; }),
              "surge interval 10 ms to 11.5 ms must last at least 2 ms");
    EXPECT_EQ(refusal([](GenOptions&) {}), "accepted");
}

TEST(GenOptionsValidation, AnOutputIsRequired) {
    GenOptions no_output;
    EXPECT_THROW(write_traffic_pcap(no_output), std::invalid_argument);
}

TEST(GeneratorWithoutTraining, ZeroLoadClassesProduceNothing) {
    GenOptions options;
    options.duration_ns = 5'000'000;
    options.training_load = 0;
    options.other_load = 0;
    TrafficGenerator generator(options);
    GeneratedFrame frame;
    uint64_t frames = 0;
    while (generator.next(frame)) {
        ++frames;
        EXPECT_EQ(frame.traffic_class, TrafficClass::inference);
    }
    EXPECT_GT(frames, 0U);
    EXPECT_EQ(generator.summary().per_class[0].packets, 0U);
}

}  // namespace
}  // namespace twinlane::replay
