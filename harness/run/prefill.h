#pragma once
// Prefill in bubbles (BubbleTea; experiment.h's `prefill:`, workloads/worker/prefill.h),
// the harness's side: what the workers are told (the request stream, the cost per token,
// the simulator's predicted start of every compute action) and what is read back
// (utilisation, served / rejected, time to first token, training slowdown against the
// same schedule run without prefill).
//
// Utilisation of a rank: its compute busy time (F, B, W, BW, OPT, and PREFILL where
// counted) within the measured run's span (the first measured iteration's start to the
// last one's end, over all ranks; the iteration barriers included) / that span.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/run/plan.h"
#include "harness/run/results.h"
#include "workloads/worker/run_spec.h"

namespace xdc::run {

// The name of a schedule's run with prefill ("1f1b+prefill") and back.
std::string prefill_run_name(const std::string& schedule);
bool is_prefill_run(const std::string& name, std::string* baseline = nullptr);

// The worker's PrefillSpec for a schedule run with prefill (durations x time dilation):
// the stream from the experiment, ns per prompt token per pipeline rank from the planned F
// (f_ns x tokens / (seq x microbatch_size), summed over the rank's stages), and from
// predict() of the schedule, per pipeline rank and action index, the predicted start of
// each compute action from the iteration's start, and the predicted iteration.
worker::PrefillSpec prefill_spec(const Plan& p, const SchedulePlan& s);

// Per rank utilisation (see above) from the ranks' files; `with_prefill` counts PREFILL.
std::vector<double> utilisation(const RankFiles& f, bool with_prefill);

// The prefill fields of a run with prefill from its ranks' files: requests (arrived,
// served, rejected, unfinished), ttft_ms p50/p99/max, utilisation per rank with prefill
// and of the training alone, overruns (waits whose data arrived while a prefill job still
// ran, all ranks) and overrun_ms (the training's delay they caused, summed).
nlohmann::json prefill_json(const RankFiles& f);

// For every run with prefill in `rs`, its baseline (the same schedule without): adds to
// its `prefill` the baseline's utilisation (utilisation_without), iteration time and the
// training slowdown in percent (mean iteration with / without - 1).
void compare_with_baselines(std::vector<ScheduleResult>& rs);

}  // namespace xdc::run
