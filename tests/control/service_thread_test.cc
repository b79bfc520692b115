// ServiceThread: the loop runs on its own thread, stop() wakes and joins it, and an exception
// that escapes the loop ends only that thread.
#include "control/service_thread.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <future>
#include <stdexcept>
#include <string>

namespace twinlane::control {
namespace {

using namespace std::chrono_literals;

// Blocks in poll() on the wake fd alone (no timeout): only stop() can end it.
void wait_for_wake(int wake_fd) {
    pollfd fd{wake_fd, POLLIN, 0};
    while (poll(&fd, 1, -1) < 0) {
    }
}

TEST(ServiceThread, StopWakesALoopBlockedInPoll) {
    ServiceThread thread;
    std::promise<std::string> name;
    std::atomic<bool> returned{false};
    ASSERT_FALSE(thread.start("test", "tl-test", [&](int wake_fd) {
        char buffer[16] = {};
        pthread_getname_np(pthread_self(), buffer, sizeof buffer);
        name.set_value(buffer);
        wait_for_wake(wake_fd);
        returned = true;
    }));
    EXPECT_TRUE(thread.running());
    auto named = name.get_future();
    ASSERT_EQ(named.wait_for(5s), std::future_status::ready);
    EXPECT_EQ(named.get(), "tl-test");
    EXPECT_FALSE(returned);
    thread.stop();
    EXPECT_TRUE(returned);
    EXPECT_FALSE(thread.running());
    thread.stop();  // a second stop is nothing
}

TEST(ServiceThread, StartsAgainAfterStopAndRefusesASecondStart) {
    ServiceThread thread;
    int runs = 0;
    for (int round = 0; round < 2; ++round) {
        ASSERT_FALSE(thread.start("test", "tl-test", [&](int wake_fd) {
            ++runs;
            wait_for_wake(wake_fd);
        }));
        const auto again = thread.start("test", "tl-test", [](int) {});
        ASSERT_TRUE(again);
        EXPECT_EQ(*again, "already running");
        thread.stop();
    }
    EXPECT_EQ(runs, 2);
}

TEST(ServiceThread, AnExceptionEndsTheLoopNotTheProcess) {
    ServiceThread thread;
    std::promise<void> thrown;
    ASSERT_FALSE(thread.start("test", "tl-test", [&](int) {
        thrown.set_value();
        throw std::runtime_error("broken loop");
    }));
    ASSERT_EQ(thrown.get_future().wait_for(5s), std::future_status::ready);
    thread.stop();  // joins a thread that already ended; the wake is unread
    EXPECT_FALSE(thread.running());
}

TEST(ServiceThread, DestructorStopsTheLoop) {
    std::atomic<bool> returned{false};
    {
        ServiceThread thread;
        ASSERT_FALSE(thread.start("test", "tl-test", [&](int wake_fd) {
            wait_for_wake(wake_fd);
            returned = true;
        }));
    }
    EXPECT_TRUE(returned);
}

TEST(ServiceThread, StopWithoutStartIsNothing) {
    ServiceThread thread;
    EXPECT_FALSE(thread.running());
    thread.stop();
    EXPECT_FALSE(thread.running());
}

}  // namespace
}  // namespace twinlane::control
