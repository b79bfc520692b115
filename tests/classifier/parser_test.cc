// Parser: every header combination parses to the expected fields, and every truncation of it
// (at every byte offset, in an exactly-sized heap buffer so ASan catches any over-read) is
// reported as malformed instead of crashing or reading past the end.
#include "classifier/parser.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <random>
#include <string>

#include "tests/classifier/packet_builder.h"

namespace twinlane::classifier {
namespace {

using testing::PacketBuilder;

constexpr testing::Ipv4Address kSrc4 = {10, 0, 0, 1};
constexpr testing::Ipv4Address kDst4 = {10, 0, 1, 2};

struct Case {
    std::string name;
    std::vector<uint8_t> frame;
    uint32_t header_bytes;  // bytes up to the end of the last parsed header
    std::function<void(const ParsedPacket&)> check;
};

ParserOptions vxlan_options() {
    ParserOptions options;
    options.vxlan_inner = true;
    return options;
}

std::vector<Case> cases() {
    std::vector<Case> all;
    all.push_back({"ipv4_tcp",
                   PacketBuilder()
                       .ethernet()
                       .ipv4(kSrc4, kDst4, 6, 0x5A)
                       .tcp(40000, 8001)
                       .payload(10)
                       .build(),
                   14 + 20 + 20, [](const ParsedPacket& p) {
                       EXPECT_EQ(p.ip_version, 4);
                       EXPECT_EQ(p.l3_offset, 14);
                       EXPECT_EQ(p.dscp, 0x5A >> 2);
                       EXPECT_EQ(p.ecn, 2);
                       EXPECT_EQ(p.ip_protocol, 6);
                       EXPECT_EQ(p.src_port, 40000);
                       EXPECT_EQ(p.dst_port, 8001);
                       EXPECT_EQ(p.src_address[3], 1);
                       EXPECT_EQ(p.dst_address[2], 1);
                   }});
    all.push_back({"ipv4_options_udp",
                   PacketBuilder()
                       .ethernet()
                       .ipv4(kSrc4, kDst4, 17, 0, 12)
                       .udp(1000, 2000)
                       .payload(4)
                       .build(),
                   14 + 32 + 8, [](const ParsedPacket& p) {
                       EXPECT_EQ(p.ip_protocol, 17);
                       EXPECT_EQ(p.dst_port, 2000);
                   }});
    all.push_back({"vlan_ipv4_icmp",
                   PacketBuilder().ethernet().vlan(100).ipv4(kSrc4, kDst4, 1).icmp(8, 0).build(),
                   14 + 4 + 20 + 4, [](const ParsedPacket& p) {
                       EXPECT_EQ(p.vlan_id, 100);
                       EXPECT_EQ(p.vlan_count, 1);
                       EXPECT_EQ(p.l3_offset, 18);
                       EXPECT_EQ(p.icmp_type, 8);
                   }});
    all.push_back({"qinq_ipv4_tcp_options",
                   PacketBuilder()
                       .ethernet()
                       .vlan(7, 0x88A8)
                       .vlan(300)
                       .ipv4(kSrc4, kDst4, 6)
                       .tcp(1, 2, 12)
                       .build(),
                   14 + 8 + 20 + 32, [](const ParsedPacket& p) {
                       EXPECT_EQ(p.vlan_id, 7);
                       EXPECT_EQ(p.vlan_count, 2);
                       EXPECT_EQ(p.l3_offset, 22);
                       EXPECT_EQ(p.dst_port, 2);
                   }});
    all.push_back({"ipv4_roce",
                   PacketBuilder()
                       .ethernet()
                       .ipv4(kSrc4, kDst4, 17, 0x6A)
                       .udp(55555, 4791)
                       .bth(0x0A, 0xABCDEF)
                       .payload(16)
                       .build(),
                   14 + 20 + 8 + 12, [](const ParsedPacket& p) {
                       EXPECT_TRUE(p.roce);
                       EXPECT_EQ(p.bth_opcode, 0x0A);
                       EXPECT_EQ(p.dest_qp, 0xABCDEFu);
                       EXPECT_EQ(p.dscp, 26);
                   }});
    all.push_back({"ipv4_first_fragment",
                   PacketBuilder()
                       .ethernet()
                       .ipv4(kSrc4, kDst4, 17, 0, 0, 77, 0, true)
                       .udp(5, 6)
                       .payload(8)
                       .build(),
                   14 + 20 + 8, [](const ParsedPacket& p) {
                       EXPECT_EQ(p.fragment, Fragment::first);
                       EXPECT_EQ(p.fragment_id, 77u);
                       EXPECT_EQ(p.dst_port, 6);
                   }});
    all.push_back(
        {"ipv4_later_fragment",
         PacketBuilder().ethernet().ipv4(kSrc4, kDst4, 17, 0, 0, 77, 3).payload(16).build(),
         14 + 20, [](const ParsedPacket& p) {
             EXPECT_EQ(p.fragment, Fragment::later);
             EXPECT_EQ(p.dst_port, 0);
             EXPECT_EQ(p.ip_protocol, 17);
         }});
    all.push_back({"ipv6_tcp",
                   PacketBuilder()
                       .ethernet()
                       .ipv6(testing::ipv6(0x2001, 1), testing::ipv6(0x2001, 2), 6, 0xB9)
                       .tcp(33000, 50051)
                       .build(),
                   14 + 40 + 20, [](const ParsedPacket& p) {
                       EXPECT_EQ(p.ip_version, 6);
                       EXPECT_EQ(p.dscp, 0xB9 >> 2);
                       EXPECT_EQ(p.ecn, 1);
                       EXPECT_EQ(p.dst_port, 50051);
                       EXPECT_EQ(p.src_address[0], 0x20);
                       EXPECT_EQ(p.dst_address[15], 2);
                   }});
    all.push_back({"ipv6_ext_chain_udp",
                   PacketBuilder()
                       .ethernet()
                       .ipv6(testing::ipv6(0xfd00, 1), testing::ipv6(0xfd00, 2), 0)
                       .ipv6_option_header(43, 1)
                       .ipv6_option_header(51)
                       .ipv6_ah(60)
                       .ipv6_option_header(17)
                       .udp(9, 10)
                       .build(),
                   14 + 40 + 16 + 8 + 12 + 8 + 8, [](const ParsedPacket& p) {
                       EXPECT_EQ(p.ip_protocol, 17);
                       EXPECT_EQ(p.src_port, 9);
                       EXPECT_EQ(p.dst_port, 10);
                   }});
    all.push_back({"ipv6_first_fragment_tcp",
                   PacketBuilder()
                       .ethernet()
                       .ipv6(testing::ipv6(1, 1), testing::ipv6(1, 2), 44)
                       .ipv6_fragment(6, 0, true, 0xDEADBEEF)
                       .tcp(80, 8080)
                       .build(),
                   14 + 40 + 8 + 20, [](const ParsedPacket& p) {
                       EXPECT_EQ(p.fragment, Fragment::first);
                       EXPECT_EQ(p.fragment_id, 0xDEADBEEFu);
                       EXPECT_EQ(p.dst_port, 8080);
                   }});
    all.push_back({"ipv6_later_fragment",
                   PacketBuilder()
                       .ethernet()
                       .ipv6(testing::ipv6(1, 1), testing::ipv6(1, 2), 0)
                       .ipv6_option_header(44)
                       .ipv6_fragment(6, 100, false, 5)
                       .payload(24)
                       .build(),
                   14 + 40 + 8 + 8, [](const ParsedPacket& p) {
                       EXPECT_EQ(p.fragment, Fragment::later);
                       EXPECT_EQ(p.ip_protocol, 6);
                       EXPECT_EQ(p.fragment_id, 5u);
                   }});
    all.push_back({"ipv6_icmpv6",
                   PacketBuilder()
                       .ethernet()
                       .vlan(5)
                       .ipv6(testing::ipv6(1, 1), testing::ipv6(1, 2), 58)
                       .icmp(128, 0)
                       .build(),
                   14 + 4 + 40 + 4, [](const ParsedPacket& p) {
                       EXPECT_EQ(p.icmp_type, 128);
                       EXPECT_EQ(p.l3_offset, 18);
                   }});
    all.push_back({"ipv6_roce",
                   PacketBuilder()
                       .ethernet()
                       .ipv6(testing::ipv6(1, 1), testing::ipv6(1, 2), 17, 0x68)
                       .udp(1234, 4791)
                       .bth(0x04, 77)
                       .build(),
                   14 + 40 + 8 + 12, [](const ParsedPacket& p) {
                       EXPECT_TRUE(p.roce);
                       EXPECT_EQ(p.dest_qp, 77u);
                   }});
    return all;
}

// VXLAN cases need vxlan_inner on.
std::vector<Case> vxlan_cases() {
    std::vector<Case> all;
    all.push_back({"vxlan_ipv4_tcp",
                   PacketBuilder()
                       .ethernet()
                       .ipv4(kSrc4, kDst4, 17, 0x02)
                       .udp(60000, 4789)
                       .vxlan(4242)
                       .ethernet()
                       .vlan(9)
                       .ipv4({192, 168, 0, 1}, {192, 168, 0, 2}, 6, 0xB8)
                       .tcp(5000, 8000)
                       .build(),
                   14 + 20 + 8 + 8 + 14 + 4 + 20 + 20, [](const ParsedPacket& p) {
                       EXPECT_TRUE(p.vxlan);
                       EXPECT_EQ(p.vni, 4242u);
                       EXPECT_EQ(p.l3_offset, 14);  // outer: for ECN marking
                       EXPECT_EQ(p.ecn, 2);
                       EXPECT_EQ(p.flow_l3_offset, 68);  // inner
                       EXPECT_EQ(p.flow_dscp, 46);
                       EXPECT_EQ(p.dst_address[0], 192);
                       EXPECT_EQ(p.dst_port, 8000);
                       EXPECT_EQ(p.vlan_id, 0);  // VLAN is the outer frame's
                   }});
    all.push_back({"vxlan_ipv6_roce",
                   PacketBuilder()
                       .ethernet()
                       .ipv6(testing::ipv6(1, 1), testing::ipv6(1, 2), 17)
                       .udp(1, 4789)
                       .vxlan(1)
                       .ethernet()
                       .ipv4({1, 1, 1, 1}, {2, 2, 2, 2}, 17)
                       .udp(7, 4791)
                       .bth(0x11, 0x123)
                       .build(),
                   14 + 40 + 8 + 8 + 14 + 20 + 8 + 12, [](const ParsedPacket& p) {
                       EXPECT_EQ(p.ip_version, 6);
                       EXPECT_EQ(p.flow_ip_version, 4);
                       EXPECT_TRUE(p.roce);
                       EXPECT_EQ(p.dest_qp, 0x123u);
                   }});
    return all;
}

void check_all_truncations(const Case& c, const ParserOptions& options) {
    SCOPED_TRACE(c.name);
    ParsedPacket parsed;
    ASSERT_EQ(parse_packet(c.frame.data(), uint32_t(c.frame.size()), options, parsed),
              MalformedReason::none);
    c.check(parsed);
    for (uint32_t cut = 0; cut < c.frame.size(); ++cut) {
        SCOPED_TRACE("cut at " + std::to_string(cut));
        // Exactly `cut` bytes on the heap: one byte too far is an ASan error.
        std::unique_ptr<uint8_t[]> exact(new uint8_t[cut]);
        std::copy(c.frame.begin(), c.frame.begin() + cut, exact.get());
        // The frame itself is cut: IP length fields now claim more than the frame holds.
        EXPECT_NE(parse_packet(exact.get(), cut, options, parsed), MalformedReason::none);
        // Headers linearised into a short buffer of a longer frame: fine iff headers fit.
        const MalformedReason reason =
            parse_packet(exact.get(), cut, uint32_t(c.frame.size()), options, parsed);
        if (cut >= c.header_bytes) {
            EXPECT_EQ(reason, MalformedReason::none) << to_string(reason);
            c.check(parsed);
        } else {
            EXPECT_NE(reason, MalformedReason::none);
        }
    }
}

TEST(Parser, EveryHeaderCombinationAndEveryTruncation) {
    for (const Case& c : cases())
        check_all_truncations(c, ParserOptions{});
}

TEST(Parser, VxlanInnerAndEveryTruncation) {
    for (const Case& c : vxlan_cases())
        check_all_truncations(c, vxlan_options());
}

// The fields parse_simple_ipv4 and parse_simple_ipv6 share must be what parse_packet reports.
template <typename Simple>
void expect_common_fields(const ParsedPacket& p, const Simple& simple) {
    EXPECT_EQ(p.l3_offset, simple.l3_offset);
    EXPECT_EQ(p.flow_l3_offset, simple.l3_offset);
    EXPECT_EQ(p.dscp, simple.traffic_class >> 2);
    EXPECT_EQ(p.flow_dscp, simple.traffic_class >> 2);
    EXPECT_EQ(p.ecn, simple.traffic_class & 3);
    EXPECT_EQ(p.vlan_id, simple.vlan_id);
    EXPECT_EQ(p.vlan_count, (simple.l3_offset - 14) / 4);
    EXPECT_EQ(p.fragment, Fragment::none);
    EXPECT_EQ(p.fragment_id, 0u);
    EXPECT_EQ(p.roce, simple.roce);
    EXPECT_FALSE(p.vxlan);
    EXPECT_EQ(p.dest_qp, simple.dest_qp);
    EXPECT_EQ(p.ip_protocol, simple.ip_protocol);
    EXPECT_EQ(p.src_port, simple.src_port);
    EXPECT_EQ(p.dst_port, simple.dst_port);
}

// parse_simple_ipv4 and parse_simple_ipv6 (the classifier's fast paths) must agree with
// parse_packet whenever one accepts a frame, and never both; returns whether one accepted.
bool simple_agrees(const uint8_t* data, uint32_t header_bytes, uint32_t wire_length,
                   const ParserOptions& options) {
    SimpleIpv4 v4;
    SimpleIpv6 v6;
    const bool took_v4 = parse_simple_ipv4(data, header_bytes, wire_length, options, v4);
    const bool took_v6 = parse_simple_ipv6(data, header_bytes, wire_length, options, v6);
    EXPECT_FALSE(took_v4 && took_v6);
    if (!took_v4 && !took_v6) return false;
    ParsedPacket p;
    EXPECT_EQ(parse_packet(data, header_bytes, wire_length, options, p), MalformedReason::none);
    const uint8_t version = took_v4 ? 4 : 6;
    EXPECT_EQ(p.ip_version, version);
    EXPECT_EQ(p.flow_ip_version, version);
    if (took_v4) {
        expect_common_fields(p, v4);
        EXPECT_EQ(p.src_ipv4, v4.src_ipv4);
        EXPECT_EQ(p.dst_ipv4, v4.dst_ipv4);
    } else {
        expect_common_fields(p, v6);
        // The caller reads the addresses at l3_offset + 8: readable, and parse_packet's.
        EXPECT_LE(uint32_t{v6.l3_offset} + 40, header_bytes);
        EXPECT_TRUE(
            std::equal(p.src_address.begin(), p.src_address.end(), data + v6.l3_offset + 8));
        EXPECT_TRUE(
            std::equal(p.dst_address.begin(), p.dst_address.end(), data + v6.l3_offset + 24));
    }
    return true;
}

TEST(Parser, SimpleIpPathsAgreeWithFullParser) {
    uint32_t accepted = 0;
    std::mt19937 rng(11);
    for (const bool vxlan : {false, true}) {
        const ParserOptions options = vxlan ? vxlan_options() : ParserOptions{};
        std::vector<Case> all = cases();
        for (Case& c : vxlan_cases())
            all.push_back(std::move(c));
        for (const Case& c : all) {
            SCOPED_TRACE(c.name);
            const uint32_t size = uint32_t(c.frame.size());
            for (uint32_t cut = 0; cut <= size; ++cut) {
                std::unique_ptr<uint8_t[]> exact(new uint8_t[cut]);
                std::copy(c.frame.begin(), c.frame.begin() + cut, exact.get());
                accepted += simple_agrees(exact.get(), cut, cut, options);
                accepted += simple_agrees(exact.get(), cut, size, options);
                accepted += simple_agrees(exact.get(), cut, size + 100, options);
            }
            // Byte mutations of the headers (lengths, flags, version, ports, ethertype).
            for (int round = 0; round < 3000; ++round) {
                std::vector<uint8_t> frame = c.frame;
                const int changes = 1 + int(rng() % 3);
                for (int k = 0; k < changes; ++k) {
                    frame[rng() % std::min<size_t>(frame.size(), 60)] = uint8_t(rng());
                }
                const uint32_t wire = uint32_t(frame.size()) - rng() % 8 + rng() % 8;
                accepted += simple_agrees(frame.data(), uint32_t(frame.size()), wire, options);
            }
        }
    }
    EXPECT_GT(accepted, 1000u);  // the fast path is actually taken
    // The plain IPv4 cases, RoCEv2, one VLAN tag and QinQ take it; deeper stacks and (with
    // vxlan_inner) VXLAN never do.
    const auto tcp = PacketBuilder().ethernet().ipv4(kSrc4, kDst4, 6).tcp(1, 2).build();
    EXPECT_TRUE(simple_agrees(tcp.data(), uint32_t(tcp.size()), uint32_t(tcp.size()), {}));
    const auto roce =
        PacketBuilder().ethernet().ipv4(kSrc4, kDst4, 17).udp(1, 4791).bth(4, 9).build();
    EXPECT_TRUE(simple_agrees(roce.data(), uint32_t(roce.size()), uint32_t(roce.size()), {}));
    SimpleIpv4 simple;
    ASSERT_TRUE(
        parse_simple_ipv4(roce.data(), uint32_t(roce.size()), uint32_t(roce.size()), {}, simple));
    EXPECT_TRUE(simple.roce);
    EXPECT_EQ(simple.dest_qp, 9u);
    const auto tagged =
        PacketBuilder().ethernet().vlan(300).ipv4(kSrc4, kDst4, 6).tcp(1, 2).build();
    EXPECT_TRUE(simple_agrees(tagged.data(), uint32_t(tagged.size()), uint32_t(tagged.size()), {}));
    ASSERT_TRUE(parse_simple_ipv4(tagged.data(), uint32_t(tagged.size()), uint32_t(tagged.size()),
                                  {}, simple));
    EXPECT_EQ(simple.vlan_id, 300);
    EXPECT_EQ(simple.l3_offset, 18);
    const auto stacked = PacketBuilder()
                             .ethernet()
                             .vlan(10, 0x88A8)
                             .vlan(300)
                             .ipv4(kSrc4, kDst4, 6)
                             .tcp(1, 2)
                             .build();
    EXPECT_TRUE(
        simple_agrees(stacked.data(), uint32_t(stacked.size()), uint32_t(stacked.size()), {}));
    ASSERT_TRUE(parse_simple_ipv4(stacked.data(), uint32_t(stacked.size()),
                                  uint32_t(stacked.size()), {}, simple));
    EXPECT_EQ(simple.vlan_id, 10);  // the outer tag, as parse_packet
    EXPECT_EQ(simple.l3_offset, 22);
    ParserOptions one_tag;
    one_tag.max_vlan_depth = 1;  // QinQ is then malformed (vlan_too_deep): the full parser's call
    EXPECT_FALSE(
        simple_agrees(stacked.data(), uint32_t(stacked.size()), uint32_t(stacked.size()), one_tag));
    const auto three = PacketBuilder()
                           .ethernet()
                           .vlan(1, 0x88A8)
                           .vlan(2)
                           .vlan(3)
                           .ipv4(kSrc4, kDst4, 6)
                           .tcp(1, 2)
                           .build();
    EXPECT_FALSE(simple_agrees(three.data(), uint32_t(three.size()), uint32_t(three.size()), {}));
    const auto vxlan = vxlan_cases()[0].frame;
    EXPECT_FALSE(simple_agrees(vxlan.data(), uint32_t(vxlan.size()), uint32_t(vxlan.size()),
                               vxlan_options()));
    EXPECT_TRUE(simple_agrees(vxlan.data(), uint32_t(vxlan.size()), uint32_t(vxlan.size()), {}));

    // IPv6 without extension headers takes parse_simple_ipv6, behind one tag too; extension
    // headers, fragments, ICMPv6 and jumbograms (payload length 0) are left to parse_packet.
    SimpleIpv6 v6;
    auto accepted_v6 = [&](const std::vector<uint8_t>& frame) {
        const uint32_t size = uint32_t(frame.size());
        EXPECT_TRUE(simple_agrees(frame.data(), size, size, {}));
        return parse_simple_ipv6(frame.data(), size, size, {}, v6);
    };
    const testing::Ipv6Address a = testing::ipv6(0x2001, 1), b = testing::ipv6(0x2001, 2);
    ASSERT_TRUE(accepted_v6(PacketBuilder().ethernet().ipv6(a, b, 6, 0xB9).tcp(1, 2).build()));
    EXPECT_EQ(v6.traffic_class, 0xB9);
    EXPECT_EQ(v6.l3_offset, 14);
    ASSERT_TRUE(accepted_v6(
        PacketBuilder().ethernet().vlan(7).ipv6(a, b, 17).udp(3, 4791).bth(4, 77).build()));
    EXPECT_TRUE(v6.roce);
    EXPECT_EQ(v6.dest_qp, 77u);
    EXPECT_EQ(v6.l3_offset, 18);
    EXPECT_EQ(v6.vlan_id, 7);
    for (const auto& frame :
         {PacketBuilder().ethernet().ipv6(a, b, 0).ipv6_option_header(6).tcp(1, 2).build(),
          PacketBuilder().ethernet().ipv6(a, b, 44).ipv6_fragment(6, 0, true, 9).tcp(1, 2).build(),
          PacketBuilder().ethernet().ipv6(a, b, 58).icmp(128, 0).build()}) {
        EXPECT_FALSE(
            simple_agrees(frame.data(), uint32_t(frame.size()), uint32_t(frame.size()), {}));
    }
    auto jumbogram = PacketBuilder().ethernet().ipv6(a, b, 6).tcp(1, 2).build();
    jumbogram[14 + 4] = jumbogram[14 + 5] = 0;
    EXPECT_FALSE(simple_agrees(jumbogram.data(), uint32_t(jumbogram.size()),
                               uint32_t(jumbogram.size()), {}));
    ParsedPacket parsed;
    EXPECT_EQ(parse_packet(jumbogram.data(), uint32_t(jumbogram.size()), {}, parsed),
              MalformedReason::none);
}

TEST(Parser, VxlanIgnoredWhenDisabled) {
    const auto frame = vxlan_cases()[0].frame;
    ParsedPacket parsed;
    ASSERT_EQ(parse_packet(frame.data(), uint32_t(frame.size()), ParserOptions{}, parsed),
              MalformedReason::none);
    EXPECT_FALSE(parsed.vxlan);
    EXPECT_EQ(parsed.dst_port, 4789);
    EXPECT_EQ(parsed.dst_address[0], 10);
}

TEST(Parser, NonIpIsNotMalformed) {
    const auto frame = PacketBuilder().ethernet(0x0806).payload(28).build();
    ParsedPacket parsed;
    EXPECT_EQ(parse_packet(frame.data(), uint32_t(frame.size()), ParserOptions{}, parsed),
              MalformedReason::none);
    EXPECT_EQ(parsed.ip_version, 0);
}

TEST(Parser, MalformedReasons) {
    ParsedPacket parsed;
    const ParserOptions options;
    auto reason_of = [&](std::vector<uint8_t> frame) {
        return parse_packet(frame.data(), uint32_t(frame.size()), options, parsed);
    };
    EXPECT_EQ(reason_of(PacketBuilder()
                            .ethernet()
                            .vlan(1)
                            .vlan(2)
                            .vlan(3)
                            .ipv4(kSrc4, kDst4, 6)
                            .tcp(1, 2)
                            .build()),
              MalformedReason::vlan_too_deep);
    auto frame = PacketBuilder().ethernet().ipv4(kSrc4, kDst4, 6).tcp(1, 2).build();
    frame[14] = 0x44;  // IHL 4
    EXPECT_EQ(reason_of(frame), MalformedReason::ipv4_bad_header_length);
    frame[14] = 0x55;  // version 5
    EXPECT_EQ(reason_of(frame), MalformedReason::ipv4_bad_version);
    frame = PacketBuilder().ethernet().ipv4(kSrc4, kDst4, 6).tcp(1, 2).build();
    frame[16] = 0;
    frame[17] = 19;  // total length < header
    EXPECT_EQ(reason_of(frame), MalformedReason::ipv4_bad_total_length);
    frame = PacketBuilder().ethernet().ipv4(kSrc4, kDst4, 6).tcp(1, 2).build();
    frame[14 + 20 + 12] = 0x40;  // data offset 4
    EXPECT_EQ(reason_of(frame), MalformedReason::tcp_bad_data_offset);
    frame = PacketBuilder().ethernet().ipv4(kSrc4, kDst4, 17).udp(1, 2).payload(4).build();
    frame[14 + 20 + 5] = 7;  // UDP length 7
    EXPECT_EQ(reason_of(frame), MalformedReason::udp_bad_length);
    frame = PacketBuilder()
                .ethernet()
                .ipv6(testing::ipv6(1, 1), testing::ipv6(1, 2), 6)
                .tcp(1, 2)
                .build();
    frame[14] = 0x40;
    EXPECT_EQ(reason_of(frame), MalformedReason::ipv6_bad_version);
    PacketBuilder deep;
    deep.ethernet().ipv6(testing::ipv6(1, 1), testing::ipv6(1, 2), 60);
    for (unsigned i = 0; i < kMaxIpv6ExtensionHeaders; ++i)
        deep.ipv6_option_header(60);
    deep.ipv6_option_header(6).tcp(1, 2);
    EXPECT_EQ(reason_of(deep.build()), MalformedReason::ipv6_ext_too_deep);
    frame = PacketBuilder()
                .ethernet()
                .ipv4(kSrc4, kDst4, 17)
                .udp(1, 4789)
                .vxlan(1, 0x00)
                .ethernet()
                .payload(30)
                .build();
    EXPECT_EQ(parse_packet(frame.data(), uint32_t(frame.size()), vxlan_options(), parsed),
              MalformedReason::vxlan_bad_flags);
    // Ethernet padding after a short IP packet is fine.
    frame = PacketBuilder().ethernet().ipv4(kSrc4, kDst4, 17).udp(1, 2).build();
    frame.resize(60, 0);
    EXPECT_EQ(reason_of(frame), MalformedReason::none);
}

}  // namespace
}  // namespace twinlane::classifier
