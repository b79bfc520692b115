// The policy loader's internals, shared by its per-section files (not a public interface: use
// load_policy.h). One PolicyLoader reads one document into a Policy, collecting every problem:
//
//   load_policy.cc      file reading and bounds, YAML parsing and its bounds, the document's
//                       sections in dependency order, error ordering
//   load_ports.cc       ports (devices, rates, queues, TX budget), classes, forwarding
//   load_slo.cc         classes' latency objectives, resolved per egress port
//   load_lcores.cc      lcore roles
//   load_tree.cc        scheduling trees as written (node keys, leaves, per_job, children)
//   resolve_tree.cc     trees placed on their egress ports: percentages and time budgets
//                       become bits/s and bytes, limits checked against the port's frames
//   load_classifier.cc  rules, heuristics, flow table
//   load_control.cc     control socket and metrics endpoint
//   load_pfc.cc         lossless classes, ports' PFC, the pfc section, and their checks
//
// Limits come from the components that impose them (sched::, classifier::, admission::); the
// ones defined here are the policy language's own.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "conf/load_policy.h"
#include "conf/policy.h"
#include "conf/units.h"
#include "conf/yaml_fields.h"

namespace twinlane::conf {

// The policy language's own limits.
inline constexpr uint32_t kMaxLcore = 127;          // DPDK's default RTE_MAX_LCORE
inline constexpr uint64_t kMaxServingPorts = 1024;  // each is a classifier table entry
inline constexpr uint32_t kMaxLeafPackets = 1u << 20;
inline constexpr uint64_t kMaxMempoolMbufs = uint64_t{1} << 24;
inline constexpr uint32_t kMaxJobsPerNode = 1024;  // per_job leaves of one node
inline constexpr uint64_t kDefaultTxBudgetNs = 20'000;
inline constexpr uint64_t kMaxBurstTimeNs = 10'000'000;  // a pass of 10 ms is a stall, not a budget
inline constexpr uint64_t kDefaultBurstNs = 1'000'000;   // a shaper lets through 1 ms of its rate

// A tree node as written, before it is placed on a port: rates may still be percentages and
// defaults that depend on the port (burst) are not applied yet.
struct RawNode {
    TreeNode node;  // children empty; shaper unresolved
    Field field;
    std::optional<RateSpec> shaper_rate;
    std::optional<ByteBudget> shaper_burst;
    Field shaper_field;
    std::vector<RawNode> children;
};

struct RawTree {
    RawNode root;
    bool valid = false;
};

class PolicyLoader {
  public:
    PolicyLoader(const std::string& filename, const PortRateOverride& override)
        : errors_(filename), override_(override) {
        policy_.source = filename;
    }

    PolicyResult load(std::string_view text);

  private:
    void read_document(const Field& root);

    // load_ports.cc
    void read_ports(const Field& field);
    // The port that first named a device, and how it spelled it, by DeviceName::ethdev_name.
    struct DeviceOwner {
        std::string port;
        std::string spelling;
    };
    using DeviceOwners = std::map<std::string, DeviceOwner>;
    void read_port(const Field& item, DeviceOwners& device_owners);
    void read_port_device(const Field& field, const std::string& port_name,
                          DeviceOwners& device_owners, std::string& device);
    void read_port_budget(const MapFields& map, const Field& item, PortPolicy& port);
    void read_classes(const Field& field);
    void read_forwarding(const Field& field);

    // load_slo.cc
    void read_class_slos();
    std::optional<SloPolicy> read_slo(const Field& field, size_t class_index);
    void resolve_slos();
    void resolve_mempools();

    // load_lcores.cc
    void read_lcores(const Field& field);
    void read_rx_lcores(const Field& field, std::set<uint32_t>& used_lcores);
    void read_scheduler_lcores(const Field& field, std::set<uint32_t>& used_lcores);
    std::optional<uint32_t> claim_lcore(const Field& field, std::set<uint32_t>& used_lcores);

    // load_tree.cc
    std::optional<RawTree> read_tree(const Field& field);
    bool read_node(const Field& field, std::optional<NodeKind> parent_kind, size_t depth,
                   std::vector<YAML::Node>& ancestors, RawNode& out);
    std::optional<NodeKind> read_node_keys(const MapFields& map,
                                           std::optional<NodeKind> parent_kind, RawNode& out);
    void read_leaf(const MapFields& map, RawNode& out);
    bool read_per_job(const MapFields& map, const Field& per_job, RawNode& out);
    bool read_children(const MapFields& map, NodeKind kind, size_t depth,
                       std::vector<YAML::Node>& ancestors, RawNode& out);
    void read_leaf_options(const MapFields& map, RawNode& raw);
    void check_tree_classes(const RawTree& tree, const Field& field);

    // resolve_tree.cc
    void build_egress_trees(const std::optional<Field>& default_tree_field,
                            const std::vector<std::optional<Field>>& port_tree_fields);
    bool resolve_node(const RawNode& raw, uint64_t parent_rate, const PortPolicy& port,
                      TreeNode& out);
    bool resolve_shaper(const RawNode& raw, uint64_t parent_rate, const PortPolicy& port,
                        TreeNode& out);

    // load_classifier.cc
    void read_classifier(const Field& field);
    void read_rules(const Field& field);
    struct RuleFields {
        std::optional<Field> priority;  // when it was read
        std::optional<Field> name;      // when it was read
        bool name_given = false;
    };
    RuleFields read_rule(const Field& field, ClassifierRule& rule);
    void read_rule_match(const Field& field, RuleMatch& match);
    void read_heuristics(const Field& field);
    void read_dscp_map(const Field& field);
    void read_serving(const Field& field);
    void read_elephant(const Field& field);
    void read_job_by_source(const Field& field);
    void read_flow_table(const Field& field);

    // load_control.cc
    void read_control(const Field& field);
    void read_metrics(const Field& field);

    // load_pfc.cc
    std::optional<LosslessPolicy> read_lossless(const Field& field);
    void read_port_pfc(const Field& field, PortPfc& pfc);
    void read_pfc(const Field& field);
    void check_lossless();
    void check_lossless_leaves(const EgressTree& tree);

    std::optional<size_t> lookup_port(const Field& field);
    std::optional<size_t> lookup_class(const Field& field);
    // Whether `port`'s rate comes from the override: what the file sized for its own rate
    // (bursts, budgets, absolute shapers) is then fitted to the new rate instead of refused.
    bool overrides(const PortPolicy& port) const {
        return !override_.port.empty() && port.name == override_.port;
    }

    ErrorList errors_;
    PortRateOverride override_;
    Policy policy_;
    // Names are recorded even when the rest of their entry is broken, so that one bad port
    // does not also make every reference to it "unknown".
    std::vector<std::string> port_names_;
    std::vector<std::string> class_names_;
    // Each class's `slo:` and the keys that per-port checks point at, by class index.
    struct SloFields {
        Field slo;
        std::optional<Field> adapt_cap;
        std::optional<Field> min_share;
    };
    std::vector<std::optional<SloFields>> slo_fields_;
    // Where each egress port is first named as a destination, to locate "no tree" errors.
    std::map<size_t, Field> egress_reference_;
    // Where classes' `lossless` and ports' `pfc` are written, for the checks across sections.
    std::map<size_t, Field> lossless_fields_;
    std::map<size_t, Field> pfc_fields_;
    // Each port's item and its `mempool`, for the pool size against its queues (load_ports.cc).
    std::map<size_t, Field> port_items_;
    std::map<size_t, Field> mempool_fields_;
    Field lossless_anchor_;  // the document, when nothing closer names the problem
};

}  // namespace twinlane::conf
