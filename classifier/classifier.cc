#include "classifier/classifier.h"

#include <algorithm>
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
        for (const std::string& error : errors)
            message += "\n  " + error;
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
      flows_(config_.flow_table_capacity, config_.flow_slots_per_flow),
      fragments_(config_.fragment_cache_capacity) {
    parser_options_.max_vlan_depth = config_.max_vlan_depth;
    parser_options_.vxlan_inner = config_.vxlan_inner;
    parser_options_.vxlan_port = config_.vxlan_port;
    parser_options_.roce_port = config_.roce_port;
    dscp_class_.fill(kNoClass);
    for (const DscpMapping& mapping : config_.dscp_map)
        dscp_class_[mapping.dscp] = mapping.class_id;
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

uint32_t job_from_source(const PacketKey& key, uint8_t prefix_ipv4, uint8_t prefix_ipv6) {
    const uint8_t version = key_ip_version(key);
    if (version == 4 && prefix_ipv4 != 0) {
        const uint64_t address = key.words[0] >> 32;
        return static_cast<uint32_t>(address >> (32 - prefix_ipv4));
    }
    if (version == 6 && prefix_ipv6 != 0) {
        // The network number, 1 to 128 bits, folded into 32.
        uint64_t high = key.words[0];
        uint64_t low = key.words[1];
        if (prefix_ipv6 <= 64) {
            low = high >> (64 - prefix_ipv6);
            high = 0;
        } else if (prefix_ipv6 < 128) {
            const unsigned shift = 128u - prefix_ipv6;
            low = (low >> shift) | (high << (64 - shift));
            high >>= shift;
        }
        const uint64_t folded = low ^ high;
        return static_cast<uint32_t>(folded ^ (folded >> 32));
    }
    return 0;
}

FlowDecision Classifier::decide(const PacketKey& key) const {
    FlowDecision decision = decide_class(key);
    if (decision.job_id == 0) {
        decision.job_id = job_from_source(key, config_.job_prefix_ipv4, config_.job_prefix_ipv6);
    }
    return decision;
}

FlowDecision Classifier::decide_class(const PacketKey& key) const {
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

// The flow-state step of a packet that has an entry: `fresh` for the flow's first packet (the
// entry was just inserted), else a hit. Inlined into both callers so each gets its own copy.
// A hit that changes nothing about the flow's lane touches only its FlowEntry line; the cold
// state is read when the rules changed, the elephant verdict flipped, or a change is pending.
__attribute__((always_inline)) inline void Classifier::touch_flow(FlowEntry& entry,
                                                                  const PacketKey& key,
                                                                  uint32_t flow_hash,
                                                                  uint32_t wire_length,
                                                                  uint64_t now_ns, bool fresh) {
    const uint64_t last_seen_ns = entry.last_seen_ns;
    const uint64_t gap = fresh ? ~uint64_t{0} : (now_ns > last_seen_ns ? now_ns - last_seen_ns : 0);
    bool changed = fresh || entry.pending;
    if (fresh || entry.rules_epoch != rules_epoch_) [[unlikely]] {
        FlowColdState& cold = flows_.cold(entry);
        cold.decision = decide(key);
        if (fresh) cold.first_seen_ns = now_ns;
        entry.rules_epoch = rules_epoch_;
        entry.explicit_rule = cold.decision.source == MatchSource::rule;
        changed = true;
    }
    ++entry.packets;
    entry.bytes += wire_length;
    if (now_ns > last_seen_ns) entry.last_seen_ns = now_ns;

    if (config_.elephant_threshold_bytes != 0 && !entry.explicit_rule) {
        if (entry.elephant && gap >= config_.elephant_quiet_ns) {
            entry.elephant = false;
            entry.window_bytes = 0;
            changed = true;
        }
        if (!entry.elephant) {
            // Windows are aligned to multiples of elephant_window_ns: the count restarts when
            // the flow's previous packet fell in an earlier window.
            const uint64_t counted =
                last_seen_ns >= elephant_window_start_ns_ && !fresh ? entry.window_bytes : 0;
            const uint64_t window = std::min<uint64_t>(counted + wire_length, UINT32_MAX);
            entry.window_bytes = uint32_t(window);
            if (window > config_.elephant_threshold_bytes &&
                (held_ == nullptr || !held_->held(flow_hash))) {
                entry.elephant = true;
                ++counters_.elephants_detected;
                changed = true;
            }
        }
    }
    if (changed) [[unlikely]]
        reconsider(entry, gap, fresh);
}

// What the flow's packets should get now, and whether that may change yet (README.md,
// "Reclassification without reordering").
void Classifier::reconsider(FlowEntry& entry, uint64_t gap_ns, bool fresh) {
    FlowDecision desired = flows_.cold(entry).decision;
    if (config_.elephant_threshold_bytes != 0 && !entry.explicit_rule && entry.elephant) {
        desired.class_id = config_.bulk_class;
        desired.source = MatchSource::elephant;
    }
    const FlowDecision applied = entry.applied();
    entry.pending = false;
    if (fresh || desired.class_id == applied.class_id) {
        // Same lane (or first packet): nothing can reorder, unless the job (and with it the
        // leaf, for a class split per job) changed: then the queued packets move too.
        if (!fresh && desired.job_id != applied.job_id) {
            moved_from_class_ = applied.class_id;
            moved_from_job_ = applied.job_id;
        }
        entry.set_applied(desired);
        return;
    }
    if (gap_ns < config_.reclass_gap_ns) {
        ++counters_.reclass_deferred;  // packets may still sit in the old lane
        entry.pending = true;
        return;
    }
    if (desired.source == MatchSource::elephant) ++counters_.elephant_demotions;
    if (applied.source == MatchSource::elephant) ++counters_.elephant_returns;
    ++counters_.reclassifications;
    moved_from_class_ = applied.class_id;
    moved_from_job_ = applied.job_id;
    entry.set_applied(desired);
}

__attribute__((always_inline)) inline void Classifier::prepare(const uint8_t* frame,
                                                               uint32_t header_bytes,
                                                               uint32_t wire_length,
                                                               uint16_t ingress_port,
                                                               Prepared& prepared) {
    PacketKey& key = prepared.key;
    // The rest of a one-pass parse's key (same layout as make_key(), see packet_key.h: maybe
    // one VLAN tag and RoCE) and its Prepared fields, once the addresses are in key.words[0..3].
    auto finish_simple = [&](const auto& simple, uint8_t ip_version, bool wide_addresses) {
        key.words[4] = (uint64_t{ingress_port} << 48) | (uint64_t{simple.vlan_id} << 32) |
                       (uint64_t{simple.src_port} << 16) | simple.dst_port;
        key.words[5] = (uint64_t{simple.ip_protocol} << 56) |
                       (uint64_t{uint8_t(simple.traffic_class >> 2)} << 48) |
                       (uint64_t{ip_version} << 40) | (uint64_t{simple.roce} << 32) |
                       simple.dest_qp;
        prepared.fragment_id = 0;
        prepared.l3_offset = simple.l3_offset;
        prepared.ip_version = ip_version;
        prepared.dscp = simple.traffic_class >> 2;
        prepared.ecn = simple.traffic_class & 3;
        prepared.malformed = MalformedReason::none;
        prepared.fragment = Fragment::none;
        prepared.wide_addresses = wide_addresses;
        prepared.hash = hash_key(key);
    };
    SimpleIpv4 simple;
    if (parse_simple_ipv4(frame, header_bytes, wire_length, parser_options_, simple)) [[likely]] {
        key.words[0] = uint64_t{simple.src_ipv4} << 32;
        key.words[1] = 0;
        key.words[2] = uint64_t{simple.dst_ipv4} << 32;
        key.words[3] = 0;
        finish_simple(simple, 4, false);
        return;
    }
    if (SimpleIpv6 simple6;
        parse_simple_ipv6(frame, header_bytes, wire_length, parser_options_, simple6)) {
        const uint8_t* addresses = frame + simple6.l3_offset + 8;
        key.words[0] = load_be64(addresses);
        key.words[1] = load_be64(addresses + 8);
        key.words[2] = load_be64(addresses + 16);
        key.words[3] = load_be64(addresses + 24);
        finish_simple(simple6, 6, addresses_wide(key));
        return;
    }
    const ParsedPacket& p = parsed_;
    parse_packet(frame, header_bytes, wire_length, parser_options_, parsed_);
    // Same layout as make_key(), built straight from the parse result (no KeyFields copy).
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
    prepared.fragment_id = p.fragment_id;
    prepared.l3_offset = p.l3_offset;
    prepared.ip_version = p.ip_version;
    prepared.dscp = p.dscp;
    prepared.ecn = p.ecn;
    prepared.malformed = p.malformed;
    prepared.fragment = p.fragment;
    prepared.wide_addresses = addresses_wide(key);
    prepared.hash = hash_key(key);
}

__attribute__((always_inline)) inline void Classifier::finish(const Prepared& p, FlowEntry* found,
                                                              uint32_t wire_length, uint64_t now_ns,
                                                              Result& out) {
    if (p.malformed != MalformedReason::none) [[unlikely]] {
        ++counters_.malformed[size_t(p.malformed)];
        Result result;
        result.malformed = p.malformed;
        result.source = MatchSource::malformed;
        result.class_id = config_.default_class;
        // An empty frame has nothing to forward, whatever the policy: dropped as malformed
        // (the scheduler would refuse it as a zero-length packet).
        result.drop = config_.malformed_policy == MalformedPolicy::drop || wire_length == 0;
        count(result, wire_length);
        out = result;
        return;
    }
    uint32_t flow_hash = p.hash;
    FlowDecision applied;
    if (p.fragment == Fragment::later) [[unlikely]] {
        const PacketKey datagram = FragmentCache::datagram_key(p.key, p.fragment_id);
        if (const FragmentDecision* first = fragments_.recall(datagram, now_ns)) {
            ++counters_.fragments_followed;
            applied = first->decision;
            applied.source = MatchSource::fragment;
            flow_hash = first->flow_hash;
        } else {
            ++counters_.fragments_unmatched;
            applied = decide(p.key);  // 3-tuple: a later fragment carries no ports
        }
    } else {
        FlowEntry* entry = found;
        if (entry == nullptr && flows_.capacity() != 0) entry = flows_.find(p.key, p.hash);
        if (entry != nullptr) [[likely]] {
            touch_flow(*entry, p.key, p.hash, wire_length, now_ns, false);
            applied = entry->applied();
        } else {
            if (flows_.capacity() != 0) {
                entry = flows_.insert(p.key, p.hash);
                if (entry != nullptr) {
                    ++counters_.flow_inserts;
                } else {
                    ++counters_.flow_overflows;
                }
            }
            if (entry != nullptr) {
                touch_flow(*entry, p.key, p.hash, wire_length, now_ns, true);
                applied = entry->applied();
            } else {
                applied = decide(p.key);
            }
        }
        if (p.fragment == Fragment::first) [[unlikely]] {
            const PacketKey datagram = FragmentCache::datagram_key(p.key, p.fragment_id);
            fragments_.remember(datagram, {applied, p.hash}, now_ns, config_.fragment_timeout_ns);
        }
    }
    // Every field stored once, straight into the caller's array: building a local Result and
    // copying it cost 26 instructions per packet (callgrind, classifier_hit_profile).
    out.job_id = applied.job_id;
    out.flow_hash = flow_hash;
    out.rule_index = applied.rule_index;
    out.l3_offset = p.l3_offset;
    out.ip_version = p.ip_version;
    out.class_id = applied.class_id;
    out.dscp = p.dscp;
    out.remark_dscp = applied.remark_dscp;
    out.ecn_capable = p.ip_version != 0 && p.ecn != 0;
    out.drop = false;
    out.source = applied.source;
    out.malformed = MalformedReason::none;
    out.previous_class = moved_from_class_;
    if (moved_from_class_ != kNoPreviousClass) [[unlikely]] {
        out.previous_job = moved_from_job_;
        moved_from_class_ = kNoPreviousClass;
    }
    count(out, wire_length);
}

__attribute__((always_inline)) inline void Classifier::count(const Result& result,
                                                             uint32_t wire_length) {
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
    // The burst group's first slot as scratch: a local Prepared was zero-initialised per call
    // only to be overwritten by prepare().
    Prepared& prepared = group_[0];
    advance_elephant_window(now_ns);
    prepare(frame, header_bytes, wire_length, ingress_port, prepared);
    Result result;
    finish(prepared, nullptr, wire_length, now_ns, result);
    return result;
}

// Out of line on purpose: inlined into classify_burst, the parse shared the register
// allocation of the whole burst loop, and GCC's spills there turned small changes to the parser
// into failed store forwards (a byte spilled, reloaded as a word) worth a third of the hit rate.
[[gnu::noinline]] bool Classifier::prepare_group(const uint8_t* const* frames,
                                                 const uint32_t* header_bytes,
                                                 const uint32_t* wire_lengths, uint32_t n,
                                                 uint16_t ingress_port) {
    const bool cached = flows_.capacity() != 0;
    bool later_fragment = false;
    for (uint32_t i = 0; i < n; ++i) {
        prepare(frames[i], header_bytes[i], wire_lengths[i], ingress_port, group_[i]);
        if (cached) flows_.prefetch(group_[i].hash, group_[i].wide_addresses);
        later_fragment |= group_[i].fragment == Fragment::later;
    }
    return later_fragment;
}

void Classifier::classify_burst(const uint8_t* const* frames, const uint32_t* header_bytes,
                                const uint32_t* wire_lengths, uint32_t count, uint16_t ingress_port,
                                uint64_t now_ns, Result* out) {
    // Per group of up to 32 packets: parse and hash all of them, prefetching each flow's entry
    // line (an entry sits at its hash position, so nothing else has to arrive first); then, in
    // order, look each up in its home slot and classify it at once if its flow is there: the
    // entry lines of later packets keep arriving meanwhile. Packets whose flow is further along
    // its probe run (next slot prefetched), new flows, and packets without a lookup are
    // deferred: their probe runs advance one slot per round for all of them, then they are
    // classified in order. Packets of one flow all take the same path, so a flow's packets
    // stay in order; a group holding a later fragment is classified wholly in order (a first
    // fragment must not overtake it).
    // measured (classifier_bench BM_HitPath_Burst/1048576, Mpps, side by side): 8-byte index
    // + 128-byte entry, entry prefetched 6 packets ahead in a lookup pass 16.7-17.1; in-place
    // entries, each probe run followed to its end 20.2; a lookup pass with rounds, then
    // classification 22.3-23.9; this 24.4-27.0 (classifier/README.md, "Benchmarks").
    const bool cached = flows_.capacity() != 0;
    advance_elephant_window(now_ns);
    for (uint32_t base = 0; base < count; base += kGroup) {
        const uint32_t n = count - base < kGroup ? count - base : kGroup;
        const bool later_fragment =
            prepare_group(frames + base, header_bytes + base, wire_lengths + base, n, ingress_port);
        uint32_t deferred = 0;
        uint32_t probing = 0;
        for (uint32_t i = 0; i < n; ++i) {
            const Prepared& p = group_[i];
            found_[i] = nullptr;
            if (cached && p.malformed == MalformedReason::none && p.fragment != Fragment::later)
                [[likely]] {
                uint32_t slot = flows_.home_slot(p.hash);
                const FlowTable::Probe probe = flows_.probe(p.key, p.wide_addresses, slot);
                if (probe == FlowTable::Probe::found && !later_fragment) [[likely]] {
                    finish(p, &flows_.at(slot), wire_lengths[base + i], now_ns, out[base + i]);
                    continue;
                }
                if (probe == FlowTable::Probe::found) found_[i] = &flows_.at(slot);
                if (probe == FlowTable::Probe::next) {
                    probe_slot_[i] = slot;
                    probing_[probing++] = uint8_t(i);
                }
            }
            deferred_[deferred++] = uint8_t(i);
        }
        follow_probe_runs(probing);
        // Entries found stay valid: insert() moves no entry and nothing is erased before the
        // ageing step after the burst. A new flow is looked up again in finish(), so its
        // second packet in the group finds the entry its first packet inserted.
        for (uint32_t j = 0; j < deferred; ++j) {
            const uint32_t i = deferred_[j];
            finish(group_[i], found_[i], wire_lengths[base + i], now_ns, out[base + i]);
        }
    }
    if (cached && config_.aging_scan_per_burst != 0) age_flows(now_ns);
}

[[gnu::always_inline]] inline void Classifier::follow_probe_runs(uint32_t probing) {
    while (probing != 0) {
        uint32_t still = 0;
        for (uint32_t j = 0; j < probing; ++j) {
            const uint32_t i = probing_[j];
            const Prepared& p = group_[i];
            switch (flows_.probe(p.key, p.wide_addresses, probe_slot_[i])) {
                case FlowTable::Probe::found:
                    found_[i] = &flows_.at(probe_slot_[i]);
                    break;
                case FlowTable::Probe::absent:
                    break;
                case FlowTable::Probe::next:
                    probing_[still++] = uint8_t(i);
                    break;
            }
        }
        probing = still;
    }
}

void Classifier::age_flows(uint64_t now_ns) {
    // Sweeps paced by time: at line rate the table was swept every few ms (64 entries per
    // burst) against a 30 s timeout. measured (callgrind, classifier_bench
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

uint32_t Classifier::expire_flows(uint64_t now_ns, uint32_t max_visits) {
    const uint32_t removed = flows_.expire(now_ns, config_.flow_idle_timeout_ns, max_visits);
    counters_.flows_expired += removed;
    return removed;
}

void accumulate(ClassifierCounters& total, const ClassifierCounters& part) {
    if (total.per_class.size() < part.per_class.size())
        total.per_class.resize(part.per_class.size());
    for (size_t i = 0; i < part.per_class.size(); ++i) {
        total.per_class[i].packets += part.per_class[i].packets;
        total.per_class[i].bytes += part.per_class[i].bytes;
        total.per_class[i].drops += part.per_class[i].drops;
    }
    for (size_t i = 0; i < total.malformed.size(); ++i)
        total.malformed[i] += part.malformed[i];
    for (size_t i = 0; i < total.per_source.size(); ++i)
        total.per_source[i] += part.per_source[i];
    total.flow_inserts += part.flow_inserts;
    total.flow_overflows += part.flow_overflows;
    total.flows_expired += part.flows_expired;
    total.fragments_followed += part.fragments_followed;
    total.fragments_unmatched += part.fragments_unmatched;
    total.elephants_detected += part.elephants_detected;
    total.elephant_demotions += part.elephant_demotions;
    total.elephant_returns += part.elephant_returns;
    total.reclassifications += part.reclassifications;
    total.reclass_deferred += part.reclass_deferred;
}

}  // namespace twinlane::classifier
