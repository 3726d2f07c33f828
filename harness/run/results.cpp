#include "harness/run/results.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace xdc::run {
namespace fs = std::filesystem;

void undilate(RankFiles& f, double k) {
  if (k == 1) return;
  auto ns = [k](int64_t t) {
    return static_cast<int64_t>(std::llround(static_cast<double>(t) / k));
  };
  for (auto& ev : f.trace.events) {
    ev.start_ns = ns(ev.start_ns);
    ev.end_ns = ns(ev.end_ns);
  }
  for (auto& rep : f.reports) {
    for (auto& t : rep.iteration_start_ns) t = ns(t);
    for (auto& t : rep.iteration_end_ns) t = ns(t);
    if (rep.waits.is_object())
      for (auto& [cause, v] : rep.waits.items())
        if (v.is_number()) v = v.get<double>() / k;
  }
}

RankFiles read_rank_files(const std::string& run_dir, int world_size, const std::string& name,
                          double time_dilation) {
  RankFiles f;
  f.trace.name = name;
  f.trace.ranks = world_size;
  for (int r = 0; r < world_size; ++r) {
    const fs::path base = fs::path(run_dir) / ("rank" + std::to_string(r));
    std::ifstream tin(base.string() + ".trace.csv");
    if (tin) {
      std::stringstream ss;
      ss << tin.rdbuf();
      try {
        trace::Trace t = trace::from_csv(ss.str());
        f.trace.microbatches = std::max(f.trace.microbatches, t.microbatches);
        f.trace.events.insert(f.trace.events.end(), t.events.begin(), t.events.end());
      } catch (const std::exception&) {
        // A rank killed while writing leaves a torn file: its report says what finished.
      }
    }
    std::ifstream jin(base.string() + ".json");
    worker::RankReport rep;
    bool have = false;
    if (jin) {
      try {
        rep = nlohmann::json::parse(jin).get<worker::RankReport>();
        have = true;
      } catch (const std::exception&) {
      }
    }
    if (have)
      f.reports.push_back(rep);
    else
      f.missing.push_back(r);
  }
  std::sort(f.trace.events.begin(), f.trace.events.end(),
            [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });
  undilate(f, time_dilation);
  return f;
}

std::vector<trace::Trace> split_iterations(const RankFiles& f) {
  std::vector<trace::Trace> out;
  if (f.reports.empty() || !f.missing.empty()) return out;
  size_t n = SIZE_MAX;
  for (auto& r : f.reports) n = std::min(n, r.iteration_end_ns.size());
  for (size_t i = 0; i < n; ++i) {
    trace::Trace t;
    t.name = f.trace.name;
    t.ranks = f.trace.ranks;
    t.microbatches = f.trace.microbatches;
    for (const auto& ev : f.trace.events) {
      const auto& rep = f.reports[ev.rank];
      if (ev.start_ns >= rep.iteration_start_ns[i] && ev.start_ns < rep.iteration_end_ns[i])
        t.events.push_back(ev);
    }
    out.push_back(std::move(t));
  }
  return out;
}

double ScheduleResult::mean() const {
  if (iteration_s.empty()) return 0;
  double s = 0;
  for (double x : iteration_s) s += x;
  return s / static_cast<double>(iteration_s.size());
}

double ScheduleResult::percentile(double p) const {
  if (iteration_s.empty()) return 0;
  std::vector<double> v = iteration_s;
  std::sort(v.begin(), v.end());
  const size_t k = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(k, 1, v.size()) - 1];
}

namespace {
nlohmann::json bubble_json(const trace::BubbleRatios& b) {
  return {{"megatron", b.megatron}, {"zerobubble", b.zerobubble}, {"crosspipe", b.crosspipe}};
}
nlohmann::json num(double x) {
  return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json();
}
}  // namespace

nlohmann::json summary_json(const ScheduleResult& r) {
  nlohmann::json loss = nlohmann::json::array();
  for (double x : r.loss) loss.push_back(num(x));
  nlohmann::json j = {
      {"schedule", r.schedule},
      {"ok", r.ok},
      {"iterations", r.iteration_s.size()},
      {"iteration_s", r.iteration_s},
      {"iteration_s_mean", r.mean()},
      {"iteration_s_p50", r.percentile(50)},
      {"iteration_s_p95", r.percentile(95)},
      {"bubble_ratio", bubble_json(r.bubble)},
      {"simulated_iteration_s", r.simulated_iteration_s},
      {"simulated_bubble_ratio", bubble_json(r.simulated_bubble)},
      {"simulated_costs", r.simulated_costs},
      {"measured_over_simulated",
       r.simulated_iteration_s > 0 ? num(r.mean() / r.simulated_iteration_s) : nlohmann::json()},
      {"tokens_per_s", r.tokens_per_s},
      {"loss", loss},
      {"waits_s_per_iteration", r.waits_s}};
  if (r.peak_flops_per_rank > 0)
    j["mfu"] = {{"value", r.mfu},
                {"peak_flops_per_rank", r.peak_flops_per_rank},
                {"basis", r.modeled_compute ? "modeled" : "measured"}};
  j["tokens_per_s_basis"] = r.modeled_compute ? "modeled" : "measured";
  if (!r.ok) j["error"] = r.error;
  return j;
}

std::string iterations_csv_header() {
  return "schedule,iteration,iteration_s,loss,megatron,zerobubble,crosspipe\n";
}

std::string iterations_csv_rows(const ScheduleResult& r) {
  std::string out;
  for (size_t i = 0; i < r.iteration_s.size(); ++i) {
    const double loss = i < r.loss.size() ? r.loss[i] : NAN;
    const auto& b = i < r.bubbles.size() ? r.bubbles[i] : trace::BubbleRatios{};
    out += fmt::format("{},{},{:.6f},{},{:.4f},{:.4f},{:.4f}\n", r.schedule, i, r.iteration_s[i],
                       std::isfinite(loss) ? fmt::format("{:.6f}", loss) : "", b.megatron,
                       b.zerobubble, b.crosspipe);
  }
  return out;
}

std::string comparison_table(const std::vector<ScheduleResult>& rs) {
  std::string out = fmt::format("{:<18} {:>10} {:>10} {:>10} {:>8} {:>9} {:>9} {:>9} {:>10} {}\n",
                                "schedule", "iter mean", "iter p95", "simulated", "meas/sim",
                                "megatron", "zerobub", "crosspipe", "tokens/s", "loss");
  for (const auto& r : rs) {
    if (!r.ok && r.iteration_s.empty()) {
      out += fmt::format("{:<18} FAILED: {}\n", r.schedule, r.error);
      continue;
    }
    std::string loss;
    std::vector<double> finite;
    for (double x : r.loss)
      if (std::isfinite(x)) finite.push_back(x);
    if (!finite.empty()) loss = fmt::format("{:.3f} -> {:.3f}", finite.front(), finite.back());
    out += fmt::format(
        "{:<18} {:>8.3f} s {:>8.3f} s {:>8.3f} s {:>8.3f} {:>8.1f}% {:>8.1f}% {:>8.1f}% {:>10.0f} "
        "{}{}\n",
        r.schedule, r.mean(), r.percentile(95), r.simulated_iteration_s,
        r.simulated_iteration_s > 0 ? r.mean() / r.simulated_iteration_s : 0.0,
        100 * r.bubble.megatron, 100 * r.bubble.zerobubble, 100 * r.bubble.crosspipe,
        r.tokens_per_s, loss, r.ok ? "" : "  (FAILED: " + r.error + ")");
  }
  return out;
}

}  // namespace xdc::run
