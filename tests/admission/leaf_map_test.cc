// admission::LeafMap against the plain definition of each split (a search over the listed jobs,
// a division), over random jobs and boundary values.
#include "admission/leaf_map.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace twinlane::admission {
namespace {

uint16_t reference(const ClassLeaves& c, uint32_t job) {
    switch (c.split) {
        case JobSplit::none:
            return c.first_leaf;
        case JobSplit::modulo:
            return static_cast<uint16_t>(c.first_leaf + job % c.leaf_count);
        case JobSplit::listed: {
            const auto found = std::find(c.jobs.begin(), c.jobs.end(), job);
            return static_cast<uint16_t>(c.first_leaf + (found - c.jobs.begin()));
        }
    }
    return 0;
}

TEST(LeafMap, MatchesTheDefinitionOfEachSplit) {
    std::mt19937 rng(7);
    std::vector<ClassLeaves> classes;
    classes.push_back({JobSplit::none, 0, 1, {}});
    for (uint16_t count : {1, 2, 3, 4, 7, 1000, 1024})
        classes.push_back({JobSplit::modulo, 1, count, {}});
    for (size_t jobs : {1, 2, 3, 17, 1023}) {
        ClassLeaves c{JobSplit::listed, 5, static_cast<uint16_t>(jobs + 1), {}};
        while (c.jobs.size() < jobs) {
            const uint32_t job =
                c.jobs.size() % 3 == 0 ? static_cast<uint32_t>(c.jobs.size() * 4096) : rng();
            if (std::find(c.jobs.begin(), c.jobs.end(), job) == c.jobs.end()) c.jobs.push_back(job);
        }
        classes.push_back(c);
    }
    LeafMap map;
    ASSERT_FALSE(LeafMap::build(classes, map));
    ASSERT_EQ(map.class_count(), classes.size());
    for (uint8_t cls = 0; cls < classes.size(); ++cls) {
        std::vector<uint32_t> jobs = classes[cls].jobs;
        for (uint32_t job : {0u, 1u, 2u, 4095u, 4096u, UINT32_MAX, UINT32_MAX - 1})
            jobs.push_back(job);
        for (int i = 0; i < 2000; ++i)
            jobs.push_back(rng());
        for (uint32_t job : jobs)
            ASSERT_EQ(map.leaf(cls, job), reference(classes[cls], job)) << int(cls) << " " << job;
    }
}

TEST(LeafMap, RefusesInconsistentClasses) {
    LeafMap map;
    EXPECT_TRUE(LeafMap::build({{JobSplit::none, 0, 2, {}}}, map));
    EXPECT_TRUE(LeafMap::build({{JobSplit::modulo, 0, 0, {}}}, map));
    EXPECT_TRUE(LeafMap::build({{JobSplit::listed, 0, 2, {1, 2}}}, map));
    EXPECT_TRUE(LeafMap::build({{JobSplit::listed, 0, 3, {4, 4}}}, map));
    EXPECT_TRUE(LeafMap::build({{JobSplit::modulo, 65000, 1000, {}}}, map));
}

}  // namespace
}  // namespace twinlane::admission
