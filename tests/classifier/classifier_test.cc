// Classifier end to end on built frames: precedence of rules over heuristics, each heuristic,
// elephant demotion and return without reordering, full flow table, fragments, VXLAN, malformed
// policy and counters, rule table swap, burst == single.
#include "classifier/classifier.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <map>
#include <random>

#include "classifier/dscp_rewrite.h"
#include "tests/classifier/packet_builder.h"

namespace twinlane::classifier {
namespace {

using testing::PacketBuilder;

constexpr uint8_t kInference = 0;
constexpr uint8_t kTraining = 1;
constexpr uint8_t kOther = 2;
constexpr uint64_t kMs = 1'000'000;

std::vector<uint8_t> tcp4(uint16_t sport, uint16_t dport, uint8_t tos = 0, uint32_t payload = 0,
                          uint8_t last_octet = 2) {
    return PacketBuilder()
        .ethernet()
        .ipv4({10, 0, 0, 1}, {10, 0, 0, last_octet}, 6, tos)
        .tcp(sport, dport)
        .payload(payload)
        .build();
}

Result run(Classifier& classifier, const std::vector<uint8_t>& frame, uint64_t now_ns,
           uint16_t port = 0) {
    return classifier.classify(frame.data(), uint32_t(frame.size()), port, now_ns);
}

TEST(Classifier, DefaultsValidateAndNameLanes) {
    const ClassifierConfig config = ClassifierConfig::defaults();
    EXPECT_TRUE(config.validate().empty());
    EXPECT_EQ(config.class_names[config.default_class], "other");
    EXPECT_EQ(config.class_names[config.roce_class], "training");
    EXPECT_EQ(config.class_names[config.inference_class], "inference");
}

TEST(Classifier, InvalidConfigNamesFieldsAndThrows) {
    ClassifierConfig config = ClassifierConfig::defaults();
    config.default_class = 7;
    config.rules.resize(2);
    config.rules[1].match.dscp = 99;
    config.reclass_gap_ns = 2'000'000;
    config.elephant_quiet_ns = 1;
    const auto errors = config.validate();
    ASSERT_EQ(errors.size(), 3u);
    EXPECT_EQ(errors[0].rfind("default_class:", 0), 0u);
    EXPECT_EQ(errors[1].rfind("rules[1].dscp:", 0), 0u);
    EXPECT_EQ(errors[2].rfind("elephant_quiet_ns:", 0), 0u);
    EXPECT_THROW(Classifier{config}, std::invalid_argument);
}

TEST(Classifier, HeuristicsInOrder) {
    Classifier classifier(ClassifierConfig::defaults());
    // Model-serving port as destination and as source (responses are inference too).
    Result r = run(classifier, tcp4(40000, 8001), 0);
    EXPECT_EQ(r.class_id, kInference);
    EXPECT_EQ(r.source, MatchSource::port);
    r = run(classifier, tcp4(50051, 40000), 0);
    EXPECT_EQ(r.class_id, kInference);
    // RoCEv2 → training, whatever the DSCP.
    const auto roce = PacketBuilder()
                          .ethernet()
                          .ipv4({1, 1, 1, 1}, {2, 2, 2, 2}, 17, 46 << 2)
                          .udp(1, 4791)
                          .bth(4, 9)
                          .build();
    r = run(classifier, roce, 0);
    EXPECT_EQ(r.class_id, kTraining);
    EXPECT_EQ(r.source, MatchSource::roce);
    // DSCP map (NCCL_IB_TC=106 → DSCP 26) beats the serving port.
    r = run(classifier, tcp4(40001, 8000, 106), 0);
    EXPECT_EQ(r.class_id, kTraining);
    EXPECT_EQ(r.source, MatchSource::dscp_map);
    EXPECT_TRUE(r.ecn_capable);  // 106 & 3 = ECT(0)
    EXPECT_EQ(r.l3_offset, 14);
    EXPECT_EQ(r.ip_version, 4);
    // Everything else.
    r = run(classifier, tcp4(40002, 22), 0);
    EXPECT_EQ(r.class_id, kOther);
    EXPECT_EQ(r.source, MatchSource::default_class);
    EXPECT_FALSE(r.ecn_capable);
    EXPECT_EQ(classifier.counters().per_source[size_t(MatchSource::port)], 2u);
    EXPECT_EQ(classifier.counters().per_class[kInference].packets, 2u);
}

TEST(Classifier, RulesTakePrecedenceAndCarryJobAndRemark) {
    ClassifierConfig config = ClassifierConfig::defaults();
    Rule rule;
    rule.match.dst_ports = {8000, 8001};
    rule.match.ip_protocol = 6;
    rule.action = {kTraining, 4242, 10};
    config.rules.push_back(rule);
    Classifier classifier(config);
    auto frame = tcp4(40000, 8001, 0x01);
    Result r = run(classifier, frame, 0);
    EXPECT_EQ(r.class_id, kTraining);
    EXPECT_EQ(r.source, MatchSource::rule);
    EXPECT_EQ(r.rule_index, 0u);
    EXPECT_EQ(r.job_id, 4242u);
    ASSERT_EQ(r.remark_dscp, 10);
    ASSERT_TRUE(rewrite_dscp(frame.data() + r.l3_offset, r.ip_version, r.remark_dscp));
    EXPECT_EQ(ipv4_header_checksum(frame.data() + 14, 20), uint16_t((frame[24] << 8) | frame[25]));
    // The cached flow keeps rule attribution; counted per rule.
    r = run(classifier, tcp4(40000, 8001, 0x01), 1);
    EXPECT_EQ(r.rule_index, 0u);
    EXPECT_EQ(classifier.counters().per_rule[0].packets, 2u);
    EXPECT_EQ(run(classifier, tcp4(40000, 8080), 2).source, MatchSource::port);
}

// Flows no rule gave a job get one from their source network: consecutive subnets are
// consecutive jobs (a per_job node's `count` leaves spread them), a rule's job is kept.
TEST(Classifier, JobsFromTheSourceNetworkWhereNoRuleGivesOne) {
    ClassifierConfig config = ClassifierConfig::defaults();
    Rule rule;
    rule.match.dst_ports = {9000, 9000};
    rule.match.ip_protocol = 6;
    rule.action = {kTraining, 7, std::nullopt};
    config.rules.push_back(rule);
    config.job_prefix_ipv4 = 24;
    config.job_prefix_ipv6 = 48;
    Classifier classifier(config);
    const auto from = [](testing::Ipv4Address src, uint16_t dport) {
        return PacketBuilder().ethernet().ipv4(src, {10, 9, 9, 9}, 6).tcp(40000, dport).build();
    };
    const uint32_t job_16 = run(classifier, from({198, 18, 16, 1}, 80), 0).job_id;
    EXPECT_EQ(job_16, (198u << 16) | (18u << 8) | 16u);  // the /24's network number
    EXPECT_EQ(run(classifier, from({198, 18, 16, 200}, 80), 1).job_id, job_16);
    EXPECT_EQ(run(classifier, from({198, 18, 17, 1}, 80), 2).job_id, job_16 + 1);
    EXPECT_EQ(run(classifier, from({198, 18, 17, 1}, 9000), 3).job_id, 7u);  // the rule's job

    const auto from6 = [](testing::Ipv6Address src) {
        return PacketBuilder()
            .ethernet()
            .ipv6(src, testing::ipv6(9, 9), 17)
            .udp(4000, 5000)
            .build();
    };
    testing::Ipv6Address a = testing::ipv6(0xfd00, 1);  // fd00::1
    testing::Ipv6Address b = a;
    b[15] = 2;  // same /48
    testing::Ipv6Address c = a;
    c[5] = 1;  // the next /48
    const uint32_t job_a = run(classifier, from6(a), 4).job_id;
    EXPECT_EQ(run(classifier, from6(b), 5).job_id, job_a);
    EXPECT_EQ(run(classifier, from6(c), 6).job_id, job_a ^ 1u);
    EXPECT_NE(job_a, 0u);

    // Off (the default): such flows stay job 0; so do non-IP frames either way.
    Classifier off(ClassifierConfig::defaults());
    EXPECT_EQ(run(off, from({198, 18, 16, 1}, 80), 0).job_id, 0u);
    PacketKey arp;
    EXPECT_EQ(job_from_source(arp, 24, 64), 0u);
    // Every prefix length keeps the network bits only: /32 is the address, /128 all of it.
    KeyFields fields;
    fields.ip_version = 4;
    fields.src_address = {10, 1, 2, 3};
    EXPECT_EQ(job_from_source(make_key(fields), 32, 0), 0x0A010203u);
    EXPECT_EQ(job_from_source(make_key(fields), 8, 0), 10u);
    fields.ip_version = 6;
    fields.src_address = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5};
    EXPECT_EQ(job_from_source(make_key(fields), 0, 128), 5u ^ 0xfd000000u);
    EXPECT_EQ(job_from_source(make_key(fields), 0, 127), 2u ^ 0x7e800000u);
    EXPECT_EQ(job_from_source(make_key(fields), 0, 8), 0xfdu);
    EXPECT_EQ(job_from_source(make_key(fields), 4, 0), 0u);  // IPv6 with only an IPv4 prefix
}

ClassifierConfig elephant_config() {
    ClassifierConfig config = ClassifierConfig::defaults();
    config.elephant_threshold_bytes = 10'000;
    config.elephant_window_ns = 10 * kMs;
    config.elephant_quiet_ns = 50 * kMs;
    config.reclass_gap_ns = 2 * kMs;
    return config;
}

TEST(Classifier, ElephantDemotedAtAGapAndReturnsWhenQuiet) {
    Classifier classifier(elephant_config());
    const auto big = tcp4(40000, 8000, 0, 1400);  // 1454-byte frames on an inference port
    uint64_t now = 0;
    // 7 packets × 1454 B = 10178 B within 10 ms: detected, but packets keep coming every
    // 100 µs, so the class must not change yet (packets may sit in the inference lane).
    for (int i = 0; i < 20; ++i, now += 100'000) {
        const Result r = run(classifier, big, now);
        EXPECT_EQ(r.class_id, kInference) << i;
    }
    EXPECT_EQ(classifier.counters().elephants_detected, 1u);
    EXPECT_GT(classifier.counters().reclass_deferred, 0u);
    // A 2 ms gap: now it moves to bulk.
    now += 2 * kMs;
    Result r = run(classifier, big, now);
    EXPECT_EQ(r.class_id, kTraining);
    EXPECT_EQ(r.source, MatchSource::elephant);
    EXPECT_EQ(classifier.counters().elephant_demotions, 1u);
    // Continues as bulk across windows while busy.
    for (int i = 0; i < 300; ++i) {
        now += 100'000;
        EXPECT_EQ(run(classifier, big, now).class_id, kTraining);
    }
    // Quiet for 50 ms: returns to inference on the next packet.
    now += 50 * kMs;
    r = run(classifier, big, now);
    EXPECT_EQ(r.class_id, kInference);
    EXPECT_EQ(r.source, MatchSource::port);
    EXPECT_EQ(classifier.counters().elephant_returns, 1u);
    // A small flow on the same port never moves.
    for (int i = 0; i < 100; ++i)
        EXPECT_EQ(run(classifier, tcp4(40001, 8000), i * kMs).class_id, kInference);
}

// Default (reclass_gap 0): a flow that never pauses is demoted with the packet that crosses
// the threshold, which names the class its earlier packets got (the scheduler moves those);
// it returns after a quiet period the same way.
TEST(Classifier, ContinuousElephantIsDemotedAtOnceNamingThePreviousClass) {
    ClassifierConfig config = elephant_config();
    config.reclass_gap_ns = 0;
    Classifier classifier(config);
    const auto big = tcp4(40000, 8000, 0, 1400);  // 1454-byte frames on an inference port
    uint64_t now = 0;
    int demoted_at = -1;
    for (int i = 0; i < 200; ++i, now += 10'000) {  // one every 10 us: never a gap
        const Result r = run(classifier, big, now);
        if (demoted_at < 0 && r.class_id == kTraining) {
            demoted_at = i;
            EXPECT_EQ(r.source, MatchSource::elephant);
            EXPECT_EQ(r.previous_class, kInference);
        } else {
            EXPECT_EQ(r.previous_class, kNoPreviousClass) << i;
            EXPECT_EQ(r.class_id, demoted_at < 0 ? kInference : kTraining) << i;
        }
    }
    EXPECT_EQ(demoted_at, 6);  // the 7th packet takes the window past 10,000 bytes
    EXPECT_EQ(classifier.counters().elephant_demotions, 1u);
    EXPECT_EQ(classifier.counters().reclass_deferred, 0u);
    now += 50 * kMs;
    const Result back = run(classifier, big, now);
    EXPECT_EQ(back.class_id, kInference);
    EXPECT_EQ(back.previous_class, kTraining);
    EXPECT_EQ(classifier.counters().elephant_returns, 1u);
}

TEST(Classifier, ElephantDoesNotOverrideRules) {
    ClassifierConfig config = elephant_config();
    Rule rule;
    rule.match.dst_ports = {8000, 8000};
    rule.action.class_id = kInference;
    config.rules.push_back(rule);
    Classifier classifier(config);
    const auto big = tcp4(40000, 8000, 0, 1400);
    for (int i = 0; i < 100; ++i)
        EXPECT_EQ(run(classifier, big, uint64_t(i) * 3 * kMs).class_id, kInference);
    EXPECT_EQ(classifier.counters().elephants_detected, 0u);
}

// A flow the SLO governor holds in a lower class (classifier/held_flows.h) is not made an
// elephant while held; once released, its next packet is, if its window is still above the
// threshold. Other flows are judged as before.
TEST(Classifier, HeldFlowIsNoElephantUntilReleased) {
    ClassifierConfig config = elephant_config();
    config.reclass_gap_ns = 0;  // a class change applies at once
    Classifier classifier(config);
    HeldFlows held;
    classifier.set_held_flows(&held);
    const auto big = tcp4(40000, 8000, 0, 1400);  // 1454-byte frames on an inference port
    const auto other = tcp4(40001, 8000, 0, 1400);
    const uint32_t hash = run(classifier, big, 0).flow_hash;
    held.hold(hash);
    uint64_t now = 0;
    for (int i = 0; i < 20; ++i) {
        now += 100'000;
        EXPECT_EQ(run(classifier, big, now).class_id, kInference) << i;
    }
    EXPECT_EQ(classifier.counters().elephants_detected, 0u);
    // An unheld flow of the same size crosses the threshold as before.
    for (int i = 0; i < 8; ++i)
        run(classifier, other, now + uint64_t(i) * 1000);
    EXPECT_EQ(classifier.counters().elephants_detected, 1u);
    held.release(hash);
    now += 100'000;  // same 10 ms window: 21 packets, far above 10,000 bytes
    const Result r = run(classifier, big, now);
    EXPECT_EQ(r.class_id, kTraining);
    EXPECT_EQ(r.source, MatchSource::elephant);
    EXPECT_EQ(classifier.counters().elephants_detected, 2u);
}

TEST(HeldFlows, HeldUntilEveryHoldIsReleased) {
    HeldFlows held;
    EXPECT_FALSE(held.held(7));
    held.hold(7);
    held.hold(7);  // two governors, or two colliding flows
    held.release(7);
    EXPECT_TRUE(held.held(7));
    EXPECT_FALSE(held.held(8));
    held.release(7);
    EXPECT_FALSE(held.held(7));
}

TEST(Classifier, FullFlowTableStillClassifiesAndCounts) {
    ClassifierConfig config = ClassifierConfig::defaults();
    config.flow_table_capacity = 8;
    Classifier classifier(config);
    for (uint16_t i = 0; i < 20; ++i) {
        const Result r = run(classifier, tcp4(uint16_t(1000 + i), 8080), 0);
        EXPECT_EQ(r.class_id, kInference);
        EXPECT_EQ(r.source, MatchSource::port);
    }
    EXPECT_EQ(classifier.flows().size(), 8u);
    EXPECT_EQ(classifier.counters().flow_overflows, 12u);
    EXPECT_EQ(classifier.counters().flow_inserts, 8u);
    // Ageing frees room: all idle past the timeout, in one pass over the slots.
    classifier.expire_flows(config.flow_idle_timeout_ns, classifier.flows().slot_count() + 8);
    EXPECT_EQ(classifier.flows().size(), 0u);
    EXPECT_EQ(classifier.counters().flows_expired, 8u);
}

TEST(Classifier, RoceQueuePairsAreSeparateFlows) {
    Classifier classifier(ClassifierConfig::defaults());
    auto qp = [](uint32_t dest_qp) {
        return PacketBuilder()
            .ethernet()
            .ipv4({1, 1, 1, 1}, {2, 2, 2, 2}, 17)
            .udp(49152, 4791)
            .bth(0x0A, dest_qp)
            .payload(64)
            .build();
    };
    const Result a = run(classifier, qp(100), 0);
    const Result b = run(classifier, qp(101), 0);
    run(classifier, qp(100), 1);
    EXPECT_NE(a.flow_hash, b.flow_hash);
    EXPECT_EQ(classifier.flows().size(), 2u);
    uint64_t packets_of_qp100 = 0;
    classifier.flows().for_each([&](const FlowRecord& flow) {
        if (key_dest_qp(flow.key) == 100) packets_of_qp100 = flow.packets;
    });
    EXPECT_EQ(packets_of_qp100, 2u);
}

// The one-pass parses (parse_simple_ipv4/ipv6) and the full parser must build the same key:
// a flow whose packets take both (IP options, an IPv6 extension header on some packets) is one
// flow, with one entry, whatever its packets carried.
TEST(Classifier, FastAndFullParsesBuildTheSameFlowKey) {
    const testing::Ipv6Address a = testing::ipv6(0x2001, 0xA), b = testing::ipv6(0xFD00, 0xB);
    struct Pair {
        const char* name;
        std::vector<uint8_t> fast, full;
    };
    const std::vector<Pair> pairs = {
        {"ipv4 tcp",
         PacketBuilder()
             .ethernet()
             .ipv4({10, 0, 0, 1}, {10, 0, 0, 2}, 6, 0x28)
             .tcp(7, 50051)
             .build(),
         PacketBuilder()
             .ethernet()
             .ipv4({10, 0, 0, 1}, {10, 0, 0, 2}, 6, 0x28, 8)
             .tcp(7, 50051)
             .build()},
        {"ipv6 tcp", PacketBuilder().ethernet().ipv6(a, b, 6, 0x28).tcp(7, 50051).build(),
         PacketBuilder()
             .ethernet()
             .ipv6(a, b, 0, 0x28)
             .ipv6_option_header(6)
             .tcp(7, 50051)
             .build()},
        {"ipv6 roce, tagged",
         PacketBuilder().ethernet().vlan(12).ipv6(a, b, 17).udp(9, 4791).bth(4, 321).build(),
         PacketBuilder()
             .ethernet()
             .vlan(12)
             .ipv6(a, b, 60)
             .ipv6_option_header(17)
             .udp(9, 4791)
             .bth(4, 321)
             .build()},
    };
    for (const Pair& pair : pairs) {
        SCOPED_TRACE(pair.name);
        Classifier classifier(ClassifierConfig::defaults());
        const Result fast = run(classifier, pair.fast, 0);
        const Result full = run(classifier, pair.full, 1);
        const Result again = run(classifier, pair.fast, 2);
        EXPECT_EQ(fast.flow_hash, full.flow_hash);
        EXPECT_EQ(fast.class_id, full.class_id);
        EXPECT_EQ(again.flow_hash, fast.flow_hash);
        ASSERT_EQ(classifier.flows().size(), 1u);
        classifier.flows().for_each([&](const FlowRecord& flow) {
            EXPECT_EQ(flow.packets, 3u);
            ParsedPacket parsed;
            parse_packet(pair.full.data(), uint32_t(pair.full.size()), {}, parsed);
            EXPECT_EQ(key_ip_version(flow.key), parsed.flow_ip_version);
            EXPECT_EQ(key_vlan_id(flow.key), parsed.vlan_id);
            EXPECT_EQ(key_dest_qp(flow.key), parsed.dest_qp);
        });
    }
}

TEST(Classifier, LaterFragmentsFollowTheFirst) {
    ClassifierConfig config = ClassifierConfig::defaults();
    Rule rule;
    rule.match.dst_ports = {9000, 9000};
    rule.action = {kTraining, 7, std::nullopt};
    config.rules.push_back(rule);
    Classifier classifier(config);
    const auto first = PacketBuilder()
                           .ethernet()
                           .ipv4({10, 0, 0, 1}, {10, 0, 0, 2}, 17, 0, 0, 555, 0, true)
                           .udp(1, 9000)
                           .payload(100)
                           .build();
    const auto later = PacketBuilder()
                           .ethernet()
                           .ipv4({10, 0, 0, 1}, {10, 0, 0, 2}, 17, 0, 0, 555, 14)
                           .payload(100)
                           .build();
    const auto orphan = PacketBuilder()
                            .ethernet()
                            .ipv4({10, 0, 0, 1}, {10, 0, 0, 2}, 17, 0, 0, 556, 14)
                            .payload(100)
                            .build();
    const Result head = run(classifier, first, 0);
    EXPECT_EQ(head.job_id, 7u);
    const Result tail = run(classifier, later, 1000);
    EXPECT_EQ(tail.class_id, kTraining);
    EXPECT_EQ(tail.job_id, 7u);
    EXPECT_EQ(tail.rule_index, 0u);
    EXPECT_EQ(tail.source, MatchSource::fragment);
    EXPECT_EQ(tail.flow_hash, head.flow_hash);
    // Unknown datagram: 3-tuple classification (no ports, so the port rule cannot match).
    const Result lost = run(classifier, orphan, 1000);
    EXPECT_EQ(lost.class_id, kOther);
    EXPECT_EQ(classifier.counters().fragments_followed, 1u);
    EXPECT_EQ(classifier.counters().fragments_unmatched, 1u);
    // Expired after fragment_timeout_ns.
    EXPECT_NE(run(classifier, later, config.fragment_timeout_ns + 1).source, MatchSource::fragment);
}

TEST(Classifier, Ipv6FragmentsFollowTheFirst) {
    Classifier classifier(ClassifierConfig::defaults());
    const auto first = PacketBuilder()
                           .ethernet()
                           .ipv6(testing::ipv6(1, 1), testing::ipv6(1, 2), 44, 0x01)
                           .ipv6_fragment(6, 0, true, 99)
                           .tcp(5, 50051)
                           .build();
    const auto later = PacketBuilder()
                           .ethernet()
                           .ipv6(testing::ipv6(1, 1), testing::ipv6(1, 2), 44, 0x01)
                           .ipv6_fragment(6, 10, false, 99)
                           .payload(50)
                           .build();
    EXPECT_EQ(run(classifier, first, 0).class_id, kInference);
    const Result r = run(classifier, later, 1);
    EXPECT_EQ(r.class_id, kInference);
    EXPECT_EQ(r.source, MatchSource::fragment);
    EXPECT_TRUE(r.ecn_capable);
}

// A UDP first fragment's length field is the whole datagram's, longer than the fragment: it
// is classified on its ports like any first fragment, not counted as malformed.
TEST(Classifier, UdpFirstFragmentsCarryTheDatagramLength) {
    ClassifierConfig config = ClassifierConfig::defaults();
    config.malformed_policy = MalformedPolicy::drop;
    Classifier classifier(config);
    auto with_udp_length = [](std::vector<uint8_t> frame, size_t udp_offset, uint16_t length) {
        frame[udp_offset + 4] = uint8_t(length >> 8);
        frame[udp_offset + 5] = uint8_t(length);
        return frame;
    };
    const auto first4 =
        with_udp_length(PacketBuilder()
                            .ethernet()
                            .ipv4({10, 0, 0, 1}, {10, 0, 0, 2}, 17, 0, 0, 77, 0, true)
                            .udp(40000, 50051)
                            .payload(1472)
                            .build(),
                        34, 4008);
    const auto later4 = PacketBuilder()
                            .ethernet()
                            .ipv4({10, 0, 0, 1}, {10, 0, 0, 2}, 17, 0, 0, 77, 185)
                            .payload(1480)
                            .build();
    const auto first6 = with_udp_length(PacketBuilder()
                                            .ethernet()
                                            .ipv6(testing::ipv6(1, 1), testing::ipv6(1, 2), 44)
                                            .ipv6_fragment(17, 0, true, 78)
                                            .udp(40000, 50051)
                                            .payload(1424)
                                            .build(),
                                        62, 4008);
    const auto later6 = PacketBuilder()
                            .ethernet()
                            .ipv6(testing::ipv6(1, 1), testing::ipv6(1, 2), 44)
                            .ipv6_fragment(17, 179, false, 78)
                            .payload(1432)
                            .build();
    for (const auto* pair : {&first4, &first6}) {
        const Result head = run(classifier, *pair, 0);
        EXPECT_FALSE(head.drop);
        EXPECT_EQ(head.class_id, kInference);
        EXPECT_EQ(head.source, MatchSource::port);
    }
    for (const auto* tail : {&later4, &later6}) {
        const Result r = run(classifier, *tail, 1);
        EXPECT_EQ(r.class_id, kInference);
        EXPECT_EQ(r.source, MatchSource::fragment);
    }
    auto malformed = [&] {
        uint64_t total = 0;
        for (const uint64_t n : classifier.counters().malformed)
            total += n;
        return total;
    };
    EXPECT_EQ(malformed(), 0u);
    // Shorter than a UDP header is still malformed, fragment or not; and an unfragmented
    // datagram longer than its packet is.
    EXPECT_TRUE(run(classifier, with_udp_length(first4, 34, 7), 2).drop);
    const auto whole = PacketBuilder()
                           .ethernet()
                           .ipv4({10, 0, 0, 1}, {10, 0, 0, 3}, 17)
                           .udp(40000, 50051)
                           .payload(100)
                           .build();
    EXPECT_TRUE(run(classifier, with_udp_length(whole, 34, 4008), 2).drop);
    EXPECT_EQ(malformed(), 2u);
}

TEST(Classifier, VxlanClassifiesOnInnerAndMarksOuter) {
    ClassifierConfig config = ClassifierConfig::defaults();
    config.vxlan_inner = true;
    Classifier classifier(config);
    const auto frame = PacketBuilder()
                           .ethernet()
                           .ipv4({1, 1, 1, 1}, {2, 2, 2, 2}, 17, 0x02)
                           .udp(60000, 4789)
                           .vxlan(10)
                           .ethernet()
                           .ipv4({192, 168, 0, 1}, {192, 168, 0, 2}, 6)
                           .tcp(41000, 8001)
                           .build();
    const Result r = run(classifier, frame, 0);
    EXPECT_EQ(r.class_id, kInference);
    EXPECT_EQ(r.l3_offset, 14);
    EXPECT_TRUE(r.ecn_capable);
    const auto roce_inside = PacketBuilder()
                                 .ethernet()
                                 .ipv4({1, 1, 1, 1}, {2, 2, 2, 2}, 17)
                                 .udp(60000, 4789)
                                 .vxlan(10)
                                 .ethernet()
                                 .ipv4({192, 168, 0, 1}, {192, 168, 0, 2}, 17)
                                 .udp(5, 4791)
                                 .bth(1, 3)
                                 .build();
    EXPECT_EQ(run(classifier, roce_inside, 0).class_id, kTraining);
    ClassifierConfig outer_only = ClassifierConfig::defaults();
    Classifier plain(outer_only);
    EXPECT_EQ(run(plain, frame, 0).class_id, kOther);  // outer is just UDP 4789
}

TEST(Classifier, MalformedPolicyAndCounters) {
    ClassifierConfig config = ClassifierConfig::defaults();
    auto frame = tcp4(1, 8000);
    frame.resize(40);  // cut inside TCP; IP total length now exceeds the frame
    {
        Classifier classifier(config);
        const Result r = run(classifier, frame, 0);
        EXPECT_EQ(r.malformed, MalformedReason::ipv4_bad_total_length);
        EXPECT_EQ(r.class_id, kOther);
        EXPECT_FALSE(r.drop);
        EXPECT_FALSE(r.ecn_capable);
        // Linearised headers of a longer frame: cut inside the TCP header → l4_truncated.
        const Result h = classifier.classify(frame.data(), 40, 1000, 0, 0);
        EXPECT_EQ(h.malformed, MalformedReason::l4_truncated);
        EXPECT_EQ(classifier.counters().malformed[size_t(MalformedReason::ipv4_bad_total_length)],
                  1u);
        EXPECT_EQ(classifier.counters().malformed[size_t(MalformedReason::l4_truncated)], 1u);
        // An empty frame has nothing to forward: dropped whatever the policy.
        const uint8_t nothing[1] = {0};
        const Result empty = classifier.classify(nothing, 0, 0, 0, 0);
        EXPECT_EQ(empty.malformed, MalformedReason::ethernet_truncated);
        EXPECT_TRUE(empty.drop);
        EXPECT_FALSE(classifier.classify(nothing, 1, 1, 0, 0).drop);  // a runt is forwarded
    }
    config.malformed_policy = MalformedPolicy::drop;
    Classifier dropping(config);
    const Result r = run(dropping, frame, 0);
    EXPECT_TRUE(r.drop);
    EXPECT_EQ(dropping.counters().per_class[kOther].drops, 1u);
}

// Default (reclass_gap 0): a busy flow changes lane with its next packet, whose Result names
// the lane and job its earlier packets got (the scheduler moves those along, no reordering).
TEST(Classifier, RuleSwapReclassifiesCachedFlowsAtOnceNamingThePreviousClass) {
    Classifier classifier(ClassifierConfig::defaults());
    const auto frame = tcp4(40000, 22);
    Result r = run(classifier, frame, 0);
    EXPECT_EQ(r.class_id, kOther);
    EXPECT_EQ(r.previous_class, kNoPreviousClass);
    Rule rule;
    rule.match.dst_ports = {22, 22};
    rule.action.class_id = kInference;
    rule.action.job_id = 5;
    const std::vector<Rule> rules{rule};
    const CompiledRuleTable table = CompiledRuleTable::build(rules, 2);
    classifier.use_rules(table);
    r = run(classifier, frame, 100);  // 100 ns later: no gap at all
    EXPECT_EQ(r.class_id, kInference);
    EXPECT_EQ(r.job_id, 5u);
    EXPECT_EQ(r.previous_class, kOther);
    EXPECT_EQ(r.previous_job, 0u);
    EXPECT_EQ(run(classifier, frame, 200).previous_class, kNoPreviousClass);  // moved once
    EXPECT_EQ(classifier.counters().reclassifications, 1u);
    EXPECT_EQ(run(classifier, tcp4(40001, 22), 0).source, MatchSource::rule);
    EXPECT_EQ(classifier.counters().per_rule[0].packets, 3u);

    // The job alone changing (same class) moves the flow too: its leaf may be per job.
    rule.action.job_id = 6;
    const std::vector<Rule> job_rules{rule};
    const CompiledRuleTable job_table = CompiledRuleTable::build(job_rules, 2);
    classifier.use_rules(job_table);
    r = run(classifier, frame, 300);
    EXPECT_EQ(r.job_id, 6u);
    EXPECT_EQ(r.previous_class, kInference);
    EXPECT_EQ(r.previous_job, 5u);
}

// With reclass_gap > 0 (consumers that cannot move queued packets) a busy flow keeps its old
// lane until a gap that long.
TEST(Classifier, RuleSwapWithReclassGapWaitsForAGap) {
    ClassifierConfig config = ClassifierConfig::defaults();
    config.reclass_gap_ns = 2'000'000;
    Classifier classifier(config);
    const auto frame = tcp4(40000, 22);
    EXPECT_EQ(run(classifier, frame, 0).class_id, kOther);
    Rule rule;
    rule.match.dst_ports = {22, 22};
    rule.action.class_id = kInference;
    const std::vector<Rule> rules{rule};
    const CompiledRuleTable table = CompiledRuleTable::build(rules, 2);
    classifier.use_rules(table);
    Result r = run(classifier, frame, 100'000);
    EXPECT_EQ(r.class_id, kOther);
    EXPECT_EQ(r.rule_index, kNoRule);  // attribution stays with the lane actually used
    EXPECT_EQ(r.previous_class, kNoPreviousClass);
    r = run(classifier, frame, 100'000 + config.reclass_gap_ns);
    EXPECT_EQ(r.class_id, kInference);
    EXPECT_EQ(r.previous_class, kOther);
    EXPECT_EQ(run(classifier, tcp4(40001, 22), 0).source, MatchSource::rule);
    EXPECT_EQ(classifier.counters().per_rule[0].packets, 2u);
}

TEST(Classifier, BurstEqualsSinglePacketPath) {
    ClassifierConfig config = elephant_config();
    Classifier single(config);
    Classifier burst(config);
    std::vector<std::vector<uint8_t>> frames;
    for (uint16_t i = 0; i < 70; ++i) {
        frames.push_back(
            tcp4(uint16_t(30000 + i % 4), i % 2 ? 8000 : 22, 0, 200 + 20u * i, uint8_t(i % 3)));
    }
    frames.push_back(PacketBuilder()
                         .ethernet()
                         .ipv4({1, 1, 1, 1}, {2, 2, 2, 2}, 17)
                         .udp(1, 4791)
                         .bth(4, 9)
                         .build());
    frames.push_back({0x01, 0x02});  // malformed
    // IPv6: one flow through the one-pass parse and, with an extension header, the full one;
    // RoCEv2 behind a tag; a serving-port flow.
    const testing::Ipv6Address a = testing::ipv6(0x2001, 1), b = testing::ipv6(0x2001, 2);
    for (uint16_t i = 0; i < 12; ++i) {
        frames.push_back(
            i % 3 == 2
                ? PacketBuilder()
                      .ethernet()
                      .ipv6(a, b, 0)
                      .ipv6_option_header(6)
                      .tcp(7, 50051)
                      .payload(100 * i)
                      .build()
                : PacketBuilder().ethernet().ipv6(a, b, 6).tcp(7, 50051).payload(100 * i).build());
        frames.push_back(PacketBuilder()
                             .ethernet()
                             .vlan(5)
                             .ipv6(b, a, 17)
                             .udp(9, 4791)
                             .bth(4, i % 2)
                             .payload(900)
                             .build());
    }
    std::vector<const uint8_t*> pointers;
    std::vector<uint32_t> lengths;
    for (const auto& f : frames) {
        pointers.push_back(f.data());
        lengths.push_back(uint32_t(f.size()));
    }
    std::vector<Result> out(frames.size());
    for (uint64_t round = 0; round < 5; ++round) {
        const uint64_t now = round * 3 * kMs;
        burst.classify_burst(pointers.data(), lengths.data(), uint32_t(frames.size()), 3, now,
                             out.data());
        for (size_t i = 0; i < frames.size(); ++i) {
            const Result expected = single.classify(pointers[i], lengths[i], 3, now);
            EXPECT_EQ(out[i].class_id, expected.class_id) << i;
            EXPECT_EQ(out[i].source, expected.source) << i;
            EXPECT_EQ(out[i].flow_hash, expected.flow_hash) << i;
            EXPECT_EQ(out[i].malformed, expected.malformed) << i;
            EXPECT_EQ(out[i].previous_class, expected.previous_class) << i;
        }
    }
    EXPECT_EQ(burst.counters().elephants_detected, single.counters().elephants_detected);
    EXPECT_GT(burst.counters().elephants_detected, 0u);
    // A new flow seen several times in one burst is inserted once (classify_burst's lookup
    // pass runs before any of the burst's inserts) and counts every packet.
    EXPECT_EQ(burst.counters().flow_inserts, single.counters().flow_inserts);
    EXPECT_EQ(burst.flows().size(), single.flows().size());
    const auto by_bytes_burst = top_flows_by_bytes(burst.flows(), 100);
    const auto by_bytes_single = top_flows_by_bytes(single.flows(), 100);
    ASSERT_EQ(by_bytes_burst.size(), by_bytes_single.size());
    for (size_t i = 0; i < by_bytes_burst.size(); ++i) {
        EXPECT_EQ(by_bytes_burst[i].packets, by_bytes_single[i].packets) << i;
        EXPECT_EQ(by_bytes_burst[i].bytes, by_bytes_single[i].bytes) << i;
    }
}

// A nearly full small table (many flows off their home slot), IPv4 and IPv6 flows, fragments
// in both orders and new flows repeated within a burst: classify_burst (home-slot hits
// classified at once, the rest after batched probing) must give what one packet at a time does.
TEST(Classifier, BurstEqualsSinglePacketPathInACrowdedTable) {
    ClassifierConfig config = elephant_config();
    config.flow_table_capacity = 64;  // 128 slots
    Classifier single(config);
    Classifier burst(config);
    std::vector<std::vector<uint8_t>> frames;
    for (uint16_t i = 0; i < 70; ++i) {  // + 1 flow of first fragments: 71 flows, 64 fit
        if (i % 3 == 0) {
            const uint8_t n = uint8_t(i);
            frames.push_back(PacketBuilder()
                                 .ethernet()
                                 .ipv6({0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, n},
                                       {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1},
                                       17)
                                 .udp(uint16_t(5000 + i), 8000)
                                 .payload(100)
                                 .build());
        } else {
            frames.push_back(
                tcp4(uint16_t(20000 + i), i % 2 ? 8000 : 22, 0, 100 + 30u * i, uint8_t(i % 5)));
        }
    }
    // A later fragment before its first fragment, then another datagram in order.
    frames.push_back(PacketBuilder()
                         .ethernet()
                         .ipv4({10, 9, 0, 1}, {10, 9, 0, 2}, 17, 0, 0, 77, 14)
                         .payload(64)
                         .build());
    frames.push_back(PacketBuilder()
                         .ethernet()
                         .ipv4({10, 9, 0, 1}, {10, 9, 0, 2}, 17, 0, 0, 77, 0, true)
                         .udp(7, 8000)
                         .payload(100)
                         .build());
    frames.push_back(PacketBuilder()
                         .ethernet()
                         .ipv4({10, 9, 0, 1}, {10, 9, 0, 2}, 17, 0, 0, 78, 0, true)
                         .udp(7, 8000)
                         .payload(100)
                         .build());
    frames.push_back(PacketBuilder()
                         .ethernet()
                         .ipv4({10, 9, 0, 1}, {10, 9, 0, 2}, 17, 0, 0, 78, 14)
                         .payload(64)
                         .build());
    std::vector<const uint8_t*> pointers;
    std::vector<uint32_t> lengths;
    std::mt19937 rng(11);
    for (int i = 0; i < 400; ++i) {  // random order, flows repeated within bursts
        const auto& frame = frames[rng() % frames.size()];
        pointers.push_back(frame.data());
        lengths.push_back(uint32_t(frame.size()));
    }
    std::vector<Result> out(pointers.size());
    for (uint64_t round = 0; round < 4; ++round) {
        const uint64_t now = round * 3 * kMs;
        for (size_t first = 0; first < pointers.size(); first += 32) {
            const uint32_t n = uint32_t(std::min<size_t>(32, pointers.size() - first));
            burst.classify_burst(&pointers[first], &lengths[first], n, 1, now, &out[first]);
            for (size_t i = first; i < first + n; ++i) {
                const Result expected = single.classify(pointers[i], lengths[i], 1, now);
                ASSERT_EQ(out[i].class_id, expected.class_id) << round << " " << i;
                ASSERT_EQ(out[i].source, expected.source) << round << " " << i;
                ASSERT_EQ(out[i].flow_hash, expected.flow_hash) << round << " " << i;
                ASSERT_EQ(out[i].job_id, expected.job_id) << round << " " << i;
            }
        }
    }
    EXPECT_EQ(burst.counters().flow_inserts, single.counters().flow_inserts);
    EXPECT_EQ(burst.counters().flow_overflows, single.counters().flow_overflows);
    EXPECT_EQ(burst.counters().fragments_followed, single.counters().fragments_followed);
    EXPECT_EQ(burst.counters().elephants_detected, single.counters().elephants_detected);
    EXPECT_EQ(burst.flows().size(), single.flows().size());
    std::map<std::array<uint64_t, 6>, std::pair<uint64_t, uint64_t>> single_flows;
    single.flows().for_each([&](const FlowRecord& flow) {
        single_flows[flow.key.words] = {flow.packets, flow.bytes};
    });
    uint32_t compared = 0;
    burst.flows().for_each([&](const FlowRecord& flow) {
        const auto it = single_flows.find(flow.key.words);
        ASSERT_NE(it, single_flows.end());
        EXPECT_EQ(it->second.first, flow.packets);
        EXPECT_EQ(it->second.second, flow.bytes);
        ++compared;
    });
    EXPECT_EQ(compared, 64u);  // the table filled up: the rest overflowed
    EXPECT_GT(burst.counters().flow_overflows, 0u);
}

// Elephant windows are aligned to multiples of the window length: a flow's count restarts in
// each window, so bytes split across a boundary are not summed, and a flow over the rate for a
// whole window is caught in it.
TEST(Classifier, ElephantWindowsAreAligned) {
    Classifier classifier(elephant_config());     // 10 kB within 10 ms windows
    const auto big = tcp4(40000, 8000, 0, 1400);  // 1454-byte frames
    // 5 frames late in window 0 and 3 early in window 1: 11.6 kB within 1 ms, never 10 kB in
    // one window.
    uint64_t now = 9'500'000;
    for (int i = 0; i < 8; ++i, now += 100'000)
        run(classifier, big, now);
    EXPECT_EQ(classifier.counters().elephants_detected, 0u);
    // 7 frames within window 2: detected.
    now = 20'000'000;
    for (int i = 0; i < 7; ++i, now += 100'000)
        run(classifier, big, now);
    EXPECT_EQ(classifier.counters().elephants_detected, 1u);
}

TEST(Classifier, VlanAndIngressPortRules) {
    ClassifierConfig config = ClassifierConfig::defaults();
    Rule rule;
    rule.match.ingress_port = 2;
    rule.match.vlan_id = 300;
    rule.action = {kTraining, 11, std::nullopt};
    config.rules.push_back(rule);
    Classifier classifier(config);
    const auto tagged = PacketBuilder()
                            .ethernet()
                            .vlan(300)
                            .ipv4({1, 1, 1, 1}, {2, 2, 2, 2}, 6)
                            .tcp(1, 8000)
                            .build();
    const auto qinq = PacketBuilder()
                          .ethernet()
                          .vlan(300, 0x88A8)
                          .vlan(5)
                          .ipv4({1, 1, 1, 1}, {2, 2, 2, 2}, 6)
                          .tcp(1, 8000)
                          .build();
    EXPECT_EQ(run(classifier, tagged, 0, 2).job_id, 11u);
    EXPECT_EQ(run(classifier, qinq, 0, 2).job_id, 11u);  // outermost tag
    EXPECT_EQ(run(classifier, tagged, 0, 1).source, MatchSource::port);
    const Result r = run(classifier, tagged, 0, 2);
    EXPECT_EQ(r.l3_offset, 18);
}

TEST(Classifier, ConfigValidationNamesEachField) {
    const auto first_error = [](const ClassifierConfig& config) {
        const auto errors = config.validate();
        return errors.empty() ? std::string() : errors.front();
    };
    const auto starts_with = [](const std::string& text, const std::string& prefix) {
        return text.rfind(prefix, 0) == 0;
    };
    ClassifierConfig c = ClassifierConfig::defaults();
    c.class_names.push_back("other");
    EXPECT_TRUE(starts_with(first_error(c), "class_names[3]")) << first_error(c);
    c = ClassifierConfig::defaults();
    c.dscp_map.push_back({26, 0});
    EXPECT_TRUE(starts_with(first_error(c), "dscp_map[3].dscp")) << first_error(c);
    c = ClassifierConfig::defaults();
    c.model_serving_ports.push_back(0);
    EXPECT_TRUE(starts_with(first_error(c), "model_serving_ports[7]")) << first_error(c);
    c = ClassifierConfig::defaults();
    c.flow_table_capacity = 0;
    EXPECT_TRUE(starts_with(first_error(c), "flow_table_capacity")) << first_error(c);
    c.elephant_threshold_bytes = 0;  // without elephants, no flow table is fine
    EXPECT_EQ(first_error(c), "");
    c = ClassifierConfig::defaults();
    for (uint32_t slots : {0u, 1u, 3u, 6u, 32u}) {
        c.flow_slots_per_flow = slots;
        EXPECT_TRUE(starts_with(first_error(c), "flow_slots_per_flow")) << slots;
    }
    for (uint32_t slots : {2u, 4u, 8u, 16u}) {
        c.flow_slots_per_flow = slots;
        EXPECT_EQ(first_error(c), "") << slots;
    }
    c.flow_table_capacity = 1u << 28;  // 2^28 flows x 8 slots: more than 2^30 slots
    c.flow_slots_per_flow = 8;
    EXPECT_TRUE(starts_with(first_error(c), "flow_slots_per_flow")) << first_error(c);
    c.flow_slots_per_flow = 4;
    EXPECT_EQ(first_error(c), "");
    c = ClassifierConfig::defaults();
    c.elephant_threshold_bytes = kMaxElephantThresholdBytes + 1;  // window counts are 32-bit
    EXPECT_TRUE(starts_with(first_error(c), "elephant_threshold_bytes")) << first_error(c);
    c.elephant_threshold_bytes = kMaxElephantThresholdBytes;
    EXPECT_EQ(first_error(c), "");
    c = ClassifierConfig::defaults();
    c.max_vlan_depth = 9;
    EXPECT_TRUE(starts_with(first_error(c), "max_vlan_depth")) << first_error(c);
    c = ClassifierConfig::defaults();
    c.roce_class = 3;
    EXPECT_TRUE(starts_with(first_error(c), "roce_class")) << first_error(c);
    c = ClassifierConfig::defaults();
    c.rules.resize(1);
    c.rules[0].match.dest_qp = {5, 4};
    EXPECT_TRUE(starts_with(first_error(c), "rules[0].dest_qp")) << first_error(c);
}

TEST(Classifier, AgeingRunsBoundedInsideBursts) {
    ClassifierConfig config = ClassifierConfig::defaults();
    config.flow_table_capacity = 256;
    config.aging_scan_per_burst = 16;
    config.flow_idle_timeout_ns = 10 * kMs;
    Classifier classifier(config);
    std::vector<std::vector<uint8_t>> frames;
    std::vector<const uint8_t*> pointers;
    std::vector<uint32_t> lengths;
    for (uint16_t i = 0; i < 64; ++i)
        frames.push_back(tcp4(uint16_t(2000 + i), 22));
    for (const auto& f : frames) {
        pointers.push_back(f.data());
        lengths.push_back(uint32_t(f.size()));
    }
    std::vector<Result> out(64);
    classifier.classify_burst(pointers.data(), lengths.data(), 64, 0, 0, out.data());
    EXPECT_EQ(classifier.flows().size(), 64u);
    // One packet of one flow, 20 ms later: each burst visits at most 16 slots.
    classifier.classify_burst(pointers.data(), lengths.data(), 1, 0, 20 * kMs, out.data());
    EXPECT_GE(classifier.flows().size(), 64u - 16u);
    // One sweep: every slot, and each removal visits its slot once more.
    const uint32_t sweep_bursts = (classifier.flows().slot_count() + 63 + 15) / 16;
    for (uint32_t burst = 0; burst < sweep_bursts; ++burst) {
        classifier.classify_burst(pointers.data(), lengths.data(), 1, 0, 20 * kMs, out.data());
    }
    EXPECT_EQ(classifier.flows().size(), 1u);  // only the flow still sending
    EXPECT_EQ(classifier.counters().flows_expired, 63u);
}

}  // namespace
}  // namespace twinlane::classifier
