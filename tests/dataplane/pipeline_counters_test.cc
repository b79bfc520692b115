#include "dataplane/pipeline_counters.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>

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
