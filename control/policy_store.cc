#include "control/policy_store.h"

#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include <array>
#include <exception>
#include <span>
#include <string>
#include <string_view>

#include "conf/load_policy.h"
#include "conf/policy_document.h"
#include "conf/yaml_fields.h"
#include "control/stats_json.h"

#ifndef TWINLANE_VERSION
#error "TWINLANE_VERSION must be defined by the build"
#endif

namespace twinlane::control {
namespace {

using nlohmann::json;

constexpr std::array<const char*, 7> kLogLevelNames{"trace", "debug",    "info", "warn",
                                                    "error", "critical", "off"};
// Keys and values cross the control socket: keep them to what a policy file could hold.
constexpr size_t kMaxValueBytes = 256;
// A rule is about 20 YAML nodes; rule text expanding (through aliases) to more is refused.
constexpr size_t kMaxRuleNodes = 10'000;

std::vector<std::string> error_lines(const std::vector<conf::PolicyError>& errors,
                                     bool with_location) {
    std::vector<std::string> lines;
    lines.reserve(errors.size());
    for (const conf::PolicyError& error : errors) {
        // A re-rendered document's line numbers mean nothing to the operator; the key path does.
        lines.push_back(with_location ? error.to_string() : error.key_path + ": " + error.reason);
    }
    return lines;
}

// "ports[1].scheduler...: why" -> "ports[out].scheduler...: why". The re-rendered document
// gives every port its own tree, so the index names nothing in the operator's file; the port's
// name does (as the reload checks say it).
std::string name_port_in_path(const std::string& line, const json& document) {
    constexpr std::string_view kPrefix = "ports[";
    if (!line.starts_with(kPrefix)) return line;
    const size_t close = line.find(']', kPrefix.size());
    if (close == std::string::npos || close == kPrefix.size()) return line;
    size_t index = 0;
    for (size_t i = kPrefix.size(); i < close; ++i) {
        if (line[i] < '0' || line[i] > '9' || index > 4096) return line;
        index = index * 10 + static_cast<size_t>(line[i] - '0');
    }
    const auto ports = document.find("ports");
    if (ports == document.end() || !ports->is_array() || index >= ports->size()) return line;
    const auto name = (*ports)[index].find("name");
    if (name == (*ports)[index].end() || !name->is_string()) return line;
    return std::string(kPrefix) + name->get<std::string>() + line.substr(close);
}

// yaml-cpp node -> JSON, scalars as strings: the loader reads scalars as text anyway.
json yaml_to_json(const YAML::Node& node, size_t depth) {
    if (depth > 32) throw std::runtime_error("nested too deeply");
    switch (node.Type()) {
        case YAML::NodeType::Map: {
            json out = json::object();
            for (const auto& pair : node) {
                if (!pair.first.IsScalar())
                    throw std::runtime_error("mapping keys must be scalars");
                const std::string key = pair.first.Scalar();
                if (out.contains(key)) throw std::runtime_error("key '" + key + "' is repeated");
                out[key] = yaml_to_json(pair.second, depth + 1);
            }
            return out;
        }
        case YAML::NodeType::Sequence: {
            json out = json::array();
            for (const auto& item : node)
                out.push_back(yaml_to_json(item, depth + 1));
            return out;
        }
        case YAML::NodeType::Scalar:
            return node.Scalar();
        default:
            return nullptr;
    }
}

bool is_switch_on(std::string_view value, bool& on) {
    for (std::string_view word : {"on", "true", "yes", "enabled"}) {
        if (value == word) return on = true;
    }
    for (std::string_view word : {"off", "false", "no", "disabled", "none"}) {
        if (value == word) {
            on = false;
            return true;
        }
    }
    return false;
}

// Sets `key` on a class's entry node of one tree document. `leaf_options` is the node itself
// for a leaf, the per_job leaf template for a per_job node. Returns an error message or "".
std::string set_class_key(json& node, std::string_view key, const std::string& value) {
    json& leaf_options = node.contains("per_job") ? node["per_job"]["leaf"] : node;
    bool on = false;
    if (key == "weight") {
        node["weight"] = value;
    } else if (key == "rate") {
        if (is_switch_on(value, on) && !on) {
            node.erase("shaper");
        } else {
            node["shaper"]["rate"] = value;
        }
    } else if (key == "burst") {
        if (!node.contains("shaper")) return "class has no shaper; set its rate first";
        node["shaper"]["burst"] = value;
    } else if (key == "limit_packets") {
        leaf_options["limit"]["packets"] = value;
    } else if (key == "limit_bytes") {
        leaf_options["limit"]["bytes"] = value;
    } else if (key == "ecn" || key == "codel") {
        if (!is_switch_on(value, on)) return std::string(key) + " takes on or off";
        const std::string section(key);
        if (!on) {
            leaf_options.erase(section);
        } else if (!leaf_options.contains(section)) {
            leaf_options[section] = json::object();
        }
    } else if (key.starts_with("ecn_") || key.starts_with("codel_")) {
        const size_t underscore = key.find('_');
        const std::string section(key.substr(0, underscore));
        const std::string field(key.substr(underscore + 1));
        static const std::array<std::string_view, 4> kEcnFields{"kmin", "kmax", "pmax",
                                                                "drop_non_ect"};
        static const std::array<std::string_view, 3> kCodelFields{"target", "interval", "ecn"};
        const bool known = section == "ecn"
                               ? std::ranges::find(kEcnFields, field) != kEcnFields.end()
                               : std::ranges::find(kCodelFields, field) != kCodelFields.end();
        if (!known) return "unknown key '" + std::string(key) + "'";
        if (!leaf_options.contains(section)) leaf_options[section] = json::object();
        leaf_options[section][field] = value;
    } else {
        return "unknown key '" + std::string(key) +
               "' (weight, rate, burst, limit_packets, limit_bytes, ecn, ecn_kmin, ecn_kmax, "
               "ecn_pmax, ecn_drop_non_ect, codel, codel_target, codel_interval, codel_ecn)";
    }
    return "";
}

// Every node of a tree document where `class_name` enters.
void find_class_nodes(json& node, const std::string& class_name, std::vector<json*>& found) {
    if (node.contains("class") && node["class"] == class_name) found.push_back(&node);
    if (node.contains("children")) {
        for (json& child : node["children"])
            find_class_nodes(child, class_name, found);
    }
}

const char* current_log_level_name() {
    const auto level = static_cast<size_t>(spdlog::get_level());
    return level < kLogLevelNames.size() ? kLogLevelNames[level] : "off";
}

bool valid_text(std::string_view text) {
    if (text.empty() || text.size() > kMaxValueBytes) return false;
    for (char c : text) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
    }
    return true;
}

}  // namespace

PolicyStore::PolicyStore(std::vector<uint16_t> dpdk_port_ids)
    : dpdk_port_ids_(std::move(dpdk_port_ids)) {}

PolicyStore::CreateResult PolicyStore::create(std::shared_ptr<const conf::Policy> policy,
                                              std::vector<uint16_t> dpdk_port_ids) {
    CreateResult result;
    if (!policy) {
        result.errors.push_back("no policy");
        return result;
    }
    std::unique_ptr<PolicyStore> store(new PolicyStore(std::move(dpdk_port_ids)));
    ApiResult installed = store->install(std::move(policy));
    if (!installed.ok()) {
        result.errors.push_back(installed.error());
        for (const std::string& detail : installed.details())
            result.errors.push_back(detail);
        return result;
    }
    result.store = std::move(store);
    return result;
}

ApiResult PolicyStore::install(std::shared_ptr<const conf::Policy> policy) {
    auto compiled =
        std::make_shared<conf::CompiledPolicy>(conf::compile_policy(*policy, dpdk_port_ids_));
    if (!compiled->ok()) {
        return ApiResult::failure("the policy does not compile", compiled->errors);
    }
    auto version = std::make_shared<PolicyVersion>();
    version->policy = std::move(policy);
    version->compiled = std::move(compiled);
    // Callers hold change_mutex_ (or are create()), so epoch_ has a single writer.
    version->epoch = epoch_.load(std::memory_order_relaxed) + 1;
    const uint64_t epoch = version->epoch;
    const std::string source = version->policy->source;
    if (const auto running = current()) {
        if (std::optional<ApiResult> refused = before_publish(*running, *version)) {
            return std::move(*refused);
        }
    }
    current_.store(std::move(version));
    epoch_.store(epoch, std::memory_order_release);
    return ApiResult::success({{"policy_epoch", epoch}, {"policy_source", source}});
}

ApiResult PolicyStore::install_document(const json& document, const std::string& source) {
    conf::PolicyResult parsed = conf::parse_policy(conf::render_yaml(document), source);
    if (!parsed.ok()) {
        std::vector<std::string> lines = error_lines(parsed.errors, false);
        for (std::string& line : lines)
            line = name_port_in_path(line, document);
        return ApiResult::failure("the change makes the policy invalid; nothing was changed",
                                  std::move(lines));
    }
    return install(std::move(parsed.policy));
}

ApiResult PolicyStore::status() {
    const auto version = current();
    const conf::Policy& policy = *version->policy;
    json ports = json::array();
    for (size_t i = 0; i < policy.ports.size(); ++i) {
        const conf::PortPolicy& port = policy.ports[i];
        ports.push_back({{"name", port.name},
                         {"port_id", i < dpdk_port_ids_.size() ? dpdk_port_ids_[i] : i},
                         {"device", port.device},
                         {"link_up", false},  // no NIC behind an offline store
                         {"speed_mbps", 0},
                         {"rate_bits_per_sec", port.rate_bits_per_sec}});
    }
    json lcores = json::array();
    switch (policy.lcores.mode) {
        case conf::LcorePolicy::Mode::automatic:
            break;
        case conf::LcorePolicy::Mode::run_to_completion:
            lcores.push_back({{"lcore", policy.lcores.single_lcore},
                              {"role", "run_to_completion"},
                              {"ports", json::array()}});
            break;
        case conf::LcorePolicy::Mode::explicit_roles:
            for (const conf::RxLcore& rx : policy.lcores.rx) {
                json names = json::array();
                for (const conf::RxQueueRef& ref : rx.queues) {
                    const std::string& name = policy.ports[ref.port].name;
                    if (std::find(names.begin(), names.end(), name) == names.end())
                        names.push_back(name);
                }
                lcores.push_back(
                    {{"lcore", rx.lcore}, {"role", "rx"}, {"ports", std::move(names)}});
            }
            for (const conf::SchedulerLcore& sched : policy.lcores.scheduler) {
                json names = json::array();
                for (size_t port : sched.egress_ports)
                    names.push_back(policy.ports[port].name);
                lcores.push_back(
                    {{"lcore", sched.lcore}, {"role", "scheduler"}, {"ports", std::move(names)}});
            }
            break;
    }
    json changes = json::object();
    static constexpr std::array<const char*, static_cast<size_t>(Change::count)> kChangeNames{
        "load", "rules_add", "rules_delete", "class_set"};
    for (size_t kind = 0; kind < kChangeNames.size(); ++kind) {
        changes[kChangeNames[kind]] = {
            {"applied", changes_[kind][0].load(std::memory_order_relaxed)},
            {"refused", changes_[kind][1].load(std::memory_order_relaxed)}};
    }
    const auto uptime = std::chrono::steady_clock::now() - started_;
    return ApiResult::success(
        {{"version", TWINLANE_VERSION},
         {"uptime_ns", std::chrono::duration_cast<std::chrono::nanoseconds>(uptime).count()},
         {"policy_source", policy.source},
         {"policy_epoch", version->epoch},
         {"log_level", current_log_level_name()},
         {"policy_changes", std::move(changes)},
         {"policy_last_load_ok", last_load_ok_.load(std::memory_order_relaxed)},
         {"ports", std::move(ports)},
         {"lcores", std::move(lcores)}});
}

ApiResult PolicyStore::stats(StatsScope scope) {
    const auto version = current();
    const conf::Policy& policy = *version->policy;
    const NodeCountersReader zero_nodes = [](size_t, const std::string&) {
        return sched::QueueCounters{};
    };
    switch (scope) {
        case StatsScope::ports: {
            json ports = json::array();
            for (size_t i = 0; i < policy.ports.size(); ++i) {
                ports.push_back({{"name", policy.ports[i].name},
                                 {"port_id", i < dpdk_port_ids_.size() ? dpdk_port_ids_[i] : i},
                                 {"rx_packets", 0},
                                 {"rx_bytes", 0},
                                 {"tx_packets", 0},
                                 {"tx_bytes", 0},
                                 {"rx_dropped", 0},
                                 {"tx_dropped", 0},
                                 {"rx_bits_per_sec", 0},
                                 {"tx_bits_per_sec", 0},
                                 {"tx_link_bound_ns", 0}});
            }
            return ApiResult::success(std::move(ports));
        }
        case StatsScope::classes:
            return ApiResult::success(class_stats_json(
                policy, zero_nodes, [](size_t) { return classifier::ClassCounters{}; }));
        case StatsScope::queues:
            return ApiResult::success(queue_stats_json(policy, zero_nodes));
    }
    return ApiResult::failure("unknown stats scope");
}

ApiResult PolicyStore::flows_top(size_t count) {
    const auto version = current();
    return ApiResult::success(
        flows_top_json(*version->policy, std::span<const classifier::FlowTable* const>{}, count));
}

ApiResult PolicyStore::rules_list() {
    const auto version = current();
    json rules = json::array();
    for (const conf::ClassifierRule& rule : version->policy->classifier.rules) {
        rules.push_back(conf::rule_document(*version->policy, rule));
    }
    return ApiResult::success(std::move(rules));
}

ApiResult PolicyStore::counted(Change kind, ApiResult result) {
    changes_[static_cast<size_t>(kind)][result.ok() ? 0 : 1].fetch_add(1,
                                                                       std::memory_order_relaxed);
    if (kind == Change::load) last_load_ok_.store(result.ok(), std::memory_order_relaxed);
    return result;
}

ApiResult PolicyStore::rules_add(std::string_view rule_text) {
    return counted(Change::rules_add, add_rule(rule_text));
}

ApiResult PolicyStore::rules_delete(std::string_view rule_name) {
    return counted(Change::rules_delete, delete_rule(rule_name));
}

ApiResult PolicyStore::class_set(std::string_view class_name, std::string_view key,
                                 std::string_view value) {
    return counted(Change::class_set, set_class(class_name, key, value));
}

ApiResult PolicyStore::policy_load(const std::string& path) {
    return counted(Change::load, load_file(path));
}

ApiResult PolicyStore::add_rule(std::string_view rule_text) {
    json rule;
    try {
        const std::string yaml(rule_text);
        // Checked before yaml_to_json expands it on the control thread: nested aliases.
        const conf::YamlExtent extent = conf::measure_yaml(yaml, kMaxRuleNodes);
        if (extent.too_deep) {
            return ApiResult::failure("the rule nests collections deeper than " +
                                      std::to_string(conf::kMaxYamlDepth) + " levels at line " +
                                      std::to_string(extent.too_deep_at.line + 1));
        }
        if (extent.too_many_nodes) {
            return ApiResult::failure(
                "the rule expands to more than " + std::to_string(kMaxRuleNodes) +
                " YAML nodes (aliases?) at line " + std::to_string(extent.overflow.line + 1));
        }
        if (extent.more_documents) {
            return ApiResult::failure("the rule text holds more than one YAML document");
        }
        if (extent.not_utf8) {
            return ApiResult::failure("the rule holds a value that is not UTF-8 text at line " +
                                      std::to_string(extent.not_utf8_at.line + 1));
        }
        rule = yaml_to_json(YAML::Load(yaml), 0);
    } catch (const std::exception& e) {
        return ApiResult::failure(std::string("the rule is not valid YAML/JSON: ") + e.what());
    }
    if (!rule.is_object()) {
        return ApiResult::failure(
            "a rule is a mapping: {name: N, priority: P, match: {...}, action: {class: C}}");
    }
    if (!rule.contains("name") || !rule["name"].is_string()) {
        return ApiResult::failure("the rule needs a name (rules are deleted by name)");
    }
    const std::string name = rule["name"].get<std::string>();
    std::lock_guard lock(change_mutex_);
    const auto version = current();
    for (const conf::ClassifierRule& existing : version->policy->classifier.rules) {
        if (existing.name == name) {
            return ApiResult::failure("a rule named '" + name + "' already exists");
        }
    }
    json document = conf::policy_document(*version->policy);
    document["classifier"]["rules"].push_back(std::move(rule));
    return install_document(document, version->policy->source);
}

ApiResult PolicyStore::delete_rule(std::string_view rule_name) {
    std::lock_guard lock(change_mutex_);
    const auto version = current();
    json document = conf::policy_document(*version->policy);
    json& rules = document["classifier"]["rules"];
    for (auto it = rules.begin(); it != rules.end(); ++it) {
        if ((*it)["name"] == rule_name) {
            rules.erase(it);
            return install_document(document, version->policy->source);
        }
    }
    return ApiResult::failure("no rule named '" + std::string(rule_name) + "'");
}

ApiResult PolicyStore::set_class(std::string_view class_name, std::string_view key,
                                 std::string_view value) {
    if (!valid_text(class_name) || !valid_text(key) || !valid_text(value)) {
        return ApiResult::failure("class, key and value must be 1-256 printable characters");
    }
    std::lock_guard lock(change_mutex_);
    const auto version = current();
    if (!version->policy->find_class(class_name)) {
        return ApiResult::failure("no class named '" + std::string(class_name) + "'");
    }
    json document = conf::policy_document(*version->policy);
    std::vector<json*> nodes;
    for (json& port : document["ports"]) {
        if (port.contains("scheduler")) {
            find_class_nodes(port["scheduler"], std::string(class_name), nodes);
        }
    }
    if (nodes.empty()) {
        return ApiResult::failure("class '" + std::string(class_name) +
                                  "' enters no scheduling tree (no egress port)");
    }
    for (json* node : nodes) {
        const std::string problem = set_class_key(*node, key, std::string(value));
        if (!problem.empty()) return ApiResult::failure(problem);
    }
    return install_document(document, version->policy->source);
}

ApiResult PolicyStore::load_file(const std::string& path) {
    if (path.empty() || path.size() > 4096) return ApiResult::failure("bad policy path");
    conf::PolicyResult loaded = conf::load_policy(path);
    if (!loaded.ok()) {
        return ApiResult::failure("policy " + path + " is invalid; the running policy is unchanged",
                                  error_lines(loaded.errors, true));
    }
    std::lock_guard lock(change_mutex_);
    return install(std::move(loaded.policy));
}

ApiResult PolicyStore::policy_show() {
    const auto version = current();
    json document = conf::policy_document(*version->policy);
    return ApiResult::success({{"policy_source", version->policy->source},
                               {"policy_epoch", version->epoch},
                               {"document", std::move(document)}});
}

ApiResult PolicyStore::log_level() {
    return ApiResult::success({{"log_level", current_log_level_name()}});
}

ApiResult PolicyStore::set_log_level(std::string_view level) {
    for (size_t i = 0; i < kLogLevelNames.size(); ++i) {
        if (level == kLogLevelNames[i]) {
            // twinlane's names and spdlog's enum share order: trace .. critical, off.
            spdlog::set_level(static_cast<spdlog::level::level_enum>(i));
            return log_level();
        }
    }
    return ApiResult::failure("unknown log level '" + std::string(level.substr(0, 32)) +
                              "' (trace, debug, info, warn, error, critical, off)");
}

}  // namespace twinlane::control
