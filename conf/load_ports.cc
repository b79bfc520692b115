// The ports, classes and forwarding sections: what everything else refers to by name.
#include <algorithm>
#include <bit>

#include "admission/lanes.h"
#include "conf/device_name.h"
#include "conf/mbuf_demand.h"
#include "conf/policy_loader.h"
#include "conf/policy_values.h"
#include "sched/tree_spec.h"

namespace twinlane::conf {

// ---- ports ----------------------------------------------------------------------------------

void PolicyLoader::read_ports(const Field& field) {
    auto items = read_sequence(field, errors_);
    if (!items) return;
    if (items->empty()) errors_.add(field.mark, field.path, "at least one port is needed");
    if (items->size() > kMaxPorts) {
        errors_.add(field.mark, field.path,
                    "at most " + std::to_string(kMaxPorts) + " ports (the dataplane's counters)");
    }
    DeviceOwners device_owners;
    for (const Field& item : *items)
        read_port(item, device_owners);
}

void PolicyLoader::read_port(const Field& item, DeviceOwners& device_owners) {
    const MapFields map(
        item,
        {"name", "device", "rate", "rx_queues", "tx_queues", "rx_descriptors", "tx_descriptors",
         "mtu", "tx_budget", "burst_time", "mempool", "scheduler", "pfc"},
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
    if (auto device_field = map.require("device"))
        read_port_device(*device_field, port.name, device_owners, port.device);
    if (auto rate_field = map.require("rate")) {
        if (auto rate = read_rate(*rate_field, false, errors_)) {
            if (rate->bits_per_sec > sched::kMaxRateBitsPerSec) {
                static_assert(sched::kMaxRateBitsPerSec == 10'000'000'000'000ULL);
                errors_.add(rate_field->mark, rate_field->path,
                            "a port rate is at most 10T (10 Tbps)");
            }
            port.rate_bits_per_sec = rate->bits_per_sec;
            if (overrides(port)) port.rate_bits_per_sec = override_.rate_bits_per_sec;
        }
    }
    auto read_u16 = [&](std::string_view key, uint64_t min, uint64_t max, uint16_t& out,
                        bool power_of_two) {
        auto f = map.get(key);
        if (!f) return;
        auto value = read_unsigned(*f, min, max, errors_);
        if (!value) return;
        if (power_of_two && !std::has_single_bit(*value)) {
            errors_.add(f->mark, f->path, "must be a power of two, got " + std::to_string(*value));
            return;
        }
        out = static_cast<uint16_t>(*value);
    };
    read_u16("rx_queues", 1, 64, port.rx_queues, false);
    read_u16("tx_queues", 1, 64, port.tx_queues, false);
    read_u16("rx_descriptors", 64, 16384, port.rx_descriptors, true);
    read_u16("tx_descriptors", 64, 16384, port.tx_descriptors, true);
    read_u16("mtu", 68, 9600, port.mtu, false);
    read_port_budget(map, item, port);
    if (auto f = map.get("burst_time")) {
        port.burst_time_ns =
            read_duration_ns(*f, 0, kMaxBurstTimeNs, errors_).value_or(port.burst_time_ns);
    }
    if (auto mempool_field = map.get("mempool")) {
        if (auto mbufs = read_unsigned(*mempool_field, 1023, kMaxMempoolMbufs, errors_)) {
            port.mempool_mbufs = static_cast<uint32_t>(*mbufs);
            port.mempool_given = true;
            mempool_fields_.emplace(policy_.ports.size(), *mempool_field);
        }
    }
    if (auto pfc = map.get("pfc")) {
        pfc_fields_.emplace(policy_.ports.size(), *pfc);
        read_port_pfc(*pfc, port.pfc);
    }
    port_items_.emplace(policy_.ports.size(), item);
    policy_.ports.push_back(std::move(port));
}

// After the trees: a port's share of the mbuf pool must hold what its descriptor rings and its
// queues can (conf/mbuf_demand.h), or a backlog in one class stops RX for all of them.
void PolicyLoader::resolve_mempools() {
    for (size_t i = 0; i < policy_.ports.size(); ++i) {
        PortPolicy& port = policy_.ports[i];
        const PortMbufDemand demand = port_mbuf_demand(policy_, i);
        const std::string needs = std::to_string(demand.total()) + " mbufs (" +
                                  std::to_string(demand.descriptors) +
                                  " for the descriptor rings, " + std::to_string(demand.queues) +
                                  " for its scheduler's leaves full of frames up to " +
                                  std::to_string(largest_frame_bytes(policy_)) + " B in " +
                                  std::to_string(kMbufDataRoomBytes) + " B mbufs)";
        if (port.mempool_given) {
            if (port.mempool_mbufs < demand.total() && mempool_fields_.count(i)) {
                const Field& at = mempool_fields_.at(i);
                errors_.add(at.mark, at.path,
                            "mempool of " + std::to_string(port.mempool_mbufs) +
                                " mbufs is less than this port can hold: " + needs +
                                "; a full pool stops RX for every class. Raise it, lower the "
                                "leaves' limits, or leave it out (sized to fit)");
            }
        } else if (demand.total() > kMaxMempoolMbufs && port_items_.count(i)) {
            const Field& at = port_items_.at(i);
            errors_.add(at.mark, at.path,
                        "this port can hold " + needs + ", more than a pool's " +
                            std::to_string(kMaxMempoolMbufs) + ": lower the leaves' limits");
        } else {
            port.mempool_mbufs = auto_mempool_mbufs(demand);
        }
    }
}

void PolicyLoader::read_port_device(const Field& field, const std::string& port_name,
                                    DeviceOwners& device_owners, std::string& device) {
    auto text = read_string(field, errors_);
    if (!text) return;
    device = *text;
    if (has_control_character(*text)) {
        errors_.add(field.mark, field.path, kControlCharacterReason);
        return;
    }
    const std::optional<DeviceName> parsed = parse_device(*text);
    if (!parsed) {
        errors_.add(field.mark, field.path,
                    "'" + *text +
                        "' is neither a PCI address (0000:3b:00.0; function 0-7) nor a DPDK "
                        "vdev (net_null0, net_pcap0,rx_pcap=in.pcap, net_af_xdp0,iface=eth1)");
        return;
    }
    if (auto owner = device_owners.find(parsed->ethdev_name); owner != device_owners.end()) {
        const DeviceOwner& first = owner->second;
        errors_.add(field.mark, field.path,
                    "device '" + parsed->head + "' is already used by port '" + first.port + "'" +
                        (first.spelling != parsed->head ? " (as '" + first.spelling + "')" : ""));
        return;
    }
    device_owners.emplace(parsed->ethdev_name, DeviceOwner{port_name, parsed->head});
}

// The most bytes handed to the NIC and not yet on the wire: a link time or bytes, at least a
// frame. The default's link time is rounded up to a frame (20 us of 100M or of 1G with jumbo
// frames is less); a budget the policy states must hold one itself.
void PolicyLoader::read_port_budget(const MapFields& map, const Field& item, PortPolicy& port) {
    const uint64_t frame_bytes = port.max_frame_bytes();
    ByteBudget budget{.bytes = 0, .ns = kDefaultTxBudgetNs, .is_duration = true};
    auto budget_field = map.get("tx_budget");
    if (budget_field) {
        if (auto parsed = read_byte_budget(*budget_field, errors_)) budget = *parsed;
    }
    port.tx_budget_bytes = budget.resolve(port.rate_bits_per_sec);
    if (!budget_field || overrides(port)) {
        port.tx_budget_bytes = std::max(port.tx_budget_bytes, frame_bytes);
    }
    const Field& at = budget_field ? *budget_field : item;
    if (port.rate_bits_per_sec != 0 && port.tx_budget_bytes < frame_bytes) {
        errors_.add(at.mark, join_path(item.path, "tx_budget"),
                    "tx_budget is " + std::to_string(port.tx_budget_bytes) +
                        " bytes at this port's rate, less than one frame (" +
                        std::to_string(frame_bytes) + " bytes)");
    } else if (port.tx_budget_bytes > sched::kMaxBurstBytes) {
        // The budget is the root shaper's bucket (conf/compile.h).
        errors_.add(at.mark, join_path(item.path, "tx_budget"),
                    "tx_budget is " + std::to_string(port.tx_budget_bytes) +
                        " bytes at this port's rate, more than the " +
                        std::to_string(sched::kMaxBurstBytes >> 20) +
                        " MiB a scheduler bucket holds (a few microseconds of link time is "
                        "what it is for)");
    }
}

// ---- classes --------------------------------------------------------------------------------

void PolicyLoader::read_classes(const Field& field) {
    auto items = read_sequence(field, errors_);
    if (!items) return;
    if (items->empty()) errors_.add(field.mark, field.path, "at least one class is needed");
    if (items->size() > admission::kMaxLanes) {
        errors_.add(field.mark, field.path,
                    "at most " + std::to_string(admission::kMaxLanes) +
                        " classes (one ring each per port)");
    }
    for (const Field& item : *items) {
        std::optional<std::string> name;
        std::optional<SloFields> slo_field;
        Field name_field = item;
        std::optional<LosslessPolicy> lossless;
        if (item.node.IsScalar()) {  // "- inference" is short for "- name: inference"
            name = read_name(item, errors_);
        } else {
            const MapFields map(item, {"name", "description", "lossless", "slo"}, errors_);
            if (auto f = map.require("name")) {
                name_field = *f;
                name = read_name(*f, errors_);
            }
            if (auto description = map.get("description")) read_string(*description, errors_);
            if (auto f = map.get("lossless")) {
                lossless_fields_.emplace(policy_.classes.size(), *f);
                lossless = read_lossless(*f);
            }
            if (auto slo = map.get("slo")) slo_field = SloFields{*slo, {}, {}};
        }
        if (name &&
            std::find(class_names_.begin(), class_names_.end(), *name) != class_names_.end()) {
            errors_.add(name_field.mark, name_field.path, "duplicate class name '" + *name + "'");
        }
        class_names_.push_back(name.value_or(""));
        policy_.classes.push_back(ClassPolicy{name.value_or(""), lossless, std::nullopt});
        slo_fields_.push_back(std::move(slo_field));
    }
    read_class_slos();  // a downgrade names a class: once every name is known
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

}  // namespace twinlane::conf
