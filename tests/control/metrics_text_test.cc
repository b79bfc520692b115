// The Prometheus exposition: every line is HELP, TYPE or a sample matching the text format
// 0.0.4 grammar; samples of a family follow its HELP/TYPE; histograms are cumulative with
// _count equal to the +Inf bucket; label values are escaped. Also the same text over HTTP.
#include <gtest/gtest.h>
#include <httplib.h>

#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "control/metrics_server.h"
#include "control/metrics_text.h"
#include "fake_daemon_api.h"

namespace twinlane::control {
namespace {

using testing::FakeDaemonApi;

const std::regex kHelp(R"(^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) .+$)");
const std::regex kType(R"(^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$)");
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
    EXPECT_NE(text.find("twinlane_port_rx_packets_total{port=\"west\"} 10\n"), std::string::npos);
    EXPECT_NE(text.find("twinlane_class_drops_total{class=\"inference\",reason=\"queue_full_packets\"} 15\n"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("twinlane_class_ecn_marks_total{class=\"training\",marker=\"red\"} 7\n"),
              std::string::npos);
    EXPECT_NE(text.find("twinlane_policy_epoch 3\n"), std::string::npos);
    // Label values are escaped: node name weird"name\ .
    EXPECT_NE(text.find(R"(node="weird\"name\\")"), std::string::npos) << text;
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
        if (!std::regex_search(s.labels, class_label, std::regex(R"re(class="([^"]*)")re"))) continue;
        const std::string cls = class_label[1];
        if (s.name == "twinlane_class_sojourn_seconds_bucket") buckets[cls].push_back(&s);
        if (s.name == "twinlane_class_sojourn_seconds_count") counts[cls] = s.value;
        if (s.name == "twinlane_class_sojourn_seconds_sum") sums[cls] = s.value;
    }
    ASSERT_EQ(buckets.size(), 2u);
    for (const auto& [cls, list] : buckets) {
        ASSERT_EQ(list.size(), 41u);  // 40 log2 buckets + +Inf
        for (size_t i = 1; i < list.size(); ++i) EXPECT_GE(list[i]->value, list[i - 1]->value);
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

TEST(MetricsServer, ServesTheTextOnLoopback) {
    FakeDaemonApi api;
    MetricsServer server(api, "127.0.0.1", 0);
    auto error = server.start();
    ASSERT_FALSE(error) << *error;
    ASSERT_NE(server.bound_port(), 0);
    httplib::Client client("127.0.0.1", server.bound_port());
    client.set_connection_timeout(5, 0);
    client.set_read_timeout(5, 0);
    auto response = client.Get("/metrics");
    ASSERT_TRUE(response);
    EXPECT_EQ(response->status, 200);
    EXPECT_EQ(response->get_header_value("Content-Type"), kPrometheusContentType);
    parse_checked(response->body);
    auto missing = client.Get("/other");
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

}  // namespace
}  // namespace twinlane::control
