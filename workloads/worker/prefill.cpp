#include "workloads/worker/prefill.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <stdexcept>

#include "workloads/worker/comm.h"

namespace xdc::worker {

namespace {
constexpr size_t kErrorWindow = 3;  // iterations remembered per wait
}

Placement place(const std::deque<PrefillRequest>& queue, int64_t now_ns, int64_t ready_ns,
                int64_t guard_ns, int64_t deadline_ns) {
  Placement p;
  for (int i = 0; i < static_cast<int>(queue.size()); ++i) {
    const PrefillRequest& r = queue[i];
    const int64_t end = now_ns + r.duration_ns;
    if (end > r.arrival_ns + deadline_ns) {
      p.expired.push_back(i);
      continue;
    }
    if (p.start < 0 && end <= ready_ns - guard_ns) p.start = i;
  }
  return p;
}

PrefillServer::PrefillServer(const PrefillSpec& spec, int world_rank, int pipeline_rank,
                             int world_size, Tracer& tracer,
                             std::function<void(const PrefillRequest&)> run_job)
    : spec_(spec),
      pipeline_rank_(pipeline_rank),
      tracer_(tracer),
      run_job_(std::move(run_job)),
      rng_(spec.seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(world_rank) + 1) {
  if (pipeline_rank < static_cast<int>(spec.ns_per_token.size()))
    ns_per_token_ = spec.ns_per_token[pipeline_rank];
  if (spec.rate_rps <= 0 || world_size <= 0)
    throw std::runtime_error("prefill: rate_rps must be > 0");
  mean_gap_ns_ = 1e9 * world_size / spec.rate_rps;
  if (spec.dist != "fixed" && spec.dist != "uniform" && spec.dist != "exponential")
    throw std::runtime_error("prefill: unknown prompt distribution \"" + spec.dist + "\"");
}

void PrefillServer::begin_iteration(int64_t start_ns, bool measured) {
  iteration_start_ns_ = start_ns;
  if (measured && !started_) {
    started_ = true;
    next_arrival_ns_ =
        start_ns +
        static_cast<int64_t>(std::exponential_distribution<double>(1.0)(rng_) * mean_gap_ns_);
  }
}

void PrefillServer::admit(int64_t now_ns) {
  while (started_ && !finished_ && next_arrival_ns_ <= now_ns) {
    PrefillRequest r;
    r.id = next_id_++;
    r.arrival_ns = next_arrival_ns_;
    double t = spec_.mean_tokens;
    if (spec_.dist == "uniform")
      t = std::uniform_real_distribution<double>(1, 2 * spec_.mean_tokens)(rng_);
    else if (spec_.dist == "exponential")
      t = std::exponential_distribution<double>(1.0 / spec_.mean_tokens)(rng_);
    r.tokens = std::clamp(static_cast<int>(t), 1, std::max(1, spec_.max_tokens));
    r.duration_ns = static_cast<int64_t>(std::llround(cost_tokens(r.tokens) * ns_per_token_));
    queue_.push_back(r);
    ++arrived_;
    next_arrival_ns_ +=
        static_cast<int64_t>(std::exponential_distribution<double>(1.0)(rng_) * mean_gap_ns_);
  }
}

int64_t PrefillServer::cost_tokens(int tokens) const {
  if (spec_.pass_tokens <= 0) return tokens;
  const int64_t pass = spec_.pass_tokens;
  return (tokens + pass - 1) / pass * pass;
}

void PrefillServer::learn(const PrefillRequest& r, int64_t took_ns) {
  measured_ns_per_token_.push_back(static_cast<double>(took_ns) /
                                   static_cast<double>(cost_tokens(r.tokens)));
  if (measured_ns_per_token_.size() > 8) measured_ns_per_token_.pop_front();
  ns_per_token_ = *std::max_element(measured_ns_per_token_.begin(), measured_ns_per_token_.end());
  for (PrefillRequest& q : queue_)
    q.duration_ns = static_cast<int64_t>(std::llround(cost_tokens(q.tokens) * ns_per_token_));
}

int64_t PrefillServer::correction(const std::map<int, std::deque<int64_t>>& errors, int key) const {
  auto it = errors.find(key);
  if (it == errors.end() || it->second.empty()) return 0;
  return *std::min_element(it->second.begin(), it->second.end());
}

void PrefillServer::remember(std::deque<int64_t>& errors, int64_t e) {
  errors.push_back(e);
  if (errors.size() > kErrorWindow) errors.pop_front();
}

int64_t PrefillServer::predicted_ready(int wait_action, int compute_action) const {
  if (pipeline_rank_ >= static_cast<int>(spec_.action_start_ns.size())) return INT64_MIN;
  const auto& starts = spec_.action_start_ns[pipeline_rank_];
  if (compute_action < 0 || compute_action >= static_cast<int>(starts.size()) ||
      starts[compute_action] < 0)
    return INT64_MIN;
  return iteration_start_ns_ + starts[compute_action] + correction(errors_, wait_action);
}

void PrefillServer::check_overrun(int64_t arrival_ns) {
  if (last_job_end_ns_ != INT64_MIN && arrival_ns < last_job_end_ns_) {
    ++overruns_;
    overrun_ns_ += last_job_end_ns_ - arrival_ns;
  }
  last_job_end_ns_ = INT64_MIN;
}

void PrefillServer::observe(int wait_action, int compute_action, int64_t arrival_ns) {
  check_overrun(arrival_ns);
  if (pipeline_rank_ >= static_cast<int>(spec_.action_start_ns.size())) return;
  const auto& starts = spec_.action_start_ns[pipeline_rank_];
  if (compute_action < 0 || compute_action >= static_cast<int>(starts.size()) ||
      starts[compute_action] < 0)
    return;
  remember(errors_[wait_action], arrival_ns - (iteration_start_ns_ + starts[compute_action]));
}

int64_t PrefillServer::predicted_barrier() const {
  if (spec_.iteration_ns <= 0 || iteration_start_ns_ <= 0) return INT64_MIN;
  const int64_t c = barrier_errors_.empty()
                        ? 0
                        : *std::min_element(barrier_errors_.begin(), barrier_errors_.end());
  return iteration_start_ns_ + spec_.iteration_ns + c;
}

void PrefillServer::observe_barrier(int64_t done_ns) {
  check_overrun(done_ns);
  if (spec_.iteration_ns <= 0 || iteration_start_ns_ <= 0) return;
  remember(barrier_errors_, done_ns - (iteration_start_ns_ + spec_.iteration_ns));
}

void PrefillServer::fill(int64_t ready_ns, const std::function<bool(int64_t)>& wait_until) {
  last_job_end_ns_ = INT64_MIN;
  if (!started_ || finished_ || ready_ns == INT64_MIN) return;
  for (;;) {
    const int64_t now = now_ns();
    if (wait_until(now)) return;  // the training's input is there: its turn
    admit(now);
    const Placement p = place(queue_, now, ready_ns, spec_.guard_ns, spec_.deadline_ns);
    int start = p.start;
    for (auto it = p.expired.rbegin(); it != p.expired.rend(); ++it) {
      queue_.erase(queue_.begin() + *it);
      ++rejected_;
      if (start > *it) --start;
    }
    if (start >= 0) {
      const PrefillRequest r = queue_[start];
      queue_.erase(queue_.begin() + start);
      const int64_t t0 = now_ns();
      run_job_(r);
      const int64_t t1 = now_ns();
      if (spec_.calibrate) learn(r, t1 - t0);
      tracer_.record(sched::Kind::PREFILL, -1, -1, t0, t1, r.tokens);
      ++served_;
      busy_ns_ += t1 - t0;
      last_job_end_ns_ = t1;
      ttft_ns_.push_back(t1 - r.arrival_ns);
      continue;
    }
    // Nothing fits now: wait for the next arrival while the gap lasts.
    if (next_arrival_ns_ >= ready_ns - spec_.guard_ns) return;
    if (wait_until(next_arrival_ns_)) return;
  }
}

void PrefillServer::finish(int64_t end_ns) {
  if (finished_) return;
  admit(end_ns);
  finished_ = true;
  for (const PrefillRequest& r : queue_) {
    if (end_ns > r.arrival_ns + spec_.deadline_ns)
      ++rejected_;
    else
      ++unfinished_;
  }
  queue_.clear();
}

nlohmann::json PrefillServer::report() const {
  return {{"arrived", arrived_},       {"served", served_},        {"rejected", rejected_},
          {"unfinished", unfinished_}, {"busy_ns", busy_ns_},      {"ttft_ns", ttft_ns_},
          {"overruns", overruns_},     {"overrun_ns", overrun_ns_}};
}

}  // namespace xdc::worker
