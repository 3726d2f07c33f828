#pragma once
// The prediction of a planned schedule: predict() is the one answer to "how long does an
// iteration take" that `xdc run`, `xdc simulate`, `xdc plan`, sweeps, the report and the
// tests read. Prediction::iteration_s() is the figure each of them reports.
//
// It predicts two things with one link, TCP and worker model (sim/):
//  - the run as `xdc run` measures it (Prediction::run): every iteration back to back,
//    warmup first, from the connections OpenMPI opens at the launch (new: the initial
//    window, slow start), the topology's `changes:` / `trace:` in force at their `at`
//    from the launch and the experiment's `events:` applied when the iteration they name
//    starts (a kill_ranks event ends the run there). Its measured iterations' mean is
//    the predicted iteration;
//  - the steady state (trace, summary): warm connections, iterations back to back until
//    the ranks' start offsets repeat (sim::simulate_iteration): the simulated timeline the
//    report draws, its bubbles, simulated.trace.json, where make_plan puts prefill.
// The two agree where a run settles at once; they differ where the connections' state
// keeps changing from one iteration to the next (a lossy WAN's windows tighten as its
// losses strike; windows and ssthresh settle over several iterations at a small
// bottleneck queue).
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "harness/linkctl/link_control.h"
#include "harness/plan/plan.h"

namespace xdc::run {

// The run predicted iteration by iteration.
struct RunSeries {
  std::vector<double> iteration_s;  // per measured iteration
  std::vector<double> start_s;      // its start, from measured iteration 0's
  struct Applied {
    double t_s = 0;            // from measured iteration 0's start (< 0: before it)
    std::string what, source;  // "link_down east->west", "FILE:LINE (at 5s)"
  };
  std::vector<Applied> changes;  // the WAN changes made while it lasted, in time order
  std::string ended;             // why it ended early ("" when it did not)
};

struct PredictOptions {
  // The launch is this long before measured iteration 0 starts, as a run measured it (the
  // simulator has no mpirun start-up: the warmup iterations take their steady-state time,
  // the rest is start-up); < 0: unknown, the first iteration starts at the launch.
  int64_t launch_to_measured_ns = -1;
  // false: the steady state only (make_plan's prefill placement, `xdc schedule show`).
  bool run = true;
  // Over a WAN with random loss (random_loss) or jitter (jittered), or with costs that
  // carry measured compute noise (sim::CostModel::noisy): the run predicted this many times
  // more, replica k with its losses, jitter lags and compute durations drawn from seed k
  // (sim::WorkerModel::loss_seed); the
  // prediction is their mean and the band the spread of their means (Prediction::band_s).
  // 0: none (the prediction is then the run with the losses evenly spaced).
  int band_runs = 20;
};

struct Prediction {
  trace::Trace trace;  // the steady-state iteration
  trace::Summary summary;
  // The run from new connections, its random losses evenly spaced and its compute at the
  // mean durations; empty with PredictOptions::run false.
  RunSeries run;
  // The predicted iteration: the mean of the drawn runs' means where something is drawn
  // (band_runs_s: where random losses fall moves a run's time, and not linearly: a loss at
  // a message's tail costs a timeout, one in its middle a round trip, and the window a
  // loss leaves slows the messages after it, so the run with its losses evenly spaced is
  // not the mean run); else the mean of `run`'s measured iterations (the steady state's
  // when the run was not predicted or ended before its first).
  double iteration_s() const;
  double steady_iteration_s() const;
  // Each band replica's predicted mean (PredictOptions::band_runs), and the band: their
  // 5th to 95th percentile (a 90% band); [iteration_s, iteration_s] without replicas
  // (nothing drawn: a WAN without random loss or jitter, and modeled compute; zero width).
  std::vector<double> band_runs_s;
  std::array<double, 2> band_s() const;
};

// Whether some path of the plan loses packets at random (random or Gilbert-Elliott loss):
// where the losses fall then varies from run to run.
bool random_loss(const Plan& p);
// Whether some path of the plan has jitter: how late each message's last packets arrive
// then varies from run to run.
bool jittered(const Plan& p);

// Schedule `s` of plan `p` predicted with `costs` (its planned costs, or measured ones).
// Throws std::invalid_argument for a schedule that deadlocks on these links.
Prediction predict(const Plan& p, const SchedulePlan& s, const sim::CostModel& costs,
                   const PredictOptions& o = {});

// The order in which temporal WAN sharing grants transfers: per pipeline rank, per action
// index of its list, the planned start of that SEND in one replica's steady iteration (the
// schedule's planned costs, the WAN shared: links.copies), -1 for other actions. The
// workers' arbiter and the simulator order by it, then by replica.
std::vector<std::vector<int64_t>> send_order(const Plan& p, const SchedulePlan& s);

// Each action's start in trace `t` of schedule `s` (a prediction: the trace's ranks
// 0..s.ranks-1 are s's), per rank, per index of its action list; -1 for an action the
// trace does not have.
std::vector<std::vector<int64_t>> action_starts(const trace::Trace& t, const sched::Schedule& s);

// The WAN directions an `events:` entry changes: its link's (both, or its `direction`) or
// every one of its DC's, over a live network's WAN (xdc run) or the topology's (the
// prediction) alike.
std::vector<linkctl::Direction> event_directions(const linkctl::Wan& w, const ProgressEvent& ev);

// Whether the WAN changes while the experiment runs: the topology's `changes:` / `trace:`
// (after the experiment's `wan:`) or the experiment's `events:`.
bool changes_over_time(const Experiment& e);

}  // namespace xdc::run
