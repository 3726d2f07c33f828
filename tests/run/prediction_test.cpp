// Shipped experiments predicted with stock OpenMPI and TCP, against iterations measured on
// the emulator (the figures, commands and dates are in each test). The simulator's link
// model is tcp_model.h's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "harness/run/experiment.h"
#include "harness/run/plan.h"
#include "harness/sim/simulator.h"
#include "harness/trace/analysis.h"

namespace {

// The experiment's iteration as simulated; `tcp` false: links as latency + bytes / rate.
double simulated_s(const xdc::run::Experiment& e, const std::string& schedule, bool tcp = true) {
  for (const auto& c : e.schedules) {
    if (c.name != schedule) continue;
    const auto s = xdc::run::make_schedule(e, xdc::run::schedule_params(e), c);
    auto links = xdc::run::link_model(e);
    if (!tcp) links.tcp.clear();
    const auto t = xdc::sim::simulate(s, xdc::run::planned_costs(e, s.stage_rank), links);
    return static_cast<double>(xdc::trace::analyze(t).iteration_ns) / 1e9;
  }
  ADD_FAILURE() << "no schedule " << schedule;
  return 0;
}

}  // namespace

// `xdc run` of experiments/two-dc-modeled.yaml with `time_dilation: 1` (copy), stock MPI
// and TCP, on a 2-core machine while other builds ran (load ~8): mean of 3 measured
// iterations, seconds.
TEST(Prediction, TwoDcModeledStock) {
  const auto e = xdc::run::load_experiment("experiments/two-dc-modeled.yaml");
  ASSERT_TRUE(e.mca.empty()) << "the shipped experiment runs stock OpenMPI";
  const std::vector<std::pair<std::string, double>> measured = {
      {"1f1b", 13.900}, {"overlap", 11.501}, {"crosspipe-greedy", 12.326}};
  for (const auto& [name, m] : measured) {
    SCOPED_TRACE(name);
    const double tcp = simulated_s(e, name);
    const double ideal = simulated_s(e, name, /*tcp=*/false);
    std::printf(
        "two-dc-modeled %s: measured %.3f s, simulated %.3f s (%+.1f%%), without the "
        "TCP/MPI model %.3f s (%+.1f%%)\n",
        name.c_str(), m, tcp, 100 * (tcp / m - 1), ideal, 100 * (ideal / m - 1));
    // The rendezvous, the window limit and slow start after idle account for most of what
    // latency + bytes / rate missed (-33% to -44%); what is left (-9% to -20%) is the
    // interleaving of queued rendezvous messages on one connection (see tcp_model.h).
    EXPECT_LT(std::abs(tcp - m), 0.5 * std::abs(ideal - m));
    EXPECT_NEAR(tcp, m, 0.22 * m);
  }
}
