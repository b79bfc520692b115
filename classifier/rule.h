// Rule: one explicit classification rule (plain data, filled from the policy file).
// A rule matches when every field it sets matches the packet's key (unset = wildcard); among
// matching rules the lowest `priority` wins, ties going to the rule earlier in the list.
// Ranges are inclusive. Ports are those of TCP/UDP (0 for other protocols and for non-first
// fragments). With VXLAN inner parsing on, addresses/protocol/ports/DSCP/RoCE are the inner
// packet's; ingress port and VLAN are always the outer frame's (outermost tag; 0 = untagged).
// Plain value types; no thread-safety concerns.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "classifier/packet_key.h"

namespace twinlane::classifier {

struct IpPrefix {
    uint8_t ip_version = 4;             // 4 or 6
    std::array<uint8_t, 16> address{};  // network order; IPv4 uses the first 4 bytes
    uint8_t length = 0;                 // prefix length in bits: 0..32 (IPv4), 0..128 (IPv6)
};

struct PortRange {
    uint16_t first = 0;
    uint16_t last = 65535;
};

struct QpRange {
    uint32_t first = 0;
    uint32_t last = 0xFFFFFF;  // RoCEv2 destination QPs are 24-bit
};

struct RuleMatch {
    std::optional<uint16_t> ingress_port;  // DPDK port id the packet arrived on
    std::optional<uint16_t> vlan_id;       // 0..4095; 0 matches untagged/priority-tagged
    std::optional<IpPrefix> src;           // source prefix (also fixes the IP version)
    std::optional<IpPrefix> dst;           // destination prefix; same version as src if both
    std::optional<uint8_t> ip_protocol;    // 6 TCP, 17 UDP, 1 ICMP, 58 ICMPv6, ...
    PortRange src_ports;                   // default: any
    PortRange dst_ports;                   // default: any
    std::optional<uint8_t> dscp;           // 0..63
    std::optional<bool> roce;              // true: RoCEv2 only; false: non-RoCEv2 only
    QpRange dest_qp;                       // RoCEv2 destination QP range; narrowing it
                                           // implies roce = true
};

struct RuleAction {
    uint8_t class_id = 0;                // lane class, index into ClassifierConfig::class_names
    uint32_t job_id = 0;                 // job/tenant id carried to the scheduler
    std::optional<uint8_t> remark_dscp;  // 0..63: rewrite the packet's DSCP (see dscp_rewrite.h)
};

struct Rule {
    uint32_t priority = 0;  // lower wins
    RuleMatch match;
    RuleAction action;
};

inline constexpr uint32_t kNoRule = 0xFFFFFFFFu;

// Does `rule` match `key`? Straightforward field-by-field evaluation: the reference semantics
// the compiled table is tested against.
bool rule_matches(const Rule& rule, const PacketKey& key);

// First matching rule by (priority, position), or kNoRule. Linear scan: a reference for tests
// and a fallback for tiny tables, not for the hot path with large rule sets.
uint32_t first_match_linear(std::span<const Rule> rules, const PacketKey& key);

// Empty string when valid, else "field: problem" (field relative to the rule, e.g.
// "dst_ports: first 90 > last 80"). `class_count` bounds action.class_id.
std::string validate_rule(const Rule& rule, size_t class_count);

}  // namespace twinlane::classifier
