#include "dataplane/pipeline_counters.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace twinlane::dataplane {
namespace {

TEST(PipelineCounters, SnapshotSumsLcores) {
    auto a = std::make_unique<LcoreCounters>();
    auto b = std::make_unique<LcoreCounters>();
    a->ports[0].rx_packets.add(10);
    a->ports[0].rx_bytes.add(1000);
    b->ports[1].tx_packets.add(7);
    b->drops[static_cast<uint32_t>(DropCause::lane_ring_full)].add(2);
    b->drops[static_cast<uint32_t>(DropCause::sched_codel)].add(1);
    a->lanes[1].latency_max_ns.raise_to(50);
    b->lanes[1].latency_max_ns.raise_to(70);
    b->lanes[1].latency_max_ns.raise_to(60);  // a max never goes down
    const CounterSnapshot s = snapshot({a.get(), b.get()}, 2, 3);
    EXPECT_EQ(s.rx_packets(), 10u);
    EXPECT_EQ(s.rx_bytes(), 1000u);
    EXPECT_EQ(s.tx_packets(), 7u);
    EXPECT_EQ(s.dropped(), 3u);
    EXPECT_EQ(s.lanes[1].latency_max_ns, 70u);
    // The monitor's totals: the same sums, without reading the lanes.
    const CounterSnapshot t = snapshot_totals({a.get(), b.get()}, 2);
    EXPECT_EQ(t.rx_packets(), 10u);
    EXPECT_EQ(t.rx_bytes(), 1000u);
    EXPECT_EQ(t.tx_packets(), 7u);
    EXPECT_EQ(t.dropped(), 3u);
    EXPECT_EQ(t.drops, s.drops);
    EXPECT_TRUE(t.lanes.empty());
}

// Lane 0's RX->TX latencies as an lcore publishes them: `packets` in the bucket of `ns`.
void record(LcoreCounters& c, uint64_t ns, uint64_t packets, uint32_t lane = 0) {
    c.lane_latency[lane][LatencyLayout::bucket_of(ns)].add(packets);
    c.lanes[lane].tx_packets.add(packets);
    c.lanes[lane].latency_sum_ns.add(ns * packets);
    c.lanes[lane].latency_max_ns.raise_to(ns);
}

TEST(PipelineCounters, LatencyPercentilesOverLcores) {
    auto a = std::make_unique<LcoreCounters>();
    auto b = std::make_unique<LcoreCounters>();
    // 1000 packets: 900 at 2 us (lcore a), 95 at 40 us (b), 4 at 300 us (a), 1 at 5 ms (b).
    record(*a, 2'000, 900);
    record(*b, 40'000, 95);
    record(*a, 300'000, 4);
    record(*b, 5'000'000, 1);
    record(*b, 7, 3, 1);  // another lane: not mixed in
    const CounterSnapshot s = snapshot({a.get(), b.get()}, 1, 2);
    const CounterSnapshot::Lane& lane = s.lanes[0];
    // Bucket upper bounds: within 1/16 above the value, never below it.
    const auto near = [](uint64_t reported, uint64_t exact) {
        EXPECT_GE(reported, exact);
        EXPECT_LE(reported, exact + exact / 16);
    };
    near(lane.latency_percentile_ns(kP50Ppm), 2'000);
    near(lane.latency_percentile_ns(900'000), 2'000);   // rank 900: the last at 2 us
    near(lane.latency_percentile_ns(901'000), 40'000);  // rank 901: the first at 40 us
    near(lane.latency_percentile_ns(kP99Ppm), 40'000);  // rank 990 of 995 at <= 40 us
    near(lane.latency_percentile_ns(kP999Ppm), 300'000);
    EXPECT_EQ(lane.latency_percentile_ns(1'000'000), 5'000'000u);  // capped at the exact max
    EXPECT_EQ(lane.latency_max_ns, 5'000'000u);
    EXPECT_EQ(lane.latency_mean_ns(), (900 * 2'000 + 95 * 40'000 + 4 * 300'000 + 5'000'000) / 1000);
    EXPECT_EQ(s.lanes[1].latency_percentile_ns(kP99Ppm), 7u);  // 0-15 ns are exact
}

TEST(PipelineCounters, LatencyPercentilesOfNothingAreZero) {
    auto a = std::make_unique<LcoreCounters>();
    const CounterSnapshot s = snapshot({a.get()}, 1, 1);
    EXPECT_EQ(s.lanes[0].latency_percentile_ns(kP99Ppm), 0u);
    EXPECT_EQ(s.lanes[0].latency_mean_ns(), 0u);
}

// A value beyond the layout's range lands in its last bucket and reads as the exact max.
TEST(PipelineCounters, LatencyBeyondTheLastBucketReadsAsTheMax) {
    auto a = std::make_unique<LcoreCounters>();
    const uint64_t huge = uint64_t{1} << 45;
    record(*a, huge, 1);
    const CounterSnapshot s = snapshot({a.get()}, 1, 1);
    EXPECT_EQ(s.lanes[0].latency_percentile_ns(kP50Ppm), huge);
}

// The fold into the scheduler's log2 layout (sched/counters.h: bucket i holds [2^(i-1), 2^i)
// ns, the last everything above) puts every value where the scheduler would, at every power
// of two and next to it, up to beyond the log-linear layout's last bucket.
TEST(PipelineCounters, Log2FoldPlacesEveryValueAsTheScheduler) {
    std::vector<uint64_t> values = {0, 1, 2, 3, 15, 16, 17, 31, 32, 1'000, 50'000, 1'000'000};
    for (uint32_t e = 1; e < 63; ++e) {
        const uint64_t p = uint64_t{1} << e;
        values.insert(values.end(), {p - 1, p, p + 1, p + p / 2});
    }
    for (const uint64_t v : values) {
        std::array<uint64_t, kLatencyBuckets> buckets{};
        buckets[LatencyLayout::bucket_of(v)] = 3;
        const Log2Histogram folded = log2_histogram(buckets);
        const uint32_t expected = std::min<uint32_t>(static_cast<uint32_t>(std::bit_width(v)),
                                                     sched::kSojournHistogramBuckets - 1);
        for (uint32_t i = 0; i < folded.size(); ++i)
            EXPECT_EQ(folded[i], i == expected ? 3u : 0u) << "value " << v << " bucket " << i;
    }
}

TEST(PipelineCounters, EverySchedReasonHasADistinctCause) {
    for (uint32_t r = 0; r < sched::kDropReasonCount; ++r) {
        const DropCause cause = from_sched(static_cast<sched::DropReason>(r));
        EXPECT_EQ(std::string(to_string(cause)),
                  std::string("sched_") + sched::to_string(static_cast<sched::DropReason>(r)));
    }
}

// A reader on another thread sees monotonically growing, whole values while the owner counts.
TEST(PipelineCounters, ReadableWhileWritten) {
    auto c = std::make_unique<LcoreCounters>();
    std::thread writer([&] {
        for (int i = 0; i < 1'000'000; ++i)
            c->ports[0].tx_packets.add(1);
    });
    uint64_t last = 0;
    while (last < 1'000'000) {
        const uint64_t now = c->ports[0].tx_packets.read();
        ASSERT_GE(now, last);
        last = now;
    }
    writer.join();
}

}  // namespace
}  // namespace twinlane::dataplane
