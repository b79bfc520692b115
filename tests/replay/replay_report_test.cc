// ReplayReport: exact percentiles (radix-sorted latencies) and the backlogged accounting
// (settled per period) against straightforward reference computations.
#include "replay/replay_report.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "replay/virtual_link.h"

namespace twinlane::replay {
namespace {

double nearest_rank_us(std::vector<uint64_t> v, double q) {
    std::sort(v.begin(), v.end());
    const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
    return static_cast<double>(v[std::clamp<size_t>(rank, 1, v.size()) - 1]) / 1e3;
}

TEST(ReplayReport, PercentilesAreExactOverAnyRangeOfLatencies) {
    std::mt19937_64 rng(7);
    for (uint64_t max_latency :
         {uint64_t{1}, uint64_t{2047}, uint64_t{50'000'000}, uint64_t{1} << 40, UINT64_MAX / 4}) {
        ReplayReport report("t", 10'000'000'000ULL, {"a", "b"}, 1, uint64_t{1} << 62);
        std::vector<uint64_t> latencies;
        for (int i = 0; i < 10'001; ++i) {
            const uint64_t latency = rng() % (max_latency + 1);
            latencies.push_back(latency);
            report.on_arrival(0, 100, 1000, 0, 0);
            report.on_departure(0, 100, 1000, 1000 + latency, false, {});
        }
        report.on_finish(0, 2000);
        const LatencySummary s = report.latency(0);
        EXPECT_EQ(s.p50_us, nearest_rank_us(latencies, 0.50)) << max_latency;
        EXPECT_EQ(s.p90_us, nearest_rank_us(latencies, 0.90)) << max_latency;
        EXPECT_EQ(s.p99_us, nearest_rank_us(latencies, 0.99)) << max_latency;
        EXPECT_EQ(s.p999_us, nearest_rank_us(latencies, 0.999)) << max_latency;
        EXPECT_EQ(s.max_us,
                  static_cast<double>(*std::max_element(latencies.begin(), latencies.end())) / 1e3);
    }
}

// The reference: every departure credits every backlogged class (itself or the others, and
// with track_shares_by_class() the class that sent it).
TEST(ReplayReport, BackloggedBytesMatchAPassOverTheClassesPerDeparture) {
    for (const bool by_class : {false, true}) {
        std::mt19937_64 rng(11);
        constexpr size_t kClasses = 3;
        ReplayReport report("t", 10'000'000'000ULL, {"a", "b", "c"}, 1, 1'000'000);
        if (by_class) report.track_shares_by_class();
        std::vector<uint64_t> queued(kClasses), own(kClasses), others(kClasses);
        std::vector<std::vector<uint64_t>> sent_by(kClasses, std::vector<uint64_t>(kClasses));
        std::vector<std::vector<uint32_t>> fifo(kClasses);
        uint64_t now = 1000;
        for (int step = 0; step < 20'000; ++step) {
            now += rng() % 500;
            const auto c = static_cast<uint8_t>(rng() % kClasses);
            if (rng() % 2 == 0 || fifo[c].empty()) {
                const auto bytes = static_cast<uint32_t>(60 + rng() % 9000);
                report.on_arrival(c, bytes, now, static_cast<uint32_t>(rng() % 8), 0);
                fifo[c].push_back(bytes);
                ++queued[c];
            } else if (rng() % 8 == 0) {
                report.on_drop(c, "queue_full_packets", now, {});
                fifo[c].erase(fifo[c].begin());
                --queued[c];
            } else {
                const uint32_t bytes = fifo[c].front();
                fifo[c].erase(fifo[c].begin());
                for (size_t i = 0; i < kClasses; ++i) {
                    if (queued[i] == 0) continue;
                    (i == c ? own : others)[i] += wire_bytes(bytes);
                    sent_by[i][c] += wire_bytes(bytes);
                }
                --queued[c];
                report.on_departure(c, bytes, now - 10, now, false, {});
            }
        }
        // Some classes are still backlogged here: their open period counts too.
        report.on_finish(queued[0] + queued[1] + queued[2], now);
        for (size_t i = 0; i < kClasses; ++i) {
            EXPECT_EQ(report.classes()[i].backlogged_wire_bytes, own[i]) << i;
            EXPECT_EQ(report.classes()[i].backlogged_others_wire_bytes, others[i]) << i;
            if (by_class)
                EXPECT_EQ(report.classes()[i].backlogged_class_wire_bytes, sent_by[i]) << i;
            else
                EXPECT_TRUE(report.classes()[i].backlogged_class_wire_bytes.empty()) << i;
        }
    }
}

// A capture spanning 30 days (sparse, merged or with a bad timestamp) keeps a bounded
// throughput series: the interval doubles instead of growing billions of 1 ms slots, and
// every byte stays in the series, in the interval of its departure.
TEST(ReplayReport, ThroughputSeriesStaysBoundedOverLongCaptures) {
    const uint64_t ms = 1'000'000;
    ReplayReport report("t", 10'000'000'000ULL, {"a", "b"}, 1, ms);
    const uint64_t day = 86'400'000 * ms;
    const std::vector<uint64_t> departures = {1 * ms, 2 * ms, 3'600'000 * ms, 30 * day};
    for (size_t i = 0; i < departures.size(); ++i) {
        report.on_arrival(uint8_t(i % 2), 1000, departures[i] - 1000, 0, 0);
        report.on_departure(uint8_t(i % 2), 1000, departures[i] - 1000, departures[i], false, {});
    }
    report.on_finish(0, 30 * day);
    const nlohmann::json j = report.to_json();
    uint64_t bytes = 0;
    double interval_s = 0;
    for (const char* name : {"a", "b"}) {
        const auto& series = j["classes"][name]["throughput_series"];
        interval_s = series["interval_s"].get<double>();
        const auto& bps = series["bps"];
        EXPECT_LE(bps.size(), size_t{1} << 16);
        for (const auto& v : bps)
            bytes += uint64_t(std::llround(v.get<double>() * interval_s / 8));
        // The last departure lands in the interval its time falls in.
        if (std::string(name) == "b") {
            const auto last = uint64_t(double(30 * day - (1 * ms - 1000)) / 1e9 / interval_s);
            EXPECT_EQ(bps.size(), last + 1);
        }
    }
    EXPECT_EQ(bytes, 4000u);
    EXPECT_GT(interval_s, 30.0 * 86'400 / 65'536);  // coarsened from 1 ms
    EXPECT_LT(interval_s, 2 * 30.0 * 86'400 / 65'536);
}

// Fairness needs members backlogged long enough to judge: with none (bulk class idle, or only
// a few small packets) the index is absent, shown as null / "n/a", not 0 ("maximally unfair").
TEST(ReplayReport, FairnessWithoutJudgedMembersIsAbsentNotZero) {
    ReplayReport idle("t", 10'000'000'000ULL, {"a", "bulk"}, 1, 1'000'000);
    const ReplayReport::Ticket small = idle.on_arrival(1, 100, 1000, 7, 0);
    idle.on_departure(1, 100, 1000, 2000, false, small);
    idle.on_finish(0, 3000);
    EXPECT_FALSE(idle.jain_flows().has_value());
    EXPECT_FALSE(idle.jain_jobs().has_value());
    EXPECT_TRUE(idle.to_json()["fairness"]["jain_flows"].is_null());
    EXPECT_NE(format_comparison({&idle}).find("jain(flows) n/a  jain(jobs) n/a"), std::string::npos)
        << format_comparison({&idle});

    // Two flows backlogged together, served alike: judged, and fair.
    ReplayReport busy("t", 10'000'000'000ULL, {"a", "bulk"}, 1, 1'000'000);
    std::vector<ReplayReport::Ticket> tickets;
    for (int i = 0; i < 200; ++i)
        tickets.push_back(busy.on_arrival(1, 1500, 1000, i % 2, 0));
    for (int i = 0; i < 200; ++i)
        busy.on_departure(1, 1500, 1000, 2000 + 1200 * uint64_t(i), false, tickets[size_t(i)]);
    busy.on_finish(0, 300'000);
    ASSERT_TRUE(busy.jain_flows().has_value());
    EXPECT_NEAR(*busy.jain_flows(), 1.0, 1e-3);
    EXPECT_EQ(busy.to_json()["fairness"]["jain_flows"], 1.0);
}

}  // namespace
}  // namespace twinlane::replay
