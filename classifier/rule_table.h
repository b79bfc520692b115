// CompiledRuleTable: an immutable, priority-sorted tuple-space lookup structure built from a rule
// list (build separately from run, like DPDK's acl_bld.c / acl_run.c).
//
// Each rule becomes (mask, value, leftover ranges). Exact fields, IP prefixes and port/QP
// ranges that are aligned power-of-two blocks are expressed as masks; other ranges are checked
// after the hash hit. Rules with the same mask form a tuple: a hash table from masked key to
// the tuple's rules with that value, sorted by rank. Lookup visits tuples in order of their
// best rank and stops as soon as no remaining tuple can beat the match found (the "priority
// sorted tuple space search" of Open vSwitch). Cost grows with the number of distinct masks,
// not with the number of rules.
//
// Threading: build() allocates and may take milliseconds for 10k rules: call it off the hot
// path. A built table is immutable; match() is const, allocation-free and safe to call from
// any number of threads at once. Publish new tables by pointer (Classifier::use_rules).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "classifier/packet_key.h"
#include "classifier/rule.h"

namespace twinlane::classifier {

class CompiledRuleTable {
  public:
    // `rules` must be valid (validate_rule). `generation` identifies this table to flow caches:
    // give each newly published table a different value.
    static CompiledRuleTable build(std::span<const Rule> rules, uint64_t generation);

    // Index (into the list given to build) of the first matching rule, or kNoRule.
    uint32_t match(const PacketKey& key) const;

    const RuleAction& action(uint32_t rule_index) const { return actions_[rule_index]; }
    size_t rule_count() const { return actions_.size(); }
    size_t tuple_count() const { return tuples_.size(); }
    uint64_t generation() const { return generation_; }

  private:
    struct CompiledRule {
        uint32_t rank;        // position in (priority, list position) order
        uint32_t rule_index;  // position in the list given to build
        uint16_t src_port_first, src_port_last;
        uint16_t dst_port_first, dst_port_last;
        uint32_t qp_first, qp_last;
    };
    struct Bucket {
        PacketKey value;
        uint32_t begin = 0;  // [begin, end) into rules_, sorted by rank; end == 0: empty bucket
        uint32_t end = 0;
    };
    static uint16_t tag_of(uint32_t hash) { return uint16_t(hash | 1); }
    struct Tuple {
        PacketKey mask;
        uint32_t best_rank;
        uint32_t bucket_mask;   // bucket count - 1 (power of two)
        uint32_t first_bucket;  // offset into buckets_
    };

    std::vector<Tuple> tuples_;  // sorted by best_rank
    std::vector<Bucket> buckets_;
    // Per bucket: 0 empty, else a 16-bit fingerprint of the value's hash (never 0). Probing
    // scans these 2-byte tags and touches the 64-byte bucket only on a tag match, so tuples
    // that miss (most of them) cost no cache miss even for 10k-rule tables.
    std::vector<uint16_t> tags_;
    std::vector<CompiledRule> rules_;
    std::vector<RuleAction> actions_;  // by rule_index
    uint64_t generation_ = 0;
};

}  // namespace twinlane::classifier
