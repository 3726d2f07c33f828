#include "harness/run/prefill_results.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <string>

#include "harness/plan/prefill.h"

namespace xdc::run {

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

namespace {

// Nearest rank, as ScheduleResult::percentile.
double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t k = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(k, 1, v.size()) - 1];
}
}  // namespace

std::vector<double> utilisation(const RankFiles& f, bool with_prefill) {
  std::vector<double> out;
  if (f.reports.empty()) return out;
  size_t n = SIZE_MAX;
  for (const auto& r : f.reports) n = std::min(n, r.iteration_end_ns.size());
  if (n == 0 || n == SIZE_MAX) return out;
  int64_t begin = INT64_MAX, end = INT64_MIN;
  int ranks = 0;
  for (const auto& r : f.reports) {
    begin = std::min(begin, r.iteration_start_ns[0]);
    end = std::max(end, r.iteration_end_ns[n - 1]);
    ranks = std::max(ranks, r.world_rank + 1);
  }
  if (end <= begin) return out;
  std::vector<int64_t> busy(ranks, 0);
  for (const auto& ev : f.trace.events) {
    const bool counts = sched::is_compute(ev.kind) || ev.kind == sched::Kind::OPT ||
                        (with_prefill && ev.kind == sched::Kind::PREFILL);
    if (!counts || ev.rank < 0 || ev.rank >= ranks) continue;
    busy[ev.rank] += std::max<int64_t>(0, std::min(ev.end_ns, end) - std::max(ev.start_ns, begin));
  }
  for (int64_t b : busy) out.push_back(static_cast<double>(b) / static_cast<double>(end - begin));
  return out;
}

nlohmann::json prefill_json(const RankFiles& f) {
  int64_t arrived = 0, served = 0, rejected = 0, unfinished = 0, overruns = 0;
  double overrun_ms = 0;
  std::vector<double> ttft_ms;
  for (const auto& r : f.reports) {
    if (!r.prefill.is_object()) continue;
    arrived += r.prefill.value("arrived", int64_t{0});
    served += r.prefill.value("served", int64_t{0});
    rejected += r.prefill.value("rejected", int64_t{0});
    unfinished += r.prefill.value("unfinished", int64_t{0});
    overruns += r.prefill.value("overruns", int64_t{0});
    overrun_ms += r.prefill.value("overrun_ns", 0.0) / 1e6;
    for (const auto& t : r.prefill.value("ttft_ns", nlohmann::json::array()))
      ttft_ms.push_back(t.get<double>() / 1e6);
  }
  const std::vector<double> with = utilisation(f, true), training = utilisation(f, false);
  nlohmann::json j = {{"arrived", arrived},
                      {"served", served},
                      {"rejected", rejected},
                      {"unfinished", unfinished},
                      {"overruns", overruns},
                      {"overrun_ms", overrun_ms},
                      {"utilisation_with_per_rank", with},
                      {"utilisation_with", mean_of(with)},
                      {"utilisation_training_per_rank", training},
                      {"utilisation_training", mean_of(training)}};
  if (!ttft_ms.empty()) {
    j["ttft_ms_p50"] = percentile(ttft_ms, 50);
    j["ttft_ms_p99"] = percentile(ttft_ms, 99);
    j["ttft_ms_max"] = *std::max_element(ttft_ms.begin(), ttft_ms.end());
  }
  return j;
}

void compare_with_baselines(std::vector<ScheduleResult>& rs) {
  for (auto& r : rs) {
    std::string base;
    if (!is_prefill_run(r.schedule, &base) || !r.prefill.is_object()) continue;
    for (const auto& b : rs) {
      if (b.schedule != base || b.iteration_s.empty() || r.iteration_s.empty()) continue;
      r.prefill["baseline"] = base;
      r.prefill["utilisation_without_per_rank"] = b.utilisation;
      r.prefill["utilisation_without"] = mean_of(b.utilisation);
      r.prefill["baseline_iteration_s"] = b.mean();
      r.prefill["training_slowdown_pct"] = 100.0 * (r.mean() / b.mean() - 1.0);
    }
  }
}

}  // namespace xdc::run
