#include "harness/plan/prefill.h"

#include <algorithm>
#include <climits>
#include <cmath>

#include "harness/plan/predict.h"

namespace xdc::run {

namespace {
constexpr const char* kSuffix = "+prefill";
}  // namespace

std::string prefill_run_name(const std::string& schedule) {
  return schedule + kSuffix;
}

bool is_prefill_run(const std::string& name, std::string* baseline) {
  const std::string s = kSuffix;
  if (name.size() <= s.size() || name.compare(name.size() - s.size(), s.size(), s) != 0)
    return false;
  if (baseline) *baseline = name.substr(0, name.size() - s.size());
  return true;
}

worker::PrefillSpec prefill_spec(const Plan& p, const SchedulePlan& s) {
  const Experiment& e = p.experiment;
  const Prefill& x = e.prefill;
  const double k = e.time_dilation;
  auto dilate = [k](double ns) { return static_cast<int64_t>(std::llround(ns * k)); };
  worker::PrefillSpec w;
  w.on = x.on;
  w.rate_rps = x.rate_rps / k;
  w.dist = x.dist;
  w.mean_tokens = x.mean_tokens;
  w.max_tokens = x.max_tokens;
  w.deadline_ns = dilate(static_cast<double>(x.deadline_us) * 1e3);
  w.seed = x.seed;
  w.guard_ns = dilate(static_cast<double>(w.guard_ns));
  const int seq = e.compute.source == Compute::Source::kShape ? e.compute.seq : e.model.seq;
  const double tokens = static_cast<double>(seq) * e.microbatch_size;
  const int P = s.schedule.ranks;
  w.ns_per_token.assign(P, 0.0);
  for (int st = 0; st < s.schedule.stages; ++st)
    w.ns_per_token[s.schedule.stage_rank[st]] += static_cast<double>(s.costs.f_ns[st]) * k / tokens;
  if (e.compute.mode == Compute::Mode::kReal) {  // the stage's forward, measured as it runs
    w.pass_tokens = static_cast<int>(tokens);
    w.calibrate = true;
  }

  // The predicted steady-state iteration: each compute action's start, from the start.
  PredictOptions steady;
  steady.run = false;
  const Prediction pred = predict(p, s, s.costs, steady);
  int64_t origin = INT64_MAX;
  for (const auto& ev : pred.trace.events) origin = std::min(origin, ev.start_ns);
  if (origin == INT64_MAX) origin = 0;
  w.action_start_ns = action_starts(pred.trace, s.schedule);
  for (int r = 0; r < P; ++r)
    for (size_t i = 0; i < w.action_start_ns[r].size(); ++i) {
      const sched::Kind kind = s.schedule.actions[r][i].kind;
      int64_t& t = w.action_start_ns[r][i];
      const bool compute = sched::is_compute(kind) || kind == sched::Kind::OPT;
      t = compute && t >= 0 ? dilate(static_cast<double>(t - origin)) : -1;
    }
  w.iteration_ns = dilate(static_cast<double>(pred.summary.iteration_ns));
  return w;
}

}  // namespace xdc::run
