// Result: the classifier's per-packet verdict, written once per packet into a caller array.
// The dataplane copies it into the mbuf dynfield / sched::Packet (l3 = frame + l3_offset when
// ecn_capable). Plain value type.
#pragma once

#include <cstdint>
#include <string_view>

#include "classifier/malformed_reason.h"
#include "classifier/rule.h"

namespace twinlane::classifier {

// What decided the class of a packet.
enum class MatchSource : uint8_t {
    rule = 0,  // an explicit rule (rule_index says which)
    roce,      // RoCEv2 heuristic
    dscp_map,  // DSCP map heuristic
    port,      // model-serving port heuristic
    elephant,  // elephant demotion to the bulk class
    default_class,
    fragment,   // non-first fragment following its first fragment's decision
    malformed,  // malformed packet handled by the malformed policy
    count
};

inline constexpr size_t kMatchSourceCount = size_t(MatchSource::count);

constexpr std::string_view to_string(MatchSource source) {
    switch (source) {
        case MatchSource::rule:
            return "rule";
        case MatchSource::roce:
            return "roce";
        case MatchSource::dscp_map:
            return "dscp_map";
        case MatchSource::port:
            return "port";
        case MatchSource::elephant:
            return "elephant";
        case MatchSource::default_class:
            return "default";
        case MatchSource::fragment:
            return "fragment";
        case MatchSource::malformed:
            return "malformed";
        case MatchSource::count:
            break;
    }
    return "unknown";
}

inline constexpr uint8_t kNoRemark = 0xFF;
inline constexpr uint8_t kNoPreviousClass = 0xFF;

struct Result {
    uint32_t job_id = 0;              // from the matching rule; 0 for heuristics
    uint32_t flow_hash = 0;           // hash of the flow key (not symmetric)
    uint32_t rule_index = kNoRule;    // matching rule (also for cached/fragment decisions)
    uint16_t l3_offset = 0;           // outer IP header offset in the frame (if ip_version)
    uint8_t ip_version = 0;           // 0 (not IP), 4, 6
    uint8_t class_id = 0;             // lane class
    uint8_t dscp = 0;                 // observed outer DSCP
    uint8_t remark_dscp = kNoRemark;  // DSCP to write (rewrite_dscp) or kNoRemark
    bool ecn_capable = false;         // outer ECN field is ECT(0), ECT(1) or CE
    bool drop = false;                // malformed and policy says drop
    MatchSource source = MatchSource::default_class;
    MalformedReason malformed = MalformedReason::none;
    // The flow's class or job changed with this packet (reclassification): what its earlier
    // packets got. The scheduler moves the flow's packets still queued under that class/job
    // to this packet's leaf before enqueueing it (sched::Scheduler::move_flow), so the flow
    // stays in order. kNoPreviousClass otherwise (previous_job then meaningless).
    uint8_t previous_class = kNoPreviousClass;
    uint32_t previous_job = 0;
};

// Whether the packet's DSCP is to be rewritten (a rule's remark action; IP packets only).
inline bool wants_remark(const Result& r) {
    return r.remark_dscp != kNoRemark && r.ip_version != 0;
}

}  // namespace twinlane::classifier
