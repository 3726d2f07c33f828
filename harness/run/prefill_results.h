#pragma once
// Prefill in bubbles (plan/prefill.h), what is read back from a run: utilisation, served /
// rejected, time to first token, training slowdown against the same schedule run without
// prefill.
//
// Utilisation of a rank: its compute busy time (F, B, W, BW, OPT, and PREFILL where
// counted) within the measured run's span (the first measured iteration's start to the
// last one's end, over all ranks; the iteration barriers included) / that span.
#include <nlohmann/json.hpp>
#include <vector>

#include "harness/run/results.h"

namespace xdc::run {

// Per rank utilisation (see above) from the ranks' files; `with_prefill` counts PREFILL.
std::vector<double> utilisation(const RankFiles& f, bool with_prefill);
// The mean over ranks of a per-rank figure; 0 for none.
double mean_of(const std::vector<double>& v);

// The prefill fields of a run with prefill from its ranks' files: requests (arrived,
// served, rejected, unfinished), ttft_ms p50/p99/max, utilisation per rank with prefill
// and of the training alone, overruns (waits whose data arrived while a prefill job still
// ran, all ranks) and overrun_ms (the training's delay they caused, summed).
nlohmann::json prefill_json(const RankFiles& f);

// For every run with prefill in `rs` (plan/prefill.h is_prefill_run), its baseline (the
// same schedule without): adds to its `prefill` the baseline's utilisation
// (utilisation_without), iteration time and the training slowdown in percent (mean
// iteration with / without - 1).
void compare_with_baselines(std::vector<ScheduleResult>& rs);

}  // namespace xdc::run
