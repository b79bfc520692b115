#include "control/policy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cerrno>
#include <map>
#include <set>
#include <tuple>

#include "classifier/flow_table.h"
#include "control/units.h"
#include "control/yaml_fields.h"

namespace twinlane::control {
namespace {

// Limits that keep the dataplane's tables small and its integers exact.
constexpr uint64_t kMaxRateBitsPerSec = 10'000'000'000'000ULL;  // 10 Tb/s
constexpr uint32_t kMaxLcore = 127;                             // DPDK's default RTE_MAX_LCORE
constexpr size_t kMaxClasses = 16;
constexpr size_t kMaxTreeDepth = 16;
constexpr size_t kMaxTreeNodes = 4096;
constexpr uint32_t kMaxJobsPerNode = 1024;
constexpr uint64_t kMaxWeight = 65536;
constexpr uint64_t kMaxBurstBytes = 1ULL << 28;
constexpr uint64_t kMaxServingPorts = 1024;
constexpr uint32_t kFrameOverheadBytes = 18;  // Ethernet header + one VLAN tag, beyond the MTU
constexpr uint64_t kDefaultTxBudgetNs = 20'000;
constexpr uint64_t kDefaultBurstNs = 1'000'000;  // a shaper lets through 1 ms of its rate

bool is_power_of_two(uint64_t value) {
    return value != 0 && (value & (value - 1)) == 0;
}

// Names appear in metrics and in generated node names: keep them to a safe alphabet.
bool is_identifier(std::string_view name) {
    if (name.empty() || name.size() > 32) return false;
    if (!std::isalpha(static_cast<unsigned char>(name.front()))) return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
    });
}

// Paths and device arguments reach C APIs, where a NUL cuts them short (the daemon would use a
// different path than the one checked); other control characters are never meant.
bool has_control_character(std::string_view text) {
    return std::any_of(text.begin(), text.end(), [](char c) {
        return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
    });
}
constexpr const char* kControlCharacterReason =
    "must not contain control characters (NUL, newline, tab, ...)";

std::optional<std::string> read_name(const Field& field, ErrorList& errors) {
    auto name = read_string(field, errors);
    if (name && !is_identifier(*name)) {
        errors.add(field.mark, field.path,
                   "'" + *name +
                       "' is not a valid name (a letter, then letters, digits, '_' or '-'; at "
                       "most 32)");
        return std::nullopt;
    }
    return name;
}

// Decimal, or hexadecimal with 0x (RoCE QP numbers are usually written in hex).
std::optional<uint64_t> parse_number(std::string_view text, uint64_t max) {
    if (text.starts_with("0x") || text.starts_with("0X")) {
        text.remove_prefix(2);
        if (text.empty() || text.size() > 8) return std::nullopt;
        uint64_t value = 0;
        for (char c : text) {
            if (!std::isxdigit(static_cast<unsigned char>(c))) return std::nullopt;
            value = value * 16 + static_cast<uint64_t>(std::isdigit(static_cast<unsigned char>(c))
                                                           ? c - '0'
                                                           : std::tolower(c) - 'a' + 10);
        }
        if (value > max) return std::nullopt;
        return value;
    }
    auto parsed = parse_unsigned(text, max);
    if (!parsed) return std::nullopt;
    return *parsed;
}

// "8000", "8000-8001", "0x100-0x1ff" -> inclusive range within [0, max].
std::optional<ValueRange> read_range(const Field& field, uint32_t max, ErrorList& errors) {
    if (!field.node.IsScalar()) {
        errors.add(field.mark, field.path, "expected a number or a range such as 8000-8001");
        return std::nullopt;
    }
    const std::string& text = field.node.Scalar();
    const size_t dash = text.find('-', 1);
    const std::string first_text = text.substr(0, dash);
    const std::string last_text = dash == std::string::npos ? first_text : text.substr(dash + 1);
    auto first = parse_number(first_text, max);
    auto last = parse_number(last_text, max);
    if (!first || !last) {
        errors.add(field.mark, field.path,
                   "'" + text + "' is not a number or range within 0-" + std::to_string(max));
        return std::nullopt;
    }
    if (*first > *last) {
        errors.add(field.mark, field.path, "range '" + text + "' ends before it starts");
        return std::nullopt;
    }
    return ValueRange{static_cast<uint32_t>(*first), static_cast<uint32_t>(*last)};
}

std::optional<IpPrefix> read_prefix(const Field& field, ErrorList& errors) {
    auto text = read_string(field, errors);
    if (!text) return std::nullopt;
    const size_t slash = text->find('/');
    const std::string address_text = text->substr(0, slash);
    IpPrefix prefix;
    uint32_t max_length = 0;
    if (inet_pton(AF_INET, address_text.c_str(), prefix.address.data()) == 1) {
        prefix.version = 4;
        max_length = 32;
    } else if (inet_pton(AF_INET6, address_text.c_str(), prefix.address.data()) == 1) {
        prefix.version = 6;
        max_length = 128;
    } else {
        errors.add(
            field.mark, field.path,
            "'" + *text + "' is not an IPv4 or IPv6 address or prefix (10.0.0.0/8, fd00::/8)");
        return std::nullopt;
    }
    prefix.length = static_cast<uint8_t>(max_length);
    if (slash != std::string::npos) {
        auto length = parse_unsigned(text->substr(slash + 1), max_length);
        if (!length) {
            errors.add(field.mark, field.path,
                       "prefix length in '" + *text + "' must be 0-" + std::to_string(max_length));
            return std::nullopt;
        }
        prefix.length = static_cast<uint8_t>(*length);
    }
    // Host bits set usually means a typo in the length: say so rather than silently masking.
    for (uint32_t bit = prefix.length; bit < max_length; ++bit) {
        if (prefix.address[bit / 8] & (0x80 >> (bit % 8))) {
            errors.add(field.mark, field.path,
                       "'" + *text + "' has bits set after the prefix length " +
                           std::to_string(prefix.length));
            return std::nullopt;
        }
    }
    return prefix;
}

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
    void read_ports(const Field& field);
    void read_classes(const Field& field);
    void read_forwarding(const Field& field);
    void read_lcores(const Field& field);
    std::optional<RawTree> read_tree(const Field& field);
    bool read_node(const Field& field, std::optional<NodeKind> parent_kind, size_t depth,
                   std::vector<YAML::Node>& ancestors, RawNode& out);
    void read_leaf_options(const MapFields& map, RawNode& raw);
    void check_tree_classes(const RawTree& tree, const Field& field);
    void build_egress_trees(const std::optional<Field>& default_tree_field,
                            const std::vector<std::optional<Field>>& port_tree_fields);
    bool resolve_node(const RawNode& raw, uint64_t parent_rate, const PortPolicy& port,
                      TreeNode& out);
    void read_classifier(const Field& field);
    struct RuleFields {
        std::optional<Field> priority;  // when it was read
        std::optional<Field> name;      // when it was read
        bool name_given = false;
    };
    RuleFields read_rule(const Field& field, ClassifierRule& rule);
    void read_heuristics(const Field& field);
    void read_control(const Field& field);
    void read_metrics(const Field& field);

    std::optional<size_t> lookup_port(const Field& field);
    // Whether `port`'s rate comes from the override: what the file sized for its own rate
    // (bursts, budgets, absolute shapers) is then fitted to the new rate instead of refused.
    bool overrides(const PortPolicy& port) const {
        return !override_.port.empty() && port.name == override_.port;
    }
    std::optional<size_t> lookup_class(const Field& field);

    ErrorList errors_;
    PortRateOverride override_;
    Policy policy_;
    // Names are recorded even when the rest of their entry is broken, so that one bad port
    // does not also make every reference to it "unknown".
    std::vector<std::string> port_names_;
    std::vector<std::string> class_names_;
    // Where each egress port is first named as a destination, to locate "no tree" errors.
    std::map<size_t, Field> egress_reference_;
};

PolicyResult PolicyLoader::load(std::string_view text) {
    YAML::Node document;
    try {
        const std::string yaml(text);
        // Before any node is built or walked: nested aliases expand exponentially.
        const YamlExtent extent = measure_yaml(yaml, kMaxPolicyNodes);
        if (extent.too_many_nodes) {
            errors_.add(extent.overflow, "",
                        "the document expands to more than " + std::to_string(kMaxPolicyNodes) +
                            " nodes (YAML aliases?)");
            return PolicyResult{nullptr, errors_.take()};
        }
        if (extent.more_documents) {
            errors_.add(extent.second_document, "",
                        "a second YAML document; a policy file holds one YAML document");
        }
        document = YAML::Load(yaml);
    } catch (const YAML::ParserException& e) {
        errors_.add(e.mark, "", "YAML syntax: " + e.msg);
        return PolicyResult{nullptr, errors_.take()};
    }
    if (!document.IsMap()) {
        errors_.add(document.IsDefined() ? document.Mark() : YAML::Mark::null_mark(), "",
                    "the policy must be a YAML mapping of sections (ports, classes, ...)");
        return PolicyResult{nullptr, errors_.take()};
    }
    read_document(Field{document, document.Mark(), ""});

    const size_t unlisted = errors_.unlisted();
    std::vector<PolicyError> errors = errors_.take();
    if (!errors.empty()) {
        // Report in file order: that is how the author reads and fixes them.
        std::stable_sort(errors.begin(), errors.end(), [](const auto& a, const auto& b) {
            return std::tie(a.line, a.column) < std::tie(b.line, b.column);
        });
        if (unlisted != 0) {
            errors.push_back(PolicyError{.file = errors.front().file,
                                         .line = 0,
                                         .column = 0,
                                         .key_path = "",
                                         .reason = "and " + std::to_string(unlisted) +
                                                   " more errors, not listed"});
        }
        return PolicyResult{nullptr, std::move(errors)};
    }
    return PolicyResult{std::make_shared<const Policy>(std::move(policy_)), {}};
}

void PolicyLoader::read_document(const Field& root) {
    const MapFields map(root,
                        {"version", "log_level", "ports", "forwarding", "lcores", "classes",
                         "scheduler", "classifier", "control", "metrics"},
                        errors_);
    if (auto version = map.get("version")) read_unsigned(*version, 1, 1, errors_);
    if (auto level = map.get("log_level")) {
        if (auto index = read_choice(
                *level, {"trace", "debug", "info", "warn", "error", "critical", "off"}, errors_)) {
            policy_.log_level = static_cast<LogLevel>(*index);
        }
    }
    // Order matters: ports and classes first, everything else refers to them by name.
    if (auto ports = map.require("ports")) read_ports(*ports);
    if (auto classes = map.require("classes")) read_classes(*classes);
    if (auto forwarding = map.require("forwarding")) read_forwarding(*forwarding);

    std::vector<std::optional<Field>> port_trees;
    if (auto ports = map.get("ports"); ports && ports->node.IsSequence()) {
        for (size_t i = 0; i < ports->node.size(); ++i) {
            // const: a non-const operator[] would insert the key it looks up.
            const YAML::Node& port = ports->node[i];
            std::optional<Field> tree;
            if (port.IsMap() && port["scheduler"]) {
                const YAML::Node node = port["scheduler"];
                tree =
                    Field{node, node.Mark(), ports->path + "[" + std::to_string(i) + "].scheduler"};
            }
            port_trees.push_back(tree);
        }
    }
    build_egress_trees(map.get("scheduler"), port_trees);

    if (auto lcores = map.get("lcores")) read_lcores(*lcores);
    if (auto classifier = map.get("classifier")) {
        read_classifier(*classifier);
    } else if (!policy_.classes.empty()) {
        policy_.classifier.heuristics.default_class = policy_.classes.size() - 1;
    }
    if (auto control = map.get("control")) read_control(*control);
    if (auto metrics = map.get("metrics")) read_metrics(*metrics);
}

std::optional<size_t> PolicyLoader::lookup_port(const Field& field) {
    auto name = read_string(field, errors_);
    if (!name) return std::nullopt;
    const auto found = std::find(port_names_.begin(), port_names_.end(), *name);
    if (found != port_names_.end()) return static_cast<size_t>(found - port_names_.begin());
    std::string reason = "unknown port '" + *name + "'";
    const std::string suggestion =
        closest_name(*name, std::vector<std::string_view>(port_names_.begin(), port_names_.end()));
    if (!suggestion.empty()) reason += " (did you mean '" + suggestion + "'?)";
    errors_.add(field.mark, field.path, reason);
    return std::nullopt;
}

std::optional<size_t> PolicyLoader::lookup_class(const Field& field) {
    auto name = read_string(field, errors_);
    if (!name) return std::nullopt;
    const auto found = std::find(class_names_.begin(), class_names_.end(), *name);
    if (found != class_names_.end()) return static_cast<size_t>(found - class_names_.begin());
    std::string reason = "unknown class '" + *name + "'";
    const std::string suggestion = closest_name(
        *name, std::vector<std::string_view>(class_names_.begin(), class_names_.end()));
    if (!suggestion.empty()) reason += " (did you mean '" + suggestion + "'?)";
    errors_.add(field.mark, field.path, reason);
    return std::nullopt;
}

// ---- ports ----------------------------------------------------------------------------------

// A PCI address ("0000:3b:00.0" or "3b:00.0") or a DPDK virtual device ("net_null0,...").
bool is_valid_device(std::string_view device) {
    const std::string_view head = device.substr(0, device.find(','));
    if (head.starts_with("net_")) return head.size() > 4;
    auto hex = [](std::string_view part, size_t width) {
        return part.size() == width && std::all_of(part.begin(), part.end(), [](char c) {
                   return std::isxdigit(static_cast<unsigned char>(c));
               });
    };
    // [domain:]bus:device.function
    const size_t dot = head.rfind('.');
    if (dot == std::string_view::npos || !hex(head.substr(dot + 1), 1)) return false;
    std::string_view rest = head.substr(0, dot);
    const size_t last_colon = rest.rfind(':');
    if (last_colon == std::string_view::npos || !hex(rest.substr(last_colon + 1), 2)) return false;
    rest = rest.substr(0, last_colon);
    const size_t colon = rest.rfind(':');
    if (colon == std::string_view::npos) return hex(rest, 2);
    return hex(rest.substr(colon + 1), 2) && hex(rest.substr(0, colon), 4);
}

// What identifies a device for the duplicate check: a PCI address in one spelling (domain
// 0000 when left out, lowercase hex), so 3b:00.0 and 0000:3B:00.0 are the same device; a vdev
// as written. `head` is a valid device without its arguments.
std::string device_identity(std::string_view head) {
    if (head.starts_with("net_")) return std::string(head);
    std::string pci(head);
    std::transform(pci.begin(), pci.end(), pci.begin(),
                   [](char c) { return static_cast<char>(std::tolower(c)); });
    if (std::count(pci.begin(), pci.end(), ':') == 1) pci = "0000:" + pci;
    return pci;
}

void PolicyLoader::read_ports(const Field& field) {
    auto items = read_sequence(field, errors_);
    if (!items) return;
    if (items->empty()) errors_.add(field.mark, field.path, "at least one port is needed");
    if (items->size() > kMaxPorts) {
        errors_.add(field.mark, field.path,
                    "at most " + std::to_string(kMaxPorts) + " ports (the dataplane's counters)");
    }
    struct DeviceOwner {
        std::string port;
        std::string spelling;
    };
    std::map<std::string, DeviceOwner> device_owner;  // by device_identity()
    for (const Field& item : *items) {
        const MapFields map(item,
                            {"name", "device", "rate", "rx_queues", "tx_queues", "rx_descriptors",
                             "tx_descriptors", "mtu", "tx_budget", "mempool", "scheduler"},
                            errors_);
        PortPolicy port;
        if (auto name_field = map.require("name")) {
            if (auto name = read_name(*name_field, errors_)) {
                if (std::find(port_names_.begin(), port_names_.end(), *name) != port_names_.end()) {
                    errors_.add(name_field->mark, name_field->path,
                                "duplicate port name '" + *name + "'");
                }
                port.name = *name;
            }
        }
        port_names_.push_back(port.name);
        if (auto device_field = map.require("device")) {
            if (auto device = read_string(*device_field, errors_)) {
                const std::string head = device->substr(0, device->find(','));
                if (has_control_character(*device)) {
                    errors_.add(device_field->mark, device_field->path, kControlCharacterReason);
                } else if (!is_valid_device(*device)) {
                    errors_.add(
                        device_field->mark, device_field->path,
                        "'" + *device +
                            "' is neither a PCI address (0000:3b:00.0) nor a DPDK vdev "
                            "(net_null0, net_pcap0,rx_pcap=in.pcap, net_af_xdp0,iface=eth1)");
                } else if (auto owner = device_owner.find(device_identity(head));
                           owner != device_owner.end()) {
                    const DeviceOwner& first = owner->second;
                    errors_.add(device_field->mark, device_field->path,
                                "device '" + head + "' is already used by port '" + first.port +
                                    "'" +
                                    (first.spelling != head ? " (as '" + first.spelling + "')"
                                                            : ""));
                } else {
                    device_owner.emplace(device_identity(head), DeviceOwner{port.name, head});
                }
                port.device = *device;
            }
        }
        if (auto rate_field = map.require("rate")) {
            if (auto rate = read_rate(*rate_field, false, errors_)) {
                if (rate->bits_per_sec > kMaxRateBitsPerSec) {
                    errors_.add(rate_field->mark, rate_field->path,
                                "a port rate is at most 10T (10 Tbps)");
                }
                port.rate_bits_per_sec = rate->bits_per_sec;
                if (!override_.port.empty() && port.name == override_.port)
                    port.rate_bits_per_sec = override_.rate_bits_per_sec;
            }
        }
        auto read_u16 = [&](std::string_view key, uint64_t min, uint64_t max, uint16_t& out,
                            bool power_of_two) {
            auto f = map.get(key);
            if (!f) return;
            auto value = read_unsigned(*f, min, max, errors_);
            if (!value) return;
            if (power_of_two && !is_power_of_two(*value)) {
                errors_.add(f->mark, f->path,
                            "must be a power of two, got " + std::to_string(*value));
                return;
            }
            out = static_cast<uint16_t>(*value);
        };
        read_u16("rx_queues", 1, 64, port.rx_queues, false);
        read_u16("tx_queues", 1, 64, port.tx_queues, false);
        read_u16("rx_descriptors", 64, 16384, port.rx_descriptors, true);
        read_u16("tx_descriptors", 64, 16384, port.tx_descriptors, true);
        read_u16("mtu", 68, 9600, port.mtu, false);
        const uint64_t frame_bytes = port.mtu + kFrameOverheadBytes;

        ByteBudget budget{.bytes = 0, .ns = kDefaultTxBudgetNs, .is_duration = true};
        auto budget_field = map.get("tx_budget");
        if (budget_field) {
            if (auto parsed = read_byte_budget(*budget_field, errors_)) budget = *parsed;
        }
        port.tx_budget_bytes = budget.resolve(port.rate_bits_per_sec);
        if (overrides(port)) port.tx_budget_bytes = std::max(port.tx_budget_bytes, frame_bytes);
        if (port.rate_bits_per_sec != 0 && port.tx_budget_bytes < frame_bytes) {
            const Field& at = budget_field ? *budget_field : item;
            errors_.add(at.mark, join_path(item.path, "tx_budget"),
                        "tx_budget is " + std::to_string(port.tx_budget_bytes) +
                            " bytes at this port's rate, less than one frame (" +
                            std::to_string(frame_bytes) + " bytes)");
        }

        if (auto mempool_field = map.get("mempool")) {
            if (auto mbufs = read_unsigned(*mempool_field, 1023, 1U << 24, errors_)) {
                port.mempool_mbufs = static_cast<uint32_t>(*mbufs);
                // Every RX/TX descriptor may hold an mbuf at once; less and RX starves.
                const uint64_t needed = uint64_t{port.rx_queues} * port.rx_descriptors +
                                        uint64_t{port.tx_queues} * port.tx_descriptors;
                if (*mbufs < needed) {
                    errors_.add(mempool_field->mark, mempool_field->path,
                                "mempool of " + std::to_string(*mbufs) +
                                    " mbufs cannot fill this port's descriptor rings (needs at "
                                    "least " +
                                    std::to_string(needed) + ")");
                }
            }
        }
        policy_.ports.push_back(std::move(port));
    }
}

// ---- classes --------------------------------------------------------------------------------

void PolicyLoader::read_classes(const Field& field) {
    auto items = read_sequence(field, errors_);
    if (!items) return;
    if (items->empty()) errors_.add(field.mark, field.path, "at least one class is needed");
    if (items->size() > kMaxClasses) {
        errors_.add(field.mark, field.path,
                    "at most " + std::to_string(kMaxClasses) + " classes (one ring each per port)");
    }
    for (const Field& item : *items) {
        std::optional<std::string> name;
        Field name_field = item;
        if (item.node.IsScalar()) {  // "- inference" is short for "- name: inference"
            name = read_name(item, errors_);
        } else {
            const MapFields map(item, {"name", "description"}, errors_);
            if (auto f = map.require("name")) {
                name_field = *f;
                name = read_name(*f, errors_);
            }
            if (auto description = map.get("description")) read_string(*description, errors_);
        }
        if (name &&
            std::find(class_names_.begin(), class_names_.end(), *name) != class_names_.end()) {
            errors_.add(name_field.mark, name_field.path, "duplicate class name '" + *name + "'");
        }
        class_names_.push_back(name.value_or(""));
        policy_.classes.push_back(ClassPolicy{name.value_or("")});
    }
}

// ---- forwarding -----------------------------------------------------------------------------

void PolicyLoader::read_forwarding(const Field& field) {
    auto items = read_sequence(field, errors_);
    if (!items) return;
    if (items->empty()) {
        errors_.add(field.mark, field.path, "at least one {from, to} pair is needed");
    }
    for (const Field& item : *items) {
        const MapFields map(item, {"from", "to"}, errors_);
        auto from_field = map.require("from");
        auto to_field = map.require("to");
        if (!from_field || !to_field) continue;
        const std::optional<size_t> from = lookup_port(*from_field);
        const std::optional<size_t> to = lookup_port(*to_field);
        if (!from || !to) continue;
        // One destination per ingress port: twinlane forwards, it does not route.
        const auto previous =
            std::find_if(policy_.forwarding.begin(), policy_.forwarding.end(),
                         [&](const ForwardingPolicy& f) { return f.from_port == *from; });
        if (previous != policy_.forwarding.end()) {
            errors_.add(from_field->mark, from_field->path,
                        "port '" + port_names_[*from] + "' already forwards to '" +
                            port_names_[previous->to_port] + "'");
            continue;
        }
        policy_.forwarding.push_back(ForwardingPolicy{*from, *to});
        egress_reference_.emplace(*to, *to_field);  // keeps the first mention
    }
}

// ---- lcores ---------------------------------------------------------------------------------

void PolicyLoader::read_lcores(const Field& field) {
    if (field.node.IsScalar()) {
        if (read_choice(field, {"auto"}, errors_)) {
            policy_.lcores.mode = LcorePolicy::Mode::automatic;
        }
        return;
    }
    const MapFields map(field, {"single", "rx", "scheduler"}, errors_);
    if (!map.is_map()) return;
    auto single = map.get("single");
    auto rx = map.get("rx");
    auto scheduler = map.get("scheduler");
    if (single) {
        if (rx || scheduler) {
            errors_.add(single->mark, single->path,
                        "'single' runs everything on one lcore; drop 'rx' and 'scheduler'");
            return;
        }
        policy_.lcores.mode = LcorePolicy::Mode::run_to_completion;
        if (auto lcore = read_unsigned(*single, 0, kMaxLcore, errors_)) {
            policy_.lcores.single_lcore = static_cast<uint32_t>(*lcore);
        }
        return;
    }
    if (!rx || !scheduler) {
        errors_.add(field.mark, field.path,
                    "give 'auto', {single: LCORE}, or both 'rx' and 'scheduler' lists");
        return;
    }
    policy_.lcores.mode = LcorePolicy::Mode::explicit_roles;
    std::set<uint32_t> used_lcores;
    auto claim_lcore = [&](const Field& lcore_field) -> std::optional<uint32_t> {
        auto lcore = read_unsigned(lcore_field, 0, kMaxLcore, errors_);
        if (!lcore) return std::nullopt;
        if (!used_lcores.insert(static_cast<uint32_t>(*lcore)).second) {
            errors_.add(lcore_field.mark, lcore_field.path,
                        "lcore " + std::to_string(*lcore) +
                            " already has a role (use 'single' to run everything on one lcore)");
        }
        return static_cast<uint32_t>(*lcore);
    };

    std::map<std::pair<size_t, uint16_t>, uint32_t> queue_owner;
    if (auto entries = read_sequence(*rx, errors_)) {
        for (const Field& entry : *entries) {
            const MapFields rx_map(entry, {"lcore", "poll"}, errors_);
            RxLcore rx_lcore;
            if (auto lcore = rx_map.require("lcore")) {
                rx_lcore.lcore = claim_lcore(*lcore).value_or(0);
            }
            auto poll = rx_map.require("poll");
            auto polls = poll ? read_sequence(*poll, errors_) : std::nullopt;
            for (const Field& item : polls.value_or(std::vector<Field>{})) {
                const MapFields poll_map(item, {"port", "queues"}, errors_);
                auto port_field = poll_map.require("port");
                auto queues_field = poll_map.require("queues");
                if (!port_field || !queues_field) continue;
                const std::optional<size_t> port = lookup_port(*port_field);
                const auto queues = read_sequence(*queues_field, errors_);
                if (!port || !queues) continue;
                const uint16_t queue_count = policy_.ports[*port].rx_queues;
                for (const Field& queue_field : *queues) {
                    auto queue = read_unsigned(queue_field, 0, 65535, errors_);
                    if (!queue) continue;
                    if (*queue >= queue_count) {
                        errors_.add(queue_field.mark, queue_field.path,
                                    "port '" + port_names_[*port] + "' has " +
                                        std::to_string(queue_count) + " rx queue(s), no queue " +
                                        std::to_string(*queue));
                        continue;
                    }
                    const auto key = std::make_pair(*port, static_cast<uint16_t>(*queue));
                    if (queue_owner.count(key)) {
                        errors_.add(queue_field.mark, queue_field.path,
                                    "rx queue " + port_names_[*port] + ":" +
                                        std::to_string(*queue) + " is already polled by lcore " +
                                        std::to_string(queue_owner[key]));
                        continue;
                    }
                    queue_owner[key] = rx_lcore.lcore;
                    rx_lcore.queues.push_back(RxQueueRef{*port, key.second});
                }
            }
            policy_.lcores.rx.push_back(std::move(rx_lcore));
        }
    }
    // Every queue of every ingress port must be polled, or RSS sends traffic into a black hole.
    for (const ForwardingPolicy& forwarding : policy_.forwarding) {
        const PortPolicy& port = policy_.ports[forwarding.from_port];
        for (uint16_t queue = 0; queue < port.rx_queues; ++queue) {
            if (!queue_owner.count({forwarding.from_port, queue})) {
                errors_.add(rx->mark, rx->path,
                            "rx queue " + port.name + ":" + std::to_string(queue) +
                                " is polled by no lcore");
            }
        }
    }

    std::map<size_t, uint32_t> egress_owner;
    if (auto entries = read_sequence(*scheduler, errors_)) {
        for (const Field& entry : *entries) {
            const MapFields sched_map(entry, {"lcore", "ports"}, errors_);
            SchedulerLcore sched_lcore;
            if (auto lcore = sched_map.require("lcore")) {
                sched_lcore.lcore = claim_lcore(*lcore).value_or(0);
            }
            auto ports_field = sched_map.require("ports");
            auto ports = ports_field ? read_sequence(*ports_field, errors_) : std::nullopt;
            for (const Field& port_field : ports.value_or(std::vector<Field>{})) {
                auto port = lookup_port(port_field);
                if (!port) continue;
                const bool is_egress =
                    std::any_of(policy_.forwarding.begin(), policy_.forwarding.end(),
                                [&](const ForwardingPolicy& f) { return f.to_port == *port; });
                if (!is_egress) {
                    errors_.add(port_field.mark, port_field.path,
                                "port '" + port_names_[*port] +
                                    "' is no forwarding destination, nothing to schedule");
                    continue;
                }
                if (egress_owner.count(*port)) {
                    errors_.add(port_field.mark, port_field.path,
                                "port '" + port_names_[*port] + "' is already scheduled by lcore " +
                                    std::to_string(egress_owner[*port]));
                    continue;
                }
                egress_owner[*port] = sched_lcore.lcore;
                sched_lcore.egress_ports.push_back(*port);
            }
            policy_.lcores.scheduler.push_back(std::move(sched_lcore));
        }
    }
    for (const ForwardingPolicy& forwarding : policy_.forwarding) {
        if (!egress_owner.count(forwarding.to_port)) {
            errors_.add(
                scheduler->mark, scheduler->path,
                "egress port '" + port_names_[forwarding.to_port] + "' has no scheduler lcore");
            egress_owner[forwarding.to_port] = 0;  // report once per port
        }
    }
}

// ---- scheduling trees -----------------------------------------------------------------------

std::optional<RawTree> PolicyLoader::read_tree(const Field& field) {
    RawTree tree;
    std::vector<YAML::Node> ancestors;
    tree.valid = read_node(field, std::nullopt, 0, ancestors, tree.root);
    // Names must be unique within a tree: they name the nodes in metrics and in replacements.
    std::map<std::string, const RawNode*> by_name;
    std::vector<const RawNode*> pending{&tree.root};
    size_t count = 0;
    while (!pending.empty()) {
        const RawNode* raw = pending.back();
        pending.pop_back();
        ++count;
        if (!raw->node.name.empty()) {
            auto [it, inserted] = by_name.emplace(raw->node.name, raw);
            if (!inserted) {
                errors_.add(raw->field.mark, join_path(raw->field.path, "name"),
                            "duplicate node name '" + raw->node.name + "' in this tree");
                tree.valid = false;
            }
        }
        // Reverse, so nodes are visited in file order and the later duplicate is reported.
        for (auto child = raw->children.rbegin(); child != raw->children.rend(); ++child) {
            pending.push_back(&*child);
        }
    }
    if (count > kMaxTreeNodes) {
        errors_.add(field.mark, field.path,
                    "the tree has " + std::to_string(count) + " nodes, at most " +
                        std::to_string(kMaxTreeNodes));
        tree.valid = false;
    }
    check_tree_classes(tree, field);
    return tree;
}

bool PolicyLoader::read_node(const Field& field, std::optional<NodeKind> parent_kind, size_t depth,
                             std::vector<YAML::Node>& ancestors, RawNode& out) {
    out.field = field;
    const size_t errors_before = errors_.size();
    for (const YAML::Node& ancestor : ancestors) {
        if (ancestor.is(field.node)) {
            errors_.add(field.mark, field.path,
                        "this node is its own ancestor (a YAML alias loop); every node needs "
                        "exactly one parent");
            return false;
        }
    }
    if (depth >= kMaxTreeDepth) {
        errors_.add(field.mark, field.path,
                    "the tree is deeper than " + std::to_string(kMaxTreeDepth) + " levels");
        return false;
    }
    const MapFields map(field,
                        {"name", "kind", "class", "weight", "shaper", "children", "per_job",
                         "limit", "codel", "ecn", "buckets", "sparse_boost"},
                        errors_);
    if (!map.is_map()) return false;
    TreeNode& node = out.node;
    if (auto name_field = map.require("name"))
        node.name = read_name(*name_field, errors_).value_or("");
    std::optional<NodeKind> kind;
    if (auto kind_field = map.require("kind")) {
        if (auto index = read_choice(*kind_field, {"strict", "drr", "fq", "fifo"}, errors_)) {
            kind = static_cast<NodeKind>(*index);
            node.kind = *kind;
        }
    }

    if (auto weight = map.get("weight")) {
        if (parent_kind != NodeKind::drr) {
            errors_.add(weight->mark, weight->path, "weight only applies to a child of a drr node");
        } else if (auto value = read_unsigned(*weight, 1, kMaxWeight, errors_)) {
            node.weight = static_cast<uint32_t>(*value);
        }
    }
    if (auto shaper = map.get("shaper")) {
        const MapFields shaper_map(*shaper, {"rate", "burst"}, errors_);
        out.shaper_field = *shaper;
        if (auto rate = shaper_map.require("rate"))
            out.shaper_rate = read_rate(*rate, true, errors_);
        if (auto burst = shaper_map.get("burst"))
            out.shaper_burst = read_byte_budget(*burst, errors_);
    }

    const bool is_leaf = kind == NodeKind::fq || kind == NodeKind::fifo;
    auto children = map.get("children");
    auto per_job = map.get("per_job");
    if (auto class_field = map.get("class")) {
        if (kind && !is_leaf && !(kind == NodeKind::drr && per_job)) {
            errors_.add(class_field->mark, class_field->path,
                        "a class enters the tree at a leaf (fq, fifo) or a per_job drr node");
        } else {
            node.class_index = lookup_class(*class_field);
        }
    }

    if (is_leaf) {
        if (children) {
            errors_.add(children->mark, children->path, "a leaf (fq, fifo) has no children");
        }
        if (per_job) errors_.add(per_job->mark, per_job->path, "per_job only applies to drr nodes");
        read_leaf_options(map, out);
        if (!node.class_index && !map.get("class")) {
            errors_.add(field.mark, join_path(field.path, "class"),
                        "leaf '" + node.name + "' has no class: no packet would ever reach it");
        }
        return errors_.size() == errors_before;
    }
    for (std::string_view leaf_key : {"limit", "codel", "ecn", "buckets", "sparse_boost"}) {
        if (auto f = map.get(leaf_key); f && kind) {
            errors_.add(f->mark, f->path,
                        std::string(leaf_key) + " only applies to leaves (fq, fifo)");
        }
    }
    if (!kind) return false;

    if (per_job) {
        if (kind != NodeKind::drr) {
            errors_.add(per_job->mark, per_job->path, "per_job only applies to drr nodes");
            return false;
        }
        if (children) {
            errors_.add(children->mark, children->path,
                        "a per_job node generates its children; drop 'children'");
            return false;
        }
        if (!map.get("class")) {
            errors_.add(per_job->mark, join_path(field.path, "class"),
                        "a per_job node needs the class whose jobs it splits");
        }
        const MapFields job_map(*per_job, {"jobs", "count", "leaf"}, errors_);
        auto jobs_field = job_map.get("jobs");
        auto count_field = job_map.get("count");
        if (jobs_field && count_field) {
            errors_.add(count_field->mark, count_field->path, "give either 'jobs' or 'count'");
            return false;
        }
        JobSplit& split = node.job_split;
        std::vector<std::string> child_names;
        if (jobs_field) {
            split.mode = JobSplit::Mode::listed;
            for (const Field& job_field :
                 read_sequence(*jobs_field, errors_).value_or(std::vector<Field>{})) {
                auto job = read_unsigned(job_field, 0, UINT32_MAX, errors_);
                if (!job) continue;
                const auto id = static_cast<uint32_t>(*job);
                if (std::find(split.jobs.begin(), split.jobs.end(), id) != split.jobs.end()) {
                    errors_.add(job_field.mark, job_field.path,
                                "job " + std::to_string(id) + " is listed twice");
                    continue;
                }
                split.jobs.push_back(id);
                child_names.push_back(node.name + ".job" + std::to_string(id));
            }
            if (split.jobs.empty() || split.jobs.size() >= kMaxJobsPerNode) {
                errors_.add(jobs_field->mark, jobs_field->path,
                            "list between 1 and " + std::to_string(kMaxJobsPerNode - 1) + " jobs");
            }
            child_names.push_back(node.name + ".other_jobs");
        } else if (count_field) {
            split.mode = JobSplit::Mode::modulo;
            if (auto count = read_unsigned(*count_field, 1, kMaxJobsPerNode, errors_)) {
                split.count = static_cast<uint32_t>(*count);
                for (uint32_t i = 0; i < split.count; ++i) {
                    child_names.push_back(node.name + ".job" + std::to_string(i));
                }
            }
        } else {
            errors_.add(per_job->mark, per_job->path, "give 'jobs: [ids]' or 'count: N'");
            return false;
        }
        RawNode leaf_template;
        if (auto leaf_field = job_map.require("leaf")) {
            // The template is an ordinary leaf without name or class: both are generated.
            const MapFields leaf_map(
                *leaf_field, {"kind", "limit", "codel", "ecn", "buckets", "sparse_boost"}, errors_);
            leaf_template.field = *leaf_field;
            if (auto leaf_kind = leaf_map.require("kind")) {
                if (auto index = read_choice(*leaf_kind, {"fq", "fifo"}, errors_)) {
                    leaf_template.node.kind = *index == 0 ? NodeKind::fq : NodeKind::fifo;
                }
            }
            read_leaf_options(leaf_map, leaf_template);
        }
        for (const std::string& child_name : child_names) {
            RawNode child = leaf_template;
            child.node.name = child_name;
            out.children.push_back(std::move(child));
        }
        return errors_.size() == errors_before;
    }

    if (!children) {
        errors_.add(field.mark, join_path(field.path, "children"),
                    "a " + std::string(kind == NodeKind::strict ? "strict" : "drr") +
                        " node needs children (or per_job, for drr)");
        return false;
    }
    auto items = read_sequence(*children, errors_);
    if (!items) return false;
    if (items->empty()) {
        errors_.add(children->mark, children->path, "at least one child is needed");
    }
    if (kind == NodeKind::strict && items->size() > 64) {
        errors_.add(children->mark, children->path, "a strict node has at most 64 children");
    }
    ancestors.push_back(field.node);
    for (const Field& item : *items) {
        RawNode child;
        read_node(item, kind, depth + 1, ancestors, child);
        out.children.push_back(std::move(child));
    }
    ancestors.pop_back();
    return errors_.size() == errors_before;
}

void PolicyLoader::read_leaf_options(const MapFields& map, RawNode& raw) {
    TreeNode& node = raw.node;
    if (auto limit = map.get("limit")) {
        const MapFields limit_map(*limit, {"packets", "bytes"}, errors_);
        if (auto packets = limit_map.get("packets")) {
            if (auto value = read_unsigned(*packets, 1, 1U << 20, errors_)) {
                node.limit_packets = static_cast<uint32_t>(*value);
            }
        }
        if (auto bytes = limit_map.get("bytes")) {
            if (auto value = read_size_bytes(*bytes, 9216, 1ULL << 32, errors_)) {
                node.limit_bytes = *value;
            }
        }
    }
    if (auto codel = map.get("codel")) {
        const MapFields codel_map(*codel, {"target", "interval", "ecn"}, errors_);
        CodelPolicy policy;
        if (auto target = codel_map.get("target")) {
            policy.target_ns =
                read_duration_ns(*target, 1'000, 1'000'000'000, errors_).value_or(policy.target_ns);
        }
        if (auto interval = codel_map.get("interval")) {
            policy.interval_ns = read_duration_ns(*interval, 1'000, 10'000'000'000ULL, errors_)
                                     .value_or(policy.interval_ns);
        }
        if (auto ecn = codel_map.get("ecn")) policy.ecn = read_bool(*ecn, errors_).value_or(true);
        if (policy.target_ns >= policy.interval_ns) {
            errors_.add(codel->mark, codel->path, "codel target must be shorter than its interval");
        }
        node.codel = policy;
    }
    if (auto ecn = map.get("ecn")) {
        const MapFields ecn_map(*ecn, {"enabled", "kmin", "kmax", "pmax", "drop_non_ect"}, errors_);
        bool enabled = true;
        if (auto f = ecn_map.get("enabled")) enabled = read_bool(*f, errors_).value_or(true);
        EcnPolicy policy{
            .kmin_bytes = 20'000, .kmax_bytes = 200'000, .pmax_ppm = 200'000, .drop_non_ect = true};
        if (auto f = ecn_map.get("kmin")) {
            policy.kmin_bytes =
                read_size_bytes(*f, 0, 1ULL << 31, errors_).value_or(policy.kmin_bytes);
        }
        if (auto f = ecn_map.get("kmax")) {
            policy.kmax_bytes =
                read_size_bytes(*f, 1, 1ULL << 31, errors_).value_or(policy.kmax_bytes);
        }
        if (auto f = ecn_map.get("pmax")) {
            auto ppm = read_percent_ppm(*f, errors_);
            if (ppm && *ppm == 0) {
                errors_.add(f->mark, f->path, "pmax must be more than 0%");
            } else if (ppm) {
                policy.pmax_ppm = *ppm;
            }
        }
        if (auto f = ecn_map.get("drop_non_ect")) {
            policy.drop_non_ect = read_bool(*f, errors_).value_or(true);
        }
        if (policy.kmin_bytes >= policy.kmax_bytes) {
            errors_.add(ecn->mark, ecn->path, "ecn kmin must be below kmax");
        }
        if (enabled) node.ecn = policy;
    }
    auto buckets = map.get("buckets");
    auto sparse = map.get("sparse_boost");
    if (node.kind == NodeKind::fq) {
        if (buckets) {
            auto value = read_unsigned(*buckets, 1, 1U << 20, errors_);
            if (value && !is_power_of_two(*value)) {
                errors_.add(buckets->mark, buckets->path,
                            "must be a power of two, got " + std::to_string(*value));
            } else if (value) {
                node.fq_buckets = static_cast<uint32_t>(*value);
            }
        }
        if (sparse) node.fq_sparse_boost = read_bool(*sparse, errors_).value_or(true);
    } else {
        if (buckets) errors_.add(buckets->mark, buckets->path, "buckets only applies to fq leaves");
        if (sparse)
            errors_.add(sparse->mark, sparse->path, "sparse_boost only applies to fq leaves");
    }
}

// Every class enters each tree exactly once. "Missing" is only reported for an otherwise valid
// tree: a misspelled class on a leaf already says what is wrong.
void PolicyLoader::check_tree_classes(const RawTree& tree, const Field& field) {
    std::vector<const RawNode*> served_by(class_names_.size(), nullptr);
    std::vector<const RawNode*> pending{&tree.root};
    while (!pending.empty()) {
        const RawNode* raw = pending.back();
        pending.pop_back();
        if (raw->node.class_index) {
            const size_t cls = *raw->node.class_index;
            if (served_by[cls]) {
                errors_.add(raw->field.mark, join_path(raw->field.path, "class"),
                            "class '" + class_names_[cls] + "' already enters the tree at '" +
                                served_by[cls]->node.name + "'");
            } else {
                served_by[cls] = raw;
            }
        }
        for (auto child = raw->children.rbegin(); child != raw->children.rend(); ++child) {
            pending.push_back(&*child);
        }
    }
    for (size_t cls = 0; cls < served_by.size(); ++cls) {
        if (tree.valid && !served_by[cls] && !class_names_[cls].empty()) {
            errors_.add(field.mark, field.path,
                        "class '" + class_names_[cls] + "' has no leaf in this tree");
        }
    }
}

void PolicyLoader::build_egress_trees(const std::optional<Field>& default_tree_field,
                                      const std::vector<std::optional<Field>>& port_tree_fields) {
    std::optional<RawTree> default_tree;
    if (default_tree_field) default_tree = read_tree(*default_tree_field);
    std::vector<std::optional<RawTree>> port_trees(port_tree_fields.size());
    for (size_t i = 0; i < port_tree_fields.size(); ++i) {
        if (port_tree_fields[i]) port_trees[i] = read_tree(*port_tree_fields[i]);
    }
    if (policy_.ports.size() != port_trees.size()) return;  // ports section itself was broken

    std::vector<bool> is_egress(policy_.ports.size(), false);
    for (const ForwardingPolicy& forwarding : policy_.forwarding) {
        is_egress[forwarding.to_port] = true;
    }
    for (size_t port = 0; port < policy_.ports.size(); ++port) {
        if (!is_egress[port]) {
            if (port_tree_fields[port]) {
                errors_.add(port_tree_fields[port]->mark, port_tree_fields[port]->path,
                            "port '" + port_names_[port] +
                                "' is no forwarding destination, its scheduler is never used");
            }
            continue;
        }
        const RawTree* tree = port_trees[port] ? &*port_trees[port]
                              : default_tree   ? &*default_tree
                                               : nullptr;
        if (!tree) {
            const Field& at = egress_reference_.at(port);
            errors_.add(at.mark, at.path,
                        "egress port '" + port_names_[port] +
                            "' needs a scheduling tree: add a top-level 'scheduler' or "
                            "a 'scheduler' on the port");
            continue;
        }
        if (!tree->valid || policy_.ports[port].rate_bits_per_sec == 0) continue;
        EgressTree egress;
        egress.port = port;
        if (resolve_node(tree->root, policy_.ports[port].rate_bits_per_sec, policy_.ports[port],
                         egress.root)) {
            policy_.egress_trees.push_back(std::move(egress));
        }
    }
}

// Places a tree on a port: percentages become bits/s, defaults that depend on the rate apply.
bool PolicyLoader::resolve_node(const RawNode& raw, uint64_t parent_rate, const PortPolicy& port,
                                TreeNode& out) {
    out = raw.node;
    out.rate_bits_per_sec = parent_rate;
    bool ok = true;
    if (raw.shaper_rate) {
        const bool overridden = overrides(port);
        uint64_t rate = raw.shaper_rate->resolve(parent_rate);
        const std::string rate_path = join_path(raw.shaper_field.path, "rate");
        if (rate > parent_rate && overridden) rate = parent_rate;
        if (rate > parent_rate) {
            errors_.add(raw.shaper_field.mark, rate_path,
                        "shaper rate " + rate_text(rate) + " is above the " +
                            rate_text(parent_rate) + " available on port '" + port.name + "'");
            ok = false;
        } else if (rate == 0) {
            errors_.add(raw.shaper_field.mark, rate_path,
                        "shaper rate rounds to 0 on port '" + port.name + "'");
            ok = false;
        }
        const ByteBudget burst = raw.shaper_burst.value_or(
            ByteBudget{.bytes = 0, .ns = kDefaultBurstNs, .is_duration = true});
        const uint64_t frame_bytes = uint64_t{port.mtu} + kFrameOverheadBytes;
        // A bucket smaller than a frame could never release that frame.
        const uint64_t burst_bytes = std::max(
            burst.resolve(rate), raw.shaper_burst && !overridden ? 0 : frame_bytes);
        if (burst_bytes < frame_bytes || burst_bytes > kMaxBurstBytes) {
            errors_.add(raw.shaper_field.mark, join_path(raw.shaper_field.path, "burst"),
                        "burst is " + std::to_string(burst_bytes) + " bytes on port '" + port.name +
                            "'; it must hold one frame (" + std::to_string(frame_bytes) +
                            " bytes) and at most 256MiB");
            ok = false;
        }
        out.shaper = ShaperPolicy{rate, burst_bytes};
        out.rate_bits_per_sec = std::min(rate, parent_rate);
    }
    const uint64_t frame_bytes = port.mtu + kFrameOverheadBytes;
    if (out.is_leaf() && out.limit_bytes < frame_bytes) {
        errors_.add(raw.field.mark, join_path(raw.field.path, "limit.bytes"),
                    "limit of " + std::to_string(out.limit_bytes) +
                        " bytes cannot hold one frame of port '" + port.name + "' (" +
                        std::to_string(frame_bytes) + " bytes)");
        ok = false;
    }
    out.children.clear();
    for (const RawNode& child : raw.children) {
        TreeNode resolved;
        ok = resolve_node(child, out.rate_bits_per_sec, port, resolved) && ok;
        out.children.push_back(std::move(resolved));
    }
    return ok;
}

// ---- classifier -----------------------------------------------------------------------------

void PolicyLoader::read_classifier(const Field& field) {
    const MapFields map(field, {"rules", "heuristics", "flow_table"}, errors_);
    ClassifierPolicy& classifier = policy_.classifier;
    if (!class_names_.empty()) classifier.heuristics.default_class = class_names_.size() - 1;
    if (auto rules = map.get("rules")) {
        const std::vector<Field> items =
            read_sequence(*rules, errors_).value_or(std::vector<Field>{});
        // Same priority would make the winner depend on file order: ask the author to decide.
        std::map<uint32_t, size_t> first_with;
        // Rules are deleted and reported by name: each must be unique, automatic names too.
        std::map<std::string, size_t> first_named;
        std::vector<bool> automatic_name;
        for (const Field& item : items) {
            ClassifierRule rule;
            rule.name = "rule" + std::to_string(classifier.rules.size());
            const RuleFields fields = read_rule(item, rule);
            auto [first, inserted] = first_with.emplace(rule.priority, classifier.rules.size());
            if (!inserted && fields.priority) {
                errors_.add(fields.priority->mark, fields.priority->path,
                            "priority " + std::to_string(rule.priority) +
                                " is already used by rule '" +
                                classifier.rules[first->second].name + "'");
            }
            const bool automatic = !fields.name_given;
            auto [owner, fresh] = first_named.emplace(rule.name, classifier.rules.size());
            // A name already reported as invalid is not a duplicate of anything.
            if (!fresh && (automatic || fields.name)) {
                const std::string other = items[owner->second].path;
                const std::string other_kind =
                    automatic_name[owner->second] ? " (its automatic name)" : "";
                if (automatic) {
                    errors_.add(item.mark, join_path(item.path, "name"),
                                "this unnamed rule's automatic name '" + rule.name +
                                    "' is already used by " + other + other_kind +
                                    "; give it a name");
                } else {
                    errors_.add(fields.name->mark, fields.name->path,
                                "rule name '" + rule.name + "' is already used by " + other +
                                    other_kind);
                }
            }
            automatic_name.push_back(automatic);
            classifier.rules.push_back(std::move(rule));
        }
        std::stable_sort(classifier.rules.begin(), classifier.rules.end(),
                         [](const auto& a, const auto& b) { return a.priority < b.priority; });
    }
    if (auto heuristics = map.get("heuristics")) read_heuristics(*heuristics);
    if (auto flow_table = map.get("flow_table")) {
        const MapFields table(*flow_table, {"capacity", "slots_per_flow", "idle_timeout"},
                              errors_);
        if (auto capacity = table.get("capacity")) {
            if (auto value = read_unsigned(*capacity, 1024, 1U << 24, errors_)) {
                classifier.flow_table.capacity = static_cast<uint32_t>(*value);
            }
        }
        if (auto slots = table.get("slots_per_flow")) {
            const auto value = read_unsigned(*slots, 2, classifier::kMaxSlotsPerFlow, errors_);
            if (value && !std::has_single_bit(*value)) {
                errors_.add(slots->mark, slots->path, "must be a power of two: 2, 4, 8 or 16");
            } else if (value) {
                classifier.flow_table.slots_per_flow = static_cast<uint32_t>(*value);
            }
        }
        if (auto idle = table.get("idle_timeout")) {
            classifier.flow_table.idle_timeout_ns =
                read_duration_ns(*idle, 1'000'000, 3'600'000'000'000ULL, errors_)
                    .value_or(classifier.flow_table.idle_timeout_ns);
        }
    }
}

std::optional<uint8_t> read_protocol(const Field& field, ErrorList& errors) {
    if (!field.node.IsScalar()) {
        errors.add(field.mark, field.path, "expected tcp, udp, icmp, icmpv6 or a number 0-255");
        return std::nullopt;
    }
    static const std::map<std::string, uint8_t> kNames{
        {"tcp", 6}, {"udp", 17}, {"icmp", 1}, {"icmpv6", 58}};
    const auto named = kNames.find(field.node.Scalar());
    if (named != kNames.end()) return named->second;
    if (auto number = parse_unsigned(field.node.Scalar(), 255))
        return static_cast<uint8_t>(*number);
    errors.add(field.mark, field.path,
               "'" + field.node.Scalar() + "' is not tcp, udp, icmp, icmpv6 or a number 0-255");
    return std::nullopt;
}

// Returns the priority and name fields, for the caller's duplicate checks.
PolicyLoader::RuleFields PolicyLoader::read_rule(const Field& field, ClassifierRule& rule) {
    const MapFields map(field, {"name", "priority", "match", "action"}, errors_);
    RuleFields fields;
    if (auto name = map.get("name")) {
        fields.name_given = true;
        if (auto text = read_name(*name, errors_)) {
            rule.name = *text;
            fields.name = *name;
        }
    }
    auto priority = map.require("priority");
    if (priority) {
        auto value = read_unsigned(*priority, 0, 65535, errors_);
        if (!value) priority.reset();  // already reported; keep it out of the duplicate check
        rule.priority = static_cast<uint32_t>(value.value_or(0));
    }
    if (auto match_field = map.require("match")) {
        const MapFields match(
            *match_field,
            {"ingress_port", "vlan", "src", "dst", "proto", "src_port", "dst_port", "dscp", "roce"},
            errors_);
        RuleMatch& m = rule.match;
        if (auto f = match.get("ingress_port")) m.ingress_port = lookup_port(*f);
        if (auto f = match.get("vlan")) {
            if (auto v = read_unsigned(*f, 0, 4095, errors_)) m.vlan = static_cast<uint16_t>(*v);
        }
        if (auto f = match.get("src")) m.src = read_prefix(*f, errors_);
        if (auto f = match.get("dst")) m.dst = read_prefix(*f, errors_);
        if (m.src && m.dst && m.src->version != m.dst->version) {
            errors_.add(match_field->mark, match_field->path, "src and dst mix IPv4 and IPv6");
        }
        if (auto f = match.get("proto")) m.proto = read_protocol(*f, errors_);
        if (auto f = match.get("src_port")) m.src_port = read_range(*f, 65535, errors_);
        if (auto f = match.get("dst_port")) m.dst_port = read_range(*f, 65535, errors_);
        if ((m.src_port || m.dst_port) && m.proto && *m.proto != 6 && *m.proto != 17) {
            errors_.add(match_field->mark, match_field->path,
                        "src_port/dst_port need proto tcp or udp");
        }
        if (auto f = match.get("dscp")) {
            if (auto v = read_unsigned(*f, 0, 63, errors_)) m.dscp = static_cast<uint8_t>(*v);
        }
        if (auto f = match.get("roce")) {
            if (f->node.IsMap()) {  // roce: {qp: 100-200}
                const MapFields roce(*f, {"qp"}, errors_);
                m.roce = true;
                if (auto qp = roce.require("qp")) m.roce_qp = read_range(*qp, 0xFFFFFF, errors_);
            } else {
                m.roce = read_bool(*f, errors_);
            }
            if (m.roce == true && m.proto && *m.proto != 17) {
                errors_.add(f->mark, f->path, "RoCEv2 is carried over UDP; proto conflicts");
            }
        }
    }
    if (auto action_field = map.require("action")) {
        const MapFields action(*action_field, {"class", "job", "dscp"}, errors_);
        if (auto f = action.require("class"))
            rule.action.class_index = lookup_class(*f).value_or(0);
        if (auto f = action.get("job")) {
            if (auto v = read_unsigned(*f, 0, UINT32_MAX, errors_)) {
                rule.action.job = static_cast<uint32_t>(*v);
            }
        }
        if (auto f = action.get("dscp")) {
            if (auto v = read_unsigned(*f, 0, 63, errors_)) {
                rule.action.remark_dscp = static_cast<uint8_t>(*v);
            }
        }
    }
    fields.priority = priority;
    return fields;
}

void PolicyLoader::read_heuristics(const Field& field) {
    const MapFields map(field,
                        {"roce", "dscp_map", "serving", "elephant", "reclass_gap", "default_class",
                         "malformed", "vxlan_inner"},
                        errors_);
    HeuristicsPolicy& h = policy_.classifier.heuristics;
    if (auto f = map.get("roce")) h.roce_class = lookup_class(*f);
    if (auto f = map.get("dscp_map")) {
        if (!f->node.IsMap() && !f->node.IsNull()) {
            errors_.add(f->mark, f->path,
                        "expected a mapping of dscp: class, such as {46: inference}");
        } else if (f->node.IsMap()) {
            // Keys are numbers, not a fixed set: walk the mapping directly.
            for (const auto& pair : f->node) {
                const YAML::Node key_node = pair.first;
                const YAML::Node value_node = pair.second;
                const std::string key = key_node.IsScalar() ? key_node.Scalar() : "";
                const Field key_field{key_node, key_node.Mark(), join_path(f->path, key)};
                auto dscp = read_unsigned(key_field, 0, 63, errors_);
                const YAML::Mark value_mark =
                    value_node.IsNull() ? key_node.Mark() : value_node.Mark();
                auto cls = lookup_class(Field{value_node, value_mark, key_field.path});
                if (!dscp || !cls) continue;
                if (h.dscp_class[*dscp]) {
                    errors_.add(key_field.mark, key_field.path,
                                "dscp " + std::to_string(*dscp) + " is mapped twice");
                }
                h.dscp_class[*dscp] = cls;
            }
        }
    }
    if (auto f = map.get("serving")) {
        const MapFields serving(*f, {"ports", "class"}, errors_);
        ServingPolicy policy;
        if (auto ports = serving.require("ports")) {
            for (const Field& item :
                 read_sequence(*ports, errors_).value_or(std::vector<Field>{})) {
                auto range = read_range(item, 65535, errors_);
                if (range && range->first == 0) {
                    errors_.add(item.mark, item.path, "port 0 is not a serving port");
                } else if (range) {
                    policy.ports.push_back(*range);
                }
            }
            uint64_t total = 0;
            for (const ValueRange& range : policy.ports)
                total += range.last - range.first + 1;
            if (total > kMaxServingPorts) {
                errors_.add(ports->mark, ports->path,
                            "at most " + std::to_string(kMaxServingPorts) +
                                " serving ports in all (each is a table entry)");
            }
        }
        if (auto cls = serving.require("class"))
            policy.class_index = lookup_class(*cls).value_or(0);
        h.serving = policy;
    }
    if (auto f = map.get("reclass_gap")) {
        h.reclass_gap_ns =
            read_duration_ns(*f, 0, 1'000'000'000, errors_).value_or(h.reclass_gap_ns);
    }
    if (auto f = map.get("elephant")) {
        const MapFields elephant(*f, {"bytes", "window", "quiet", "class"}, errors_);
        ElephantPolicy policy;
        if (auto v = elephant.require("bytes")) {
            // Flow entries count window bytes in 32 bits (classifier/flow_table.h).
            policy.bytes =
                read_size_bytes(*v, 1, classifier::kMaxElephantThresholdBytes, errors_)
                    .value_or(0);
        }
        if (auto v = elephant.require("window")) {
            policy.window_ns =
                read_duration_ns(*v, 1'000'000, 3'600'000'000'000ULL, errors_).value_or(0);
        }
        auto quiet = elephant.require("quiet");
        if (quiet) {
            policy.quiet_ns =
                read_duration_ns(*quiet, 1'000, 3'600'000'000'000ULL, errors_).value_or(0);
        }
        if (auto v = elephant.require("class")) policy.class_index = lookup_class(*v).value_or(0);
        // A demoted flow may move back only after its packets in the bulk lane have left.
        if (quiet && policy.quiet_ns != 0 && policy.quiet_ns < h.reclass_gap_ns) {
            errors_.add(quiet->mark, quiet->path,
                        "quiet must be at least reclass_gap (" +
                            std::to_string(h.reclass_gap_ns / 1000) + "us)");
        }
        h.elephant = policy;
    }
    if (auto f = map.get("default_class"))
        h.default_class = lookup_class(*f).value_or(h.default_class);
    if (auto f = map.get("malformed")) {
        if (auto index = read_choice(*f, {"default", "drop"}, errors_)) {
            h.malformed = *index == 0 ? MalformedAction::default_class : MalformedAction::drop;
        }
    }
    if (auto f = map.get("vxlan_inner")) h.vxlan_inner = read_bool(*f, errors_).value_or(false);
}

// ---- control and metrics --------------------------------------------------------------------

void PolicyLoader::read_control(const Field& field) {
    const MapFields map(field, {"socket", "mode"}, errors_);
    if (auto f = map.get("socket")) {
        if (auto path = read_string(*f, errors_)) {
            if (path->front() != '/' || path->size() >= 108) {  // sun_path holds 108 bytes
                errors_.add(f->mark, f->path,
                            "the socket path must be absolute and shorter than 108 bytes");
            } else if (has_control_character(*path)) {
                errors_.add(f->mark, f->path, kControlCharacterReason);
            } else {
                policy_.control.socket_path = *path;
            }
        }
    }
    if (auto f = map.get("mode")) {
        // Octal as in chmod; YAML hands "0660" over as text, so there is no base confusion.
        const std::string text = f->node.IsScalar() ? f->node.Scalar() : "";
        const std::string digits = text.starts_with("0o") ? text.substr(2) : text;
        const bool octal = !digits.empty() && digits.size() <= 4 &&
                           digits.find_first_not_of("01234567") == std::string::npos;
        if (!octal) {
            errors_.add(f->mark, f->path, "expected an octal file mode such as 0660");
        } else {
            policy_.control.socket_mode = static_cast<uint32_t>(std::stoul(digits, nullptr, 8));
            if (policy_.control.socket_mode > 0777) {
                errors_.add(f->mark, f->path, "a socket mode is at most 0777");
            }
        }
    }
}

void PolicyLoader::read_metrics(const Field& field) {
    const MapFields map(field, {"enabled", "listen", "port"}, errors_);
    if (auto f = map.get("enabled"))
        policy_.metrics.enabled = read_bool(*f, errors_).value_or(true);
    if (auto f = map.get("listen")) {
        if (auto address = read_string(*f, errors_)) {
            std::array<uint8_t, 16> buffer{};
            if (has_control_character(*address)) {
                errors_.add(f->mark, f->path, kControlCharacterReason);
            } else if (inet_pton(AF_INET, address->c_str(), buffer.data()) != 1 &&
                inet_pton(AF_INET6, address->c_str(), buffer.data()) != 1) {
                errors_.add(f->mark, f->path, "'" + *address + "' is not an IPv4 or IPv6 address");
            } else {
                policy_.metrics.listen_address = *address;
            }
        }
    }
    if (auto f = map.get("port")) {
        if (auto port = read_unsigned(*f, 1, 65535, errors_)) {
            policy_.metrics.port = static_cast<uint16_t>(*port);
        }
    }
}

}  // namespace

std::optional<size_t> Policy::find_port(std::string_view name) const {
    for (size_t i = 0; i < ports.size(); ++i) {
        if (ports[i].name == name) return i;
    }
    return std::nullopt;
}

std::optional<size_t> Policy::find_class(std::string_view name) const {
    for (size_t i = 0; i < classes.size(); ++i) {
        if (classes[i].name == name) return i;
    }
    return std::nullopt;
}

const EgressTree* Policy::tree_for_port(size_t port) const {
    for (const EgressTree& tree : egress_trees) {
        if (tree.port == port) return &tree;
    }
    return nullptr;
}

PolicyResult parse_policy(std::string_view text, const std::string& filename,
                          const PortRateOverride& override) {
    return PolicyLoader(filename, override).load(text);
}

PolicyResult load_policy(const std::string& path, const PortRateOverride& override) {
    auto refuse = [&](std::string reason) {
        return PolicyResult{nullptr, {PolicyError{.file = path,
                                                  .line = 0,
                                                  .column = 0,
                                                  .key_path = "",
                                                  .reason = std::move(reason)}}};
    };
    const std::string not_regular =
        "not a regular file (FIFOs, devices and directories are refused)";
    const std::string too_large = "larger than " + std::to_string(kMaxPolicyFileBytes >> 20) +
                                  " MiB, the most a policy file may hold";
    // stat first, so a FIFO or device is never opened (opening one can block or have effects).
    struct stat info {};
    if (stat(path.c_str(), &info) != 0) return refuse("cannot read the file");
    if (!S_ISREG(info.st_mode)) return refuse(not_regular);
    if (static_cast<uint64_t>(info.st_size) > kMaxPolicyFileBytes) return refuse(too_large);
    // Non-blocking and checked again: the path may have been swapped for a FIFO meanwhile.
    const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return refuse("cannot read the file");
    std::string text;
    bool regular = fstat(fd, &info) == 0 && S_ISREG(info.st_mode);
    bool read_ok = regular;
    // Read at most one byte past the bound: a file growing while read is still refused.
    char buffer[64 * 1024];
    while (read_ok && text.size() <= kMaxPolicyFileBytes) {
        const ssize_t got = read(fd, buffer, sizeof buffer);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) read_ok = false;
        if (got <= 0) break;
        text.append(buffer, static_cast<size_t>(got));
    }
    close(fd);
    if (!regular) return refuse(not_regular);
    if (!read_ok) return refuse("cannot read the file");
    if (text.size() > kMaxPolicyFileBytes) return refuse(too_large);
    return parse_policy(text, path, override);
}

}  // namespace twinlane::control
