// Splitting TSO/GRO-sized capture records into wire segments (replay/wire_segments.h), and
// the replay engine replaying such records as those segments; also how the engine takes other
// capture oddities (unsplittable oversize and empty records, timestamps going back).
#include "replay/wire_segments.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <string>

#include "classifier/dscp_rewrite.h"
#include "conf/compile.h"
#include "conf/load_policy.h"
#include "conf/policy.h"
#include "replay/fifo_discipline.h"
#include "replay/replay_engine.h"
#include "replay/scheduler_discipline.h"
#include "tests/classifier/packet_builder.h"

namespace twinlane::replay {
namespace {

using classifier::testing::PacketBuilder;
constexpr uint32_t kMaxFrame = 1518;  // MTU 1500

uint16_t get16(const std::vector<uint8_t>& f, size_t at) {
    return uint16_t((f[at] << 8) | f[at + 1]);
}
uint32_t get32(const std::vector<uint8_t>& f, size_t at) {
    return (uint32_t{get16(f, at)} << 16) | get16(f, at + 2);
}

// A payload whose bytes say where they were, so segment payloads can be checked in place.
std::vector<uint8_t> numbered_payload_frame(PacketBuilder builder, uint32_t payload) {
    std::vector<uint8_t> frame = builder.payload(payload).build();
    const size_t start = frame.size() - payload;
    for (uint32_t i = 0; i < payload; ++i)
        frame[start + i] = uint8_t(i * 7 + 3);
    return frame;
}

TEST(WireSegments, SmallFramesAndDisabledSplittingStayWhole) {
    const auto frame = PacketBuilder()
                           .ethernet()
                           .ipv4({198, 18, 0, 1}, {198, 18, 0, 2}, 6)
                           .tcp(1, 2)
                           .payload(1000)
                           .build();
    EXPECT_EQ(plan_segments(frame, uint32_t(frame.size()), 14, 4, kMaxFrame).count, 1u);
    const auto big = PacketBuilder()
                         .ethernet()
                         .ipv4({198, 18, 0, 1}, {198, 18, 0, 2}, 6)
                         .tcp(1, 2)
                         .payload(20000)
                         .build();
    EXPECT_EQ(plan_segments(big, uint32_t(big.size()), 14, 4, 0).count, 1u);
    const SegmentPlan at_limit = plan_segments(frame, kMaxFrame, 14, 4, kMaxFrame);
    EXPECT_EQ(at_limit.count, 1u);
    EXPECT_EQ(at_limit.segment_wire_length(0), kMaxFrame);
}

TEST(WireSegments, Ipv4TcpAsTsoWouldSendIt) {
    const uint32_t payload = 10000;
    auto frame = numbered_payload_frame(
        PacketBuilder().ethernet().ipv4({198, 18, 0, 1}, {198, 18, 0, 2}, 6).tcp(40000, 50051, 12),
        payload);
    const size_t tcp = 14 + 20;
    frame[tcp + 13] = 0x19;  // ACK | PSH | FIN
    const SegmentPlan plan = plan_segments(frame, uint32_t(frame.size()), 14, 4, kMaxFrame);
    const uint32_t header = 14 + 20 + 32;
    ASSERT_EQ(plan.header_bytes, header);
    EXPECT_EQ(plan.payload_bytes, kMaxFrame - header);
    EXPECT_EQ(plan.count, (payload + plan.payload_bytes - 1) / plan.payload_bytes);
    uint64_t wire_total = 0;
    uint32_t payload_seen = 0;
    std::vector<uint8_t> segment;
    for (uint32_t k = 0; k < plan.count; ++k) {
        const uint32_t wire = plan.segment_wire_length(k);
        EXPECT_LE(wire, kMaxFrame);
        wire_total += wire;
        write_segment(plan, frame, k, segment);
        ASSERT_EQ(segment.size(), wire);
        EXPECT_EQ(get16(segment, 14 + 2), wire - 14) << "IPv4 total length, segment " << k;
        EXPECT_EQ(get16(segment, 14 + 4), get16(frame, 14 + 4) + k) << "IPv4 ID";
        EXPECT_EQ(get16(segment, 14 + 10), classifier::ipv4_header_checksum(&segment[14], 20));
        EXPECT_EQ(get32(segment, tcp + 4), 1 + k * plan.payload_bytes) << "TCP sequence";
        EXPECT_EQ(segment[tcp + 13], k + 1 == plan.count ? 0x19 : 0x10) << "FIN/PSH last only";
        for (uint32_t i = header; i < wire; ++i) {
            ASSERT_EQ(segment[i], uint8_t((payload_seen + i - header) * 7 + 3)) << k << " " << i;
        }
        payload_seen += wire - header;
    }
    EXPECT_EQ(payload_seen, payload);
    EXPECT_EQ(wire_total, uint64_t{plan.count} * header + payload);
}

TEST(WireSegments, Ipv6UdpBehindVlanKeepsTheTagAndSetsLengths) {
    const uint32_t payload = 30000;
    const auto frame = numbered_payload_frame(
        PacketBuilder()
            .ethernet()
            .vlan(42)
            .ipv6(classifier::testing::ipv6(0x2001, 1), classifier::testing::ipv6(0x2001, 2), 17)
            .udp(4000, 4791),
        payload);
    const uint16_t l3 = 18;
    const SegmentPlan plan = plan_segments(frame, uint32_t(frame.size()), l3, 6, 9018);
    ASSERT_EQ(plan.header_bytes, l3 + 40u + 8u);
    ASSERT_EQ(plan.count, 4u);
    std::vector<uint8_t> segment;
    for (uint32_t k = 0; k < plan.count; ++k) {
        write_segment(plan, frame, k, segment);
        const uint32_t wire = plan.segment_wire_length(k);
        EXPECT_EQ(get16(segment, 14), 42u) << "VLAN id copied";
        EXPECT_EQ(get16(segment, l3 + 4), wire - l3 - 40) << "IPv6 payload length";
        EXPECT_EQ(get16(segment, l3 + 40 + 4), wire - l3 - 40) << "UDP length";
    }
}

TEST(WireSegments, SnappedRecordGivesSnappedSegmentsWithFullWireLengths) {
    const auto full = PacketBuilder()
                          .ethernet()
                          .ipv4({198, 18, 0, 1}, {198, 18, 0, 2}, 6)
                          .tcp(1, 2)
                          .payload(5000)
                          .build();
    const std::vector<uint8_t> snapped(full.begin(), full.begin() + 96);
    const SegmentPlan plan = plan_segments(snapped, uint32_t(full.size()), 14, 4, kMaxFrame);
    ASSERT_EQ(plan.count, 4u);
    std::vector<uint8_t> segment;
    write_segment(plan, snapped, 0, segment);
    EXPECT_EQ(segment.size(), 96u);
    EXPECT_EQ(get16(segment, 16), plan.segment_wire_length(0) - 14);
    write_segment(plan, snapped, 3, segment);
    EXPECT_EQ(segment.size(), 54u) << "headers only: the payload was not captured";
    EXPECT_EQ(plan.segment_wire_length(3), 54u + (5000 - 3 * (kMaxFrame - 54)));
}

TEST(WireSegments, WhatTsoWouldNotSplitStaysWhole) {
    const uint32_t wire = 20000;
    // Non-IP, an IPv4 fragment, IPv6 with an extension header, ICMP, headers cut short.
    const auto non_ip = PacketBuilder().ethernet(0x88B5).payload(100).build();
    EXPECT_EQ(plan_segments(non_ip, wire, 14, 0, kMaxFrame).count, 1u);
    const auto fragment = PacketBuilder()
                              .ethernet()
                              .ipv4({198, 18, 0, 1}, {198, 18, 0, 2}, 17, 0, 0, 0x1234, 0, true)
                              .udp(1, 2)
                              .payload(100)
                              .build();
    EXPECT_EQ(plan_segments(fragment, wire, 14, 4, kMaxFrame).count, 1u);
    const auto extension =
        PacketBuilder()
            .ethernet()
            .ipv6(classifier::testing::ipv6(0x2001, 1), classifier::testing::ipv6(0x2001, 2), 0)
            .ipv6_option_header(6)
            .tcp(1, 2)
            .payload(100)
            .build();
    EXPECT_EQ(plan_segments(extension, wire, 14, 6, kMaxFrame).count, 1u);
    const auto icmp = PacketBuilder()
                          .ethernet()
                          .ipv4({198, 18, 0, 1}, {198, 18, 0, 2}, 1)
                          .icmp(8, 0)
                          .payload(100)
                          .build();
    EXPECT_EQ(plan_segments(icmp, wire, 14, 4, kMaxFrame).count, 1u);
    const auto tcp = PacketBuilder()
                         .ethernet()
                         .ipv4({198, 18, 0, 1}, {198, 18, 0, 2}, 6)
                         .tcp(1, 2)
                         .payload(100)
                         .build();
    for (size_t cut = 0; cut < 54; ++cut) {
        const std::span<const uint8_t> head(tcp.data(), cut);
        EXPECT_EQ(plan_segments(head, wire, 14, 4, kMaxFrame).count, 1u) << cut;
    }
    // Headers as long as the largest frame leave no room for payload.
    EXPECT_EQ(plan_segments(tcp, wire, 14, 4, 54).count, 1u);
    // A damaged wire length (libpcap does not bound it) is not millions of segments.
    EXPECT_EQ(plan_segments(tcp, UINT32_MAX, 14, 4, kMaxFrame).count, 1u);
    EXPECT_EQ(plan_segments(tcp, (1u << 20) + 1, 14, 4, kMaxFrame).count, 1u);
    EXPECT_GT(plan_segments(tcp, 1u << 20, 14, 4, kMaxFrame).count, 1u);
}

// conf/default.yaml compiled, and twinlane's scheduler for its first egress port as a replay
// discipline: what both engine tests below replay through.
conf::CompiledPolicy default_policy() {
    auto loaded = conf::load_policy(std::string(TWINLANE_CONF_DIR) + "/default.yaml");
    EXPECT_TRUE(loaded.ok());
    return conf::compile_policy(*loaded.policy);
}

// The engine's options for replaying `egress` at 10G.
constexpr uint64_t kRate = 10'000'000'000ULL;
ReplayOptions replay_options(const conf::CompiledEgress& egress) {
    ReplayOptions options;
    options.link_rate_bps = kRate;
    options.max_frame_bytes = egress.tree.max_packet_bytes;
    return options;
}

std::unique_ptr<SchedulerDiscipline> scheduler_discipline(const conf::CompiledEgress& egress) {
    auto built = SchedulerDiscipline::build(egress.tree, egress.leaves, egress.slo);
    EXPECT_TRUE(built.discipline) << built.error;
    return std::move(built.discipline);
}

// The engine: a host capture's 64 KiB TCP record, with an inference packet arriving right
// behind it, leaves as MTU-sized segments; everything is accounted for, and the inference
// packet waits for the segment on the wire, not for the rest of the record.
TEST(WireSegments, ReplayEngineSendsSegmentsAndInferenceOvertakesTheRest) {
    const conf::CompiledPolicy compiled = default_policy();
    ASSERT_TRUE(compiled.ok());
    const conf::CompiledEgress& egress = compiled.egress.at(0);
    classifier::Classifier classifier(compiled.classifier);
    const std::unique_ptr<SchedulerDiscipline> scheduled = scheduler_discipline(egress);
    ASSERT_TRUE(scheduled);
    Discipline& discipline = *scheduled;
    ReplayReport report("twinlane", kRate, compiled.classifier.class_names, 1, 1'000'000);
    const ReplayOptions options = replay_options(egress);
    BasicReplayEngine<Discipline> engine(options, classifier, discipline, report, nullptr);

    const auto gro = PacketBuilder()
                         .ethernet()
                         .ipv4({198, 18, 0, 1}, {198, 18, 0, 2}, 6)
                         .tcp(40000, 5201)
                         .payload(65000)
                         .build();
    const auto rpc = PacketBuilder()
                         .ethernet()
                         .ipv4({198, 18, 0, 3}, {198, 18, 0, 4}, 6)
                         .tcp(40001, 50051)
                         .payload(200)
                         .build();
    PcapRecord record;
    record.timestamp_ns = 1'000;
    record.wire_length = uint32_t(gro.size());
    record.captured = gro;
    engine.offer(record);
    record.timestamp_ns = 1'100;
    record.wire_length = uint32_t(rpc.size());
    record.captured = rpc;
    engine.offer(record);
    engine.finish();

    const SegmentPlan plan =
        plan_segments(gro, uint32_t(gro.size()), 14, 4, options.max_frame_bytes);
    ASSERT_GT(plan.count, 1u);
    EXPECT_EQ(report.split_records(), 1u);
    EXPECT_EQ(report.split_packets(), plan.count);
    EXPECT_EQ(report.rx_packets(), plan.count + 1);
    EXPECT_EQ(report.tx_packets(), plan.count + 1);
    EXPECT_EQ(report.dropped_packets(), 0u);
    uint64_t tx_bytes = 0;
    for (const ClassStats& c : report.classes())
        tx_bytes += c.tx_bytes;
    EXPECT_EQ(tx_bytes, uint64_t{plan.count} * plan.header_bytes + plan.total_payload + rpc.size());
    // Inference (class 0) left after at most the segment in flight plus its own frame.
    VirtualLink link(kRate);
    const double bound_us = double(link.transmit_ns(plan.segment_wire_length(0)) +
                                   link.transmit_ns(uint32_t(rpc.size()))) /
                            1e3;
    ASSERT_EQ(report.classes()[0].tx_packets, 1u);
    EXPECT_LE(report.latency(0).max_us, bound_us);
    EXPECT_GT(double(link.transmit_ns(uint32_t(gro.size()))) / 1e3, 5 * bound_us)
        << "the test means something: the whole record would take much longer";
}

// A record above the largest frame that TSO would not split (here non-IP) is dropped as
// oversize by the engine, whatever the discipline: FIFO (no frame limit of its own) used to
// send it whole, so the comparison against twinlane ran on different packets. Likewise an
// empty record, which only the twinlane scheduler refused.
TEST(WireSegments, UnsplittableOversizeRecordIsDroppedForEveryDiscipline) {
    const conf::CompiledPolicy compiled = default_policy();
    ASSERT_TRUE(compiled.ok());
    const conf::CompiledEgress& egress = compiled.egress.at(0);
    const ReplayOptions options = replay_options(egress);

    std::vector<uint8_t> non_ip(64, 0);
    non_ip[12] = 0x88;  // EtherType 0x88B5, local experimental
    non_ip[13] = 0xB5;
    const auto small = PacketBuilder()
                           .ethernet()
                           .ipv4({198, 18, 0, 1}, {198, 18, 0, 2}, 17)
                           .udp(40000, 5201)
                           .payload(100)
                           .build();
    auto replay = [&](auto& discipline) {
        classifier::Classifier classifier(compiled.classifier);
        ReplayReport report("d", kRate, compiled.classifier.class_names, 1, 1'000'000);
        BasicReplayEngine<Discipline> engine(options, classifier, discipline, report, nullptr);
        PcapRecord record;
        record.timestamp_ns = 1'000;
        record.wire_length = options.max_frame_bytes + 1;  // snapped capture of a longer frame
        record.captured = non_ip;
        engine.offer(record);
        record.timestamp_ns = 2'000;
        record.wire_length = uint32_t(small.size());
        record.captured = small;
        engine.offer(record);
        record.timestamp_ns = 3'000;
        record.wire_length = 0;  // an empty record: nothing to send
        record.captured = {};
        engine.offer(record);
        engine.finish();
        EXPECT_EQ(report.rx_packets(), 3u);
        EXPECT_EQ(report.tx_packets(), 1u);
        EXPECT_EQ(report.dropped_packets(), 2u);
        const nlohmann::json dropped = report.to_json()["totals"]["dropped"];
        EXPECT_EQ(dropped, nlohmann::json({{"oversize", 1}, {"empty_record", 1}}))
            << dropped.dump();
        EXPECT_EQ(report.split_records(), 0u);
    };
    FifoDiscipline fifo(1024, 1 << 20);
    replay(fifo);
    const std::unique_ptr<SchedulerDiscipline> scheduled = scheduler_discipline(egress);
    ASSERT_TRUE(scheduled);
    replay(*scheduled);
}

// Records stamped earlier than the record before them (an unsorted merge of two captures) are
// replayed at that record's time, never back in time, and the report counts them and says by
// how much; all packets are still accounted for. Through an ingress link (--ingress-rate)
// arrivals never go back either (each when the link has carried it), and the capture's clock
// that did is counted by the same measure.
TEST(WireSegments, RecordsGoingBackInTimeAreClampedAndCounted) {
    const conf::CompiledPolicy compiled = default_policy();
    ASSERT_TRUE(compiled.ok());
    const auto frame = PacketBuilder()
                           .ethernet()
                           .ipv4({198, 18, 0, 1}, {198, 18, 0, 2}, 17)
                           .udp(40000, 5201)
                           .payload(100)
                           .build();
    for (const uint64_t ingress_bps : {uint64_t{0}, uint64_t{10'000'000'000}}) {
        SCOPED_TRACE(ingress_bps);
        ReplayOptions options = replay_options(compiled.egress.at(0));
        options.ingress_rate_bps = ingress_bps;
        classifier::Classifier classifier(compiled.classifier);
        ReplayReport report("fifo", kRate, compiled.classifier.class_names, 1, 1'000'000);
        FifoDiscipline fifo(1024, 1 << 20);
        BasicReplayEngine<Discipline> engine(options, classifier, fifo, report, nullptr);
        PcapRecord record;
        record.wire_length = uint32_t(frame.size());
        record.captured = frame;
        for (const uint64_t t : {10'000, 20'000, 15'000, 30'000, 4'000, 31'000}) {
            record.timestamp_ns = t;
            engine.offer(record);
        }
        engine.finish();
        EXPECT_EQ(report.records_back_in_time(), 2u);
        EXPECT_EQ(report.max_back_in_time_ns(), 26'000u);  // 4 us after 30 us
        const nlohmann::json totals = report.to_json()["totals"];
        EXPECT_EQ(totals["records_back_in_time"], 2);
        EXPECT_DOUBLE_EQ(totals["max_back_in_time_us"].get<double>(), 26.0);
        EXPECT_EQ(report.rx_packets(), 6u);
        EXPECT_EQ(report.tx_packets(), 6u);
        // Clamped, not reordered: every latency is at least one frame's time on the wire and
        // the packets stamped back waited behind the ones before them (none saw a negative
        // latency).
        const double frame_us =
            double(VirtualLink(kRate).transmit_ns(uint32_t(frame.size()))) / 1e3;
        for (const ClassStats& c : report.classes()) {
            for (const uint64_t latency : c.latencies_ns)
                EXPECT_GE(double(latency) / 1e3, frame_us - 1e-3);
        }
    }
}

// --ingress-rate: records stamped together arrive one after the other, each when the ingress
// link has carried it (trace_schedule.h), so a faster egress never queues them; without it they
// arrive together and the second waits for the first.
TEST(WireSegments, AnIngressLinkSerialisesRecordsStampedTogether) {
    const conf::CompiledPolicy compiled = default_policy();
    ASSERT_TRUE(compiled.ok());
    const auto frame = PacketBuilder()
                           .ethernet()
                           .ipv4({198, 18, 0, 1}, {198, 18, 0, 2}, 17)
                           .udp(40000, 5201)
                           .payload(1226 - 42)
                           .build();
    ASSERT_EQ(frame.size(), 1226u);  // 1250 wire bytes: 1000 ns at 10G, 100 ns at 100G
    auto latencies = [&](uint64_t ingress_bps) {
        ReplayOptions options = replay_options(compiled.egress.at(0));
        options.link_rate_bps = 100'000'000'000ULL;
        options.ingress_rate_bps = ingress_bps;
        classifier::Classifier classifier(compiled.classifier);
        ReplayReport report("fifo", options.link_rate_bps, compiled.classifier.class_names, 1,
                            1'000'000);
        FifoDiscipline fifo(1024, 1 << 20);
        BasicReplayEngine<Discipline> engine(options, classifier, fifo, report, nullptr);
        PcapRecord record;
        record.wire_length = uint32_t(frame.size());
        record.captured = frame;
        for (const uint64_t t : {5'000, 5'000, 5'000}) {
            record.timestamp_ns = t;
            engine.offer(record);
        }
        const uint64_t end = engine.finish();
        std::vector<uint64_t> all;
        for (const ClassStats& c : report.classes())
            all.insert(all.end(), c.latencies_ns.begin(), c.latencies_ns.end());
        std::sort(all.begin(), all.end());
        all.push_back(end);
        return all;
    };
    EXPECT_EQ(latencies(0), (std::vector<uint64_t>{100, 200, 300, 5'300}));
    // Arrivals at 6, 7 and 8 us: each leaves 100 ns after it, the last at 8.1 us.
    EXPECT_EQ(latencies(10'000'000'000ULL), (std::vector<uint64_t>{100, 100, 100, 8'100}));
}

}  // namespace
}  // namespace twinlane::replay
