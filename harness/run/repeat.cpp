#include "harness/run/repeat.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <functional>
#include <stdexcept>

namespace xdc::run {

double t975(int df) {
  static constexpr std::array<double, 30> kTable = {
      12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
      2.2010,  2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
      2.0796,  2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423};
  if (df < 1) throw std::invalid_argument(fmt::format("t975: {} degrees of freedom", df));
  if (df <= static_cast<int>(kTable.size())) return kTable[df - 1];
  // Cornish-Fisher: t = z + g1/v + g2/v^2 + g3/v^3 around the normal quantile z.
  const double z = 1.959963984540054, v = df;
  const double z3 = z * z * z, z5 = z3 * z * z, z7 = z5 * z * z;
  const double g1 = (z3 + z) / 4, g2 = (5 * z5 + 16 * z3 + 3 * z) / 96;
  const double g3 = (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / 384;
  return z + g1 / v + g2 / (v * v) + g3 / (v * v * v);
}

std::optional<MeanCi> mean_ci95(const std::vector<double>& xs) {
  double sum = 0;
  int n = 0;
  for (double x : xs)
    if (std::isfinite(x)) {
      sum += x;
      ++n;
    }
  if (n < 2) return std::nullopt;
  MeanCi c;
  c.mean = sum / n;
  double ss = 0;
  for (double x : xs)
    if (std::isfinite(x)) ss += (x - c.mean) * (x - c.mean);
  c.sd = std::sqrt(ss / (n - 1));
  const double h = t975(n - 1) * c.sd / std::sqrt(static_cast<double>(n));
  c.low = c.mean - h;
  c.high = c.mean + h;
  return c;
}

Spread spread(const ScheduleResult& r) {
  int measured = 0;
  for (double m : r.run_means_s) measured += std::isfinite(m) ? 1 : 0;
  Spread s;
  s.over_runs = measured >= 2;
  s.ci = mean_ci95(s.over_runs ? r.run_means_s : r.iteration_s);
  return s;
}

std::vector<RunSlot> run_order(size_t schedules, int repeats) {
  std::vector<RunSlot> out;
  for (int k = 0; k < repeats; ++k)
    for (size_t i = 0; i < schedules; ++i) out.push_back({k, i});
  return out;
}

std::string run_subdir(const std::string& name, int k, int n) {
  return n == 1 ? name : fmt::format("{}/repeat-{}", name, k);
}

namespace {

double mean_of(const std::vector<double>& xs) {
  double s = 0;
  for (double x : xs) s += x;
  return xs.empty() ? NAN : s / static_cast<double>(xs.size());
}

// The mean of `get` over the runs that were predicted (simulated_iteration_s > 0); 0 when
// none was.
template <class Get>
double predicted_mean(const std::vector<ScheduleResult>& runs, Get get) {
  double s = 0;
  int n = 0;
  for (const auto& r : runs)
    if (r.simulated_iteration_s > 0) {
      s += get(r);
      ++n;
    }
  return n ? s / n : 0;
}

// Run k's iterations, loss, series and changes appended to `out` (the changes and series
// shifted by `offset_s`, the end of what is already there).
void append_run(ScheduleResult& out, const ScheduleResult& r, int k, bool with_loss) {
  double offset_s = 0;
  if (!out.series.empty() && !out.iteration_s.empty())
    offset_s = out.series.back().start_s + out.iteration_s.back();
  const size_t n = r.iteration_s.size();
  out.iteration_s.insert(out.iteration_s.end(), r.iteration_s.begin(), r.iteration_s.end());
  out.bubbles.insert(out.bubbles.end(), r.bubbles.begin(), r.bubbles.end());
  out.iteration_repeat.insert(out.iteration_repeat.end(), n, k);
  if (with_loss)
    for (size_t i = 0; i < n; ++i) out.loss.push_back(i < r.loss.size() ? r.loss[i] : NAN);
  for (auto pt : r.series) {
    pt.start_s += offset_s;
    out.series.push_back(std::move(pt));
  }
  for (auto c : r.changes) {
    c.t_s += offset_s;
    out.changes.push_back(std::move(c));
  }
}

// Waits per iteration by cause, weighted by each run's measured iterations.
nlohmann::json pooled_waits(const std::vector<ScheduleResult>& runs, size_t iterations) {
  nlohmann::json out = nlohmann::json::object();
  if (iterations == 0) return out;
  for (const auto& r : runs) {
    if (!r.waits_s.is_object() || r.iteration_s.empty()) continue;
    const double w = static_cast<double>(r.iteration_s.size()) / static_cast<double>(iterations);
    for (auto& [cause, v] : r.waits_s.items())
      if (v.is_number()) out[cause] = out.value(cause, 0.0) + w * v.get<double>();
  }
  return out;
}

// The repeats' counts summed (`tcp`, `tp_stalls`: numbers at any depth); null when a repeat
// has none.
nlohmann::json summed_counts(const std::vector<ScheduleResult>& runs,
                             nlohmann::json ScheduleResult::*counts) {
  nlohmann::json out;
  std::function<void(nlohmann::json&, const nlohmann::json&)> add = [&](nlohmann::json& to,
                                                                        const nlohmann::json& x) {
    if (x.is_number()) {
      to = (to.is_number() ? to.get<int64_t>() : 0) + x.get<int64_t>();
      return;
    }
    for (const auto& [key, value] : x.items()) add(to[key], value);
  };
  for (const auto& r : runs) {
    if (!(r.*counts).is_object()) return nullptr;
    add(out, r.*counts);
  }
  return out;
}

}  // namespace

ScheduleResult pool_repeats(const std::vector<ScheduleResult>& runs,
                            const std::vector<int>& repeat) {
  if (runs.empty()) throw std::invalid_argument("pool_repeats: no runs");
  if (!repeat.empty() && repeat.size() != runs.size())
    throw std::invalid_argument("pool_repeats: one repeat index per run");
  size_t base_k = 0;
  while (base_k < runs.size() && runs[base_k].iteration_s.empty()) ++base_k;
  if (base_k == runs.size()) base_k = 0;
  const ScheduleResult& base = runs[base_k];
  ScheduleResult out = base;
  out.repeats = static_cast<int>(runs.size());
  out.ok = true;
  out.error.clear();
  for (auto* v : {&out.iteration_s, &out.loss, &out.run_means_s}) v->clear();
  out.bubbles.clear();
  out.series.clear();
  out.changes.clear();
  out.run_seeds.clear();
  out.iteration_repeat.clear();
  bool with_loss = false;
  for (const auto& r : runs) with_loss = with_loss || !r.loss.empty();
  for (size_t i = 0; i < runs.size(); ++i) {
    const ScheduleResult& r = runs[i];
    const int k = repeat.empty() ? static_cast<int>(i) : repeat[i];
    if (!r.ok) {
      out.ok = false;
      out.error += fmt::format("{}repeat {}: {}", out.error.empty() ? "" : "; ", k, r.error);
    }
    append_run(out, r, k, with_loss);
    out.run_means_s.push_back(r.iteration_s.empty() ? NAN : mean_of(r.iteration_s));
    out.run_seeds.insert(out.run_seeds.end(), r.run_seeds.begin(), r.run_seeds.end());
    out.clock_offset_max_us = std::max(out.clock_offset_max_us, r.clock_offset_max_us);
    out.clock_residual_us = std::max(out.clock_residual_us, r.clock_residual_us);
  }
  out.bubble = {};
  for (const auto& b : out.bubbles) {
    const double n = static_cast<double>(out.bubbles.size());
    out.bubble.megatron += b.megatron / n;
    out.bubble.zerobubble += b.zerobubble / n;
    out.bubble.crosspipe += b.crosspipe / n;
  }
  out.waits_s = pooled_waits(runs, out.iteration_s.size());
  out.tcp = summed_counts(runs, &ScheduleResult::tcp);
  out.tp_stalls = summed_counts(runs, &ScheduleResult::tp_stalls);
  // tokens/s and MFU are (constant) / mean iteration: the base run's, rescaled.
  if (const double m = out.mean(); m > 0 && base.mean() > 0) {
    out.tokens_per_s = base.tokens_per_s * base.mean() / m;
    out.mfu = base.mfu * base.mean() / m;
  }
  using R = const ScheduleResult&;
  out.simulated_iteration_s = predicted_mean(runs, [](R r) { return r.simulated_iteration_s; });
  out.simulated_band_s = {predicted_mean(runs, [](R r) { return r.simulated_band_s[0]; }),
                          predicted_mean(runs, [](R r) { return r.simulated_band_s[1]; })};
  out.simulated_steady_iteration_s =
      predicted_mean(runs, [](R r) { return r.simulated_steady_iteration_s; });
  out.simulated_mfu = predicted_mean(runs, [](R r) { return r.simulated_mfu; });
  for (size_t k = 0; k < base.simulated_utilisation.size(); ++k)
    out.simulated_utilisation[k] = predicted_mean(runs, [k](R r) {
      return k < r.simulated_utilisation.size() ? r.simulated_utilisation[k] : 0.0;
    });
  out.simulated_bubble.megatron =
      predicted_mean(runs, [](R r) { return r.simulated_bubble.megatron; });
  out.simulated_bubble.zerobubble =
      predicted_mean(runs, [](R r) { return r.simulated_bubble.zerobubble; });
  out.simulated_bubble.crosspipe =
      predicted_mean(runs, [](R r) { return r.simulated_bubble.crosspipe; });
  return out;
}

void add_spread_json(nlohmann::json& j, const ScheduleResult& r) {
  auto num = [](double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(); };
  nlohmann::json means = nlohmann::json::array();
  for (double m : r.run_means_s) means.push_back(num(m));
  const Spread s = spread(r);
  j["repeats"] = r.repeats;
  j["run_means_s"] = means;
  j["run_seeds"] = r.run_seeds;
  j["iteration_s_ci95"] = s.ci ? nlohmann::json::array({s.ci->low, s.ci->high}) : nlohmann::json();
  j["iteration_s_sd"] = s.ci ? nlohmann::json(s.ci->sd) : nlohmann::json();
}

std::string ci_comparison(const std::vector<ScheduleResult>& rs) {
  std::vector<std::pair<const ScheduleResult*, MeanCi>> with;
  for (const auto& r : rs)
    if (const Spread s = spread(r); s.over_runs && s.ci) with.emplace_back(&r, *s.ci);
  if (with.size() < 2) return "";
  std::string out;
  for (size_t a = 0; a < with.size(); ++a)
    for (size_t b = a + 1; b < with.size(); ++b) {
      const auto& [ra, ca] = with[a];
      const auto& [rb, cb] = with[b];
      if (ca.high < cb.low)
        out += fmt::format("{} faster than {}: CIs separate\n", ra->schedule, rb->schedule);
      else if (cb.high < ca.low)
        out += fmt::format("{} faster than {}: CIs separate\n", rb->schedule, ra->schedule);
      else
        out += fmt::format("{} vs {}: not distinguishable at 95%\n", ra->schedule, rb->schedule);
    }
  return out;
}

}  // namespace xdc::run
