// Plain-data description of one egress port's scheduling tree, and its validation.
//
// What: `TreeSpec` lists `NodeSpec`s by name; each names its parent (the root has none).
// Inner nodes are `strict` (priority order) or `drr` (deficit round robin by weight); leaves are
// `fifo` or `fq` (per-flow fair queues). Every node may carry a token-bucket shaper.
// Units: rates in bits/s, sizes in bytes, times in nanoseconds, probabilities in [0, 1].
// Leaf ids: leaves get dense ids 0..n-1 in the order they appear in `nodes` (Packet::leaf).
// Thread-safety: plain values; validate() is a pure function. Nothing here is on the hot path.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace twinlane::sched {

enum class NodeKind : uint8_t {
    strict,  // inner: serve the backlogged child with the lowest `priority` value first
    drr,     // inner: deficit round robin, quantum = weight * max_packet_bytes
    fifo,    // leaf: one queue
    fq,      // leaf: per-flow queues chosen by Packet::flow_hash, DRR across active flows
};

const char* to_string(NodeKind kind);

// Token bucket. rate 0 means "not shaped". Conforming while tokens >= 0; a packet may take the
// bucket negative (the debt is repaid before the next packet), so the long-run rate is exact.
struct ShaperSpec {
    uint64_t rate_bits_per_sec = 0;
    uint32_t burst_bytes = 0;  // bucket depth; required > 0 when rate_bits_per_sec > 0
};

// CoDel (RFC 8289) applied at dequeue, per flow queue for `fq` leaves (fq_codel).
struct CodelSpec {
    bool enabled = false;
    uint64_t target_ns = 5'000'000;      // acceptable standing sojourn time
    uint64_t interval_ns = 100'000'000;  // window in which sojourn must dip below target
    bool ecn = true;                     // mark CE instead of dropping ECT packets
};

// RED on the leaf's instantaneous queue bytes at enqueue, DCQCN-switch style:
// below kmin nothing; between kmin and kmax signal with probability pmax*(q-kmin)/(kmax-kmin);
// at or above kmax always signal. The signal is a CE mark for ECT packets; for non-ECT packets
// it is a drop if `drop_non_ect`, else non-ECT packets see only the hard (tail) limits.
struct RedSpec {
    bool enabled = false;
    uint32_t kmin_bytes = 0;
    uint32_t kmax_bytes = 0;
    double pmax = 0.0;  // probability at kmax, in (0, 1]
    bool drop_non_ect = true;
};

struct NodeSpec {
    std::string name;  // unique, non-empty
    NodeKind kind = NodeKind::fifo;
    std::string parent;     // empty for the root, else the name of a strict or drr node
    uint32_t weight = 1;    // under a drr parent: > 0
    uint32_t priority = 0;  // under a strict parent: 0 is served first; unique among siblings
    ShaperSpec shaper;      // on any node; the root's shaper is the port rate

    // Leaves only (fifo, fq).
    uint32_t limit_packets = 1024;    // hard limit, tail drop beyond
    uint64_t limit_bytes = 4u << 20;  // hard limit, tail drop beyond
    uint32_t fq_buckets = 1024;       // fq: number of flow queues, power of two
    bool fq_sparse_first = true;      // fq: new (sparse) flows served before old ones
    // fq: fair across jobs (Packet::job) first, then across each job's flows, and under a drr
    // parent the leaf weighs as many jobs as it holds: a per_job leaf that jobs share.
    bool fq_by_job = false;
    CodelSpec codel;
    RedSpec red;
};

struct TreeSpec {
    std::vector<NodeSpec> nodes;
    uint32_t max_packet_bytes = 9216;  // largest frame; DRR quantum unit (must be >= 9216)
    uint32_t pool_packets = 0;         // shared descriptor pool; 0 = sum of leaf limit_packets
    uint64_t random_seed = 1;          // seeds RED's deterministic PRNG
    std::string default_leaf;          // tree replacement: where packets of vanished leaves go
};

// Limits that keep integer arithmetic exact and loops bounded.
inline constexpr uint32_t kMaxNodes = 4096;
inline constexpr uint32_t kMaxDepth = 16;
inline constexpr uint32_t kMaxStrictChildren = 64;  // strict keeps a 64-bit backlog mask
inline constexpr uint32_t kMaxFqBuckets = 1u << 20;
inline constexpr uint32_t kMaxBurstBytes = 1u << 28;
inline constexpr uint64_t kMaxRateBitsPerSec = 10'000'000'000'000ull;  // 10 Tb/s
inline constexpr uint32_t kMaxWeight = 1u << 16;
inline constexpr uint32_t kMaxPoolPackets = 1u << 28;  // descriptors of one tree

struct ValidationError {
    std::string node;   // offending node's name (empty for tree-wide fields)
    std::string field;  // offending field, e.g. "weight"
    std::string message;
    std::string to_string() const;  // "node 'bulk': field 'weight': must be > 0"
};

// Checks the whole description; returns the first problem found, or nothing if valid.
std::optional<ValidationError> validate(const TreeSpec& spec);

}  // namespace twinlane::sched
