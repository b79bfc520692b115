// The read path a control thread uses while an lcore runs the scheduler (Scheduler::
// node_counters / leaf_counters): the owning thread enqueues and dequeues (fq with CoDel, RED
// marking, tail drops, flow moves) while another thread reads the counters of every node
// without stopping it. Each read value is whole and, for a counter, never goes backwards;
// once the writer has stopped, a read equals the owner's. Built with ThreadSanitizer
// (tools/test.sh, SANITIZE=1) it also proves the reads race-free.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "sched/scheduler.h"
#include "sched_test_util.h"

namespace twinlane::sched {
namespace {

using testing::make_leaf;
using testing::make_node;

TreeSpec tree() {
    TreeSpec spec;
    spec.nodes.push_back(make_node("root", NodeKind::strict));
    spec.nodes.back().shaper = {10'000'000'000ULL, 64'000};
    spec.nodes.push_back(make_leaf("fast", NodeKind::fq, "root", 64));
    spec.nodes.back().priority = 0;
    spec.nodes.back().codel = {true, 20'000, 200'000, true};
    spec.nodes.push_back(make_node("bulk", NodeKind::drr, "root"));
    spec.nodes.back().priority = 1;
    spec.nodes.push_back(make_leaf("a", NodeKind::fq, "bulk", 128, 128 * 1500));
    spec.nodes.back().red = {true, 20'000, 60'000, 0.5, false};
    spec.nodes.push_back(make_leaf("b", NodeKind::fifo, "bulk", 32));
    return spec;
}

TEST(SchedulerCountersRead, WhileTheOwnerRuns) {
    std::unique_ptr<Scheduler> s = testing::build_or_fail(tree());
    ASSERT_TRUE(s);
    const uint32_t nodes = s->node_count();
    std::atomic<bool> done{false};
    std::vector<QueueCounters> last(nodes);
    uint64_t reads = 0;
    std::thread reader([&] {
        while (!done.load(std::memory_order_acquire)) {
            for (uint32_t n = 0; n < nodes; ++n) {
                const QueueCounters c = s->node_counters(n);
                EXPECT_GE(c.packets_in, last[n].packets_in);
                EXPECT_GE(c.packets_out, last[n].packets_out);
                EXPECT_GE(c.dropped_packets(), last[n].dropped_packets());
                EXPECT_GE(c.bytes_out, last[n].bytes_out);
                last[n] = c;
            }
            ++reads;
        }
    });

    uint64_t now = 0, id = 0;
    std::vector<Packet> in(32);
    Packet out[32];
    DroppedPacket drops[64];
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    for (int round = 0; round < 200'000 && std::chrono::steady_clock::now() < deadline; ++round) {
        for (uint32_t i = 0; i < in.size(); ++i) {
            const uint16_t leaf = static_cast<uint16_t>((id * 7 + i) % 3);
            in[i] =
                testing::make_packet(leaf, 200 + (id % 1300), static_cast<uint32_t>(id % 17), id);
            ++id;
        }
        s->enqueue(in.data(), static_cast<uint32_t>(in.size()), now, drops);
        if (round % 64 == 0) s->move_flow(1, 2, static_cast<uint32_t>(round % 17));
        now += 5'000;
        s->dequeue(out, 32, now, drops, 64);
    }
    done.store(true, std::memory_order_release);
    reader.join();
    EXPECT_GT(reads, 0u);
    // The writer has stopped: a read is exact.
    const QueueCounters root = s->node_counters(0);
    EXPECT_EQ(root.depth_packets, s->queued_packets());
    // Every packet a leaf took in left it, was dropped from its queue, moved out, or is there.
    EXPECT_EQ(root.packets_in, root.packets_out + root.drops(DropReason::codel) +
                                   root.drops(DropReason::fq_overflow) + root.migrated_out_packets +
                                   root.depth_packets);
    EXPECT_GT(root.packets_out, 0u);
}

}  // namespace
}  // namespace twinlane::sched
