#pragma once
// Prefill in bubbles (BubbleTea; experiment/experiment.h's `prefill:`, workloads/worker/prefill.h),
// the harness's side as planned: which runs carry prefill and what their workers are told
// (the request stream, the cost per token, the simulator's predicted start of every compute
// action). What is read back from such a run is run/prefill_results.h.
#include <string>

#include "harness/plan/plan.h"
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

}  // namespace xdc::run
