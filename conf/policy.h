// The policy: everything twinlane needs to know to run, as plain data, validated once.
//
// conf/load_policy.h reads the YAML file documented in conf/README.md into one. A validated
// Policy is consistent: every name a section refers
// to exists, percentages are resolved to bits/s per egress port, link-time budgets to bytes,
// units to integers (bits/s, bytes, ns, ppm), and cross-references are indexes into
// Policy::ports / Policy::classes. It is handed out as shared_ptr<const Policy>: immutable, safe
// to read from any thread, and cheap to publish to lcores (the old one lives until the last
// reader drops it).
//
// This model deliberately does not include sched/ or classifier/ headers: conf/compile.h turns
// it into those components' configurations.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "conf/policy_error.h"
#include "conf/units.h"

namespace twinlane::conf {

enum class LogLevel { trace, debug, info, warn, error, critical, off };

// The most ports a policy may name; the dataplane sizes its per-port counters by it.
inline constexpr size_t kMaxPorts = 32;

// A frame is at most the port's MTU plus its Ethernet header and one VLAN tag.
inline constexpr uint32_t kFrameOverheadBytes = 14 + 4;

// Priority flow control (802.1Qbb) on a port: who parses and sends PFC frames.
enum class PfcMode {
    off,
    software,  // twinlane: frames generated from its own queues, received ones honoured
    nic,       // the NIC's own PFC (DPDK's priority flow control API)
};

struct PortPfc {
    PfcMode mode = PfcMode::off;
    uint64_t cable_metres = 10;           // to the peer: headroom's propagation term
    uint64_t peer_response_bytes = 4096;  // what the peer sends after the XOFF reaches it
};

struct PortPolicy {
    std::string name;
    std::string device;  // DPDK device: PCI address or vdev args, e.g. "net_null0"
    uint64_t rate_bits_per_sec = 0;
    uint16_t rx_queues = 1;
    uint16_t tx_queues = 1;
    uint16_t rx_descriptors = 1024;
    uint16_t tx_descriptors = 1024;
    uint16_t mtu = 1500;           // L3 MTU; frames are up to max_frame_bytes()
    uint64_t tx_budget_bytes = 0;  // max bytes handed to the NIC TX ring and not yet sent
    // What one rx_burst call on this port should take at most (its burst is sized to fit:
    // dataplane/burst_sizer.h); 0: always full bursts.
    uint64_t burst_time_ns = 5'000;
    // mbufs this port adds to its socket's pool: `mempool` as given, else what its descriptor
    // rings and queues can hold (conf/mbuf_demand.h), at least 8191.
    uint32_t mempool_mbufs = 8191;
    bool mempool_given = false;
    PortPfc pfc;

    uint32_t max_frame_bytes() const { return uint32_t{mtu} + kFrameOverheadBytes; }
};

struct ForwardingPolicy {
    size_t from_port = 0;  // index into Policy::ports
    size_t to_port = 0;
};

struct RxQueueRef {
    size_t port = 0;
    uint16_t queue = 0;
};

struct RxLcore {
    uint32_t lcore = 0;
    std::vector<RxQueueRef> queues;
};

struct SchedulerLcore {
    uint32_t lcore = 0;
    std::vector<size_t> egress_ports;
};

struct LcorePolicy {
    enum class Mode {
        automatic,          // the dataplane places roles on the lcores the EAL gives it
        explicit_roles,     // rx / scheduler lists below
        run_to_completion,  // one lcore does everything (`single_lcore`)
    };
    Mode mode = Mode::automatic;
    std::vector<RxLcore> rx;
    std::vector<SchedulerLcore> scheduler;
    uint32_t single_lcore = 0;
};

// A lossless class: its packets of 802.1p `priority` (PCP, or DSCP through pfc.dscp_priority)
// are never tail-dropped while their senders obey PFC: above xoff bytes from one ingress port
// twinlane pauses that port's sender, at xon it resumes it; headroom is what still arrives
// after the pause (pfc/headroom.h), and the class's leaves must hold xoff + headroom.
struct LosslessPolicy {
    uint8_t priority = 3;
    uint64_t xoff_bytes = 0;
    uint64_t xon_bytes = 0;
    std::optional<uint64_t> headroom_bytes;  // nullopt: computed per ingress port ("auto")
};

// A class's latency objective and what the gateway does about it (conf/README.md, "slo").
enum class SloPercentile { p50, p90, p99, p999 };

struct SloCapPolicy {  // adapt_cap: the class's shaper moves between these
    RateSpec min;      // as written: absolute, or a share of the parent's rate (per port)
    RateSpec max;
};

struct SloDowngradePolicy {
    size_t class_index = 0;  // the lower class the heaviest flows go to
    uint64_t quiet_ns = 0;   // met this long before they return (0: the class's window)
};

struct SloPolicy {
    std::optional<SloPercentile> percentile;  // with target_ns; absent: min_share only
    uint64_t target_ns = 0;
    uint64_t window_ns = 10'000'000;
    std::optional<uint32_t> min_share_ppm;  // throughput floor, share of the port rate
    std::optional<SloCapPolicy> adapt_cap;
    std::optional<SloDowngradePolicy> downgrade;
    bool alert = false;  // written `alert: true`: measure and export only (no action keys)
};

struct ClassPolicy {
    std::string name;  // also the lane: one ring per (egress port, class), in listed order
    std::optional<LosslessPolicy> lossless;
    std::optional<SloPolicy> slo;
};

enum class NodeKind { strict, drr, fq, fifo };

struct ShaperPolicy {  // token bucket: non-work-conserving ceiling
    uint64_t rate_bits_per_sec = 0;
    uint64_t burst_bytes = 0;
};

struct CodelPolicy {
    uint64_t target_ns = 5'000'000;
    uint64_t interval_ns = 100'000'000;
    bool ecn = true;  // mark CE on ECN-capable packets instead of dropping them
};

struct EcnPolicy {  // RED-style CE marking on the leaf's queued bytes (DCQCN's kmin/kmax/pmax)
    uint64_t kmin_bytes = 0;
    uint64_t kmax_bytes = 0;
    uint32_t pmax_ppm = 0;     // marking probability at kmax, parts per million
    bool drop_non_ect = true;  // packets that cannot carry CE are dropped instead
};

// How a per_job drr node maps a packet's job id to one of its generated children.
struct JobSplit {
    enum class Mode {
        none,    // ordinary node
        listed,  // one child per listed job id, plus a last child for every other job
        modulo,  // `count` children, job id % count
    };
    Mode mode = Mode::none;
    std::vector<uint32_t> jobs;  // listed mode: children[i] serves jobs[i]
    uint32_t count = 0;          // modulo mode
};

struct TreeNode {
    std::string name;  // unique within its tree; generated per-job children are "<parent>.job<N>"
    NodeKind kind = NodeKind::fifo;
    // Resolved ceiling of this subtree: min(parent's, own shaper) in bits/s.
    uint64_t rate_bits_per_sec = 0;

    // As a child of a drr node: its share relative to its siblings.
    uint32_t weight = 1;
    // Token bucket on this subtree. On a strict child it caps the child (so lower-priority
    // siblings keep the rest: an ETS-style guaranteed minimum).
    std::optional<ShaperPolicy> shaper;

    // Where packets of a class enter. Set on leaves, or on a per_job drr node.
    std::optional<size_t> class_index;
    JobSplit job_split;

    // Leaves (fq, fifo) only.
    uint32_t limit_packets = 1024;
    uint64_t limit_bytes = 4 << 20;
    std::optional<CodelPolicy> codel;
    std::optional<EcnPolicy> ecn;
    uint32_t fq_buckets = 1024;  // fq only: power of two
    bool fq_sparse_boost = true;

    std::vector<TreeNode> children;  // strict: in priority order, highest first

    bool is_leaf() const { return kind == NodeKind::fq || kind == NodeKind::fifo; }
};

// A class's adapt_cap on one egress tree, resolved at the port's rate.
struct SloCapRates {
    uint64_t min_bits_per_sec = 0;
    uint64_t max_bits_per_sec = 0;
};

struct EgressTree {
    size_t port = 0;  // index into Policy::ports
    TreeNode root;    // root.rate_bits_per_sec <= the port rate
    // By class index: the adapt_cap bounds of classes that have one (conf/load_slo.cc).
    std::vector<std::optional<SloCapRates>> slo_caps;
};

struct IpPrefix {
    uint8_t version = 4;                // 4 or 6
    std::array<uint8_t, 16> address{};  // network byte order; IPv4 uses the first 4 bytes
    uint8_t length = 0;                 // prefix length in bits
};

struct ValueRange {  // inclusive
    uint32_t first = 0;
    uint32_t last = 0;
};

struct RuleMatch {  // every present field must match
    std::optional<size_t> ingress_port;
    std::optional<uint16_t> vlan;
    std::optional<IpPrefix> src;
    std::optional<IpPrefix> dst;
    std::optional<uint8_t> proto;
    std::optional<ValueRange> src_port;
    std::optional<ValueRange> dst_port;
    std::optional<uint8_t> dscp;
    std::optional<bool> roce;           // true: RoCEv2 (UDP 4791) only; false: anything else
    std::optional<ValueRange> roce_qp;  // RoCEv2 destination QP range; implies roce = true
};

struct RuleAction {
    size_t class_index = 0;
    std::optional<uint32_t> job;
    std::optional<uint8_t> remark_dscp;
};

struct ClassifierRule {
    std::string name;
    uint32_t priority = 0;  // lower is evaluated first; unique
    RuleMatch match;
    RuleAction action;
};

struct ElephantPolicy {
    uint64_t bytes = 0;  // a flow sending more than this within `window_ns`...
    uint64_t window_ns = 0;
    uint64_t quiet_ns = 0;   // ...is demoted until it has been idle this long
    size_t class_index = 0;  // demoted to this class
};

// Jobs from the source network for flows no rule gave a job (classifier::ClassifierConfig).
struct JobBySourcePolicy {
    uint8_t ipv4_prefix = 24;
    uint8_t ipv6_prefix = 64;
};

struct ServingPolicy {
    std::vector<ValueRange> ports;  // TCP/UDP destination (or source, for replies) ports
    size_t class_index = 0;
};

enum class MalformedAction { default_class, drop };

struct HeuristicsPolicy {
    std::optional<size_t> roce_class;
    std::array<std::optional<size_t>, 64> dscp_class{};  // dscp -> class
    std::optional<ServingPolicy> serving;
    std::optional<ElephantPolicy> elephant;
    std::optional<JobBySourcePolicy> job_by_source;
    // 0: a flow changes class with its next packet and the scheduler moves its queued packets
    // along (no reordering). > 0: the change waits for a gap this long in the flow instead
    // (classifier::ClassifierConfig::reclass_gap_ns).
    uint64_t reclass_gap_ns = 0;
    size_t default_class = 0;
    MalformedAction malformed = MalformedAction::default_class;
    bool vxlan_inner = false;  // classify VXLAN (UDP 4789) by the inner headers
};

struct FlowTablePolicy {
    uint32_t capacity = 65536;
    uint32_t slots_per_flow = 4;  // classifier::kDefaultSlotsPerFlow (checked in compile.cc)
    uint64_t idle_timeout_ns = 30'000'000'000ULL;
};

struct ClassifierPolicy {
    std::vector<ClassifierRule> rules;  // sorted by priority
    HeuristicsPolicy heuristics;
    FlowTablePolicy flow_table;
};

struct ControlPolicy {
    std::string socket_path = "/run/twinlane/twinlane.sock";
    uint32_t socket_mode = 0660;
};

struct MetricsPolicy {
    bool enabled = true;
    std::string listen_address = "127.0.0.1";
    uint16_t port = 9464;
};

enum class StormAction { drop, forward };

// What every PFC port shares: how untagged packets get a priority, twinlane's own reaction
// time (headroom's software term), and the PFC watchdog.
struct PfcPolicy {
    std::array<uint8_t, 64> dscp_priority;  // 0xFF: unmapped
    uint64_t poll_ns = 20'000;
    uint64_t storm_detect_ns = 50'000'000;  // 0: no watchdog
    uint64_t storm_restore_ns = 200'000'000;
    StormAction storm_action = StormAction::drop;

    PfcPolicy() { dscp_priority.fill(0xFF); }
};

struct Policy {
    std::string source;  // file name the policy came from
    LogLevel log_level = LogLevel::info;
    std::vector<PortPolicy> ports;
    std::vector<ForwardingPolicy> forwarding;
    LcorePolicy lcores;
    std::vector<ClassPolicy> classes;
    std::vector<EgressTree> egress_trees;  // one per port that is a forwarding destination
    ClassifierPolicy classifier;
    ControlPolicy control;
    MetricsPolicy metrics;
    PfcPolicy pfc;

    std::optional<size_t> find_port(std::string_view name) const;
    std::optional<size_t> find_class(std::string_view name) const;
    const EgressTree* tree_for_port(size_t port) const;
};

struct PolicyResult {
    std::shared_ptr<const Policy> policy;  // set iff errors is empty
    std::vector<PolicyError> errors;

    bool ok() const { return policy != nullptr; }
};

}  // namespace twinlane::conf
