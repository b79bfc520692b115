// How the daemon judges a new policy version before any lcore sees it (dataplane/daemon_plan.h)
// and PolicyStore's before_publish hook it relies on: restart-only differences are named, a
// parameter change is an in-place apply, a new topology is a rebuild, a class moving to other
// leaves is refused, retired counters keep totals monotonic, and a refused hook publishes
// nothing.
#include "dataplane/daemon_plan.h"

#include <gtest/gtest.h>

#include <string>

#include "conf/compile.h"
#include "conf/load_policy.h"
#include "conf/policy.h"
#include "control/policy_store.h"

namespace twinlane::dataplane {
namespace {

using conf::CompiledPolicy;
using conf::Policy;

// A two-port policy; TREE replaces the scheduler section, EXTRA is appended.
std::string policy_text(const std::string& tree, const std::string& extra = "",
                        const std::string& rate = "100M") {
    return R"(version: 1
ports:
  - {name: in, device: net_null0, rate: 100M, tx_budget: 20000}
  - {name: out, device: net_null1, tx_budget: 20000, rate: )" +
           rate + R"(}
forwarding:
  - {from: in, to: out}
classes: [inference, training, other]
scheduler:
)" + tree + R"(
classifier:
  heuristics:
    roce: training
    serving: {ports: [50051], class: inference}
    default_class: other
)" + extra;
}

const std::string kTreeA = R"(  name: root
  kind: strict
  children:
    - {name: inference, kind: fq, class: inference}
    - name: bulk
      kind: drr
      children:
        - {name: training, kind: fq, class: training, weight: 3}
        - {name: other, kind: fifo, class: other, weight: 1})";

// Same leaves per class, another shape: an extra drr level and `other` as fq.
const std::string kTreeB = R"(  name: root
  kind: strict
  children:
    - {name: inference, kind: fq, class: inference}
    - name: bulk
      kind: drr
      children:
        - {name: training, kind: fq, class: training, weight: 3}
        - name: minor
          kind: drr
          weight: 1
          children:
            - {name: other, kind: fq, class: other})";

struct Parsed {
    std::shared_ptr<const Policy> policy;
    CompiledPolicy compiled;
};

Parsed parse(const std::string& text) {
    conf::PolicyResult result = conf::parse_policy(text, "test.yaml");
    EXPECT_TRUE(result.ok()) << (result.errors.empty() ? "" : result.errors[0].to_string());
    Parsed out{result.policy, {}};
    if (out.policy) out.compiled = conf::compile_policy(*out.policy);
    EXPECT_TRUE(out.compiled.ok());
    return out;
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) text.replace(at, from.size(), to);
    return text;
}

const std::vector<std::string> kClasses{"inference", "training", "other"};

TEST(RestartOnlyChanges, NoneForTheSamePolicyOrOnlyRules) {
    const Parsed a = parse(policy_text(kTreeA));
    const Parsed b = parse(policy_text(kTreeB, R"(  rules:
    - {name: probe, priority: 5, match: {dst_port: 7777}, action: {class: inference}}
)"));
    EXPECT_TRUE(
        restart_only_changes(*a.policy, *a.policy, a.compiled.classifier, a.compiled.classifier)
            .empty());
    const auto changes =
        restart_only_changes(*a.policy, *b.policy, a.compiled.classifier, b.compiled.classifier);
    EXPECT_TRUE(changes.empty()) << changes.front();
    EXPECT_TRUE(same_rules(*a.policy, *a.policy));
    EXPECT_FALSE(same_rules(*a.policy, *b.policy));
}

TEST(RestartOnlyChanges, NamesPortsClassesLcoresAndHeuristics) {
    const Parsed a = parse(policy_text(kTreeA));
    const Parsed rate = parse(policy_text(kTreeA, "", "200M"));
    auto changes = restart_only_changes(*a.policy, *rate.policy, a.compiled.classifier,
                                        rate.compiled.classifier);
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0], "ports[out].rate: 100000000 -> 200000000");

    const Parsed lcores = parse(policy_text(kTreeA) + "lcores: {single: 0}\n");
    changes = restart_only_changes(*a.policy, *lcores.policy, a.compiled.classifier,
                                   lcores.compiled.classifier);
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0], "lcores changed");

    const Parsed serving = parse(replaced(policy_text(kTreeA), "ports: [50051]", "ports: [8000]"));
    changes = restart_only_changes(*a.policy, *serving.policy, a.compiled.classifier,
                                   serving.compiled.classifier);
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0], "classifier.heuristics.serving.ports changed");

    const Parsed classes =
        parse(replaced(replaced(policy_text(kTreeA), "classes: [inference, training, other]",
                                "classes: [inference, training, other, extra]"),
                       "{name: other, kind: fifo, class: other, weight: 1}",
                       "{name: other, kind: fifo, class: other, weight: 1}\n"
                       "        - {name: extra, kind: fifo, class: extra, weight: 1}"));
    changes = restart_only_changes(*a.policy, *classes.policy, a.compiled.classifier,
                                   classes.compiled.classifier);
    ASSERT_FALSE(changes.empty());
    EXPECT_NE(changes[0].find("classes: [inference, training, other] -> "), std::string::npos)
        << changes[0];
}

// The pool exists once the daemon runs: a reload may raise leaf limits only as far as the
// running pool share backs them, and an explicit `mempool` that differs needs a restart.
TEST(RestartOnlyChanges, QueuesBeyondTheRunningPoolNeedARestart) {
    const Parsed a = parse(policy_text(kTreeA));  // `out` sized to fit: 8191 (needs 5120)
    ASSERT_EQ(a.policy->ports[1].mempool_mbufs, 8191u);
    const Parsed fits =
        parse(replaced(policy_text(kTreeA), "{name: other, kind: fifo, class: other, weight: 1}",
                       "{name: other, kind: fifo, class: other, weight: 1, "
                       "limit: {packets: 4000}}"));
    auto changes = restart_only_changes(*a.policy, *fits.policy, a.compiled.classifier,
                                        fits.compiled.classifier);
    EXPECT_TRUE(changes.empty()) << changes.front();

    const Parsed beyond =
        parse(replaced(policy_text(kTreeA), "{name: other, kind: fifo, class: other, weight: 1}",
                       "{name: other, kind: fifo, class: other, weight: 1, "
                       "limit: {packets: 8000}}"));
    changes = restart_only_changes(*a.policy, *beyond.policy, a.compiled.classifier,
                                   beyond.compiled.classifier);
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0],
              "ports[out].mempool: the new queues and descriptor rings can hold 12096 mbufs, "
              "more than the running 8191");

    const Parsed given = parse(replaced(
        policy_text(kTreeA), "tx_budget: 20000, rate:", "tx_budget: 20000, mempool: 9000, rate:"));
    changes = restart_only_changes(*a.policy, *given.policy, a.compiled.classifier,
                                   given.compiled.classifier);
    ASSERT_EQ(changes.size(), 1u);
    EXPECT_EQ(changes[0], "ports[out].mempool: 8191 -> 9000");
}

TEST(PlanEgressChange, NoneApplyOrRebuild) {
    const Parsed a = parse(policy_text(kTreeA));
    EXPECT_EQ(plan_egress_change(a.compiled.egress[0], a.compiled.egress[0], kClasses).change,
              EgressChange::none);

    const Parsed weight = parse(replaced(policy_text(kTreeA), "weight: 3", "weight: 5"));
    EgressPlan plan = plan_egress_change(a.compiled.egress[0], weight.compiled.egress[0], kClasses);
    EXPECT_TRUE(plan.refusal.empty()) << plan.refusal;
    EXPECT_EQ(plan.change, EgressChange::apply);

    const Parsed b = parse(policy_text(kTreeB));
    plan = plan_egress_change(a.compiled.egress[0], b.compiled.egress[0], kClasses);
    EXPECT_TRUE(plan.refusal.empty()) << plan.refusal;
    EXPECT_EQ(plan.change, EgressChange::rebuild);
    plan = plan_egress_change(b.compiled.egress[0], a.compiled.egress[0], kClasses);
    EXPECT_EQ(plan.change, EgressChange::rebuild);

    // A pool bigger than the leaves' limits (the daemon's choice) is not a change.
    conf::CompiledEgress bigger_pool = a.compiled.egress[0];
    bigger_pool.tree.pool_packets = 100000;
    EXPECT_EQ(plan_egress_change(bigger_pool, a.compiled.egress[0], kClasses).change,
              EgressChange::none);
}

TEST(PlanEgressChange, RefusesAClassMovingToOtherLeaves) {
    const Parsed a = parse(policy_text(kTreeA));
    const Parsed renamed =
        parse(replaced(policy_text(kTreeA), "{name: training, kind: fq, class: training",
                       "{name: bulk-jobs, kind: fq, class: training"));
    const EgressPlan plan =
        plan_egress_change(a.compiled.egress[0], renamed.compiled.egress[0], kClasses);
    EXPECT_NE(plan.refusal.find("class 'training' would enter other leaves ([training] -> "
                                "[bulk-jobs])"),
              std::string::npos)
        << plan.refusal;

    const std::string per_job = R"(  name: root
  kind: strict
  children:
    - {name: inference, kind: fq, class: inference}
    - name: bulk
      kind: drr
      children:
        - {name: training, kind: drr, class: training, weight: 3, per_job: {count: 4, leaf: {kind: fq}}}
        - {name: other, kind: fifo, class: other, weight: 1})";
    const Parsed four = parse(policy_text(per_job));
    const Parsed eight = parse(replaced(policy_text(per_job), "count: 4", "count: 8"));
    EXPECT_NE(plan_egress_change(four.compiled.egress[0], eight.compiled.egress[0], kClasses)
                  .refusal.find("class 'training'"),
              std::string::npos);
    EXPECT_EQ(plan_egress_change(four.compiled.egress[0], four.compiled.egress[0], kClasses).change,
              EgressChange::none);
}

TEST(RetireCounters, TakesMigratedPacketsOutOfTheInput) {
    sched::QueueCounters c;
    c.packets_in = 100;
    c.bytes_in = 100'000;
    c.packets_out = 60;
    c.bytes_out = 60'000;
    c.drop_packets[0] = 10;
    c.drop_bytes[0] = 10'000;
    c.migrated_out_packets = 30;  // the remaining 30 packets, 30'000 bytes, moved to a new tree
    const sched::QueueCounters r = retire_counters(c);
    EXPECT_EQ(r.packets_in, 70u);
    EXPECT_EQ(r.bytes_in, 70'000u);
    EXPECT_EQ(r.packets_out, 60u);
    EXPECT_EQ(r.migrated_out_packets, 30u);
    EXPECT_EQ(r.depth_packets, 0u);
    // The new tree counts the 30 in: retired + new = 100 packets in since start.
}

// PolicyStore's hook: a refusal publishes nothing and is the caller's reply.
class RefusingStore : public control::PolicyStore {
  public:
    static std::unique_ptr<RefusingStore> make(std::shared_ptr<const Policy> policy) {
        std::unique_ptr<RefusingStore> store(new RefusingStore());
        EXPECT_TRUE(store->install_first(std::move(policy)).ok());
        return store;
    }
    bool refuse = true;
    int calls = 0;

  protected:
    std::optional<control::ApiResult> before_publish(const control::PolicyVersion& running,
                                                     const control::PolicyVersion& next) override {
        ++calls;
        EXPECT_EQ(next.epoch, running.epoch + 1);
        if (refuse) return control::ApiResult::failure("lcores said no", {"detail"});
        return std::nullopt;
    }

  private:
    RefusingStore() : PolicyStore({}) {}
};

TEST(BeforePublish, RefusalLeavesTheRunningVersion) {
    auto store = RefusingStore::make(parse(policy_text(kTreeA)).policy);
    ASSERT_EQ(store->epoch(), 1u);
    const auto before = store->current();
    const control::ApiResult refused = store->class_set("training", "weight", "7");
    EXPECT_FALSE(refused.ok());
    EXPECT_EQ(refused.error(), "lcores said no");
    EXPECT_EQ(store->epoch(), 1u);
    EXPECT_EQ(store->current(), before);
    store->refuse = false;
    const control::ApiResult accepted = store->class_set("training", "weight", "7");
    EXPECT_TRUE(accepted.ok()) << accepted.error();
    EXPECT_EQ(store->epoch(), 2u);
    EXPECT_EQ(store->calls, 2);
}

}  // namespace
}  // namespace twinlane::dataplane
