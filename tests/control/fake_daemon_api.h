// An in-memory DaemonApi for protocol, metrics and client tests: canned results with known
// numbers, and a record of the calls it received. Thread-safe enough for one server thread
// plus the test thread reading `calls` after the server stopped or replied.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "control/daemon_api.h"
#include "control/stats_json.h"

namespace twinlane::control::testing {

class FakeDaemonApi : public DaemonApi {
  public:
    ApiResult status() override {
        record("status");
        return ApiResult::success({{"version", "test"},
                                   {"uptime_ns", 2'500'000'000ULL},
                                   {"policy_source", "fake.yaml"},
                                   {"policy_epoch", 3},
                                   {"log_level", "info"},
                                   {"ports", nlohmann::json::array()},
                                   {"lcores", nlohmann::json::array()}});
    }
    ApiResult stats(StatsScope scope) override {
        record("stats");
        switch (scope) {
            case StatsScope::ports:
                return ApiResult::success(
                    nlohmann::json::array({{{"name", "west"},
                                            {"port_id", 0},
                                            {"rx_packets", 10},
                                            {"rx_bytes", 1000},
                                            {"tx_packets", 9},
                                            {"tx_bytes", 900},
                                            {"rx_dropped", 1},
                                            {"tx_dropped", 0},
                                            {"rx_bits_per_sec", 8000},
                                            {"tx_bits_per_sec", 7200},
                                            {"tx_link_bound_ns", 250000000}}}));
            case StatsScope::classes: {
                nlohmann::json classes = nlohmann::json::array();
                for (const char* name : {"inference", "training"}) {
                    classes.push_back({{"name", name},
                                       {"class_id", classes.size()},
                                       {"classified_packets", 100},
                                       {"classified_bytes", 10'000},
                                       {"malformed_drops", 0},
                                       {"queue", queue_counters_to_json(counters())}});
                }
                return ApiResult::success(std::move(classes));
            }
            case StatsScope::queues:
                return ApiResult::success(
                    nlohmann::json::array({{{"port", "east"},
                                            {"node", "root"},
                                            {"parent", ""},
                                            {"kind", "strict"},
                                            {"leaf", false},
                                            {"class", nullptr},
                                            {"counters", queue_counters_to_json(counters())}},
                                           {{"port", "east"},
                                            {"node", "weird\"name\\"},
                                            {"parent", "root"},
                                            {"kind", "fifo"},
                                            {"leaf", true},
                                            {"class", "inference"},
                                            {"counters", queue_counters_to_json(counters())}}}));
        }
        return ApiResult::failure("scope");
    }
    ApiResult flows_top(size_t count) override {
        record("flows " + std::to_string(count));
        return ApiResult::success(nlohmann::json::array());
    }
    ApiResult rules_list() override {
        record("rules.list");
        return ApiResult::success(nlohmann::json::array());
    }
    ApiResult rules_add(std::string_view rule_text) override {
        record("rules.add " + std::string(rule_text));
        return ApiResult::failure("rule rejected", {"classifier.rules[0].priority: bad"});
    }
    ApiResult rules_delete(std::string_view name) override {
        record("rules.delete " + std::string(name));
        return ApiResult::success({{"policy_epoch", 4}});
    }
    ApiResult class_set(std::string_view cls, std::string_view key,
                        std::string_view value) override {
        record("class.set " + std::string(cls) + " " + std::string(key) + " " + std::string(value));
        return ApiResult::success({{"policy_epoch", 4}});
    }
    ApiResult policy_load(const std::string& path) override {
        record("policy.load " + path);
        return ApiResult::success({{"policy_epoch", 4}, {"policy_source", path}});
    }
    ApiResult policy_show() override {
        record("policy.show");
        return ApiResult::success({{"document", {{"version", 1}}}});
    }
    ApiResult log_level() override {
        record("log.get");
        return ApiResult::success({{"log_level", "info"}});
    }
    ApiResult set_log_level(std::string_view level) override {
        record("log.set " + std::string(level));
        return ApiResult::success({{"log_level", std::string(level)}});
    }

    static sched::QueueCounters counters() {
        sched::QueueCounters c;
        c.packets_in = 120;
        c.bytes_in = 120'000;
        c.packets_out = 100;
        c.bytes_out = 100'000;
        c.drop_packets[0] = 15;
        c.drop_packets[4] = 5;
        c.drop_bytes[0] = 15'000;
        c.ecn_marked_red = 7;
        c.ecn_marked_codel = 2;
        c.depth_packets = 0;
        c.sojourn_sum_ns = 123'456'789;
        c.sojourn_log2_histogram[0] = 1;
        c.sojourn_log2_histogram[10] = 60;
        c.sojourn_log2_histogram[20] = 39;
        return c;
    }

    std::vector<std::string> calls() {
        std::lock_guard lock(mutex_);
        return calls_;
    }

  private:
    void record(std::string call) {
        std::lock_guard lock(mutex_);
        calls_.push_back(std::move(call));
    }
    std::mutex mutex_;
    std::vector<std::string> calls_;
};

}  // namespace twinlane::control::testing
