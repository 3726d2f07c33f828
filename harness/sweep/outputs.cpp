// sweep.csv, plots and index.html of a sweep directory (see outputs.h).
#include "harness/sweep/outputs.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "common/text_file.h"
#include "harness/report/html.h"
#include "harness/sweep/plot.h"

namespace xdc::sweep {
namespace fs = std::filesystem;

namespace {

using report::escape;  // one HTML/SVG escaper, harness/report/html.h

std::string fmt_metric(const Row& r, const std::string& m, const char* f = "{:.3f}") {
  auto it = r.m.find(m);
  return it == r.m.end() ? "" : fmt::format(fmt::runtime(f), it->second);
}

// The measured figure, or where the point was only simulated the simulated one, marked.
std::string or_simulated(const Row& r, const std::string& m, const char* f = "{:.3f}") {
  if (r.m.count(m)) return fmt_metric(r, m, f);
  const std::string sim = fmt_metric(r, "simulated_" + m, f);
  return sim.empty() ? sim : sim + " (sim)";
}

}  // namespace

std::vector<Row> write_sweep_outputs(const Sweep& s, const std::vector<PointStatus>& points,
                                     const std::string& dir) {
  std::vector<Row> rows;
  for (auto& ps : points)
    if (ps.state != PointState::kMissing && ps.state != PointState::kStale)
      for (auto& r : read_rows(ps.point, (fs::path(dir) / ps.point.id).string()))
        rows.push_back(std::move(r));
  std::vector<Row> csv_rows = rows;
  add_slowdown(s, reference_axis(s), csv_rows);
  write_text_file((fs::path(dir) / "sweep.csv").string(), sweep_csv(s, csv_rows));
  std::vector<std::string> svgs;
  for (auto& spec : s.plots) {
    const std::string svg = svg_line_plot(sweep_plot(s, spec, rows));
    write_text_file((fs::path(dir) / plot_file_name(spec)).string(), svg);
    svgs.push_back(svg);
  }
  write_text_file((fs::path(dir) / "index.html").string(),
                  index_html(s, points, csv_rows, svgs, dir));
  return csv_rows;
}

std::string index_html(const Sweep& s, const std::vector<PointStatus>& points,
                       const std::vector<Row>& rows, const std::vector<std::string>& svgs,
                       const std::string& dir) {
  size_t done = 0;
  for (auto& p : points) done += p.state == PointState::kDone;
  std::string o =
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>sweep " + escape(s.name) +
      "</title>\n<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
      "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}th{background:#eee}"
      ".failed,.interrupted{color:#b00}.plots svg{margin:0 1em 1em 0}</style></head><body>\n";
  o += "<h1>sweep " + escape(s.name) + "</h1>\n";
  if (!s.description.empty()) o += "<p>" + escape(s.description) + "</p>\n";
  o += fmt::format(
      "<p>{} of {} points done. Base experiment: <code>{}</code>. Data: "
      "<a href=\"sweep.csv\">sweep.csv</a>.</p>\n",
      done, points.size(), escape(s.base_file));
  o += "<div class=\"plots\">\n";
  for (auto& svg : svgs) o += svg;
  o += "</div>\n<table>\n<tr><th>point</th>";
  for (auto& a : s.axes) o += "<th>" + escape(a.name) + "</th>";
  o += "<th>state</th><th>schedule</th><th>iteration (s)</th><th>simulated (s)</th>"
       "<th>slowdown</th><th>bubble (ZB)</th><th>bubble (CrossPipe)</th><th>tokens/s</th></tr>\n";
  for (auto& ps : points) {
    const fs::path pdir = fs::path(dir) / ps.point.id;
    const std::string link = fs::exists(pdir / "report.html")    ? ps.point.id + "/report.html"
                             : fs::exists(pdir / "summary.json") ? ps.point.id + "/summary.json"
                                                                 : "";
    std::vector<const Row*> mine;
    for (auto& r : rows)
      if (r.point == ps.point.index) mine.push_back(&r);
    const size_t span = std::max<size_t>(1, mine.size());
    o += fmt::format("<tr><td rowspan=\"{}\">{}</td>", span,
                     link.empty()
                         ? escape(ps.point.id)
                         : "<a href=\"" + escape(link) + "\">" + escape(ps.point.id) + "</a>");
    for (size_t a = 0; a < s.axes.size(); ++a)
      o +=
          fmt::format("<td rowspan=\"{}\">{}</td>", span, escape(s.axes[a].labels[ps.point.at[a]]));
    o += fmt::format("<td rowspan=\"{}\" class=\"{}\">{}</td>", span, state_name(ps.state),
                     state_name(ps.state));
    if (mine.empty()) o += "<td colspan=\"7\"></td></tr>\n";
    for (size_t i = 0; i < mine.size(); ++i) {
      const Row& r = *mine[i];
      if (i) o += "<tr>";
      o += "<td>" + escape(r.schedule) + (r.status == "ok" ? "" : " (" + escape(r.status) + ")") +
           "</td><td>" + fmt_metric(r, "iteration_s") + "</td><td>" +
           fmt_metric(r, "simulated_iteration_s") + "</td><td>" +
           or_simulated(r, "slowdown", "{:.2f}") + "</td><td>" +
           or_simulated(r, "bubble.zerobubble") + "</td><td>" +
           or_simulated(r, "bubble.crosspipe") + "</td><td>" +
           fmt_metric(r, "tokens_per_s", "{:.0f}") + "</td></tr>\n";
    }
  }
  return o + "</table>\n</body></html>\n";
}

}  // namespace xdc::sweep
