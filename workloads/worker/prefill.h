#pragma once
// Inference prefill in pipeline bubbles (BubbleTea: Palak et al., "Improving training time
// and GPU utilization in geo-distributed language model training"): a rank's idle time
// between training actions serves inference prefill requests, placed only where the job
// ends before the rank's next training action is predicted to be able to start, so the
// training is never delayed.
//
// Requests: each world rank draws its own Poisson stream of rate_rps / world_size
// (run_spec.h PrefillSpec; seeded by seed and the world rank, so a run is reproducible and
// the ranks need no coordination), from the start of the first measured iteration to the
// end of the last; prompt lengths fixed, uniform or exponential, capped. A request is a
// prefill of its prompt on one rank, at the cost of that rank's stages' forward per token
// (ns_per_token: the inference model is one GPU's share of the training model, as in
// BubbleTea where the inference model fits one GPU). Modeled compute: the job sleeps.
// Real compute: the job runs the rank's stages' forward over the prompt (whole passes of
// the stage's microbatch shape, the last padded; nothing kept, the training's state
// untouched: compute.h StageCompute::prefill), and the cost per token is measured from the
// jobs run (PrefillSpec::calibrate).
//
// Placement (place() below): at a moment the rank waits, with the training's next action
// predicted ready at R: the oldest queued request whose job ends by R - guard and by its
// own deadline starts now; requests that can no longer end by their deadline are
// rejected; the rest wait. The prediction R is the simulator's (action_start_ns: the start
// of the rank's next compute action in the predicted steady-state iteration, from this
// iteration's measured start) corrected online: the awaited message's measured arrival
// minus its prediction, for the same action in each of the last three iterations, the
// smallest (earliest) of them is added. The iteration barrier's completion is predicted
// alike (the previous iteration's start + iteration_ns, corrected by its errors). Between
// jobs the rank waits on the training's own request with the next arrival as timeout, so a
// message that arrives ends the filling at once.
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "workloads/worker/run_spec.h"
#include "workloads/worker/tracer.h"

namespace xdc::worker {

struct PrefillRequest {
  int id = 0;
  int64_t arrival_ns = 0;
  int tokens = 0;
  int64_t duration_ns = 0;  // tokens x ns_per_token
};

// The placement rule at `now_ns`, the training's next action predicted ready at
// `ready_ns`: `start` is the index in `queue` (arrival order) of the first request with
// now + duration <= ready - guard and now + duration <= arrival + deadline (-1: none
// fits); `expired` the indices of those with now + duration > arrival + deadline (they
// can no longer be served in time), ascending.
struct Placement {
  int start = -1;
  std::vector<int> expired;
};
Placement place(const std::deque<PrefillRequest>& queue, int64_t now_ns, int64_t ready_ns,
                int64_t guard_ns, int64_t deadline_ns);

class PrefillServer {
 public:
  // `run_job(r)` performs request r's job (modeled: a sleep of r.duration_ns; real: the
  // forward over r.tokens).
  PrefillServer(const PrefillSpec& spec, int world_rank, int pipeline_rank, int world_size,
                Tracer& tracer, std::function<void(const PrefillRequest&)> run_job);

  // The iteration starts at `start_ns` (after its barrier); the request stream starts with
  // the first measured one.
  void begin_iteration(int64_t start_ns, bool measured);
  // The ready time predicted for the compute action after the wait at action index
  // `wait_action` (that compute's index is `compute_action`); INT64_MIN when unknown.
  int64_t predicted_ready(int wait_action, int compute_action) const;
  // The awaited message of `wait_action` arrived at `arrival_ns`. Here and at the barrier,
  // data that arrived while a job of the fill before still ran counts as an overrun (the
  // training was delayed by the job's end - arrival; report's overruns, overrun_ns).
  void observe(int wait_action, int compute_action, int64_t arrival_ns);
  // The barrier before the next iteration: predicted completion; observed completion.
  int64_t predicted_barrier() const;
  void observe_barrier(int64_t done_ns);
  // Serves requests until `ready_ns` (see place()); `wait_until(t)` blocks until the
  // training's awaited request completes (true) or t passes (false); it ends the filling
  // as soon as it returns true.
  void fill(int64_t ready_ns, const std::function<bool(int64_t)>& wait_until);
  // End of the run at `end_ns`: queued requests past their deadline count as rejected,
  // the others as unfinished.
  void finish(int64_t end_ns);
  nlohmann::json report() const;  // RankReport::prefill

 private:
  void admit(int64_t now_ns);
  void check_overrun(int64_t arrival_ns);  // the awaited data came while a job ran
  int64_t correction(const std::map<int, std::deque<int64_t>>& errors, int key) const;
  static void remember(std::deque<int64_t>& errors, int64_t e);

  const PrefillSpec& spec_;
  const int pipeline_rank_;
  Tracer& tracer_;
  std::function<void(const PrefillRequest&)> run_job_;
  double ns_per_token_ = 0;
  std::deque<double> measured_ns_per_token_;  // calibrate: the last jobs'
  int64_t cost_tokens(int tokens) const;      // tokens a job computes (pass_tokens)
  void learn(const PrefillRequest& r, int64_t took_ns);
  double mean_gap_ns_ = 0;  // between arrivals
  std::mt19937_64 rng_;
  bool started_ = false, finished_ = false;
  int64_t next_arrival_ns_ = INT64_MAX;
  int next_id_ = 0;
  std::deque<PrefillRequest> queue_;
  int64_t iteration_start_ns_ = 0;
  std::map<int, std::deque<int64_t>> errors_;  // wait action -> last measured errors
  std::deque<int64_t> barrier_errors_;
  int arrived_ = 0, served_ = 0, rejected_ = 0, unfinished_ = 0;
  int64_t busy_ns_ = 0;
  int64_t last_job_end_ns_ = INT64_MIN;  // of the current fill's last job
  int overruns_ = 0;                     // waits whose data arrived while a job still ran
  int64_t overrun_ns_ = 0;               // the training's delay they caused, summed
  std::vector<int64_t> ttft_ns_;
};

}  // namespace xdc::worker
