#include "dataplane/lcore_plan.h"

#include <gtest/gtest.h>

namespace twinlane::dataplane {
namespace {

using Mode = conf::LcorePolicy::Mode;

conf::LcorePolicy mode(Mode m) {
    conf::LcorePolicy p;
    p.mode = m;
    return p;
}

TEST(LcorePlan, OneLcoreRunsEveryStage) {
    const LcorePlan plan = plan_lcores(mode(Mode::automatic), {{0, 2}, {1, 1}}, {0, 1}, {3});
    ASSERT_TRUE(plan.ok()) << plan.error;
    ASSERT_EQ(plan.lcores.size(), 1u);
    EXPECT_EQ(plan.lcores[0].lcore, 3u);
    EXPECT_EQ(plan.lcores[0].rx.size(), 3u);
    EXPECT_EQ(plan.lcores[0].egress, (std::vector<size_t>{0, 1}));
}

TEST(LcorePlan, TwoLcoresSplitRxAndScheduler) {
    const LcorePlan plan = plan_lcores(mode(Mode::automatic), {{0, 1}}, {1}, {0, 1});
    ASSERT_TRUE(plan.ok()) << plan.error;
    ASSERT_EQ(plan.lcores.size(), 2u);
    EXPECT_EQ(plan.lcores[0].lcore, 0u);
    EXPECT_EQ(plan.lcores[0].rx.size(), 1u);
    EXPECT_TRUE(plan.lcores[0].egress.empty());
    EXPECT_EQ(plan.lcores[1].lcore, 1u);
    EXPECT_TRUE(plan.lcores[1].rx.empty());
    EXPECT_EQ(plan.lcores[1].egress, (std::vector<size_t>{1}));
}

TEST(LcorePlan, RssQueuesSpreadOverRxLcoresAndPortsOverSchedulers) {
    const LcorePlan plan =
        plan_lcores(mode(Mode::automatic), {{0, 4}, {1, 4}}, {0, 1}, {0, 1, 2, 3, 4, 5});
    ASSERT_TRUE(plan.ok()) << plan.error;
    ASSERT_EQ(plan.lcores.size(), 6u);  // 4 RX lcores, 2 scheduler lcores
    for (size_t i = 0; i < 4; ++i) {
        EXPECT_EQ(plan.lcores[i].rx.size(), 2u) << i;
        EXPECT_TRUE(plan.lcores[i].egress.empty());
    }
    EXPECT_EQ(plan.lcores[4].egress, (std::vector<size_t>{0}));
    EXPECT_EQ(plan.lcores[5].egress, (std::vector<size_t>{1}));
}

TEST(LcorePlan, RunToCompletionNeedsItsLcoreEnabled) {
    conf::LcorePolicy p = mode(Mode::run_to_completion);
    p.single_lcore = 1;
    EXPECT_TRUE(plan_lcores(p, {{0, 1}}, {1}, {0, 1}).ok());
    const LcorePlan bad = plan_lcores(p, {{0, 1}}, {1}, {0});
    EXPECT_FALSE(bad.ok());
    EXPECT_NE(bad.error.find("lcore 1"), std::string::npos) << bad.error;
}

TEST(LcorePlan, ExplicitRolesAreCheckedForCompleteness) {
    conf::LcorePolicy p = mode(Mode::explicit_roles);
    p.rx = {{.lcore = 0, .queues = {{.port = 0, .queue = 0}}}};
    p.scheduler = {{.lcore = 1, .egress_ports = {1}}};
    const LcorePlan ok = plan_lcores(p, {{0, 1}}, {1}, {0, 1});
    ASSERT_TRUE(ok.ok()) << ok.error;
    EXPECT_EQ(ok.lcores.size(), 2u);

    const LcorePlan missing_queue = plan_lcores(p, {{0, 2}}, {1}, {0, 1});
    EXPECT_NE(missing_queue.error.find("RX queue 1"), std::string::npos) << missing_queue.error;
    const LcorePlan unscheduled = plan_lcores(p, {{0, 1}}, {0, 1}, {0, 1});
    EXPECT_NE(unscheduled.error.find("egress port #0"), std::string::npos) << unscheduled.error;
    const LcorePlan disabled = plan_lcores(p, {{0, 1}}, {1}, {0});
    EXPECT_NE(disabled.error.find("not enabled"), std::string::npos) << disabled.error;
}

}  // namespace
}  // namespace twinlane::dataplane
