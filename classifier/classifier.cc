#include "classifier/classifier.h"

#include <stdexcept>

namespace twinlane::classifier {
namespace {

constexpr uint8_t kNoClass = 0xFF;
constexpr uint8_t kProtoTcp = 6;
constexpr uint8_t kProtoUdp = 17;

ClassifierConfig checked(const ClassifierConfig& config) {
    const std::vector<std::string> errors = config.validate();
    if (!errors.empty()) {
        std::string message = "invalid classifier config:";
        for (const std::string& error : errors) message += "\n  " + error;
        throw std::invalid_argument(message);
    }
    return config;
}

}  // namespace

Classifier::Classifier(const ClassifierConfig& config)
    : config_(checked(config)),
      owned_rules_(CompiledRuleTable::build(config_.rules, 1)),
      rules_(&owned_rules_),
      serving_port_bits_(65536 / 64, 0),
      flows_(config_.flow_table_capacity),
      fragments_(config_.fragment_cache_capacity) {
    parser_options_.max_vlan_depth = config_.max_vlan_depth;
    parser_options_.vxlan_inner = config_.vxlan_inner;
    parser_options_.vxlan_port = config_.vxlan_port;
    parser_options_.roce_port = config_.roce_port;
    dscp_class_.fill(kNoClass);
    for (const DscpMapping& mapping : config_.dscp_map) dscp_class_[mapping.dscp] = mapping.class_id;
    for (uint16_t port : config_.model_serving_ports) {
        serving_port_bits_[port / 64] |= uint64_t{1} << (port % 64);
    }
    counters_.per_class.resize(config_.class_names.size());
    counters_.per_rule.resize(rules_->rule_count());
}

void Classifier::use_rules(const CompiledRuleTable& rules) {
    rules_ = &rules;
    ++rules_epoch_;
    counters_.per_rule.assign(rules.rule_count(), RuleCounters{});
}

FlowDecision Classifier::decide(const PacketKey& key) const {
    FlowDecision decision;
    const uint32_t rule = rules_->match(key);
    if (rule != kNoRule) {
        const RuleAction& action = rules_->action(rule);
        decision.job_id = action.job_id;
        decision.rule_index = rule;
        decision.class_id = action.class_id;
        decision.remark_dscp = action.remark_dscp ? *action.remark_dscp : kNoRemark;
        decision.source = MatchSource::rule;
        return decision;
    }
    if (config_.roce_detection && key_roce(key)) {
        decision.class_id = config_.roce_class;
        decision.source = MatchSource::roce;
        return decision;
    }
    if (key_ip_version(key) != 0) {
        const uint8_t mapped = dscp_class_[key_dscp(key) & 63];
        if (mapped != kNoClass) {
            decision.class_id = mapped;
            decision.source = MatchSource::dscp_map;
            return decision;
        }
    }
    const uint8_t protocol = key_ip_protocol(key);
    if (protocol == kProtoTcp || protocol == kProtoUdp) {
        const uint16_t sport = key_src_port(key);
        const uint16_t dport = key_dst_port(key);
        const bool serving = ((serving_port_bits_[sport / 64] >> (sport % 64)) & 1) != 0 ||
                             ((serving_port_bits_[dport / 64] >> (dport % 64)) & 1) != 0;
        if (serving) {
            decision.class_id = config_.inference_class;
            decision.source = MatchSource::port;
            return decision;
        }
    }
    decision.class_id = config_.default_class;
    decision.source = MatchSource::default_class;
    return decision;
}

void Classifier::update_flow(FlowEntry& entry, uint32_t wire_length, uint64_t now_ns,
                             bool fresh) {
    const uint64_t gap = fresh ? ~uint64_t{0}
                               : (now_ns > entry.last_seen_ns ? now_ns - entry.last_seen_ns : 0);
    if (fresh || entry.rules_epoch != rules_epoch_) {
        entry.decision = decide(entry.key);
        entry.rules_epoch = rules_epoch_;
    }
    if (fresh) {
        entry.first_seen_ns = now_ns;
        entry.window_start_ns = now_ns;
    }
    ++entry.packets;
    entry.bytes += wire_length;
    if (now_ns > entry.last_seen_ns) entry.last_seen_ns = now_ns;

    FlowDecision desired = entry.decision;
    if (config_.elephant_threshold_bytes != 0 && entry.decision.source != MatchSource::rule) {
        if (entry.elephant && gap >= config_.elephant_quiet_ns) {
            entry.elephant = false;
            entry.window_start_ns = now_ns;
            entry.window_bytes = 0;
        }
        if (now_ns < entry.window_start_ns ||
            now_ns - entry.window_start_ns >= config_.elephant_window_ns) {
            entry.window_start_ns = now_ns;
            entry.window_bytes = 0;
        }
        entry.window_bytes += wire_length;
        if (!entry.elephant && entry.window_bytes > config_.elephant_threshold_bytes) {
            entry.elephant = true;
            ++counters_.elephants_detected;
        }
        if (entry.elephant) {
            desired.class_id = config_.bulk_class;
            desired.source = MatchSource::elephant;
        }
    }

    if (fresh || desired.class_id == entry.applied.class_id) {
        // Same lane (or first packet): nothing can reorder. Store only on change: an
        // unconditional store here stalled the following load of `applied` (store forwarding)
        // and cost ~15% of the hit path in classifier_bench.
        if (fresh || !(desired == entry.applied)) entry.applied = desired;
        return;
    }
    if (gap < config_.reclass_gap_ns) {
        ++counters_.reclass_deferred;  // packets may still sit in the old lane
        return;
    }
    if (desired.source == MatchSource::elephant) ++counters_.elephant_demotions;
    if (entry.applied.source == MatchSource::elephant) ++counters_.elephant_returns;
    ++counters_.reclassifications;
    entry.applied = desired;
}

void Classifier::prepare(const uint8_t* frame, uint32_t header_bytes, uint32_t wire_length,
                         uint16_t ingress_port, Prepared& prepared) const {
    const ParsedPacket& p = prepared.parsed;
    parse_packet(frame, header_bytes, wire_length, parser_options_, prepared.parsed);
    // Same layout as make_key(), built straight from the parse result (no KeyFields copy).
    PacketKey& key = prepared.key;
    if (p.flow_ip_version == 6) {
        key.words[0] = load_be64(p.src_address.data());
        key.words[1] = load_be64(p.src_address.data() + 8);
        key.words[2] = load_be64(p.dst_address.data());
        key.words[3] = load_be64(p.dst_address.data() + 8);
    } else {
        // From the 32-bit copies: re-reading the 4-byte address stores as 8-byte words
        // defeated store forwarding (measured ~10% of the hit path).
        key.words[0] = uint64_t{p.src_ipv4} << 32;
        key.words[1] = 0;
        key.words[2] = uint64_t{p.dst_ipv4} << 32;
        key.words[3] = 0;
    }
    key.words[4] = (uint64_t{ingress_port} << 48) | (uint64_t{p.vlan_id} << 32) |
                   (uint64_t{p.src_port} << 16) | p.dst_port;
    key.words[5] = (uint64_t{p.ip_protocol} << 56) | (uint64_t{p.flow_dscp} << 48) |
                   (uint64_t{p.flow_ip_version} << 40) | (uint64_t{p.roce ? 1u : 0u} << 32) |
                   (p.dest_qp & 0xFFFFFFu);
    prepared.hash = hash_key(prepared.key);
}

void Classifier::finish(const Prepared& prepared, uint32_t wire_length, uint64_t now_ns,
                        Result& result) {
    const ParsedPacket& p = prepared.parsed;
    result = Result{};
    if (p.malformed != MalformedReason::none) {
        ++counters_.malformed[size_t(p.malformed)];
        result.malformed = p.malformed;
        result.source = MatchSource::malformed;
        result.class_id = config_.default_class;
        result.drop = config_.malformed_policy == MalformedPolicy::drop;
        count(result, wire_length);
        return;
    }
    result.l3_offset = p.l3_offset;
    result.ip_version = p.ip_version;
    result.dscp = p.dscp;
    result.ecn_capable = p.ip_version != 0 && p.ecn != 0;
    result.flow_hash = prepared.hash;

    FlowDecision applied;
    if (p.fragment == Fragment::later) {
        const PacketKey datagram = FragmentCache::datagram_key(prepared.key, p.fragment_id);
        if (const FragmentDecision* first = fragments_.recall(datagram, now_ns)) {
            ++counters_.fragments_followed;
            applied = first->decision;
            applied.source = MatchSource::fragment;
            result.flow_hash = first->flow_hash;
        } else {
            ++counters_.fragments_unmatched;
            applied = decide(prepared.key);  // 3-tuple: a later fragment carries no ports
        }
    } else {
        FlowEntry* entry = nullptr;
        bool fresh = false;
        if (flows_.capacity() != 0) {
            entry = flows_.find(prepared.key, prepared.hash);
            if (entry == nullptr) {
                entry = flows_.insert(prepared.key, prepared.hash);
                if (entry != nullptr) {
                    ++counters_.flow_inserts;
                    fresh = true;
                } else {
                    ++counters_.flow_overflows;
                }
            }
        }
        if (entry != nullptr) {
            update_flow(*entry, wire_length, now_ns, fresh);
            applied = entry->applied;
        } else {
            applied = decide(prepared.key);
        }
        if (p.fragment == Fragment::first) {
            const PacketKey datagram = FragmentCache::datagram_key(prepared.key, p.fragment_id);
            fragments_.remember(datagram, {applied, prepared.hash}, now_ns,
                                config_.fragment_timeout_ns);
        }
    }
    result.class_id = applied.class_id;
    result.job_id = applied.job_id;
    result.rule_index = applied.rule_index;
    result.remark_dscp = applied.remark_dscp;
    result.source = applied.source;
    count(result, wire_length);
}

void Classifier::count(const Result& result, uint32_t wire_length) {
    ClassCounters& per_class = counters_.per_class[result.class_id];
    ++per_class.packets;
    per_class.bytes += wire_length;
    if (result.drop) ++per_class.drops;
    ++counters_.per_source[size_t(result.source)];
    if (result.rule_index != kNoRule && result.rule_index < counters_.per_rule.size()) {
        RuleCounters& rule = counters_.per_rule[result.rule_index];
        ++rule.packets;
        rule.bytes += wire_length;
    }
}

Result Classifier::classify(const uint8_t* frame, uint32_t header_bytes, uint32_t wire_length,
                            uint16_t ingress_port, uint64_t now_ns) {
    // The burst pipeline's first slot as scratch: a local Prepared was zero-initialised per
    // call (~130 bytes) only to be overwritten by prepare().
    // measured (callgrind, replay_bench): classify 544 -> 522 instructions/packet.
    Prepared& prepared = pipeline_[0];
    prepare(frame, header_bytes, wire_length, ingress_port, prepared);
    Result result;
    finish(prepared, wire_length, now_ns, result);
    return result;
}

void Classifier::classify_burst(const uint8_t* const* frames, const uint32_t* header_bytes,
                                const uint32_t* wire_lengths, uint32_t count,
                                uint16_t ingress_port, uint64_t now_ns, Result* out) {
    // Leads (4, 8) measured best of {(4, 8), (8, 16)} on this 2-vCPU VM.
    // Software pipeline over the burst: packet i is parsed and its index slot prefetched,
    // packet i - kSlotLead has its entry prefetched (its slot has arrived by then), and packet
    // i - kEntryLead is classified. The flow table's two dependent cache misses then overlap
    // with other packets' work instead of stalling one packet at a time. Measured in
    // classifier_bench (BM_HitPath_Burst vs BM_HitPath_Single, 1M flows): see README.md.
    constexpr uint32_t kRing = kPipelineDepth;
    std::array<Prepared, kRing>& prepared = pipeline_;  // packet i lives in prepared[i % kRing]
    const bool cached = flows_.capacity() != 0;
    for (uint32_t i = 0; i < count + kEntryLead; ++i) {
        if (i < count) {
            Prepared& next = prepared[i % kRing];
            prepare(frames[i], header_bytes[i], wire_lengths[i], ingress_port, next);
            if (cached) flows_.prefetch(next.hash);
        }
        if (cached && i >= kSlotLead && i - kSlotLead < count) {
            flows_.prefetch_entry(prepared[(i - kSlotLead) % kRing].hash);
        }
        if (i >= kEntryLead) {
            const uint32_t done = i - kEntryLead;
            finish(prepared[done % kRing], wire_lengths[done], now_ns, out[done]);
        }
    }
    if (cached && config_.aging_scan_per_burst != 0) {
        // Sweeps paced by time: at line rate the table was swept every few ms (64 entries
        // per burst) against a 30 s timeout. measured (callgrind, classifier_bench
        // BM_HitPathAgeing_Burst/4096): ageing 43 -> 0 instructions/packet between sweeps.
        bool due = true;
        if (flows_.at_sweep_start()) {
            due = !swept_ || flows_.size() == flows_.capacity() || now_ns < sweep_start_ns_ ||
                  now_ns - sweep_start_ns_ >= config_.flow_idle_timeout_ns / 4;
            if (due) {
                swept_ = true;
                sweep_start_ns_ = now_ns;
            }
        }
        if (due) expire_flows(now_ns, config_.aging_scan_per_burst);
    }
}

uint32_t Classifier::expire_flows(uint64_t now_ns, uint32_t max_visits) {
    const uint32_t removed = flows_.expire(now_ns, config_.flow_idle_timeout_ns, max_visits);
    counters_.flows_expired += removed;
    return removed;
}

}  // namespace twinlane::classifier
