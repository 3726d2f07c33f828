#include "harness/report/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "common/input_error.h"
#include "harness/report/answer.h"
#include "harness/report/gantt_svg.h"
#include "harness/report/html.h"
#include "harness/report/loss_chart.h"
#include "harness/report/series_svg.h"
#include "harness/report/table.h"
#include "harness/report/wan_chart.h"
#include "harness/report/what_ran.h"

namespace xdc::report {

namespace {

// Looks live in one place; charts carry only classes (svg.h).
constexpr const char* kStyle = R"css(
:root{--ink:#1d2327;--mute:#5f6b73;--line:#d5dade}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;
 color:var(--ink);margin:24px auto;max-width:1180px;padding:0 16px;background:#fff}
h1{font-size:24px;margin:0 0 4px}
h2{font-size:18px;margin:24px 0 6px;border-bottom:1px solid var(--line);padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}.sub{color:var(--mute);margin:0}
dl.facts{display:grid;grid-template-columns:repeat(auto-fill,minmax(260px,1fr));
 gap:2px 18px;margin:0}
dl.facts div{display:flex;gap:8px}dl.facts dt{color:var(--mute)}
dl.facts dd{margin:0;font-variant-numeric:tabular-nums}
table{border-collapse:collapse;font-variant-numeric:tabular-nums;margin:6px 0}
th,td{padding:4px 8px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
th{font-weight:600;background:#f4f6f8}td.n{text-align:right;white-space:nowrap}
.sim{color:var(--mute);font-size:12px}tr.failed td{background:#fff3f3}
.bad{color:#b3261e;font-weight:600}.good{color:#1e7b34;font-weight:600}
td.err{color:#b3261e;font-size:12px}.note{color:var(--mute);font-size:13px}
figure,div.timeline{margin:10px 0 22px}
p.cap{font-size:13px;color:var(--mute);margin:6px 0 2px}
svg.gantt,svg.chart{width:100%;height:auto;display:block}svg.chart{max-width:820px}
svg text{font-family:system-ui,Helvetica,Arial,sans-serif}.rl{font-size:11px;fill:var(--mute)}
.tl{font-size:11px;fill:var(--mute)}.grid{stroke:#e3e7ea;stroke-width:1}
.tick,.axis{stroke:#8a959c;stroke-width:1}.idle{fill:#eceff1}.blk.F{fill:#4e79a7}
.blk.PREFILL{fill:#b07aa1}.blk.B{fill:#59a14f}.blk.W{fill:#e9c13b}.blk.BW{fill:#2e7d57}.blk.odd{fill-opacity:.62}
.opt{fill:#79706e}.send{fill:#e15759}.recv{fill:#f4a7a6}.ar{fill:#9467bd}
rect.blk,rect.opt{stroke:#fff;stroke-width:.35}.dense rect.blk,.dense rect.opt{stroke:none}
.mb{font-size:10px;fill:#fff;pointer-events:none}.mb.dark{fill:#3b3000}
.loss,.key{fill:none;stroke-width:2}.d1{stroke-dasharray:7 4}.d2{stroke-dasharray:2 3}
.legend{display:flex;flex-wrap:wrap;gap:4px 16px;font-size:12px;color:var(--mute);
 margin:4px 0 8px}
.legend svg{vertical-align:-1px}footer{margin-top:32px;color:var(--mute);font-size:12px}
p.answer{font-size:16px;line-height:1.4;margin:6px 0 4px}
table.cmp td:first-child{white-space:nowrap}
p.settings{margin:4px 0 12px;padding:6px 10px;border-left:4px solid;border-radius:3px}
p.settings.changed{background:#fff4e0;border-color:#e8a33d}
p.settings.stock{background:#eef6ee;border-color:#6aa96f}
p.settings.unknown{background:#f4f6f8;border-color:#8a959c}
p.settings code{background:#fff;padding:0 4px;margin-right:4px;border-radius:2px}
div.ran{display:flex;flex-wrap:wrap;gap:10px 28px;align-items:flex-start}
figure.topo{margin:0}svg.topo{max-width:100%;height:auto;display:block}
dl.ran{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:3px 12px;margin:0;
 flex:1 1 340px}dl.ran dt{color:var(--mute)}dl.ran dd{margin:0}
.dc{fill:#f4f6f8;stroke:#8a959c}.host{fill:#fff;stroke:#c9d0d5}
.dcn{font-size:13px;font-weight:600;fill:var(--ink)}.hn{font-size:12px;fill:var(--ink)}
.rk{font-size:11px;fill:#1d4f7a}.rk.none{fill:var(--mute)}
.wan{stroke:#4e79a7;stroke-width:2;fill:none}.wl{font-size:11px;fill:var(--ink)}.wl.m{fill:#1e7b34}
details.env{margin:16px 0 0}details.env summary{cursor:pointer;color:var(--mute)}
@media print{body{margin:0;max-width:none}h2{break-after:avoid}
 figure,div.timeline{break-inside:avoid}}
)css";

std::string section(const std::string& id, const std::string& title, const std::string& body) {
  return fmt::format("<section id=\"{}\"><h2>{}</h2>{}</section>\n", id, escape(title), body);
}

int64_t span_of(const std::optional<trace::Trace>& t) {
  int64_t end = 0;
  if (t)
    for (const auto& e : t->events) end = std::max(end, e.end_ns);
  return end;
}

std::string timeline(const ScheduleData& s) {
  const int64_t span = std::max(span_of(s.measured), span_of(s.simulated));
  std::string body;
  auto one = [&](const trace::Trace& t, const std::string& what, const std::string& kind) {
    GanttOptions o;
    o.span_ns = span;
    o.label = s.name + " " + kind + " timeline";
    const double iter_s = static_cast<double>(span_of(t)) / 1e9;
    body +=
        fmt::format("<p class=\"cap\">{} &mdash; {} ranks, {} microbatches, {}</p>{}", escape(what),
                    t.ranks, t.microbatches, escape(seconds_text(iter_s)), gantt_svg(t, o));
  };
  if (s.measured) one(*s.measured, s.measured_label, "measured");
  if (s.simulated)
    one(*s.simulated, s.measured ? "simulated" : "simulated (one iteration)", "simulated");
  if (!s.measured && !s.simulated)
    body = "<p class=\"note\">no trace was recorded for this schedule</p>";
  return fmt::format("<div class=\"timeline\" data-schedule=\"{}\"><h3>{}</h3>{}</div>",
                     escape(s.name), escape(s.name), body);
}

// The document's head and the page's header: the experiment, the answer, and a line on
// how it ran.
std::string page_head(const RunData& d) {
  std::string subtitle =
      "backend: " + (d.backend.empty() ? std::string("not recorded") : d.backend);
  if (!d.compute_costs.empty()) {
    subtitle += " · compute: " + d.compute_costs;
  } else if (!d.compute_mode.empty()) {
    subtitle += " · compute: " + d.compute_mode;
  }
  subtitle += " · " + std::to_string(d.schedules.size()) + " schedule(s)";
  if (d.simulated_only) subtitle += " · simulation only (no emulated network)";
  if (d.time_dilation != 1) subtitle += fmt::format(" · time dilation {:g}", d.time_dilation);
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
      "<title>xdc report: {}</title><style>{}</style></head><body>\n"
      "<header><h1>{}</h1><p class=\"answer\">{}</p><p class=\"sub\">{}</p></header>\n",
      escape(d.experiment), kStyle, escape(d.experiment), escape(answer_sentence(d)),
      escape(subtitle));
}

// The notes under the comparison: which bubble is which, the peak MFU is against, and
// where the simulator's costs came from (once when every schedule says the same).
std::string comparison_notes(const RunData& d) {
  std::string legend = trace::kBubbleLegend;
  std::replace(legend.begin(), legend.end(), '\n', ' ');
  while (!legend.empty() && legend.back() == ' ') legend.pop_back();
  const bool workload = d.recorded && d.recorded->workload;  // no bubble columns (table.cpp)
  std::string out = "<p class=\"note\">" + (workload ? std::string() : escape(legend) + ".");
  std::vector<std::string> peaks, costs;
  auto add = [](std::vector<std::string>& v, const std::string& x) {
    if (!x.empty() && std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
  };
  for (const auto& s : d.schedules) {
    if (s.mfu && s.peak_flops_per_rank)
      add(peaks, (s.modeled ? "an assumed " : "") + si_text(*s.peak_flops_per_rank) + "FLOP/s");
    add(costs, s.simulated_costs);
  }
  if (!peaks.empty()) {
    out += " MFU: model FLOPs over " + escape(peaks[0]);
    for (size_t k = 1; k < peaks.size(); ++k) out += " or " + escape(peaks[k]);
    out += " peak per rank; sim: at the simulated iteration time, modeled.";
  }
  if (costs.size() == 1) out += " The simulator's costs: " + escape(costs[0]) + ".";
  if (costs.size() > 1) {
    out += " The simulator's costs:";
    for (const auto& s : d.schedules)
      if (!s.simulated_costs.empty())
        out += " " + escape(s.name) + ": " + escape(s.simulated_costs) + ";";
    out.back() = '.';
  }
  return out + "</p>";
}

std::string comparison_section(const RunData& d) {
  return section("comparison", "Schedules compared",
                 comparison_table_html(d) + comparison_notes(d));
}

// Each section below is "" when the run has nothing for it.
std::string waits_section(const RunData& d) {
  std::string w = waits_table_html(d);
  if (w.empty()) return "";
  return section("waits", "Waiting time per iteration, summed over ranks, by cause", w);
}

// BubbleTea: inference prefill in the bubbles.
std::string prefill_section(const RunData& d) {
  std::string prefill;
  for (const auto& s : d.schedules) {
    const nlohmann::json& p = s.prefill;
    if (!p.is_object()) continue;
    auto pct = [&p](const char* k) {
      return p.contains(k) ? fmt::format("{:.1f}%", 100 * p.value(k, 0.0)) : std::string("?");
    };
    auto ms = [&p](const char* k) {
      return p.contains(k) ? fmt::format("{:.0f} ms", p.value(k, 0.0)) : std::string("-");
    };
    prefill += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td><td>{}</td></tr>",
        escape(s.name), pct("utilisation_without"), pct("utilisation_with"),
        p.contains("training_slowdown_pct")
            ? fmt::format("{:+.2f}%", p.value("training_slowdown_pct", 0.0))
            : std::string("?"),
        p.value("served", 0), p.value("rejected", 0), p.value("unfinished", 0), ms("ttft_ms_p50"),
        ms("ttft_ms_p99"));
  }
  if (prefill.empty()) return "";
  return section(
      "prefill", "Inference prefill in the bubbles",
      "<table><tr><th>run</th><th>utilisation without</th><th>with prefill</th>"
      "<th>training iteration vs without</th><th>served</th><th>rejected</th>"
      "<th>unfinished</th><th>TTFT p50</th><th>TTFT p99</th></tr>" +
          prefill +
          "</table><p class=\"note\">Utilisation: each rank's compute busy time (training, "
          "and PREFILL blocks where served) over the measured span, mean over ranks; "
          "without: the same schedule run without prefill. TTFT: a request's arrival to "
          "its prefill's end. Unfinished: queued when the run ended, within their "
          "deadline.</p>");
}

// DiLoCo: the outer loop's syncs, their bytes and their stall; the evaluation loss.
std::string dp_sync_section(const RunData& d) {
  std::string rows;
  for (const auto& s : d.schedules) {
    const nlohmann::json& j = s.dp_sync;
    if (!j.is_object()) continue;
    auto num = [&j](const char* k, const char* f, double scale = 1) {
      return j.contains(k) && j[k].is_number()
                 ? fmt::format(fmt::runtime(f), j[k].get<double>() * scale)
                 : std::string("-");
    };
    // The method: "diloco", or streaming's fragments, overlap and merge; eager last.
    std::string method = j.value("method", std::string("diloco"));
    if (j.contains("fragments"))
      method += fmt::format(", {} fragments, overlap {}, merge {:g}", j.value("fragments", 1),
                            j.value("overlap_steps", 0), j.value("merge", 0.0));
    if (j.value("eager", false)) method += ", eager";
    rows += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td><td>{}</td><td>{}</td></tr>",
        escape(s.name), escape(method),
        j.value("sync_steps", 0) > 0
            ? fmt::format("{} (after {} synchronous)", j.value("inner_steps", 0),
                          j.value("sync_steps", 0))
            : fmt::format("{}", j.value("inner_steps", 0)),
        escape(j.value("payload", std::string())), j.value("outer_syncs", 0),
        num("payload_bytes_per_outer_step", "{:.0f}"), num("payload_bytes_analytic", "{:.0f}"),
        num("stall_s_per_sync", "{:.1f} ms", 1e3), num("sync_s_per_sync", "{:.1f} ms", 1e3),
        s.eval_loss ? fmt::format("{:.4f}", *s.eval_loss) : std::string("-"));
  }
  if (rows.empty()) return "";
  return section(
      "dp-sync", "Data parallelism: DiLoCo's outer syncs",
      "<table><tr><th>run</th><th>method</th><th>inner steps</th><th>payload</th>"
      "<th>outer syncs</th>"
      "<th>payload bytes per sync</th><th>analytic</th><th>stall per sync</th>"
      "<th>sync per sync</th><th>eval loss</th></tr>" +
          rows +
          "</table><p class=\"note\">Payload bytes: what each message of the replicas' "
          "all-reduce carries (every held stage's pseudo-gradient, encoded); analytic: the "
          "parameters' count in the format. Stall: the OUTER_SYNC wait per sync, mean over "
          "ranks; sync: encode, all-reduce, decode and outer step (eager: the sync's "
          "wait as its fragment's next starts). Eval loss: replica 0's final parameters on "
          "the validation batches.</p>");
}

// The WAN under the user's program (wan_chart.h); "" for other runs.
std::string wan_section(const RunData& d) {
  const std::string chart = wan_utilisation_svg(d.wan_csv, d.steps_csv);
  if (chart.empty()) return "";
  return section("wan", "WAN utilisation over time",
                 "<p class=\"note\">Each WAN direction's egress, Mbit/s per sample interval "
                 "(wan.csv; the same counters are in trace.json for Perfetto).</p><figure>" +
                     chart + "</figure>");
}

std::string over_time_section(const RunData& d) {
  std::string over_time;
  for (const auto& s : d.schedules)
    if (std::string chart = run_series_svg(s); !chart.empty())
      over_time += fmt::format(
          "<div class=\"series\" data-schedule=\"{}\"><h3>{}</h3><figure>{}</figure></div>",
          escape(s.name), escape(s.name), chart);
  if (over_time.empty()) return "";
  return section(
      "over-time", "Over the run: iteration time, WAN bytes, waits, WAN changes",
      std::string(d.simulated_only ? "<p class=\"note\">The simulator's prediction of each "
                                     "iteration at its start (dashed), the WAN changing under "
                                     "the run. Vertical marks: "
                                   : "<p class=\"note\">Per measured iteration at its start; "
                                     "the dashed line is the simulator's prediction with the "
                                     "same WAN changes. Vertical marks: ") +
          "changes applied to the WAN (red cut, green restore, blue parameters; "
          "hover for what and who).</p>" +
          over_time);
}

std::string loss_section(const RunData& d) {
  std::vector<LossSeries> series;
  for (const auto& s : d.schedules)
    if (!s.loss.empty()) series.push_back({s.name, s.loss});
  std::string chart = loss_chart_svg(series);
  if (chart.empty()) return "";
  // Schedules change when work runs, not what is computed: with one seed their losses
  // agree, and the lines lie on each other.
  bool same = series.size() > 1;
  for (const auto& s : series)
    for (size_t k = 0; same && k < std::max(s.values.size(), series[0].values.size()); ++k)
      same = k < s.values.size() && k < series[0].values.size() &&
             (std::fabs(s.values[k] - series[0].values[k]) <= 1e-6 * std::fabs(s.values[k]) ||
              (std::isnan(s.values[k]) && std::isnan(series[0].values[k])));
  if (same)
    chart +=
        "<p class=\"note\">Every schedule's loss is the same at every iteration (same "
        "data, same seed): the lines lie on each other.</p>";
  return section("loss", "Training loss", "<figure>" + chart + "</figure>");
}

// The footer names the results directory and the Chrome traces it holds.
std::string page_foot(const RunData& d) {
  std::string files;
  for (const auto& f : d.trace_files) files += " <code>" + escape(f) + "</code>";
  return "<footer>Generated by xdc from " + escape(d.dir) + "." +
         (files.empty() ? std::string()
                        : " Chrome/Perfetto traces (open in ui.perfetto.dev or chrome://tracing):" +
                              files + ".") +
         "</footer>\n</body></html>\n";
}

}  // namespace

std::string render_html(const RunData& d) {
  std::string page = page_head(d) + comparison_section(d) +
                     section("what-ran", "What ran", what_ran_html(d)) + waits_section(d) +
                     prefill_section(d) + dp_sync_section(d);
  if (d.recorded && d.recorded->workload) {  // the program's steps are in its own trace
    page += section("timelines", "Timeline",
                    "<p class=\"note\">The program's steps per rank and the WAN's bytes per "
                    "sample are in <code>trace.json</code> (open it in Perfetto or "
                    "chrome://tracing); the WAN's utilisation is drawn below.</p>");
  } else {
    std::string tl = gantt_legend_html();
    for (const auto& s : d.schedules) tl += timeline(s);
    page += section("timelines", "Timelines (one iteration, one row per rank)", tl);
  }
  page += wan_section(d) + over_time_section(d) + loss_section(d);
  if (d.link_check)
    page += section(
        "links",
        "Link check (backend " + d.link_check->value("backend", std::string("not recorded")) + ")",
        link_table_html(*d.link_check));
  if (!d.notes.empty()) {
    std::string n = "<ul>";
    for (const auto& x : d.notes) n += "<li>" + escape(x) + "</li>";
    page += section("notes", "Notes", n + "</ul>");
  }
  return page + page_foot(d);
}

std::vector<std::string> write_reports(const std::string& dir) {
  namespace fs = std::filesystem;
  if (fs::exists(fs::path(dir) / "summary.json")) return {write_report(dir)};
  std::vector<fs::path> points;
  std::error_code ec;
  for (const auto& sub : fs::directory_iterator(dir, ec))
    if (sub.is_directory() && fs::exists(sub.path() / "summary.json")) points.push_back(sub);
  if (points.empty())
    throw InputError(SourcePos{(fs::path(dir) / "summary.json").string(), 0, 0},
                     "no summary.json here nor in any subdirectory: not a results directory of "
                     "xdc run, xdc simulate or xdc sweep");
  std::sort(points.begin(), points.end());
  std::vector<std::string> out;
  for (const auto& p : points) out.push_back(write_report(p.string()));
  return out;
}

std::string write_report(const std::string& dir) {
  const RunData d = read_results_dir(dir);
  const std::string path = (std::filesystem::path(dir) / "report.html").string();
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write " + tmp);
    out << render_html(d);
    if (!out.flush()) throw std::runtime_error("cannot write " + tmp);
  }
  std::filesystem::rename(tmp, path);
  return path;
}

}  // namespace xdc::report
