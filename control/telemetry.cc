#include "control/telemetry.h"

#include <rte_telemetry.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <exception>

namespace twinlane::control {
namespace {

using nlohmann::json;

// The one piece of mutable global state: rte_telemetry's C callbacks have no context argument.
std::atomic<DaemonApi*> g_telemetry_api{nullptr};

// DPDK telemetry strings are bounded (RTE_TEL_MAX_STRING_LEN, 128 with the terminator).
std::string bounded(std::string text) {
    if (text.size() >= RTE_TEL_MAX_STRING_LEN) text.resize(RTE_TEL_MAX_STRING_LEN - 1);
    return text;
}

// A dict key: DPDK refuses (and the entry silently vanishes) any name with a character other
// than a letter, a digit, '_' or '/'; policy names may hold '-', which becomes '_'.
std::string dict_key(std::string text) {
    for (char& c : text) {
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '/') c = '_';
    }
    return bounded(std::move(text));
}

void add_scalar(rte_tel_data* dict, const std::string& name, const json& value) {
    const std::string key = dict_key(name);
    if (value.is_string()) {
        rte_tel_data_add_dict_string(dict, key.c_str(), bounded(value.get<std::string>()).c_str());
    } else if (value.is_number_unsigned()) {
        rte_tel_data_add_dict_u64(dict, key.c_str(), value.get<uint64_t>());
    } else if (value.is_number_integer()) {
        const int64_t number = value.get<int64_t>();
        if (number >= 0)
            rte_tel_data_add_dict_u64(dict, key.c_str(), static_cast<uint64_t>(number));
        else
            rte_tel_data_add_dict_int(dict, key.c_str(), static_cast<int>(number));
    } else if (value.is_boolean()) {
        rte_tel_data_add_dict_u64(dict, key.c_str(), value.get<bool>() ? 1 : 0);
    } else if (value.is_number_float()) {
        rte_tel_data_add_dict_u64(dict, key.c_str(), static_cast<uint64_t>(value.get<double>()));
    }
}

// One dict of scalars; nested objects are flattened one level ("queue_packets_in": DPDK names allow
// no dots).
void fill_flat_dict(rte_tel_data* dict, const json& object) {
    for (const auto& [key, value] : object.items()) {
        if (value.is_object()) {
            for (const auto& [inner_key, inner] : value.items()) {
                if (!inner.is_object() && !inner.is_array()) {
                    add_scalar(dict, key + "_" + inner_key, inner);
                }
            }
        } else if (!value.is_array()) {
            add_scalar(dict, key, value);
        }
    }
}

int answer_error(rte_tel_data* data, const std::string& message) {
    rte_tel_data_start_dict(data);
    rte_tel_data_add_dict_string(data, "error", bounded(message).c_str());
    return 0;
}

// A list of named objects becomes a dict of name -> dict container.
int answer_named_list(rte_tel_data* data, const ApiResult& result) {
    if (!result.ok()) return answer_error(data, result.error());
    rte_tel_data_start_dict(data);
    if (!result.value().is_array()) return 0;
    for (const json& item : result.value()) {
        if (!item.is_object() || !item.contains("name") || !item["name"].is_string()) continue;
        rte_tel_data* container = rte_tel_data_alloc();
        if (container == nullptr) return -ENOMEM;
        rte_tel_data_start_dict(container);
        fill_flat_dict(container, item);
        // keep = 0: DPDK frees the container with `data`.
        if (rte_tel_data_add_dict_container(data, dict_key(item["name"].get<std::string>()).c_str(),
                                            container, 0) != 0) {
            rte_tel_data_free(container);
        }
    }
    return 0;
}

template <typename Handler>
int guarded(rte_tel_data* data, Handler&& handler) {
    DaemonApi* api = g_telemetry_api.load();
    if (api == nullptr) return answer_error(data, "twinlane control API not available");
    try {
        return handler(*api);
    } catch (const std::exception& e) {
        return answer_error(data, std::string("internal error: ") + e.what());
    } catch (...) {
        return answer_error(data, "internal error");
    }
}

int status_command(const char*, const char*, rte_tel_data* data) {
    return guarded(data, [&](DaemonApi& api) {
        const ApiResult result = api.status();
        if (!result.ok()) return answer_error(data, result.error());
        rte_tel_data_start_dict(data);
        fill_flat_dict(data, result.value());
        return 0;
    });
}

// status()'s lcores keyed by lcore id: role, loop passes and CPU taken (arrays left out).
int lcores_command(const char*, const char*, rte_tel_data* data) {
    return guarded(data, [&](DaemonApi& api) {
        const ApiResult result = api.status();
        if (!result.ok()) return answer_error(data, result.error());
        rte_tel_data_start_dict(data);
        const json& lcores = result.value().contains("lcores") ? result.value()["lcores"] : json();
        if (!lcores.is_array()) return 0;
        for (const json& lcore : lcores) {
            if (!lcore.is_object() || !lcore.contains("lcore")) continue;
            rte_tel_data* container = rte_tel_data_alloc();
            if (container == nullptr) return -ENOMEM;
            rte_tel_data_start_dict(container);
            fill_flat_dict(container, lcore);
            if (rte_tel_data_add_dict_container(data, dict_key(lcore["lcore"].dump()).c_str(),
                                                container, 0) != 0) {
                rte_tel_data_free(container);
            }
        }
        return 0;
    });
}

int class_stats_command(const char*, const char*, rte_tel_data* data) {
    return guarded(data, [&](DaemonApi& api) {
        return answer_named_list(data, api.stats(StatsScope::classes));
    });
}

// The entries of each item's `list` array (a class's slo, a port's pfc), one dict each, keyed
// by key_of(item, entry), flattened one level like the rest.
template <typename KeyOf>
int answer_entries(rte_tel_data* data, const ApiResult& result, const char* list, KeyOf&& key_of) {
    if (!result.ok()) return answer_error(data, result.error());
    rte_tel_data_start_dict(data);
    if (!result.value().is_array()) return 0;
    for (const json& item : result.value()) {
        if (!item.is_object() || !item.contains(list) || !item[list].is_array()) continue;
        for (const json& entry : item[list]) {
            if (!entry.is_object()) continue;
            rte_tel_data* container = rte_tel_data_alloc();
            if (container == nullptr) return -ENOMEM;
            rte_tel_data_start_dict(container);
            fill_flat_dict(container, entry);
            const std::string key = dict_key(key_of(item, entry));
            if (rte_tel_data_add_dict_container(data, key.c_str(), container, 0) != 0)
                rte_tel_data_free(container);
        }
    }
    return 0;
}

// Every SLO, keyed "CLASS/PORT", its objects flattened one level ("objective_target_ns").
int slo_stats_command(const char*, const char*, rte_tel_data* data) {
    return guarded(data, [&](DaemonApi& api) {
        return answer_entries(data, api.stats(StatsScope::classes), "slo",
                              [](const json& cls, const json& slo) {
                                  return cls.value("name", "") + "/" + slo.value("port", "");
                              });
    });
}

// Priority flow control per port and priority that has paused or been paused, keyed
// "PORT/PRIORITY" ("east/3").
int pfc_stats_command(const char*, const char*, rte_tel_data* data) {
    return guarded(data, [&](DaemonApi& api) {
        return answer_entries(
            data, api.stats(StatsScope::ports), "pfc", [](const json& port, const json& pfc) {
                const json& priority = pfc.contains("priority") ? pfc["priority"] : json();
                return port.value("name", "") + "/" +
                       (priority.is_number() ? priority.dump() : "?");
            });
    });
}

int port_stats_command(const char*, const char*, rte_tel_data* data) {
    return guarded(data, [&](DaemonApi& api) {
        return answer_named_list(data, api.stats(StatsScope::ports));
    });
}

}  // namespace

std::string register_telemetry(DaemonApi& api) {
    const bool first = g_telemetry_api.exchange(&api) == nullptr;
    if (!first) return "";
    struct Command {
        const char* name;
        telemetry_cb callback;
        const char* help;
    };
    const Command commands[] = {
        {"/twinlane/status", status_command,
         "twinlane version, uptime, policy source and epoch. Takes no parameters"},
        {"/twinlane/lcores", lcores_command,
         "twinlane lcores: role, busy loop passes, CPU taken by other threads. Takes no "
         "parameters"},
        {"/twinlane/stats/classes", class_stats_command,
         "twinlane per-class classifier and queue counters. Takes no parameters"},
        {"/twinlane/stats/slo", slo_stats_command,
         "twinlane latency SLOs per class and egress port. Takes no parameters"},
        {"/twinlane/stats/ports", port_stats_command,
         "twinlane per-port packet, byte and drop counters. Takes no parameters"},
        {"/twinlane/stats/pfc", pfc_stats_command,
         "twinlane priority flow control per port and priority. Takes no parameters"},
    };
    for (const Command& command : commands) {
        const int rc = rte_telemetry_register_cmd(command.name, command.callback, command.help);
        // -EINVAL also covers "already registered" (a previous register/unregister cycle).
        if (rc != 0 && rc != -EINVAL) {
            return std::string("rte_telemetry_register_cmd ") + command.name + ": " +
                   std::strerror(-rc);
        }
    }
    return "";
}

void unregister_telemetry() {
    g_telemetry_api.store(nullptr);
}

}  // namespace twinlane::control
