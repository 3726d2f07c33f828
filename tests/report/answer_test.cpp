// The report's first line, from the data: one schedule, several (the fastest against the
// slowest and the next, with or without confidence intervals), a simulation without
// measurements, failed schedules, a stopped run.
#include "harness/report/answer.h"

#include <gtest/gtest.h>

namespace xdc::report {
namespace {

// A measured schedule: its mean, the prediction, and with `runs` > 1 repeats the 95% CI
// mean +- half.
ScheduleData measured(const std::string& name, double mean_s, double simulated_s, int runs = 1,
                      double half_s = 0) {
  ScheduleData s;
  s.name = name;
  s.iteration_s_mean = mean_s;
  s.simulated_iteration_s = simulated_s;
  s.simulated_band_s.emplace(simulated_s, simulated_s);
  s.repeats = runs;
  if (runs > 1) {
    s.run_means_s.assign(static_cast<size_t>(runs), mean_s);
    s.iteration_s_ci95.emplace(mean_s - half_s, mean_s + half_s);
  } else {
    s.run_means_s = {mean_s};
  }
  return s;
}

ScheduleData failed(const std::string& name) {
  ScheduleData s;
  s.name = name;
  s.ok = false;
  s.error = "rank 2 died";
  return s;
}

TEST(ReportAnswer, OneScheduleGivesItsMeanAndHowFarThePredictionWas) {
  RunData d;
  d.schedules = {measured("1f1b", 1.4234, 1.4119, 3, 0.0645)};
  EXPECT_EQ(answer_sentence(d),
            "1f1b: 1.423 s per iteration (95% CI 1.359–1.488 s, 3 runs); the measured mean "
            "within 0.8% of the prediction.");
}

TEST(ReportAnswer, OneRunHasNoInterval) {
  RunData d;
  d.schedules = {measured("1f1b", 0.5, 0.4)};
  EXPECT_EQ(answer_sentence(d),
            "1f1b: 500 ms per iteration; the measured mean within 25.0% of the prediction.");
}

TEST(ReportAnswer, SeveralNameTheFastestAgainstTheSlowestAndTheNext) {
  RunData d;
  d.schedules = {measured("1f1b", 1.4234, 1.4119, 3, 0.0645),
                 measured("overlap", 1.0773, 1.0583, 3, 0.0831),
                 measured("crosspipe-greedy", 0.9998, 0.9545, 3, 0.0428)};
  EXPECT_EQ(answer_sentence(d),
            "crosspipe-greedy is fastest: 999.8 ms per iteration (95% CI 957–1043 ms, 3 runs), "
            "0.70x of 1f1b and 0.93x of overlap (95% CIs overlap); measured means within 4.7% "
            "of the predictions.");
  // Two schedules whose intervals are apart: one ratio, nothing about overlap.
  d.schedules = {measured("1f1b", 1.4234, 1.4119, 3, 0.0645),
                 measured("crosspipe-greedy", 0.9998, 0.9545, 3, 0.0428)};
  EXPECT_EQ(answer_sentence(d),
            "crosspipe-greedy is fastest: 999.8 ms per iteration (95% CI 957–1043 ms, 3 runs), "
            "0.70x of 1f1b; measured means within 4.7% of the predictions.");
}

TEST(ReportAnswer, SimulationOnlySaysNothingWasMeasured) {
  RunData d;
  d.simulated_only = true;
  ScheduleData a, b;
  a.name = "1f1b";
  a.simulated_iteration_s = 1.733;
  b.name = "overlap";
  b.simulated_iteration_s = 1.34;
  b.simulated_band_s.emplace(1.30, 1.39);  // random loss: the band has a width
  d.schedules = {a, b};
  EXPECT_EQ(answer_sentence(d),
            "Simulation only, nothing measured: overlap is predicted fastest: 1.34 s per "
            "iteration (90% band 1.3–1.39 s), 0.77x of 1f1b.");
  d.schedules = {a};
  EXPECT_EQ(answer_sentence(d), "Simulation only, nothing measured: 1f1b: 1.733 s per iteration.");
}

TEST(ReportAnswer, FailedSchedulesAreNamedAndNotRanked) {
  RunData d;
  d.schedules = {measured("1f1b", 1.2, 1.1), failed("zb-h1"), measured("overlap", 1.0, 1.05)};
  EXPECT_EQ(answer_sentence(d),
            "overlap is fastest: 1 s per iteration, 0.83x of 1f1b; zb-h1 failed; measured "
            "means within 9.1% of the predictions.");
  d.schedules = {failed("gpipe"), measured("1f1b", 1.2, 1.1)};
  EXPECT_EQ(answer_sentence(d),
            "1f1b is the only schedule measured: 1.2 s per iteration; gpipe failed; the "
            "measured mean within 9.1% of the prediction.");
  d.schedules = {failed("gpipe"), failed("zb-h1")};
  EXPECT_EQ(answer_sentence(d), "No schedule measured an iteration; gpipe and zb-h1 failed.");
}

TEST(ReportAnswer, AStoppedRunSaysSo) {
  RunData d;
  d.interrupted = true;
  d.schedules = {measured("1f1b", 1.2, 1.1)};
  EXPECT_EQ(answer_sentence(d).rfind("Stopped before every schedule ran: 1f1b: 1.2 s", 0), 0u);
  d.schedules.clear();
  EXPECT_EQ(answer_sentence(d), "Stopped before every schedule ran: No schedule ran.");
  // A killed run's summary: a schedule none of whose runs finished is not run, not failed.
  ScheduleData none = failed("gpipe");
  none.error = "no run finished";
  none.repeats = 0;
  d.schedules = {measured("1f1b", 1.2, 1.1), none};
  EXPECT_EQ(answer_sentence(d),
            "Stopped before every schedule ran: 1f1b is the only schedule measured: 1.2 s per "
            "iteration; gpipe not run; the measured mean within 9.1% of the prediction.");
}

}  // namespace
}  // namespace xdc::report
