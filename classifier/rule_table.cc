#include "classifier/rule_table.h"

#include <algorithm>
#include <bit>
#include <map>
#include <numeric>

namespace twinlane::classifier {
namespace {

struct MaskedRange {
    uint64_t mask;  // mask bits for the field (within its width)
    bool exact_by_mask;
};

// An inclusive range [first, last] over a `width`-bit field is representable as a mask iff it
// is an aligned power-of-two block; the full range becomes mask 0 (wildcard).
MaskedRange range_as_mask(uint32_t first, uint32_t last, unsigned width) {
    const uint64_t size = uint64_t{last} - first + 1;
    const uint64_t field_all = (uint64_t{1} << width) - 1;
    if (std::has_single_bit(size) && (first & (size - 1)) == 0) {
        return {field_all & ~(size - 1), true};
    }
    return {0, false};
}

void set_prefix_mask(const IpPrefix& prefix, uint64_t& hi_mask, uint64_t& lo_mask) {
    const unsigned length = prefix.length;
    const unsigned hi_bits = length >= 64 ? 64 : length;
    const unsigned lo_bits = length >= 64 ? length - 64 : 0;
    hi_mask = hi_bits == 0 ? 0 : ~uint64_t{0} << (64 - hi_bits);
    lo_mask = lo_bits == 0 ? 0 : ~uint64_t{0} << (64 - lo_bits);
}

PacketKey prefix_value(const IpPrefix& prefix) {
    KeyFields fields;
    fields.src_address = prefix.address;
    return make_key(fields);  // words[0..1] hold the address as the key stores it
}

// Probe hash for the tuple tables: six independent multiplies summed (no dependency chain, no
// finaliser), index from the high half where every input bit has mixed in. A lookup hashes
// once per visited tuple, so this is cheaper than hash_key (measured: BM_Compiled/1000 in
// classifier_acl_bench).
uint32_t probe_hash(const PacketKey& key) {
    const auto& w = key.words;
    const uint64_t h = w[0] * 0x9E3779B97F4A7C15ull + w[1] * 0xC2B2AE3D27D4EB4Full +
                       w[2] * 0x165667B19E3779F9ull + w[3] * 0xD6E8FEB86659FD93ull +
                       w[4] * 0xFF51AFD7ED558CCDull + w[5] * 0xC4CEB9FE1A85EC53ull;
    return uint32_t(h >> 32) ^ uint32_t(h >> 48);
}

PacketKey masked(const PacketKey& key, const PacketKey& mask) {
    PacketKey out;
    for (size_t i = 0; i < out.words.size(); ++i)
        out.words[i] = key.words[i] & mask.words[i];
    return out;
}

}  // namespace

CompiledRuleTable CompiledRuleTable::build(std::span<const Rule> rules, uint64_t generation) {
    CompiledRuleTable table;
    table.generation_ = generation;
    table.actions_.reserve(rules.size());
    for (const Rule& rule : rules)
        table.actions_.push_back(rule.action);

    std::vector<uint32_t> order(rules.size());
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return rules[a].priority < rules[b].priority; });

    struct Pending {
        PacketKey value;
        CompiledRule compiled;
    };
    // mask words → rules in rank order (std::map keeps build deterministic)
    std::map<std::array<uint64_t, 6>, std::vector<Pending>> by_mask;
    for (uint32_t rank = 0; rank < order.size(); ++rank) {
        const uint32_t index = order[rank];
        const RuleMatch& m = rules[index].match;
        PacketKey mask;
        PacketKey value;
        uint8_t version = 0;
        if (m.src) {
            version = m.src->ip_version;
            set_prefix_mask(*m.src, mask.words[0], mask.words[1]);
            const PacketKey v = prefix_value(*m.src);
            value.words[0] = v.words[0];
            value.words[1] = v.words[1];
        }
        if (m.dst) {
            version = m.dst->ip_version;
            set_prefix_mask(*m.dst, mask.words[2], mask.words[3]);
            const PacketKey v = prefix_value(*m.dst);
            value.words[2] = v.words[0];
            value.words[3] = v.words[1];
        }
        if (m.ingress_port) {
            mask.words[4] |= uint64_t{0xFFFF} << 48;
            value.words[4] |= uint64_t{*m.ingress_port} << 48;
        }
        if (m.vlan_id) {
            mask.words[4] |= uint64_t{0xFFFF} << 32;
            value.words[4] |= uint64_t{*m.vlan_id} << 32;
        }
        CompiledRule compiled{rank, index, 0, 65535, 0, 65535, 0, 0xFFFFFF};
        const MaskedRange sport = range_as_mask(m.src_ports.first, m.src_ports.last, 16);
        if (sport.exact_by_mask) {
            mask.words[4] |= sport.mask << 16;
            value.words[4] |= uint64_t{m.src_ports.first} << 16;
        } else {
            compiled.src_port_first = m.src_ports.first;
            compiled.src_port_last = m.src_ports.last;
        }
        const MaskedRange dport = range_as_mask(m.dst_ports.first, m.dst_ports.last, 16);
        if (dport.exact_by_mask) {
            mask.words[4] |= dport.mask;
            value.words[4] |= m.dst_ports.first;
        } else {
            compiled.dst_port_first = m.dst_ports.first;
            compiled.dst_port_last = m.dst_ports.last;
        }
        if (m.ip_protocol) {
            mask.words[5] |= uint64_t{0xFF} << 56;
            value.words[5] |= uint64_t{*m.ip_protocol} << 56;
        }
        if (m.dscp) {
            mask.words[5] |= uint64_t{0xFF} << 48;
            value.words[5] |= uint64_t{*m.dscp} << 48;
        }
        if (version != 0) {
            mask.words[5] |= uint64_t{0xFF} << 40;
            value.words[5] |= uint64_t{version} << 40;
        }
        const bool qp_narrowed = m.dest_qp.first != 0 || m.dest_qp.last != 0xFFFFFF;
        if (m.roce || qp_narrowed) {
            mask.words[5] |= uint64_t{0xFF} << 32;
            value.words[5] |= uint64_t{(m.roce.value_or(true)) ? 1u : 0u} << 32;
        }
        if (qp_narrowed) {
            const MaskedRange qp = range_as_mask(m.dest_qp.first, m.dest_qp.last, 24);
            if (qp.exact_by_mask) {
                mask.words[5] |= qp.mask;
                value.words[5] |= m.dest_qp.first;
            } else {
                compiled.qp_first = m.dest_qp.first;
                compiled.qp_last = m.dest_qp.last;
            }
        }
        by_mask[mask.words].push_back({masked(value, mask), compiled});
    }

    for (auto& [mask_words, pending] : by_mask) {
        Tuple tuple;
        tuple.mask.words = mask_words;
        tuple.best_rank = pending.front().compiled.rank;  // pushed in rank order
        // Group equal values; stable so each group stays in rank order.
        std::stable_sort(pending.begin(), pending.end(), [](const Pending& a, const Pending& b) {
            return a.value.words < b.value.words;
        });
        size_t distinct = 0;
        for (size_t i = 0; i < pending.size(); ++i) {
            if (i == 0 || !(pending[i].value == pending[i - 1].value)) ++distinct;
        }
        const uint32_t bucket_count = std::bit_ceil(uint32_t(distinct * 2));
        tuple.bucket_mask = bucket_count - 1;
        tuple.first_bucket = uint32_t(table.buckets_.size());
        table.buckets_.resize(table.buckets_.size() + bucket_count);
        table.tags_.resize(table.buckets_.size(), 0);
        for (size_t i = 0; i < pending.size();) {
            size_t j = i;
            while (j < pending.size() && pending[j].value == pending[i].value)
                ++j;
            const uint32_t hash = probe_hash(pending[i].value);
            uint32_t slot = hash & tuple.bucket_mask;
            while (table.buckets_[tuple.first_bucket + slot].end != 0) {
                slot = (slot + 1) & tuple.bucket_mask;
            }
            table.tags_[tuple.first_bucket + slot] = tag_of(hash);
            Bucket& bucket = table.buckets_[tuple.first_bucket + slot];
            bucket.value = pending[i].value;
            bucket.begin = uint32_t(table.rules_.size());
            for (size_t k = i; k < j; ++k)
                table.rules_.push_back(pending[k].compiled);
            bucket.end = uint32_t(table.rules_.size());
            i = j;
        }
        table.tuples_.push_back(tuple);
    }
    std::sort(table.tuples_.begin(), table.tuples_.end(),
              [](const Tuple& a, const Tuple& b) { return a.best_rank < b.best_rank; });
    return table;
}

uint32_t CompiledRuleTable::match(const PacketKey& key) const {
    uint32_t best_rank = kNoRule;
    uint32_t best_index = kNoRule;
    const uint16_t sport = key_src_port(key);
    const uint16_t dport = key_dst_port(key);
    const uint32_t qp = key_dest_qp(key);
    for (const Tuple& tuple : tuples_) {
        if (tuple.best_rank >= best_rank) break;  // tuples are sorted: nothing later can win
        const PacketKey probe = masked(key, tuple.mask);
        const uint32_t hash = probe_hash(probe);
        const uint16_t tag = tag_of(hash);
        uint32_t slot = hash & tuple.bucket_mask;
        for (;;) {
            const uint16_t stored = tags_[tuple.first_bucket + slot];
            if (stored == 0) break;
            const Bucket& bucket = buckets_[tuple.first_bucket + slot];
            if (stored == tag && bucket.value == probe) {
                for (uint32_t i = bucket.begin; i < bucket.end; ++i) {
                    const CompiledRule& rule = rules_[i];
                    if (rule.rank >= best_rank) break;
                    if (sport < rule.src_port_first || sport > rule.src_port_last) continue;
                    if (dport < rule.dst_port_first || dport > rule.dst_port_last) continue;
                    if (qp < rule.qp_first || qp > rule.qp_last) continue;
                    best_rank = rule.rank;
                    best_index = rule.rule_index;
                    break;
                }
                break;
            }
            slot = (slot + 1) & tuple.bucket_mask;
        }
    }
    return best_index;
}

}  // namespace twinlane::classifier
