// Which replicas the prediction simulates (Plan::all_replicas): replica 0 stands for the
// others where each of their pairs crosses the WAN in the direction replica 0's does (the
// copies of its messages, LinkModel::copies); a replica whose pair crosses it the other
// way meets other pairs' traffic there, and every replica is simulated.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "common/text_file.h"
#include "harness/plan/predict.h"
#include "tests/run/experiment_fixture.h"

namespace {

using xdc::run::load_experiment;
using xdc::run::make_plan;

// tests/run/mirrored-replicas.yaml measured (`xdc run`, idle machine): overlap 2.664 s
// (2.741 in the bench's run), crosspipe-greedy 3.045 s (3.314); replica 0 standing for both
// predicted 2.014 / 2.362 s, every replica simulated 2.414 / 2.706 s.
TEST(PlanReplicas, MirroredReplicasAreEachSimulated) {
  auto plan = make_plan(load_experiment("tests/run/mirrored-replicas.yaml"));
  ASSERT_TRUE(plan.all_replicas);
  const std::map<std::string, double> measured = {{"overlap", 2.664}, {"crosspipe-greedy", 3.045}};
  for (const auto& sp : plan.schedules) {
    plan.all_replicas = true;
    const double each = xdc::run::predict(plan, sp, sp.costs).iteration_s();
    plan.all_replicas = false;
    const double one = xdc::run::predict(plan, sp, sp.costs).iteration_s();
    const double m = measured.at(sp.choice.name);
    EXPECT_GT(each, 1.1 * one) << sp.choice.name << ": the other replica's traffic";
    EXPECT_NEAR(each, m, 0.2 * m) << sp.choice.name;
  }
}

// The same replicas placed alike (each replica's stage 0 in europe): replica 0 stands for
// both, its messages two copies on each WAN direction.
TEST(PlanReplicas, ReplicasPlacedAlikeAreOneSimulated) {
  const std::string path = "tests/run/mirrored-replicas.yaml";
  std::string text = xdc::read_text_file_or_empty(path);
  const std::string mirrored = "[[europe-h1, uswest-h1], [uswest-h2, europe-h2]]";
  const auto at = text.find(mirrored);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, mirrored.size(), "[[europe-h1, uswest-h1], [europe-h2, uswest-h2]]");
  const auto plan = make_plan(xdc::run::parse_experiment(text, path));
  EXPECT_FALSE(plan.all_replicas);
  EXPECT_EQ(plan.links.copies_of(0, 1), 2);
  EXPECT_EQ(plan.links.copies_of(1, 0), 2);
}

}  // namespace
