#include "harness/run/progress.h"

#include <gtest/gtest.h>

#include "harness/run/results.h"

using xdc::run::iteration_line;
using xdc::run::IterationProgress;

TEST(Progress, DurationsReadAsMinutesAndHours) {
  EXPECT_EQ(xdc::run::hms(65), "1m05s");
  EXPECT_EQ(xdc::run::hms(7380), "2h03m");
  EXPECT_EQ(xdc::run::hms(-1), "--");
}

// Half the iterations in 40 s: the bar half full and 40 s to go at that pace.
TEST(Progress, TheLineShowsBarCountLossElapsedAndEta) {
  IterationProgress p{"1f1b", 12, 24, 3.1119, 40.0, "rank 3 iteration 10 loss 3.111900"};
  EXPECT_EQ(iteration_line(p, 10),
            "[1f1b] [#####.....] 12/24 iterations  loss 3.112  0m40s  ETA 0m40s");
}

TEST(Progress, ModeledComputeHasNoLossAndNothingDoneHasNoEta) {
  IterationProgress p{"zbv", 0, 5, -1, 3.0, ""};
  EXPECT_EQ(iteration_line(p, 5), "[zbv] [.....] 0/5 iterations  0m03s  ETA --");
}

// The final table gives each column its unit: Megatron's bubble in computes (it passes 1
// when the WAN dominates), the two idle shares in percent, and a legend says which is which.
TEST(Progress, TheFinalTableCarriesUnitsAndSaysWhichBubbleIsWhich) {
  xdc::run::ScheduleResult r;
  r.schedule = "1f1b";
  r.ok = true;
  r.iteration_s = {0.676, 0.677};
  r.simulated_iteration_s = 0.671;
  r.bubble = {1.809, 0.644, 0.643};
  const std::string t = xdc::run::comparison_table({r});
  EXPECT_NE(t.find("bubble/comp"), std::string::npos) << t;
  EXPECT_NE(t.find("1.81 x"), std::string::npos) << t;
  EXPECT_NE(t.find("64.4%"), std::string::npos) << t;
  EXPECT_EQ(t.find("180.9%"), std::string::npos) << t;
  EXPECT_NE(t.find("Megatron's bubble, (iteration - compute) / compute"), std::string::npos) << t;
  EXPECT_NE(t.find("CrossPipe's"), std::string::npos) << t;
}

// A `workload:` run's table: the program's step beside its prediction, and its loss; no
// pipeline columns (none of xdc-worker's pipeline ran).
TEST(Progress, AWorkloadsTableHasTheStepAndItsPredictionOnly) {
  xdc::run::ScheduleResult r;
  r.schedule = "workload";
  r.ok = true;
  r.iteration_s = {0.190, 0.200};
  r.simulated_iteration_s = 0.190;
  r.loss = {4.728, 2.866};
  const std::string t = xdc::run::workload_table(r);
  EXPECT_NE(t.find("step mean"), std::string::npos) << t;
  EXPECT_NE(t.find("0.195 s"), std::string::npos) << t;
  EXPECT_NE(t.find("0.190 s"), std::string::npos) << t;
  EXPECT_NE(t.find("1.026"), std::string::npos) << t;
  EXPECT_NE(t.find("4.728 -> 2.866"), std::string::npos) << t;
  EXPECT_EQ(t.find("bubble"), std::string::npos) << t;
  EXPECT_EQ(t.find("tokens/s"), std::string::npos) << t;
}
