#include "classifier/config.h"

#include <bit>
#include <set>

#include "classifier/flow_table.h"
#include "classifier/parser.h"

namespace twinlane::classifier {

ClassifierConfig ClassifierConfig::defaults() {
    constexpr uint8_t kInference = 0;
    constexpr uint8_t kTraining = 1;
    constexpr uint8_t kOther = 2;
    ClassifierConfig config;
    config.class_names = {"inference", "training", "other"};
    config.default_class = kOther;
    config.malformed_policy = MalformedPolicy::default_class;
    config.roce_detection = true;
    config.roce_class = kTraining;
    config.dscp_map = {{26, kTraining}, {24, kTraining}, {46, kInference}};
    config.model_serving_ports = {8000, 8001, 8080, 7070, 8500, 8501, 50051};
    config.inference_class = kInference;
    config.elephant_threshold_bytes = 32ull << 20;
    config.elephant_window_ns = 1'000'000'000;
    config.elephant_quiet_ns = 200'000'000;
    config.bulk_class = kTraining;
    config.reclass_gap_ns = 0;  // change at once; the scheduler moves the queued packets
    config.flow_table_capacity = 65536;
    config.flow_idle_timeout_ns = 30'000'000'000ull;
    config.aging_scan_per_burst = 64;
    config.fragment_cache_capacity = 4096;
    config.fragment_timeout_ns = 1'000'000'000;
    return config;
}

std::vector<std::string> ClassifierConfig::validate() const {
    std::vector<std::string> errors;
    const size_t classes = class_names.size();
    if (classes == 0 || classes > kMaxClasses) {
        errors.push_back("class_names: need 1.." + std::to_string(kMaxClasses) + " classes, got " +
                         std::to_string(classes));
    }
    std::set<std::string> seen;
    for (size_t i = 0; i < classes; ++i) {
        if (class_names[i].empty()) {
            errors.push_back("class_names[" + std::to_string(i) + "]: empty name");
        } else if (!seen.insert(class_names[i]).second) {
            errors.push_back("class_names[" + std::to_string(i) + "]: duplicate name '" +
                             class_names[i] + "'");
        }
    }
    auto check_class = [&](const std::string& field, uint8_t class_id) {
        if (class_id >= classes) {
            errors.push_back(field + ": class id " + std::to_string(class_id) +
                             " is not a configured class (have " + std::to_string(classes) + ")");
        }
    };
    check_class("default_class", default_class);
    if (roce_detection) check_class("roce_class", roce_class);
    check_class("inference_class", inference_class);
    if (elephant_threshold_bytes != 0) check_class("bulk_class", bulk_class);

    if (rules.size() > size_t{kMaxFlowRuleIndex} + 1) {
        errors.push_back("rules: " + std::to_string(rules.size()) + " rules exceed " +
                         std::to_string(size_t{kMaxFlowRuleIndex} + 1));
    }
    for (size_t i = 0; i < rules.size(); ++i) {
        if (auto error = validate_rule(rules[i], classes); !error.empty()) {
            errors.push_back("rules[" + std::to_string(i) + "]." + error);
        }
    }
    std::set<uint8_t> mapped;
    for (size_t i = 0; i < dscp_map.size(); ++i) {
        const std::string field = "dscp_map[" + std::to_string(i) + "]";
        if (dscp_map[i].dscp > 63) {
            errors.push_back(field + ".dscp: " + std::to_string(dscp_map[i].dscp) + " exceeds 63");
        } else if (!mapped.insert(dscp_map[i].dscp).second) {
            errors.push_back(field + ".dscp: " + std::to_string(dscp_map[i].dscp) +
                             " mapped twice");
        }
        check_class(field + ".class_id", dscp_map[i].class_id);
    }
    for (size_t i = 0; i < model_serving_ports.size(); ++i) {
        if (model_serving_ports[i] == 0) {
            errors.push_back("model_serving_ports[" + std::to_string(i) + "]: port 0");
        }
    }
    if (elephant_threshold_bytes != 0) {
        if (elephant_threshold_bytes > kMaxElephantThresholdBytes) {
            errors.push_back(
                "elephant_threshold_bytes: " + std::to_string(elephant_threshold_bytes) +
                " exceeds " + std::to_string(kMaxElephantThresholdBytes));
        }
        if (elephant_window_ns == 0) {
            errors.push_back("elephant_window_ns: must be > 0 when elephant detection is on");
        }
        if (elephant_quiet_ns < reclass_gap_ns) {
            errors.push_back("elephant_quiet_ns: " + std::to_string(elephant_quiet_ns) +
                             " must be >= reclass_gap_ns " + std::to_string(reclass_gap_ns));
        }
        if (flow_table_capacity == 0) {
            errors.push_back(
                "flow_table_capacity: elephant detection needs a flow table (capacity > 0)");
        }
    }
    if (flow_table_capacity > (1u << 28)) {
        errors.push_back("flow_table_capacity: " + std::to_string(flow_table_capacity) +
                         " exceeds 2^28");
    }
    if (flow_slots_per_flow < 2 || flow_slots_per_flow > kMaxSlotsPerFlow ||
        !std::has_single_bit(flow_slots_per_flow)) {
        errors.push_back("flow_slots_per_flow: " + std::to_string(flow_slots_per_flow) +
                         " is not a power of two from 2 to " + std::to_string(kMaxSlotsPerFlow));
    } else if (uint64_t{flow_table_capacity} * flow_slots_per_flow > kMaxFlowSlots) {
        errors.push_back("flow_slots_per_flow: capacity " + std::to_string(flow_table_capacity) +
                         " x " + std::to_string(flow_slots_per_flow) + " slots exceeds 2^30");
    }
    if (flow_table_capacity != 0 && flow_idle_timeout_ns == 0) {
        errors.push_back("flow_idle_timeout_ns: must be > 0 with a flow table");
    }
    if (fragment_cache_capacity > (1u << 24)) {
        errors.push_back("fragment_cache_capacity: exceeds 2^24");
    }
    if (fragment_cache_capacity != 0 && fragment_timeout_ns == 0) {
        errors.push_back("fragment_timeout_ns: must be > 0 with a fragment cache");
    }
    if (max_vlan_depth == 0 || max_vlan_depth > kMaxVlanDepthLimit) {
        errors.push_back("max_vlan_depth: " + std::to_string(max_vlan_depth) + " not in 1.." +
                         std::to_string(kMaxVlanDepthLimit));
    }
    if (job_prefix_ipv4 > 32) {
        errors.push_back("job_prefix_ipv4: " + std::to_string(job_prefix_ipv4) + " not in 0..32");
    }
    if (job_prefix_ipv6 > 128) {
        errors.push_back("job_prefix_ipv6: " + std::to_string(job_prefix_ipv6) + " not in 0..128");
    }
    if (vxlan_port == 0) errors.push_back("vxlan_port: port 0");
    if (roce_port == 0) errors.push_back("roce_port: port 0");
    if (vxlan_inner && vxlan_port == roce_port) {
        errors.push_back("vxlan_port: equals roce_port");
    }
    return errors;
}

}  // namespace twinlane::classifier
