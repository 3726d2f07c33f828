#include "harness/report/table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

#include "harness/report/html.h"

namespace xdc::report {

namespace {

struct Column {
  std::string head, title;                               // header text and its tooltip
  std::function<std::string(const ScheduleData&)> cell;  // "" = no value
  bool numeric = true;
  bool pipeline = false;  // a figure of xdc-worker's pipeline (none for a `workload:` run)
};

std::string opt_seconds(const std::optional<double>& v) {
  return v ? seconds_text(*v) : "";
}

// The measured value with the simulator's under it ("sim ...") when both exist; a
// simulation has only the latter, as the value.
std::string with_sim(const ScheduleData& s, double trace::BubbleRatios::*field,
                     std::string (*text)(double)) {
  std::string out;
  if (s.bubble) out = escape(text((*s.bubble).*field));
  if (s.simulated_bubble) {
    const std::string sim = escape(text((*s.simulated_bubble).*field));
    out += out.empty() ? sim : "<br><span class=\"sim\">sim " + sim + "</span>";
  }
  return out;
}
// Megatron's bubble is a multiple of the compute ("1.99 x"); the idle shares are in %.
std::string computes_text(double x) {
  return fixed(x, 2) + " x";
}
std::string share_text(double x) {
  return percent(x);
}

std::string mean_cell(const ScheduleData& s) {
  std::string c = escape(opt_seconds(s.iteration_s_mean));
  if (s.has_ci())
    c +=
        fmt::format("<br><span class=\"sim\">95% CI {}, {} runs</span>",
                    escape(seconds_range_text(s.iteration_s_ci95->first, s.iteration_s_ci95->second,
                                              "–", s.iteration_s_mean.value_or(NAN))),
                    s.measured_runs());
  return c;
}

// The prediction, with its band when it has a width (random loss).
std::string simulated_cell(const ScheduleData& s) {
  std::string c = escape(opt_seconds(s.simulated_iteration_s));
  if (s.simulated_band_s && s.simulated_band_s->first < s.simulated_band_s->second)
    c += "<br><span class=\"sim\">90% band " +
         escape(seconds_range_text(s.simulated_band_s->first, s.simulated_band_s->second, "–",
                                   s.simulated_iteration_s.value_or(NAN))) +
         "</span>";
  return c;
}

std::string agreement_cell(const ScheduleData& s) {
  using A = ScheduleData::Agreement;
  switch (s.agreement()) {
    case A::kInBand:
      return "<span class=\"good\">in band</span>";
    case A::kOutsideBand:
      return "<span class=\"bad\">outside band</span>";
    case A::kInCi:
      return "<span class=\"good\">in CI</span>";
    case A::kOutsideCi:
      return "<span class=\"bad\">outside CI</span>";
    case A::kNone:
      break;
  }
  return "";
}

std::string mfu_cell(const ScheduleData& s) {
  std::string c;
  if (s.mfu) c = escape(percent(*s.mfu, 2));
  if (s.simulated_mfu)
    c += (c.empty() ? "" : "<br>") + std::string("<span class=\"sim\">sim ") +
         escape(percent(*s.simulated_mfu, 2)) + "</span>";
  return c;
}

std::string json_number(const nlohmann::json& j, const char* key, int decimals) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return "-";
  return fixed(j[key].get<double>(), decimals);
}

}  // namespace

std::string comparison_table_html(const RunData& d) {
  const bool sim_only = d.simulated_only;
  std::vector<Column> cols = {
      {"schedule", "", [](const ScheduleData& s) { return escape(s.name); }, false},
      {"measured mean",
       "mean over the measured iterations (with repeats: over every run's, and the 95% "
       "confidence interval of the mean over the runs' means)",
       mean_cell},
      {"p50 / p95", "measured median and 95th percentile",
       [](const ScheduleData& s) -> std::string {
         if (!s.iteration_s_p50 || !s.iteration_s_p95) return "";
         return escape(seconds_range_text(*s.iteration_s_p50, *s.iteration_s_p95, " / "));
       }},
      {sim_only ? "iteration (simulated)" : "simulated",
       "the simulator's prediction of the mean iteration, with its 90% band over runs whose "
       "random losses fall differently (none shown: deterministic, no random loss)",
       simulated_cell},
      {"meas / sim", "measured mean / simulated",
       [](const ScheduleData& s) -> std::string {
         if (!s.iteration_s_mean || !s.simulated_iteration_s) return "";
         return escape(fixed(*s.iteration_s_mean / *s.simulated_iteration_s, 2));
       }},
      {"agreement",
       "in band: the measured mean inside the prediction's 90% band (a WAN with random loss); "
       "in CI: a deterministic prediction inside the measured mean's 95% confidence interval",
       agreement_cell, false},
      {"bubble/comp", "Megatron's bubble: (iteration - max compute) / max compute, in computes",
       [](const ScheduleData& s) {
         return with_sim(s, &trace::BubbleRatios::megatron, computes_text);
       },
       true, true},
      {"idle ZB", "ZeroBubble's: (span - compute) / span of the rank with the longest span",
       [](const ScheduleData& s) {
         return with_sim(s, &trace::BubbleRatios::zerobubble, share_text);
       },
       true, true},
      {"idle CP", "CrossPipe's: mean over ranks of idle / total from the first F",
       [](const ScheduleData& s) {
         return with_sim(s, &trace::BubbleRatios::crosspipe, share_text);
       },
       true, true},
      {"tokens/s",
       "tokens per iteration over the mean iteration time (modeled: the compute in it is modeled)",
       [](const ScheduleData& s) -> std::string {
         if (!s.tokens_per_s) return "";
         return escape(si_text(*s.tokens_per_s)) +
                (s.modeled ? "<br><span class=\"sim\">modeled compute</span>" : "");
       },
       true, true},
      {"MFU",
       "model FLOPs utilisation against the peak per rank said under the table (sim: the "
       "simulated iteration's, modeled)",
       mfu_cell, true, true},
  };
  std::vector<bool> used(cols.size(), false);
  used[0] = true;
  for (const auto& s : d.schedules)
    for (size_t c = 1; c < cols.size(); ++c)
      if (!cols[c].cell(s).empty()) used[c] = true;
  if (d.recorded && d.recorded->workload)  // the program's step: no pipeline of xdc's ran
    for (size_t c = 0; c < cols.size(); ++c)
      if (cols[c].pipeline) used[c] = false;

  // The fastest schedule, measured and simulated, in bold (when there is a choice).
  std::optional<double> best_mean, best_sim;
  for (const auto& s : d.schedules) {
    if (!s.ok || d.schedules.size() < 2) continue;
    if (s.iteration_s_mean) best_mean = std::min(best_mean.value_or(1e300), *s.iteration_s_mean);
    if (s.simulated_iteration_s)
      best_sim = std::min(best_sim.value_or(1e300), *s.simulated_iteration_s);
  }
  auto best = [](const std::optional<double>& v, const std::optional<double>& b) {
    return v && b && *v == *b;
  };

  std::string out = "<table class=\"cmp\"><thead><tr>";
  for (size_t c = 0; c < cols.size(); ++c)
    if (used[c])
      out += fmt::format("<th title=\"{}\">{}</th>", escape(cols[c].title), escape(cols[c].head));
  out += "</tr></thead><tbody>";
  for (const auto& s : d.schedules) {
    out += s.ok ? "<tr>" : "<tr class=\"failed\">";
    for (size_t c = 0; c < cols.size(); ++c) {
      if (!used[c]) continue;
      std::string v = cols[c].cell(s);
      if (c == 0 && !s.ok) v += s.not_run() ? " (not run)" : " <span class=\"bad\">failed</span>";
      if (s.ok && ((c == 1 && best(s.iteration_s_mean, best_mean)) ||
                   (c == 3 && best(s.simulated_iteration_s, best_sim))))
        v.insert(std::min(v.find("<br>"), v.size()), "</b>"), v.insert(0, "<b>");
      out +=
          fmt::format("<td{}>{}</td>", cols[c].numeric ? " class=\"n\"" : "", v.empty() ? "-" : v);
    }
    out += "</tr>";
    if (!s.ok && !s.error.empty())
      out += fmt::format("<tr class=\"failed\"><td colspan=\"{}\" class=\"err\">{}</td></tr>",
                         std::count(used.begin(), used.end(), true), escape(s.error));
  }
  return out + "</tbody></table>";
}

std::string waits_table_html(const RunData& d) {
  std::vector<std::string> causes;
  for (const auto& s : d.schedules)
    for (const auto& [c, v] : s.waits_s)
      if (std::find(causes.begin(), causes.end(), c) == causes.end()) causes.push_back(c);
  if (causes.empty()) return "";
  std::string out = "<table class=\"waits\"><thead><tr><th>schedule</th>";
  for (const auto& c : causes) out += "<th>" + escape(c) + "</th>";
  out += "</tr></thead><tbody>";
  for (const auto& s : d.schedules) {
    if (s.waits_s.empty()) continue;
    out += "<tr><td>" + escape(s.name) + "</td>";
    for (const auto& c : causes) {
      auto it = std::find_if(s.waits_s.begin(), s.waits_s.end(),
                             [&](const auto& w) { return w.first == c; });
      out += "<td class=\"n\">" + (it == s.waits_s.end() ? "-" : escape(seconds_text(it->second))) +
             "</td>";
    }
    out += "</tr>";
  }
  return out + "</tbody></table>";
}

std::string link_table_html(const nlohmann::json& check) {
  std::string out =
      "<table class=\"links\"><thead><tr><th>link</th><th>delay ms<br><span "
      "class=\"sim\">configured</span></th><th>jitter ms<br><span "
      "class=\"sim\">configured</span></th><th>loss %<br><span "
      "class=\"sim\">configured</span></th><th>rate Mbit/s<br><span "
      "class=\"sim\">configured</span></th><th>base RTT ms</th><th>RTT median ms</th><th>RTT "
      "stdev ms</th><th>goodput Mbit/s</th><th>N flows Mbit/s</th><th>loss "
      "%</th><th>ok</th></tr></thead><tbody>";
  if (!check.is_object() || !check.contains("links") || !check["links"].is_array())
    return out + "</tbody></table>";
  for (const auto& l : check["links"]) {
    if (!l.is_object()) continue;
    const auto cfg = l.value("configured", nlohmann::json::object());
    const auto m = l.value("measured", nlohmann::json::object());
    const bool ok = l.value("ok", false);
    out += fmt::format(
        "<tr><td>{} &rarr; {}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td "
        "class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td "
        "class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td "
        "class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"{}\">{}</td></tr>",
        escape(l.value("from", std::string("?"))), escape(l.value("to", std::string("?"))),
        json_number(cfg, "delay_ms", 2), json_number(cfg, "jitter_ms", 2),
        json_number(cfg, "loss_pct", 2), json_number(cfg, "rate_mbit", 0),
        json_number(m, "base_rtt_ms", 2), json_number(m, "rtt_median_ms", 2),
        json_number(m, "rtt_stdev_ms", 2), json_number(m, "goodput_mbit", 0),
        m.value("flows", 0) > 1
            ? fmt::format("{} ({})", json_number(m, "goodput_multi_mbit", 0), m.value("flows", 0))
            : std::string("-"),
        json_number(m, "loss_pct", 2), ok ? "good" : "bad", ok ? "ok" : "NO");
  }
  return out + "</tbody></table>";
}

}  // namespace xdc::report
