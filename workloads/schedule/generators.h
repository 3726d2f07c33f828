#pragma once
// Schedule generators, by name: gpipe, 1f1b, interleaved, zbh1, zbh2, zbv, overlap,
// crosspipe-greedy, optimal, dhelix. Each returns a complete Schedule (schedule.h) that passes
// validate(); bad parameters throw std::invalid_argument naming the parameter.
#include <string>
#include <vector>

#include "workloads/schedule/params.h"
#include "workloads/schedule/schedule.h"

namespace xdc::sched {

const std::vector<std::string>& schedule_names();
Schedule generate(const std::string& name, const Params& p);

// Generalised 1F1B compute order: rank r runs warmup[r] forwards, then alternates F and
// backward, then drains. Deadlock-free when warmup is non-increasing in r.
std::vector<std::vector<Action>> one_f_one_b_order(int ranks, int microbatches,
                                                   const std::vector<int>& warmup);

// Warm-up forwards per rank of `overlap` (1F1B's p-r-1 plus the WAN round trip).
std::vector<int> overlap_warmup(const Params& p);

// Individual generators (generate() dispatches to these).
Schedule gen_gpipe(const Params& p);
Schedule gen_1f1b(const Params& p);
Schedule gen_interleaved(const Params& p);
Schedule gen_zbh1(const Params& p);
Schedule gen_zbh2(const Params& p);
Schedule gen_zbv(const Params& p);
Schedule gen_overlap(const Params& p);
Schedule gen_crosspipe_greedy(const Params& p);
Schedule gen_optimal(const Params& p);
Schedule gen_dhelix(const Params& p);

}  // namespace xdc::sched
