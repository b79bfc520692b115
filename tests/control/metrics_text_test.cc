// The Prometheus exposition: every line is HELP, TYPE or a sample matching the text format
// 0.0.4 grammar; samples of a family follow its HELP/TYPE; histograms are cumulative with
// _count equal to the +Inf bucket; label values are escaped. Also the same text over HTTP, and
// the HTTP server's bounds on slow, idle and excess clients.
#include "control/metrics_text.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "control/metrics_server.h"
#include "fake_daemon_api.h"

namespace twinlane::control {
namespace {

using testing::FakeDaemonApi;

const std::regex kHelp(R"(^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) .+$)");
const std::regex kType(
    R"(^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$)");
const std::regex kSample(
    R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\\\|\\"|\\n)*")(,[a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\\\|\\"|\\n)*")*\})? (-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?|\+Inf|-Inf|NaN)$)");

struct Sample {
    std::string name;
    std::string labels;
    double value = 0;
};

std::vector<Sample> parse_checked(const std::string& text) {
    std::vector<Sample> samples;
    std::istringstream lines(text);
    std::string line;
    std::string family;  // from the last TYPE line
    std::string type;
    std::set<std::string> seen_families;
    while (std::getline(lines, line)) {
        std::smatch match;
        if (std::regex_match(line, match, kHelp)) {
            EXPECT_TRUE(seen_families.insert(match[1]).second) << "family repeated: " << line;
            continue;
        }
        if (std::regex_match(line, match, kType)) {
            family = match[1];
            type = match[2];
            continue;
        }
        EXPECT_TRUE(std::regex_match(line, match, kSample)) << "bad line: " << line;
        if (match.empty()) continue;
        const std::string name = match[1];
        EXPECT_EQ(name.rfind("twinlane_", 0), 0u) << line;
        // A sample belongs to the family announced just before it.
        if (type == "histogram") {
            EXPECT_TRUE(name == family + "_bucket" || name == family + "_sum" ||
                        name == family + "_count")
                << line;
        } else {
            EXPECT_EQ(name, family) << line;
        }
        samples.push_back({name, match[2], std::stod(match[7])});
    }
    return samples;
}

TEST(MetricsText, EveryLineMatchesTheExpositionGrammar) {
    FakeDaemonApi api;
    const std::string text = prometheus_text(api);
    ASSERT_FALSE(text.empty());
    EXPECT_EQ(text.back(), '\n');
    const auto samples = parse_checked(text);
    EXPECT_GT(samples.size(), 50u);
}

TEST(MetricsText, CountersCarryTheApiNumbers) {
    FakeDaemonApi api;
    const std::string text = prometheus_text(api);
    EXPECT_NE(text.find("twinlane_port_receive_packets_total{port=\"west\"} 10\n"),
              std::string::npos);
    EXPECT_NE(text.find("twinlane_port_receive_drops_total{port=\"west\"} 1\n"), std::string::npos);
    EXPECT_NE(text.find("twinlane_port_transmit_bits_per_second{port=\"west\"} 7200\n"),
              std::string::npos);
    EXPECT_NE(text.find("twinlane_port_link_bound_seconds_total{port=\"west\"} 0.25\n"),
              std::string::npos)
        << text;
    EXPECT_NE(
        text.find(
            "twinlane_class_drops_total{class=\"inference\",reason=\"queue_full_packets\"} 15\n"),
        std::string::npos)
        << text;
    EXPECT_NE(text.find("twinlane_class_ecn_marks_total{class=\"training\",marker=\"red\"} 7\n"),
              std::string::npos);
    EXPECT_NE(text.find("twinlane_policy_epoch 3\n"), std::string::npos);
    // Label values are escaped: node name weird"name\ .
    EXPECT_NE(text.find(R"(queue="weird\"name\\")"), std::string::npos) << text;
    EXPECT_NE(text.find("# TYPE twinlane_class_sojourn_seconds histogram\n"), std::string::npos);
}

TEST(MetricsText, HistogramBucketsAreCumulative) {
    FakeDaemonApi api;
    const auto samples = parse_checked(prometheus_text(api));
    std::map<std::string, std::vector<const Sample*>> buckets;  // by class label
    std::map<std::string, double> counts;
    std::map<std::string, double> sums;
    for (const Sample& s : samples) {
        std::smatch class_label;
        if (!std::regex_search(s.labels, class_label, std::regex(R"re(class="([^"]*)")re")))
            continue;
        const std::string cls = class_label[1];
        if (s.name == "twinlane_class_sojourn_seconds_bucket") buckets[cls].push_back(&s);
        if (s.name == "twinlane_class_sojourn_seconds_count") counts[cls] = s.value;
        if (s.name == "twinlane_class_sojourn_seconds_sum") sums[cls] = s.value;
    }
    ASSERT_EQ(buckets.size(), 2u);
    for (const auto& [cls, list] : buckets) {
        ASSERT_EQ(list.size(), 40u);  // 40 log2 buckets, the last one unbounded: +Inf
        for (size_t i = 1; i < list.size(); ++i)
            EXPECT_GE(list[i]->value, list[i - 1]->value);
        EXPECT_NE(list.back()->labels.find("le=\"+Inf\""), std::string::npos);
        EXPECT_EQ(list.back()->value, counts[cls]);
        EXPECT_EQ(counts[cls], 100);  // 1 + 60 + 39
        EXPECT_DOUBLE_EQ(sums[cls], 0.123456789);
        // Bucket 10 holds [512, 1024) ns: le = 1023 ns, cumulative 61.
        EXPECT_NE(list[10]->labels.find("le=\"0.000001023\""), std::string::npos)
            << list[10]->labels;
        EXPECT_EQ(list[10]->value, 61);
        EXPECT_EQ(list[0]->value, 1);
    }
}

TEST(MetricsText, QdiscStyleQueueSeries) {
    FakeDaemonApi api;
    const std::string text = prometheus_text(api);
    // Sent = dequeued (qdisc "packets"/"bytes"), admitted separately.
    EXPECT_NE(text.find("twinlane_class_packets_total{class=\"inference\"} 100\n"),
              std::string::npos);
    EXPECT_NE(text.find("twinlane_class_enqueued_bytes_total{class=\"training\"} 120000\n"),
              std::string::npos);
    EXPECT_NE(text.find("twinlane_class_dropped_bytes_total{class=\"inference\",reason=\"queue_"
                        "full_packets\"} 15000\n"),
              std::string::npos);
    // Overlimits: 7 RED marks + 2 CoDel marks + 5 CoDel drops (+ 0 RED early drops).
    EXPECT_NE(text.find("twinlane_class_overlimits_total{class=\"training\"} 14\n"),
              std::string::npos);
    EXPECT_NE(text.find("twinlane_class_backlog_packets{class=\"training\"} 0\n"),
              std::string::npos);
    // A leaf has its class label; an inner node has none (not class="").
    EXPECT_NE(text.find("twinlane_queue_packets_total{port=\"east\",queue=\"weird\\\"name\\\\\","
                        "kind=\"fifo\",class=\"inference\"} 100\n"),
              std::string::npos)
        << text;
    EXPECT_NE(
        text.find("twinlane_queue_backlog_bytes{port=\"east\",queue=\"root\",kind=\"strict\"} 0\n"),
        std::string::npos);
    EXPECT_EQ(text.find("class=\"\""), std::string::npos);
    // The old names are gone.
    EXPECT_EQ(text.find("_depth_packets"), std::string::npos);
    EXPECT_EQ(text.find("_packets_out_total"), std::string::npos);
}

// A daemon's status: ports with their links, change counters, the applied epoch, the
// classifiers' counters.
class DaemonStatusApi : public FakeDaemonApi {
  public:
    // A control lcore (no loop), a scheduler lcore with every field, and an RX lcore whose
    // CPU times /proc could not give.
    static nlohmann::json lcores() {
        nlohmann::json passes = nlohmann::json::array();
        for (int i = 0; i < 40; ++i)
            passes.push_back(i == 11 ? 7 : i == 21 ? 3 : 0);  // 7 in [1024, 2048), 3 above 1 ms
        return nlohmann::json::array({{{"lcore", 0}, {"role", "control"}, {"ports", {}}},
                                      {{"lcore", 1},
                                       {"role", "scheduler"},
                                       {"ports", {"west"}},
                                       {"busy_passes", 10},
                                       {"pass_p50_ns", 2047},
                                       {"pass_p99_ns", 1'500'000},
                                       {"pass_max_ns", 1'500'000},
                                       {"pass_sum_ns", 4'510'000},
                                       {"pass_log2_histogram", passes},
                                       {"poll_gap_max_ns", 4'000'000},
                                       {"run_ns", 2'000'000'000ULL},
                                       {"runqueue_wait_ns", 5'700'000},
                                       {"involuntary_switches", 10}},
                                      {{"lcore", 2},
                                       {"role", "rx"},
                                       {"ports", {"west"}},
                                       {"busy_passes", 0},
                                       {"pass_p50_ns", 0},
                                       {"pass_p99_ns", 0},
                                       {"pass_max_ns", 0},
                                       {"pass_sum_ns", 0},
                                       {"pass_log2_histogram", std::vector<int>(40, 0)},
                                       {"poll_gap_max_ns", 0}}});
    }
    static nlohmann::json classifier() {
        classifier::ClassifierCounters c;
        c.malformed[size_t(classifier::MalformedReason::vlan_truncated)] = 11;
        c.flow_inserts = 6;
        c.flow_overflows = 2;
        c.fragments_unmatched = 3;
        c.elephants_detected = 1;
        c.reclassifications = 9;
        return classifier_counters_to_json(c);
    }
    ApiResult status() override {
        return ApiResult::success(
            {{"version", "9.8.7"},
             {"uptime_ns", 1'500'000'000ULL},
             {"policy_epoch", 5},
             {"applied_epoch", 4},
             {"policy_changes",
              {{"load", {{"applied", 2}, {"refused", 1}}},
               {"class_set", {{"applied", 3}, {"refused", 0}}}}},
             {"policy_last_load_ok", false},
             {"reloads", {{"attempts", 3}, {"failures", 1}, {"last_error", "bad"}}},
             {"classifier", classifier()},
             {"lcores", lcores()},
             {"ports", nlohmann::json::array({{{"name", "west"},
                                               {"link_up", true},
                                               {"speed_mbps", 25000},
                                               {"rate_bits_per_sec", 10'000'000'000ULL}},
                                              {{"name", "east"},
                                               {"link_up", false},
                                               {"speed_mbps", 0},
                                               {"rate_bits_per_sec", 10'000'000'000ULL}}})}});
    }
};

TEST(MetricsText, StatusSeriesFromTheDaemon) {
    DaemonStatusApi api;
    const std::string text = prometheus_text(api);
    parse_checked(text);
    EXPECT_NE(text.find("twinlane_build_info{version=\"9.8.7\"} 1\n"), std::string::npos);
    EXPECT_NE(text.find("twinlane_uptime_seconds 1.5\n"), std::string::npos) << text;
    EXPECT_NE(text.find("twinlane_policy_applied_epoch 4\n"), std::string::npos);
    EXPECT_NE(text.find("twinlane_policy_changes_total{change=\"load\",result=\"refused\"} 1\n"),
              std::string::npos);
    EXPECT_NE(
        text.find("twinlane_policy_changes_total{change=\"class_set\",result=\"applied\"} 3\n"),
        std::string::npos);
    EXPECT_NE(text.find("twinlane_policy_last_load_successful 0\n"), std::string::npos);
    EXPECT_NE(text.find("twinlane_policy_reloads_total 3\n"), std::string::npos);
    EXPECT_NE(text.find("twinlane_policy_reload_failures_total 1\n"), std::string::npos);
    EXPECT_NE(text.find("twinlane_port_up{port=\"west\"} 1\n"), std::string::npos);
    EXPECT_NE(text.find("twinlane_port_up{port=\"east\"} 0\n"), std::string::npos);
    EXPECT_NE(text.find("twinlane_port_speed_bits_per_second{port=\"west\"} 25000000000\n"),
              std::string::npos);
    EXPECT_NE(text.find("twinlane_port_policy_rate_bits_per_second{port=\"east\"} 10000000000\n"),
              std::string::npos);
    // Every malformed reason is a series from the start (0 until seen), so rate() works.
    EXPECT_NE(text.find("twinlane_malformed_packets_total{reason=\"vlan_truncated\"} 11\n"),
              std::string::npos);
    EXPECT_NE(text.find("twinlane_malformed_packets_total{reason=\"l4_truncated\"} 0\n"),
              std::string::npos);
    EXPECT_EQ(text.find("reason=\"none\""), std::string::npos);
    EXPECT_NE(text.find("twinlane_classifier_flows_inserted_total 6\n"), std::string::npos);
    EXPECT_NE(text.find("twinlane_classifier_flow_table_overflows_total 2\n"), std::string::npos);
    EXPECT_NE(text.find("twinlane_classifier_fragments_total{result=\"followed\"} 0\n"),
              std::string::npos);
    EXPECT_NE(text.find("twinlane_classifier_fragments_total{result=\"unmatched\"} 3\n"),
              std::string::npos);
    EXPECT_NE(text.find("twinlane_classifier_elephants_total 1\n"), std::string::npos);
    EXPECT_NE(text.find("twinlane_classifier_reclassifications_total 9\n"), std::string::npos);
}

TEST(MetricsText, LcoreSeriesForEveryForwardingLcore) {
    DaemonStatusApi api;
    const std::string text = prometheus_text(api);
    const auto samples = parse_checked(text);
    const std::string sched = R"(lcore="1",role="scheduler")";
    EXPECT_NE(
        text.find("twinlane_lcore_busy_pass_seconds_bucket{" + sched + ",le=\"0.000001023\"} 0\n"),
        std::string::npos)
        << text;
    EXPECT_NE(
        text.find("twinlane_lcore_busy_pass_seconds_bucket{" + sched + ",le=\"0.000002047\"} 7\n"),
        std::string::npos);
    EXPECT_NE(text.find("twinlane_lcore_busy_pass_seconds_bucket{" + sched + ",le=\"+Inf\"} 10\n"),
              std::string::npos);
    EXPECT_NE(text.find("twinlane_lcore_busy_pass_seconds_sum{" + sched + "} 0.00451\n"),
              std::string::npos);
    EXPECT_NE(text.find("twinlane_lcore_busy_pass_seconds_count{" + sched + "} 10\n"),
              std::string::npos);
    EXPECT_NE(text.find("twinlane_lcore_busy_pass_max_seconds{" + sched + "} 0.0015\n"),
              std::string::npos);
    EXPECT_NE(text.find("twinlane_lcore_poll_gap_max_seconds{" + sched + "} 0.004\n"),
              std::string::npos);
    EXPECT_NE(text.find("twinlane_lcore_run_seconds_total{" + sched + "} 2\n"), std::string::npos);
    EXPECT_NE(text.find("twinlane_lcore_runqueue_wait_seconds_total{" + sched + "} 0.0057\n"),
              std::string::npos);
    EXPECT_NE(text.find("twinlane_lcore_preemptions_total{" + sched + "} 10\n"), std::string::npos);
    // The RX lcore has its loop series but no CPU series (/proc could not say); the control
    // lcore runs no loop and has none.
    EXPECT_NE(text.find(R"(twinlane_lcore_busy_pass_seconds_count{lcore="2",role="rx"} 0)"),
              std::string::npos);
    EXPECT_EQ(text.find(R"(twinlane_lcore_runqueue_wait_seconds_total{lcore="2")"),
              std::string::npos);
    EXPECT_EQ(text.find(R"(role="control")"), std::string::npos);
    // Without lcores in status (FakeDaemonApi), no lcore series at all.
    FakeDaemonApi plain;
    EXPECT_EQ(prometheus_text(plain).find("twinlane_lcore_"), std::string::npos);
}

// Classes whose pipeline latency carries the daemon's histogram (inference) or not (training:
// what PolicyStore offline gives).
class PipelineLatencyApi : public FakeDaemonApi {
  public:
    ApiResult stats(StatsScope scope) override {
        ApiResult result = FakeDaemonApi::stats(scope);
        if (scope != StatsScope::classes) return result;
        nlohmann::json classes = result.value();
        std::array<uint64_t, sched::kSojournHistogramBuckets> histogram{};
        histogram[15] = 90;  // [16.4, 32.8) us
        histogram[17] = 9;   // [65.5, 131) us
        histogram[39] = 1;   // 2^38 ns (4.6 minutes) and above: counted in +Inf only
        for (nlohmann::json& cls : classes) {
            cls["latency"] = {
                {"packets", 100}, {"p99_ns", 100'000}, {"max_ns", 300'000'000'000ULL}};
            if (cls["name"] == "inference") {
                cls["latency"]["sum_ns"] = 302'000'000'000ULL;
                cls["latency"]["log2_histogram"] = histogram;
            }
        }
        return ApiResult::success(std::move(classes));
    }
};

TEST(MetricsText, PipelineLatencyHistogramWhereTheDaemonKeepsOne) {
    PipelineLatencyApi api;
    const std::string text = prometheus_text(api);
    const auto samples = parse_checked(text);
    std::vector<const Sample*> buckets;
    for (const Sample& s : samples) {
        if (s.name == "twinlane_class_pipeline_latency_seconds_bucket") buckets.push_back(&s);
    }
    ASSERT_EQ(buckets.size(), 40u) << text;  // inference only
    for (const Sample* b : buckets)
        EXPECT_NE(b->labels.find(R"(class="inference")"), std::string::npos);
    const std::string cls = R"(class="inference")";
    EXPECT_NE(text.find("twinlane_class_pipeline_latency_seconds_bucket{" + cls +
                        ",le=\"0.000032767\"} 90\n"),
              std::string::npos);
    EXPECT_NE(text.find("twinlane_class_pipeline_latency_seconds_bucket{" + cls +
                        ",le=\"274.877906943\"} 99\n"),
              std::string::npos);
    EXPECT_NE(
        text.find("twinlane_class_pipeline_latency_seconds_bucket{" + cls + ",le=\"+Inf\"} 100\n"),
        std::string::npos);
    EXPECT_NE(text.find("twinlane_class_pipeline_latency_seconds_sum{" + cls + "} 302\n"),
              std::string::npos);
    EXPECT_NE(text.find("twinlane_class_pipeline_latency_max_seconds{" + cls + "} 300\n"),
              std::string::npos);
    EXPECT_EQ(text.find(R"(twinlane_class_pipeline_latency_max_seconds{class="training"})"),
              std::string::npos);
}

// A port with PFC: one entry per priority the daemon saw activity on.
class PfcApi : public FakeDaemonApi {
  public:
    ApiResult stats(StatsScope scope) override {
        if (scope != StatsScope::ports) return FakeDaemonApi::stats(scope);
        return ApiResult::success(nlohmann::json::array(
            {{{"name", "uplink"},
              {"port_id", 0},
              {"rx_packets", 1},
              {"tx_packets", 1},
              {"pfc", nlohmann::json::array({{{"priority", 3},
                                              {"tx_pause_frames", 12},
                                              {"tx_pause_duration_ns", 2'500'000'000ULL},
                                              {"rx_pause_frames", 4},
                                              {"rx_pause_duration_ns", 1'000'000},
                                              {"storms", 1},
                                              {"lossless_queued_bytes", 65536}}})}}}));
    }
};

TEST(MetricsText, PfcSeriesPerPortAndPriority) {
    PfcApi api;
    const std::string text = prometheus_text(api);
    parse_checked(text);
    EXPECT_NE(text.find("twinlane_port_pfc_pause_frames_total{port=\"uplink\",priority=\"3\","
                        "direction=\"transmit\"} 12\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("twinlane_port_pfc_pause_frames_total{port=\"uplink\",priority=\"3\","
                        "direction=\"receive\"} 4\n"),
              std::string::npos);
    EXPECT_NE(text.find("twinlane_port_pfc_paused_seconds_total{port=\"uplink\",priority=\"3\","
                        "direction=\"transmit\"} 2.5\n"),
              std::string::npos);
    EXPECT_NE(text.find("twinlane_port_pfc_paused_seconds_total{port=\"uplink\",priority=\"3\","
                        "direction=\"receive\"} 0.001\n"),
              std::string::npos);
    EXPECT_NE(text.find("twinlane_port_pfc_storms_total{port=\"uplink\",priority=\"3\"} 1\n"),
              std::string::npos);
    EXPECT_NE(
        text.find(
            "twinlane_port_pfc_lossless_backlog_bytes{port=\"uplink\",priority=\"3\"} 65536\n"),
        std::string::npos);
    // Without PFC entries (FakeDaemonApi's port) there are no PFC series.
    FakeDaemonApi plain;
    EXPECT_EQ(prometheus_text(plain).find("twinlane_port_pfc_"), std::string::npos);
}

TEST(MetricsText, WhatTheApiDoesNotSayIsNotExported) {
    FakeDaemonApi api;  // status without applied_epoch, change counters or port links
    const std::string text = prometheus_text(api);
    EXPECT_EQ(text.find("twinlane_policy_applied_epoch"), std::string::npos);
    EXPECT_EQ(text.find("twinlane_policy_changes_total"), std::string::npos);
    EXPECT_EQ(text.find("twinlane_policy_last_load_successful"), std::string::npos);
    EXPECT_EQ(text.find("twinlane_policy_reloads_total"), std::string::npos);
    EXPECT_EQ(text.find("twinlane_port_up"), std::string::npos);
}

class FailingApi : public FakeDaemonApi {
  public:
    ApiResult stats(StatsScope) override { return ApiResult::failure("not now"); }
};

TEST(MetricsText, AFailingSectionIsReportedNotFatal) {
    FailingApi api;
    const std::string text = prometheus_text(api);
    parse_checked(text);
    EXPECT_NE(text.find("twinlane_scrape_error{section=\"classes\"} 1\n"), std::string::npos);
    EXPECT_NE(text.find("twinlane_scrape_error{section=\"status\"} 0\n"), std::string::npos);
}

// A TCP client of the server under test with a deadline on every step (never blocks
// forever): connect, send bytes, read the response until the server closes.
class TcpClient {
  public:
    explicit TcpClient(uint16_t port) {
        fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_port = htons(port);
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
            close(fd_);
            fd_ = -1;
        }
    }
    ~TcpClient() {
        if (fd_ >= 0) close(fd_);
    }
    TcpClient(const TcpClient&) = delete;
    TcpClient& operator=(const TcpClient&) = delete;
    bool connected() const { return fd_ >= 0; }

    bool send_all(const std::string& bytes) {
        size_t sent = 0;
        while (sent < bytes.size()) {
            const ssize_t n = send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
            if (n <= 0) return false;
            sent += static_cast<size_t>(n);
        }
        return true;
    }

    // Everything the server sends until it closes, or nullopt if it has not closed by then.
    std::optional<std::string> read_until_closed(std::chrono::milliseconds timeout) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        std::string received;
        while (true) {
            const auto left = std::chrono::ceil<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0) return std::nullopt;
            pollfd fd{fd_, POLLIN, 0};
            if (poll(&fd, 1, static_cast<int>(left.count())) <= 0) continue;
            char buffer[65536];
            const ssize_t n = recv(fd_, buffer, sizeof buffer, 0);
            if (n <= 0) return received;  // closed (or reset: nothing more comes either way)
            received.append(buffer, static_cast<size_t>(n));
        }
    }

    // Whether the server closed the connection within `timeout` (EOF or reset).
    bool closed_within(std::chrono::milliseconds timeout) {
        return read_until_closed(timeout).has_value();
    }

  private:
    int fd_ = -1;
};

struct HttpResponse {
    int status = 0;
    std::string head;
    std::string body;
};

std::optional<HttpResponse> parse_response(const std::string& text) {
    const size_t end = text.find("\r\n\r\n");
    if (text.rfind("HTTP/1.1 ", 0) != 0 || end == std::string::npos) return std::nullopt;
    return HttpResponse{std::stoi(text.substr(9, 3)), text.substr(0, end), text.substr(end + 4)};
}

std::optional<HttpResponse> request(uint16_t port, const std::string& bytes,
                                    std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    TcpClient client(port);
    if (!client.connected() || !client.send_all(bytes)) return std::nullopt;
    const auto text = client.read_until_closed(timeout);
    if (!text) return std::nullopt;
    return parse_response(*text);
}

std::string get(const std::string& target) {
    return "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
}

TEST(MetricsServer, ServesTheTextOnLoopback) {
    FakeDaemonApi api;
    MetricsServer server(api, "127.0.0.1", 0);
    auto error = server.start();
    ASSERT_FALSE(error) << *error;
    ASSERT_NE(server.bound_port(), 0);
    const auto response = request(server.bound_port(), get("/metrics"));
    ASSERT_TRUE(response);
    EXPECT_EQ(response->status, 200);
    EXPECT_NE(response->head.find(std::string("Content-Type: ") + kPrometheusContentType),
              std::string::npos)
        << response->head;
    EXPECT_NE(response->head.find("Content-Length: " + std::to_string(response->body.size())),
              std::string::npos)
        << response->head;
    parse_checked(response->body);
    const auto missing = request(server.bound_port(), get("/other"));
    ASSERT_TRUE(missing);
    EXPECT_EQ(missing->status, 404);
    server.stop();
}

TEST(MetricsServer, StopsRightAfterStart) {
    FakeDaemonApi api;
    MetricsServer server(api, "127.0.0.1", 0);
    ASSERT_FALSE(server.start());
    server.stop();
}

// The audit's denial of service: every scrape waited behind two clients trickling header
// lines, or behind 200 connections that never sent anything (cpp-httplib, 2 workers, 5 s read
// timeout each). A scrape must answer at once while all of them stay connected.
TEST(MetricsServer, ScrapesAnswerPromptlyWhileSlowAndIdleClientsAreConnected) {
    FakeDaemonApi api;
    MetricsServer server(api, "127.0.0.1", 0);
    ASSERT_FALSE(server.start());
    const uint16_t port = server.bound_port();
    std::vector<std::unique_ptr<TcpClient>> slow;
    for (int i = 0; i < 2; ++i) {
        slow.push_back(std::make_unique<TcpClient>(port));
        ASSERT_TRUE(slow.back()->connected());
        ASSERT_TRUE(slow.back()->send_all("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n"));
    }
    auto started = std::chrono::steady_clock::now();
    auto response = request(port, get("/metrics"), std::chrono::seconds(2));
    ASSERT_TRUE(response) << "no scrape within 2 s behind two slow clients";
    EXPECT_EQ(response->status, 200);
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(1));
    // A header line each, as a trickling client sends them: still no wait.
    for (auto& client : slow)
        ASSERT_TRUE(client->send_all("X-Slow: 1\r\n"));

    std::vector<std::unique_ptr<TcpClient>> idle;
    for (int i = 0; i < 200; ++i) {
        idle.push_back(std::make_unique<TcpClient>(port));
        ASSERT_TRUE(idle.back()->connected()) << "connection " << i;
    }
    for (int scrape = 0; scrape < 3; ++scrape) {
        started = std::chrono::steady_clock::now();
        response = request(port, get("/metrics"), std::chrono::seconds(2));
        ASSERT_TRUE(response) << "no scrape within 2 s behind 200 idle connections";
        EXPECT_EQ(response->status, 200);
        parse_checked(response->body);
        EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(1));
    }
    server.stop();
}

// However slowly a client trickles its request, it is closed once request_timeout has passed
// since it connected (a header line every 100 ms here, under a 500 ms bound).
TEST(MetricsServer, ARequestHeadThatTricklesIsCutOffAtTheRequestTimeout) {
    FakeDaemonApi api;
    MetricsServerOptions options;
    options.request_timeout = std::chrono::milliseconds(500);
    MetricsServer server(api, "127.0.0.1", 0, options);
    ASSERT_FALSE(server.start());
    TcpClient client(server.bound_port());
    ASSERT_TRUE(client.send_all("GET /metrics HTTP/1.1\r\n"));
    const auto started = std::chrono::steady_clock::now();
    bool closed = false;
    for (int line = 0; line < 30 && !closed; ++line) {
        client.send_all("X-Line: " + std::to_string(line) + "\r\n");
        closed = client.closed_within(std::chrono::milliseconds(100));
    }
    ASSERT_TRUE(closed) << "a trickling client kept its connection for 3 s";
    const auto held = std::chrono::steady_clock::now() - started;
    EXPECT_GE(held, std::chrono::milliseconds(300));
    EXPECT_LT(held, std::chrono::milliseconds(2000));
    server.stop();
}

// At the connection limit the oldest connection without a complete request gives way.
TEST(MetricsServer, AtTheConnectionLimitTheOldestIdleConnectionGivesWay) {
    FakeDaemonApi api;
    MetricsServerOptions options;
    options.max_connections = 4;
    MetricsServer server(api, "127.0.0.1", 0, options);
    ASSERT_FALSE(server.start());
    std::vector<std::unique_ptr<TcpClient>> idle;
    for (int i = 0; i < 4; ++i)
        idle.push_back(std::make_unique<TcpClient>(server.bound_port()));
    // Give the server the four before the scrape (accepted in order).
    for (auto& client : idle)
        ASSERT_TRUE(client->send_all("G"));
    const auto response = request(server.bound_port(), get("/metrics"), std::chrono::seconds(2));
    ASSERT_TRUE(response);
    EXPECT_EQ(response->status, 200);
    EXPECT_TRUE(idle.front()->closed_within(std::chrono::seconds(2)));
    EXPECT_FALSE(idle.back()->closed_within(std::chrono::milliseconds(100)));
    server.stop();
}

TEST(MetricsServer, MethodsBodiesAndBrokenRequestsGetTheirStatus) {
    FakeDaemonApi api;
    MetricsServer server(api, "127.0.0.1", 0);
    ASSERT_FALSE(server.start());
    const uint16_t port = server.bound_port();
    auto status_of = [&](const std::string& bytes) {
        const auto response = request(port, bytes);
        return response ? response->status : -1;
    };
    const auto head =
        request(port, "HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    ASSERT_TRUE(head);
    EXPECT_EQ(head->status, 200);
    EXPECT_TRUE(head->body.empty());
    EXPECT_EQ(status_of("GET /metrics?x=1 HTTP/1.0\n\n"), 200);  // bare LF lines, a query
    EXPECT_EQ(status_of("POST /metrics HTTP/1.1\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"),
              405);
    EXPECT_EQ(
        status_of("GET /metrics HTTP/1.1\r\nConnection: close\r\nContent-Length: 5\r\n\r\nhello"),
        413);
    EXPECT_EQ(status_of("GET /metrics HTTP/1.1\r\nConnection: close\r\nTransfer-Encoding: "
                        "chunked\r\n\r\n0\r\n\r\n"),
              413);
    EXPECT_EQ(status_of("garbage\r\n\r\n"), 400);
    EXPECT_EQ(status_of("GET /metrics SPDY/3\r\n\r\n"), 400);
    EXPECT_EQ(status_of("GET /metrics HTTP/1.1\r\nX: " + std::string(9000, 'a') + "\r\n\r\n"), 431);
    server.stop();
}

}  // namespace
}  // namespace twinlane::control
