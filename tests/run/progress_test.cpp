#include "harness/run/progress.h"

#include <gtest/gtest.h>

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
