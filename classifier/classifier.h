// Classifier: parse + classify packets into lanes (class ids), per packet or per burst.
//
// Per packet: parse (parser.h) → malformed? policy → later IPv4/IPv6 fragment? follow the first
// fragment's decision (fragment_cache.h) → flow table hit? cached decision : explicit rules
// (rule_table.h) then heuristics (RoCEv2, DSCP map, model-serving ports, default) → elephant
// detection → class changes applied with the flow's next packet, whose Result names the
// previous class so that the scheduler moves the flow's queued packets (or, with
// reclass_gap_ns > 0, only at a gap that long in the flow; README.md) → counters. Explicit rules
// take precedence over heuristics.
//
// Time is an argument (now_ns, nanoseconds, monotonic); the classifier never reads a clock.
// No allocation, exception, lock, syscall or virtual call per packet.
//
// Frames: `header_bytes` readable bytes at `frame` (the first mbuf segment, or headers
// linearised into a stack buffer of e.g. 256 bytes) and `wire_length`, the full frame length.
// The single-length overloads use the same value for both.
//
// Threading: one Classifier per RX lcore, single-threaded. Construction allocates everything
// (flow table, fragment cache, counters) and throws std::invalid_argument if the config does
// not validate. use_rules() and expire_flows() are for the owning lcore between bursts.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "classifier/config.h"
#include "classifier/flow_table.h"
#include "classifier/fragment_cache.h"
#include "classifier/held_flows.h"
#include "classifier/parser.h"
#include "classifier/result.h"
#include "classifier/rule_table.h"

namespace twinlane::classifier {

inline constexpr uint32_t kMaxBurst = 32;  // typical RX burst; classify_burst takes any count

struct ClassCounters {
    uint64_t packets = 0;
    uint64_t bytes = 0;
    uint64_t drops = 0;  // malformed packets dropped by policy (counted in packets too)
};

struct RuleCounters {
    uint64_t packets = 0;
    uint64_t bytes = 0;
};

struct ClassifierCounters {
    std::vector<ClassCounters> per_class;  // by class id
    std::vector<RuleCounters> per_rule;    // by rule index of the current rule table
    std::array<uint64_t, kMalformedReasonCount> malformed{};  // by MalformedReason
    std::array<uint64_t, kMatchSourceCount> per_source{};     // packets by MatchSource
    uint64_t flow_inserts = 0;
    uint64_t flow_overflows = 0;  // new flows not cached because the table was full
    uint64_t flows_expired = 0;
    uint64_t fragments_followed = 0;   // later fragments that found their first fragment
    uint64_t fragments_unmatched = 0;  // later fragments classified on the 3-tuple
    uint64_t elephants_detected = 0;
    uint64_t elephant_demotions = 0;  // flows moved to bulk_class
    uint64_t elephant_returns = 0;    // flows moved back after going quiet
    uint64_t reclassifications = 0;   // class changes applied (demotions, returns, new rules)
    uint64_t reclass_deferred = 0;    // packets kept in the old class awaiting a gap
};

// Adds `part` to `total` field by field (per_class element-wise, grown to the longer): the
// counters of several lcores' classifiers as one. per_rule is left out: use_rules() replaces a
// classifier's vector, so another thread may read only what is sized once (per_class, arrays,
// scalars), torn per 64-bit value while the owner runs.
void accumulate(ClassifierCounters& total, const ClassifierCounters& part);

// The job of a flow no rule gave one: the source address's network number for a prefix of
// `prefix_ipv4` / `prefix_ipv6` bits (IPv6 folded to 32 bits); 0 for a family whose prefix is 0
// and for non-IP packets. ClassifierConfig::job_prefix_ipv4.
uint32_t job_from_source(const PacketKey& key, uint8_t prefix_ipv4, uint8_t prefix_ipv6);

class Classifier {
  public:
    explicit Classifier(const ClassifierConfig& config);
    Classifier(const Classifier&) = delete;
    Classifier& operator=(const Classifier&) = delete;

    Result classify(const uint8_t* frame, uint32_t length, uint16_t ingress_port, uint64_t now_ns) {
        return classify(frame, length, length, ingress_port, now_ns);
    }
    Result classify(const uint8_t* frame, uint32_t header_bytes, uint32_t wire_length,
                    uint16_t ingress_port, uint64_t now_ns);

    // Classifies `count` frames into out[0..count), then runs one bounded ageing step
    // (aging_scan_per_burst entries). A new sweep of the table starts at most every
    // flow_idle_timeout_ns / 4, or at once when the table is full, so an idle flow goes
    // between 1 and ~1.25 timeouts (plus one sweep) after its last packet.
    void classify_burst(const uint8_t* const* frames, const uint32_t* lengths, uint32_t count,
                        uint16_t ingress_port, uint64_t now_ns, Result* out) {
        classify_burst(frames, lengths, lengths, count, ingress_port, now_ns, out);
    }
    void classify_burst(const uint8_t* const* frames, const uint32_t* header_bytes,
                        const uint32_t* wire_lengths, uint32_t count, uint16_t ingress_port,
                        uint64_t now_ns, Result* out);

    // Ageing step: removes flows idle for flow_idle_timeout_ns, visiting at most max_visits.
    uint32_t expire_flows(uint64_t now_ns, uint32_t max_visits);

    // Switches to another compiled rule table (kept alive by the caller until this lcore has
    // moved on, e.g. via RCU). Cached flows re-evaluate on their next packet; a resulting class
    // change is a reclassification like any other. Resets (and may allocate) per-rule
    // counters: call between bursts, not per packet.
    void use_rules(const CompiledRuleTable& rules);

    // Flows the elephant heuristic leaves alone while they are held (held_flows.h); nullptr:
    // none. Set before the first packet; the set outlives the classifier.
    void set_held_flows(const HeldFlows* held) { held_ = held; }

    const CompiledRuleTable& rules() const { return *rules_; }
    const ClassifierCounters& counters() const { return counters_; }
    const FlowTable& flows() const { return flows_; }
    const ClassifierConfig& config() const { return config_; }

  private:
    // What finish() needs of a parsed packet: the flow key and the few outer-header fields of
    // the Result. One cache line, so a group of 32 stays in L1.
    struct alignas(64) Prepared {
        PacketKey key;
        uint32_t hash;
        uint32_t fragment_id;
        uint16_t l3_offset;
        uint8_t ip_version;
        uint8_t dscp;
        uint8_t ecn;
        MalformedReason malformed;
        Fragment fragment;
        bool wide_addresses;  // addresses_wide(key), from the parse: no reload of the key
    };
    // classify_burst works in groups of up to kGroup packets, see there. group_, found_ and
    // the probe state are members rather than locals so they are not re-initialised per burst.
    static constexpr uint32_t kGroup = kMaxBurst;

    void prepare(const uint8_t* frame, uint32_t header_bytes, uint32_t wire_length,
                 uint16_t ingress_port, Prepared& prepared);
    // prepare() for group_[0, n), each flow's entry line prefetched; returns whether a later
    // fragment is among them.
    bool prepare_group(const uint8_t* const* frames, const uint32_t* header_bytes,
                       const uint32_t* wire_lengths, uint32_t n, uint16_t ingress_port);
    // Advances the probe runs of probing_[0, probing) one slot per round for all of them until
    // each has found its flow (found_) or its end.
    void follow_probe_runs(uint32_t probing);
    // The flow table's ageing step after a burst, its sweeps paced by time.
    void age_flows(uint64_t now_ns);
    // `found`: the packet's flow entry if a lookup stage already found it, else nullptr.
    void finish(const Prepared& prepared, FlowEntry* found, uint32_t wire_length, uint64_t now_ns,
                Result& result);
    FlowDecision decide(const PacketKey& key) const;
    FlowDecision decide_class(const PacketKey& key) const;
    void touch_flow(FlowEntry& entry, const PacketKey& key, uint32_t flow_hash,
                    uint32_t wire_length, uint64_t now_ns, bool fresh);
    void reconsider(FlowEntry& entry, uint64_t gap_ns, bool fresh);
    // Moves the elephant window (aligned to multiples of elephant_window_ns) to `now_ns`.
    void advance_elephant_window(uint64_t now_ns) {
        if (now_ns - elephant_window_start_ns_ >= config_.elephant_window_ns &&
            config_.elephant_window_ns != 0) [[unlikely]] {
            elephant_window_start_ns_ = now_ns - now_ns % config_.elephant_window_ns;
        }
    }
    void count(const Result& result, uint32_t wire_length);

    ClassifierConfig config_;
    ParserOptions parser_options_;
    CompiledRuleTable owned_rules_;
    const CompiledRuleTable* rules_;
    uint32_t rules_epoch_ = 1;                 // bumped per use_rules(); wraps after 2^32 swaps
    std::array<uint8_t, 64> dscp_class_{};     // kNoClass when unmapped
    std::vector<uint64_t> serving_port_bits_;  // 65536-bit set
    FlowTable flows_;
    FragmentCache fragments_;
    ClassifierCounters counters_;
    std::array<Prepared, kGroup> group_{};
    std::array<FlowEntry*, kGroup> found_{};     // deferred packets' flow entries
    std::array<uint32_t, kGroup> probe_slot_{};  // their lookups' next slot
    std::array<uint8_t, kGroup> deferred_{};     // packets classified after the lookups
    std::array<uint8_t, kGroup> probing_{};      // deferred packets still being looked up
    ParsedPacket parsed_{};  // parse_packet's output for packets off the simple path
    // Set by reconsider() when it changes a flow's class/job, read (and reset) by finish()
    // for the same packet's Result.
    uint8_t moved_from_class_ = kNoPreviousClass;
    uint32_t moved_from_job_ = 0;
    uint64_t elephant_window_start_ns_ = 0;  // start of the elephant window `now` is in
    const HeldFlows* held_ = nullptr;
    bool swept_ = false;           // classify_burst has started an ageing sweep
    uint64_t sweep_start_ns_ = 0;  // when it started the current one
};

}  // namespace twinlane::classifier
