#include "dataplane/thread_cpu.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace twinlane::dataplane {
namespace {

constexpr const char* kStatus =
    "Name:\ttwinlane\nState:\tR (running)\nvoluntary_ctxt_switches:\t7\n"
    "nonvoluntary_ctxt_switches:\t42\n";

TEST(ThreadCpuTest, ParsesSchedstatAndStatus) {
    const std::optional<ThreadCpu> cpu = parse_thread_cpu("5233020 840019 13\n", kStatus);
    ASSERT_TRUE(cpu);
    EXPECT_EQ(cpu->run_ns, 5233020u);
    EXPECT_EQ(cpu->runqueue_wait_ns, 840019u);
    // The voluntary line, which also ends in "ctxt_switches:", is not taken for it.
    EXPECT_EQ(cpu->involuntary_switches, 42u);
}

TEST(ThreadCpuTest, RefusesTextWithoutItsNumbers) {
    EXPECT_FALSE(parse_thread_cpu("", kStatus));
    EXPECT_FALSE(parse_thread_cpu("5233020\n", kStatus));
    EXPECT_FALSE(parse_thread_cpu("5233020 x 1\n", kStatus));
    EXPECT_FALSE(parse_thread_cpu("1 2 3\n", "Name:\tx\nvoluntary_ctxt_switches:\t7\n"));
    EXPECT_FALSE(parse_thread_cpu("1 2 3\n", "Name:\tx\nnonvoluntary_ctxt_switches:\t\n"));
}

TEST(ThreadCpuTest, ReadsThisThread) {
    const std::optional<ThreadCpu> cpu = read_thread_cpu(gettid());
    if (!cpu) GTEST_SKIP() << "this kernel has no /proc/.../schedstat";
    EXPECT_GT(cpu->run_ns, 0u);
    EXPECT_FALSE(read_thread_cpu(0));  // no such task
}

TEST(ThreadCpuTest, AnExitedLoopThreadReportsNothing) {
    LoopThread thread;
    EXPECT_FALSE(loop_thread_cpu(thread));  // not yet published
    if (!read_thread_cpu(gettid())) GTEST_SKIP() << "this kernel has no /proc/.../schedstat";
    // Published by another thread, read from this one, as the lcore and the reporter do.
    std::thread lcore([&] {
        publish_loop_thread(thread);
        const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
        while (std::chrono::steady_clock::now() < until) {  // spin: run time to count
        }
    });
    lcore.join();
    EXPECT_NE(thread.tid.read(), 0u);
    // The thread has exited: /proc no longer has it, and nothing is made up.
    EXPECT_FALSE(loop_thread_cpu(thread));
}

TEST(ThreadCpuTest, LoopThreadOfALiveThreadIsItsTimeSinceTheBaseline) {
    if (!read_thread_cpu(gettid())) GTEST_SKIP() << "this kernel has no /proc/.../schedstat";
    LoopThread thread;
    // Run time before the baseline must not count.
    const auto spin = [](std::chrono::milliseconds ms) {
        const auto until = std::chrono::steady_clock::now() + ms;
        while (std::chrono::steady_clock::now() < until) {
        }
    };
    spin(std::chrono::milliseconds(50));
    publish_loop_thread(thread);
    spin(std::chrono::milliseconds(10));
    const std::optional<ThreadCpu> since = loop_thread_cpu(thread);
    const std::optional<ThreadCpu> whole = read_thread_cpu(gettid());
    ASSERT_TRUE(since);
    ASSERT_TRUE(whole);
    EXPECT_GT(since->run_ns, 0u);
    EXPECT_LT(since->run_ns, whole->run_ns);
    EXPECT_LE(since->runqueue_wait_ns, whole->runqueue_wait_ns);
    EXPECT_LE(since->involuntary_switches, whole->involuntary_switches);
}

}  // namespace
}  // namespace twinlane::dataplane
