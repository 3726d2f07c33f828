#include "harness/report/answer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "harness/report/html.h"

namespace xdc::report {

namespace {

// The figure the answer ranks by: the measured mean, or in a simulation the prediction.
std::optional<double> time_of(const ScheduleData& s, bool simulated) {
  return simulated ? s.simulated_iteration_s : s.iteration_s_mean;
}

// "999.8 ms per iteration (95% CI 956.9–1043 ms, 3 runs)"; a prediction with a band
// (random loss) "... (90% band ...)".
std::string figure(const ScheduleData& s, bool simulated) {
  std::string out = seconds_text(*time_of(s, simulated)) + " per iteration";
  if (simulated && s.simulated_band_s && s.simulated_band_s->first < s.simulated_band_s->second)
    out += " (90% band " +
           seconds_range_text(s.simulated_band_s->first, s.simulated_band_s->second, "–",
                              *time_of(s, simulated)) +
           ")";
  if (!simulated && s.has_ci())
    out += fmt::format(" (95% CI {}, {} runs)",
                       seconds_range_text(s.iteration_s_ci95->first, s.iteration_s_ci95->second,
                                          "–", *time_of(s, simulated)),
                       s.measured_runs());
  return out;
}

bool intervals_overlap(const ScheduleData& a, const ScheduleData& b) {
  return a.has_ci() && b.has_ci() && a.iteration_s_ci95->second >= b.iteration_s_ci95->first &&
         b.iteration_s_ci95->second >= a.iteration_s_ci95->first;
}

// The fastest (ranked[0]) against the slowest and the next: "0.70x of 1f1b and 0.93x of
// overlap (95% CIs overlap)"; the overlap says the order of the two is not settled.
std::string against_others(const std::vector<const ScheduleData*>& ranked, bool simulated) {
  const ScheduleData& best = *ranked[0];
  auto ratio = [&](const ScheduleData& o) {
    return fmt::format("{:.2f}x of {}", *time_of(best, simulated) / *time_of(o, simulated), o.name);
  };
  const ScheduleData &next = *ranked[1], &last = *ranked.back();
  std::string out = ratio(last);
  if (&next != &last) out += " and " + ratio(next);
  return out + (!simulated && intervals_overlap(best, next) ? " (95% CIs overlap)" : "");
}

// "measured means within 4.7% of the predictions"; "" when no schedule has both.
std::string prediction_clause(const std::vector<const ScheduleData*>& ran) {
  double worst = -1;
  int pairs = 0;
  for (const ScheduleData* s : ran) {
    if (!s->simulated_iteration_s) continue;
    ++pairs;
    worst = std::max(worst, std::fabs(*s->iteration_s_mean / *s->simulated_iteration_s - 1));
  }
  if (pairs == 0) return "";
  return fmt::format("{} within {:.1f}% of the prediction{}",
                     pairs == 1 ? "the measured mean" : "measured means", 100 * worst,
                     pairs == 1 ? "" : "s");
}

std::string names(const std::vector<std::string>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i)
    out += (i == 0 ? "" : i + 1 == v.size() ? " and " : ", ") + v[i];
  return out;
}

}  // namespace

std::string answer_sentence(const RunData& d) {
  const bool sim = d.simulated_only;
  std::vector<const ScheduleData*> ran;
  std::vector<std::string> failed, nothing, not_run;
  for (const ScheduleData& s : d.schedules) {
    if (s.ok && time_of(s, sim))
      ran.push_back(&s);
    else
      (s.ok ? nothing : s.not_run() ? not_run : failed).push_back(s.name);
  }
  std::stable_sort(ran.begin(), ran.end(), [sim](const ScheduleData* a, const ScheduleData* b) {
    return *time_of(*a, sim) < *time_of(*b, sim);
  });
  std::vector<std::string> parts;
  if (d.schedules.empty())
    parts.push_back("No schedule ran");
  else if (ran.empty())
    parts.push_back(sim ? "No schedule could be simulated" : "No schedule measured an iteration");
  else if (d.schedules.size() == 1)
    parts.push_back(ran[0]->name + ": " + figure(*ran[0], sim));
  else if (ran.size() == 1)
    parts.push_back(ran[0]->name + " is the only schedule " + (sim ? "predicted" : "measured") +
                    ": " + figure(*ran[0], sim));
  else
    parts.push_back(ran[0]->name + (sim ? " is predicted fastest: " : " is fastest: ") +
                    figure(*ran[0], sim) + ", " + against_others(ran, sim));
  if (!failed.empty()) parts.push_back(names(failed) + " failed");
  if (!not_run.empty()) parts.push_back(names(not_run) + " not run");
  if (!nothing.empty())
    parts.push_back(names(nothing) + (sim ? " predicted nothing" : " measured no iteration"));
  if (!sim)
    if (std::string p = prediction_clause(ran); !p.empty()) parts.push_back(p);
  std::string out = fmt::format("{}", fmt::join(parts, "; ")) + ".";
  if (sim) out = "Simulation only, nothing measured: " + out;
  if (d.interrupted) out = "Stopped before every schedule ran: " + out;
  return out;
}

}  // namespace xdc::report
