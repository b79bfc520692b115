// Compiled rule table vs. the linear reference: precedence, prefix and range edges, IPv6,
// RoCE QP ranges, and randomized agreement on large tables.
#include "classifier/rule_table.h"

#include <gtest/gtest.h>

#include <random>

namespace twinlane::classifier {
namespace {

IpPrefix prefix4(uint8_t a, uint8_t b, uint8_t c, uint8_t d, uint8_t length) {
    IpPrefix prefix;
    prefix.ip_version = 4;
    prefix.address = {a, b, c, d};
    prefix.length = length;
    return prefix;
}

KeyFields ipv4_fields(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
    KeyFields fields;
    fields.ip_version = 4;
    fields.ip_protocol = 6;
    fields.dst_address = {a, b, c, d};
    fields.src_address = {192, 0, 2, 1};
    fields.src_port = 40000;
    fields.dst_port = 443;
    return fields;
}

uint32_t both(const std::vector<Rule>& rules, const PacketKey& key) {
    const CompiledRuleTable table = CompiledRuleTable::build(rules, 1);
    const uint32_t compiled = table.match(key);
    EXPECT_EQ(compiled, first_match_linear(rules, key));
    return compiled;
}

TEST(RuleTable, LowestPriorityWinsThenListOrder) {
    std::vector<Rule> rules(3);
    rules[0].priority = 20;
    rules[0].match.ip_protocol = 6;
    rules[1].priority = 10;
    rules[1].match.dst = prefix4(10, 0, 0, 0, 8);
    rules[2].priority = 10;  // same priority, later in the list: loses to rules[1]
    rules[2].match.dst_ports = {443, 443};
    const PacketKey key = make_key(ipv4_fields(10, 1, 2, 3));
    EXPECT_EQ(both(rules, key), 1u);
    rules[1].priority = 30;
    EXPECT_EQ(both(rules, key), 2u);
    rules[2].priority = 40;
    EXPECT_EQ(both(rules, key), 0u);
    EXPECT_EQ(both(rules, make_key(ipv4_fields(11, 1, 2, 3))), 0u);
    KeyFields udp = ipv4_fields(11, 1, 2, 3);
    udp.ip_protocol = 17;
    udp.dst_port = 53;
    EXPECT_EQ(both(rules, make_key(udp)), kNoRule);
}

TEST(RuleTable, PrefixEdges) {
    std::vector<Rule> rules(1);
    rules[0].match.dst = prefix4(10, 1, 2, 0, 23);  // 10.1.2.0 - 10.1.3.255
    EXPECT_EQ(both(rules, make_key(ipv4_fields(10, 1, 2, 0))), 0u);
    EXPECT_EQ(both(rules, make_key(ipv4_fields(10, 1, 3, 255))), 0u);
    EXPECT_EQ(both(rules, make_key(ipv4_fields(10, 1, 1, 255))), kNoRule);
    EXPECT_EQ(both(rules, make_key(ipv4_fields(10, 1, 4, 0))), kNoRule);
    rules[0].match.dst = prefix4(10, 1, 2, 3, 32);
    EXPECT_EQ(both(rules, make_key(ipv4_fields(10, 1, 2, 3))), 0u);
    EXPECT_EQ(both(rules, make_key(ipv4_fields(10, 1, 2, 2))), kNoRule);
    rules[0].match.dst = prefix4(0, 0, 0, 0, 0);  // any IPv4, but not IPv6 or non-IP
    EXPECT_EQ(both(rules, make_key(ipv4_fields(255, 255, 255, 255))), 0u);
    KeyFields v6;
    v6.ip_version = 6;
    EXPECT_EQ(both(rules, make_key(v6)), kNoRule);
    EXPECT_EQ(both(rules, make_key(KeyFields{})), kNoRule);
}

TEST(RuleTable, PortRangeEdges) {
    std::vector<Rule> rules(2);
    rules[0].match.dst_ports = {8000, 8002};  // not an aligned block: checked after the hash
    rules[1].match.src_ports = {1024, 2047};  // aligned block: becomes a mask
    rules[1].priority = 1;
    KeyFields f = ipv4_fields(1, 2, 3, 4);
    for (uint16_t port : {7999, 8000, 8001, 8002, 8003}) {
        f.dst_port = port;
        f.src_port = 1;
        EXPECT_EQ(both(rules, make_key(f)), port >= 8000 && port <= 8002 ? 0u : kNoRule) << port;
    }
    f.dst_port = 1;
    for (uint16_t port : {1023, 1024, 2047, 2048}) {
        f.src_port = port;
        EXPECT_EQ(both(rules, make_key(f)), port >= 1024 && port <= 2047 ? 1u : kNoRule) << port;
    }
    rules[0].match.dst_ports = {0, 0};
    f.dst_port = 0;
    EXPECT_EQ(both(rules, make_key(f)), 0u);
    rules[0].match.dst_ports = {65535, 65535};
    f.dst_port = 65535;
    EXPECT_EQ(both(rules, make_key(f)), 0u);
}

TEST(RuleTable, Ipv6Prefixes) {
    std::vector<Rule> rules(2);
    IpPrefix net;
    net.ip_version = 6;
    net.address = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0x80};
    net.length = 65;  // crosses the 64-bit word boundary
    rules[0].match.src = net;
    rules[0].action.class_id = 1;
    rules[1].priority = 5;
    rules[1].match.src = IpPrefix{6, {0x20, 0x01}, 16};
    KeyFields f;
    f.ip_version = 6;
    f.src_address = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0xFF, 1};
    EXPECT_EQ(both(rules, make_key(f)), 0u);
    f.src_address[8] = 0x7F;  // bit 64 clear: outside the /65
    EXPECT_EQ(both(rules, make_key(f)), 1u);
    f.src_address[1] = 0x02;
    EXPECT_EQ(both(rules, make_key(f)), kNoRule);
}

TEST(RuleTable, RoceQueuePairRanges) {
    std::vector<Rule> rules(3);
    rules[0].match.dest_qp = {0x100, 0x1FF};  // aligned: mask
    rules[0].action.job_id = 1;
    rules[1].match.dest_qp = {0x200, 0x2FE};  // unaligned: range check
    rules[1].action.job_id = 2;
    rules[2].match.roce = true;
    rules[2].priority = 9;
    KeyFields f = ipv4_fields(1, 1, 1, 1);
    f.ip_protocol = 17;
    f.dst_port = 4791;
    f.roce = true;
    const std::pair<uint32_t, uint32_t> expectations[] = {{0xFF, 2},  {0x100, 0}, {0x1FF, 0},
                                                          {0x200, 1}, {0x2FE, 1}, {0x2FF, 2}};
    for (auto [qp, expected] : expectations) {
        f.dest_qp = qp;
        EXPECT_EQ(both(rules, make_key(f)), expected) << qp;
    }
    f.roce = false;
    f.dest_qp = 0;
    EXPECT_EQ(both(rules, make_key(f)), kNoRule);
}

TEST(RuleTable, VlanIngressAndDscp) {
    std::vector<Rule> rules(3);
    rules[0].match.ingress_port = 1;
    rules[0].match.vlan_id = 100;
    rules[1].match.dscp = 46;
    rules[2].match.vlan_id = 0;  // untagged
    KeyFields f = ipv4_fields(1, 1, 1, 1);
    f.ingress_port = 1;
    f.vlan_id = 100;
    EXPECT_EQ(both(rules, make_key(f)), 0u);
    f.ingress_port = 2;
    EXPECT_EQ(both(rules, make_key(f)), kNoRule);
    f.dscp = 46;
    EXPECT_EQ(both(rules, make_key(f)), 1u);
    f.dscp = 0;
    f.vlan_id = 0;
    EXPECT_EQ(both(rules, make_key(f)), 2u);
}

// Randomized rules and keys drawn from a small value space so that many keys match many rules.
TEST(RuleTable, AgreesWithLinearOnRandomTables) {
    std::mt19937 rng(12345);
    auto pick = [&](uint32_t n) { return uint32_t(rng() % n); };
    for (uint32_t rule_count : {10u, 300u, 3000u}) {
        std::vector<Rule> rules(rule_count);
        for (Rule& rule : rules) {
            rule.priority = pick(50);
            if (pick(3) == 0) rule.match.ingress_port = uint16_t(pick(3));
            if (pick(4) == 0) rule.match.vlan_id = uint16_t(pick(3));
            if (pick(2) == 0) {
                const uint8_t length = uint8_t(pick(33));
                IpPrefix prefix =
                    prefix4(10, uint8_t(pick(4)), uint8_t(pick(4)), uint8_t(pick(4)), 32);
                for (unsigned bit = length; bit < 32; ++bit)
                    prefix.address[bit / 8] &= uint8_t(~(0x80u >> (bit % 8)));
                prefix.length = length;
                rule.match.dst = prefix;
            }
            if (pick(3) == 0) rule.match.src = prefix4(192, 0, 2, 0, 24 + uint8_t(pick(2)) * 8);
            if (pick(2) == 0) rule.match.ip_protocol = pick(2) ? 6 : 17;
            if (pick(2) == 0) {
                const uint16_t first = uint16_t(pick(40));
                rule.match.dst_ports = {first, uint16_t(first + pick(20))};
            }
            if (pick(4) == 0)
                rule.match.src_ports = {uint16_t(pick(8) * 8), uint16_t(pick(8) * 8 + 7)};
            if (pick(5) == 0) rule.match.dscp = uint8_t(pick(4));
            if (pick(6) == 0) rule.match.dest_qp = {pick(16), 16 + pick(16)};
        }
        const CompiledRuleTable table = CompiledRuleTable::build(rules, 1);
        uint32_t matched = 0;
        for (int i = 0; i < 20000; ++i) {
            KeyFields f;
            f.ip_version = 4;
            f.ingress_port = uint16_t(pick(3));
            f.vlan_id = uint16_t(pick(3));
            f.dst_address = {10, uint8_t(pick(4)), uint8_t(pick(4)), uint8_t(pick(4))};
            f.src_address = {192, 0, 2, uint8_t(pick(2))};
            f.ip_protocol = pick(2) ? 6 : 17;
            f.src_port = uint16_t(pick(70));
            f.dst_port = uint16_t(pick(70));
            f.dscp = uint8_t(pick(4));
            f.roce = pick(2) == 0;
            f.dest_qp = f.roce ? pick(40) : 0;
            const PacketKey key = make_key(f);
            const uint32_t expected = first_match_linear(rules, key);
            ASSERT_EQ(table.match(key), expected) << "rules=" << rule_count << " i=" << i;
            matched += expected != kNoRule;
        }
        EXPECT_GT(matched, 1000u);  // the test exercises matches, not only misses
    }
}

TEST(RuleTable, ValidationNamesTheField) {
    Rule rule;
    rule.match.dst_ports = {90, 80};
    EXPECT_NE(validate_rule(rule, 3).find("dst_ports"), std::string::npos);
    rule = Rule{};
    rule.match.src = prefix4(10, 0, 0, 1, 8);
    EXPECT_NE(validate_rule(rule, 3).find("src"), std::string::npos);
    rule = Rule{};
    rule.action.class_id = 3;
    EXPECT_NE(validate_rule(rule, 3).find("action.class_id"), std::string::npos);
    rule = Rule{};
    EXPECT_EQ(validate_rule(rule, 3), "");
}

}  // namespace
}  // namespace twinlane::classifier
