#include "classifier/rule.h"

namespace twinlane::classifier {
namespace {

// Compares the top `length` bits of a 128-bit big-endian key address with a prefix.
bool prefix_contains(const IpPrefix& prefix, uint64_t hi, uint64_t lo) {
    if (prefix.ip_version == 4) {
        const uint32_t address = uint32_t(hi >> 32);
        const uint32_t net = (uint32_t{prefix.address[0]} << 24) |
                             (uint32_t{prefix.address[1]} << 16) |
                             (uint32_t{prefix.address[2]} << 8) | prefix.address[3];
        const uint32_t mask = prefix.length == 0 ? 0 : ~uint32_t{0} << (32 - prefix.length);
        return (address & mask) == (net & mask);
    }
    const uint64_t net_hi = load_be64(prefix.address.data());
    const uint64_t net_lo = load_be64(prefix.address.data() + 8);
    const unsigned hi_bits = prefix.length >= 64 ? 64 : prefix.length;
    const unsigned lo_bits = prefix.length >= 64 ? prefix.length - 64 : 0;
    const uint64_t hi_mask = hi_bits == 0 ? 0 : ~uint64_t{0} << (64 - hi_bits);
    const uint64_t lo_mask = lo_bits == 0 ? 0 : ~uint64_t{0} << (64 - lo_bits);
    return (hi & hi_mask) == (net_hi & hi_mask) && (lo & lo_mask) == (net_lo & lo_mask);
}

bool host_bits_clear(const IpPrefix& prefix) {
    const unsigned total_bits = prefix.ip_version == 4 ? 32 : 128;
    for (unsigned bit = prefix.length; bit < total_bits; ++bit) {
        if (prefix.address[bit / 8] & (0x80u >> (bit % 8))) return false;
    }
    return true;
}

std::string validate_prefix(const char* field, const IpPrefix& prefix) {
    if (prefix.ip_version != 4 && prefix.ip_version != 6) {
        return std::string(field) + ": ip_version must be 4 or 6, got " +
               std::to_string(prefix.ip_version);
    }
    const unsigned max_length = prefix.ip_version == 4 ? 32 : 128;
    if (prefix.length > max_length) {
        return std::string(field) + ": prefix length " + std::to_string(prefix.length) +
               " exceeds " + std::to_string(max_length);
    }
    if (!host_bits_clear(prefix)) {
        return std::string(field) + ": address has bits set beyond the /" +
               std::to_string(prefix.length) + " prefix";
    }
    return {};
}

}  // namespace

bool rule_matches(const Rule& rule, const PacketKey& key) {
    const RuleMatch& m = rule.match;
    if (m.ingress_port && *m.ingress_port != key_ingress_port(key)) return false;
    if (m.vlan_id && *m.vlan_id != key_vlan_id(key)) return false;
    if (m.src) {
        if (key_ip_version(key) != m.src->ip_version) return false;
        if (!prefix_contains(*m.src, key.words[0], key.words[1])) return false;
    }
    if (m.dst) {
        if (key_ip_version(key) != m.dst->ip_version) return false;
        if (!prefix_contains(*m.dst, key.words[2], key.words[3])) return false;
    }
    if (m.ip_protocol && *m.ip_protocol != key_ip_protocol(key)) return false;
    const uint16_t sport = key_src_port(key);
    const uint16_t dport = key_dst_port(key);
    if (sport < m.src_ports.first || sport > m.src_ports.last) return false;
    if (dport < m.dst_ports.first || dport > m.dst_ports.last) return false;
    if (m.dscp && *m.dscp != key_dscp(key)) return false;
    const bool qp_narrowed = m.dest_qp.first != 0 || m.dest_qp.last != 0xFFFFFF;
    if (m.roce && *m.roce != key_roce(key)) return false;
    if (qp_narrowed) {
        if (!key_roce(key)) return false;
        const uint32_t qp = key_dest_qp(key);
        if (qp < m.dest_qp.first || qp > m.dest_qp.last) return false;
    }
    return true;
}

uint32_t first_match_linear(std::span<const Rule> rules, const PacketKey& key) {
    uint32_t best = kNoRule;
    for (uint32_t i = 0; i < rules.size(); ++i) {
        if (best != kNoRule && rules[i].priority >= rules[best].priority) continue;
        if (rule_matches(rules[i], key)) best = i;
    }
    return best;
}

std::string validate_rule(const Rule& rule, size_t class_count) {
    const RuleMatch& m = rule.match;
    if (m.vlan_id && *m.vlan_id > 4095) {
        return "vlan_id: " + std::to_string(*m.vlan_id) + " is not a 12-bit VLAN id";
    }
    if (m.src) {
        if (auto error = validate_prefix("src", *m.src); !error.empty()) return error;
    }
    if (m.dst) {
        if (auto error = validate_prefix("dst", *m.dst); !error.empty()) return error;
    }
    if (m.src && m.dst && m.src->ip_version != m.dst->ip_version) {
        return "dst: IP version " + std::to_string(m.dst->ip_version) + " differs from src's " +
               std::to_string(m.src->ip_version);
    }
    if (m.src_ports.first > m.src_ports.last) {
        return "src_ports: first " + std::to_string(m.src_ports.first) + " > last " +
               std::to_string(m.src_ports.last);
    }
    if (m.dst_ports.first > m.dst_ports.last) {
        return "dst_ports: first " + std::to_string(m.dst_ports.first) + " > last " +
               std::to_string(m.dst_ports.last);
    }
    if (m.dscp && *m.dscp > 63) return "dscp: " + std::to_string(*m.dscp) + " exceeds 63";
    if (m.dest_qp.last > 0xFFFFFF) return "dest_qp: last exceeds the 24-bit QP space";
    if (m.dest_qp.first > m.dest_qp.last) {
        return "dest_qp: first " + std::to_string(m.dest_qp.first) + " > last " +
               std::to_string(m.dest_qp.last);
    }
    const bool qp_narrowed = m.dest_qp.first != 0 || m.dest_qp.last != 0xFFFFFF;
    if (qp_narrowed && m.roce && !*m.roce) return "dest_qp: set on a rule with roce = false";
    if (rule.action.class_id >= class_count) {
        return "action.class_id: " + std::to_string(rule.action.class_id) +
               " is not a configured class (have " + std::to_string(class_count) + ")";
    }
    if (rule.action.remark_dscp && *rule.action.remark_dscp > 63) {
        return "action.remark_dscp: " + std::to_string(*rule.action.remark_dscp) + " exceeds 63";
    }
    return {};
}

}  // namespace twinlane::classifier
