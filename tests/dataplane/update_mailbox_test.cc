#include "dataplane/update_mailbox.h"

#include <gtest/gtest.h>

#include <thread>

namespace twinlane::dataplane {
namespace {

struct Change {
    int value = 0;
    int applied_by_owner = 0;
    std::atomic<bool> completed{false};
};

TEST(UpdateMailbox, OwnerSeesNothingUntilPosted) {
    UpdateMailbox<Change> mailbox;
    EXPECT_EQ(mailbox.take(), nullptr);
}

TEST(UpdateMailbox, OneRequestInFlight) {
    UpdateMailbox<Change> mailbox;
    Change first{.value = 1}, second{.value = 2};
    ASSERT_TRUE(mailbox.post(first));
    EXPECT_FALSE(mailbox.post(second));
    Change* taken = mailbox.take();
    ASSERT_EQ(taken, &first);
    EXPECT_FALSE(UpdateMailbox<Change>::done(first));
    mailbox.complete(*taken);
    EXPECT_TRUE(UpdateMailbox<Change>::done(first));
    EXPECT_EQ(mailbox.take(), nullptr);
    EXPECT_TRUE(mailbox.post(second));
}

// A control thread posts while the owner polls between "bursts"; the owner's writes to the
// request are visible to the poster once done() is true.
TEST(UpdateMailbox, AppliesAcrossThreads) {
    UpdateMailbox<Change> mailbox;
    std::atomic<bool> stop{false};
    std::thread owner([&] {
        while (!stop.load(std::memory_order_relaxed)) {
            if (Change* c = mailbox.take()) {
                c->applied_by_owner = c->value * 10;
                mailbox.complete(*c);
            }
        }
    });
    for (int i = 1; i <= 100; ++i) {
        Change change{.value = i};
        ASSERT_TRUE(mailbox.post(change));
        while (!UpdateMailbox<Change>::done(change))
            std::this_thread::yield();
        EXPECT_EQ(change.applied_by_owner, i * 10);
    }
    stop = true;
    owner.join();
}

}  // namespace
}  // namespace twinlane::dataplane
