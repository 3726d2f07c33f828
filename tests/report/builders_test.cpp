// The report's builders: escaping, the timeline (one block per compute event, labels,
// axis, scale to 64 ranks x 512 microbatches), the loss chart and the tables.
#include <gtest/gtest.h>

#include <cmath>
#include <regex>

#include "harness/report/gantt_svg.h"
#include "harness/report/html.h"
#include "harness/report/loss_chart.h"
#include "harness/report/report.h"
#include "harness/report/series_svg.h"
#include "harness/report/svg.h"
#include "harness/report/table.h"

namespace xdc::report {
namespace {

using trace::Kind;

size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

// A 1F1B-like timeline: per rank F then BW per microbatch, 1 ms each, sends between.
trace::Trace pipeline(int ranks, int microbatches, int64_t unit_ns = 1'000'000) {
  trace::Trace t;
  t.name = "test";
  t.ranks = ranks;
  t.microbatches = microbatches;
  for (int r = 0; r < ranks; ++r)
    for (int m = 0; m < microbatches; ++m) {
      const int64_t f = (r + 2 * m) * unit_ns;
      t.events.push_back({r, Kind::F, r, m, f, f + unit_ns, 0, -1});
      if (r + 1 < ranks)
        t.events.push_back(
            {r, Kind::SEND_F, r, m, f + unit_ns, f + unit_ns + unit_ns / 4, 4096, r + 1});
      const int64_t b = (2 * ranks + 2 * m - r) * unit_ns + microbatches * unit_ns;
      t.events.push_back({r, Kind::BW, r, m, b, b + unit_ns, 0, -1});
    }
  return t;
}

size_t compute_events(const trace::Trace& t) {
  size_t n = 0;
  for (auto& e : t.events) n += sched::is_compute(e.kind);
  return n;
}

TEST(ReportEscape, EveryMarkupCharacter) {
  EXPECT_EQ(escape(R"(<a href="x" o='y'>&amp;</a>)"),
            "&lt;a href=&quot;x&quot; o=&#39;y&#39;&gt;&amp;amp;&lt;/a&gt;");
  EXPECT_EQ(escape("plain 1f1b"), "plain 1f1b");
}

TEST(ReportFormat, NumbersReadAsInTheTable) {
  EXPECT_EQ(percent(0.3125), "31.2 %");
  EXPECT_EQ(percent(NAN), "-");
  EXPECT_EQ(seconds_text(0.4123), "412.3 ms");
  EXPECT_EQ(seconds_text(1.5), "1.5 s");
  EXPECT_EQ(seconds_text(87e-6), "87 µs");
  EXPECT_EQ(si_text(7040), "7.04 k");
}

TEST(ReportSvg, TextAndAttributesEscaped) {
  Svg s(100, 50, "c\"x", "<label>");
  s.text(1, 2, "<script>alert(1)</script>", "t");
  s.rect(0, 0, 10, 10, "r", "a < b & \"c\"");
  const std::string out = s.str();
  EXPECT_EQ(out.find("<script>"), std::string::npos);
  EXPECT_NE(out.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(out.find("<title>a &lt; b &amp; &quot;c&quot;</title>"), std::string::npos);
  EXPECT_NE(out.find("aria-label=\"&lt;label&gt;\""), std::string::npos);
  EXPECT_NE(out.find("class=\"c&quot;x\""), std::string::npos);
}

TEST(ReportSvg, NiceTicksAreRoundAndCoverTheRange) {
  EXPECT_EQ(nice_ticks(0, 10, 6), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(nice_ticks(0, 770, 11), (std::vector<double>{0, 100, 200, 300, 400, 500, 600, 700}));
  const auto t = nice_ticks(2.93, 4.71, 6);
  ASSERT_FALSE(t.empty());
  EXPECT_GE(t.front(), 2.93);
  EXPECT_LE(t.back(), 4.71);
  EXPECT_EQ(coord(12.5), "12.5");
  EXPECT_EQ(coord(3.0), "3");
}

TEST(ReportGantt, OneBlockPerComputeEventWithItsMicrobatch) {
  const trace::Trace t = pipeline(4, 8);
  const std::string svg = gantt_svg(t, {});
  EXPECT_EQ(count(svg, "class=\"blk "), compute_events(t));
  EXPECT_EQ(count(svg, "class=\"blk F\""), 32u);
  EXPECT_EQ(count(svg, "class=\"blk BW\""), 32u);
  EXPECT_EQ(count(svg, "class=\"send\""), 3u * 8);
  // Wide blocks (1 ms of ~27 ms over ~1000 px) carry their microbatch number.
  EXPECT_EQ(count(svg, "class=\"mb\""), compute_events(t));
  EXPECT_NE(svg.find(">7</text>"), std::string::npos);
  // One label and one idle background per rank; an axis in ms from 0.
  EXPECT_EQ(count(svg, ">rank "), 4u);
  EXPECT_EQ(count(svg, "class=\"idle\""), 4u);
  EXPECT_NE(svg.find(">time (ms)</text>"), std::string::npos);
  EXPECT_NE(svg.find("text-anchor=\"middle\">0</text>"), std::string::npos);
  EXPECT_NE(svg.find("text-anchor=\"middle\">20</text>"), std::string::npos);
  EXPECT_NE(svg.find("<title>F mb 0 stage 0, rank 0: 1 ms</title>"), std::string::npos);
}

TEST(ReportGantt, SharedSpanStretchesTheAxis) {
  const trace::Trace t = pipeline(2, 2);  // ends at 9 ms
  GanttOptions o;
  o.span_ns = 100'000'000;
  const std::string svg = gantt_svg(t, o);
  EXPECT_NE(svg.find(">100</text>"), std::string::npos);
  EXPECT_EQ(gantt_svg(t, {}).find(">100</text>"), std::string::npos);
  EXPECT_NE(gantt_svg(t, {}).find(">9</text>"), std::string::npos);
}

TEST(ReportGantt, SecondChunkDrawnLighter) {
  trace::Trace t;
  t.ranks = 2;
  t.microbatches = 1;
  t.events = {{0, Kind::F, 0, 0, 0, 10, 0, -1},
              {1, Kind::F, 1, 0, 10, 20, 0, -1},
              {0, Kind::F, 2, 0, 20, 30, 0, -1},
              {1, Kind::F, 3, 0, 30, 40, 0, -1}};
  const std::string svg = gantt_svg(t, {});
  EXPECT_EQ(count(svg, "class=\"blk F odd\""), 2u);
  EXPECT_EQ(count(svg, "class=\"blk F\""), 2u);
  EXPECT_NE(svg.find(">time (µs)</text>"), std::string::npos);  // a 40 ns axis
}

TEST(ReportGantt, ScalesTo64RanksAnd512Microbatches) {
  const trace::Trace t = pipeline(64, 512, 100'000);
  const std::string svg = gantt_svg(t, {});
  EXPECT_EQ(count(svg, "class=\"blk "), compute_events(t));  // every block drawn
  EXPECT_EQ(count(svg, "class=\"mb"), 0u);                   // no room for numbers
  EXPECT_EQ(count(svg, "<title>"), 0u);                      // no tooltips beyond the cap
  EXPECT_LT(svg.size(), 12u << 20);
  // Rows shrink to 8 px: 64 rows + axis fit a page.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(svg, m, std::regex("viewBox=\"0 0 1100 ([0-9.]+)\"")));
  EXPECT_LE(std::stod(m[1]), 64 * 8 + 60.0);
}

TEST(ReportGantt, RanksNameTheirStagesWhenTheyDifferFromTheRank) {
  trace::Trace t;
  t.ranks = 4;  // 2 stages x 2 data-parallel replicas
  t.microbatches = 1;
  for (int r = 0; r < 4; ++r)
    t.events.push_back({r, Kind::F, r % 2, 0, r * 10, r * 10 + 10, 0, -1});
  const std::string svg = gantt_svg(t, {});
  EXPECT_NE(svg.find(">rank 0</text>"), std::string::npos);
  EXPECT_NE(svg.find(">rank 2 · s0</text>"), std::string::npos);
  EXPECT_NE(svg.find(">rank 3 · s1</text>"), std::string::npos);
}

TEST(ReportSeries, OnePointPerIterationABarEachAndAMarkPerChange) {
  ScheduleData s;
  s.name = "1f1b";
  s.iteration_s = {1, 1, 4, 1};
  s.start_s = {0, 1, 2, 6};
  s.wan_bytes = {8 << 20, 8 << 20, 8 << 20, 8 << 20};
  s.waits_series = {{"RECV_F", {0.5, 0.5, 3.5, 0.5}}, {"RECV_B", {1, 1, 4, 1}}};
  s.simulated_series = {1, 1, 4.2, 1};
  s.simulated_start_s = {0, 1, 2, 6.2};
  s.changes = {{2.01, "link_down east->west", "flap.yaml:19:5 (at_iteration 2)"},
               {4.01, "link_up east->west", "flap.yaml:19:5 (at_iteration 2) (up after 2s)"}};
  const std::string svg = run_series_svg(s);
  EXPECT_EQ(count(svg, "<circle"), 4u);        // measured iteration times
  EXPECT_EQ(count(svg, "class=\"bar\""), 4u);  // WAN bytes
  EXPECT_EQ(count(svg, "class=\"chg\""), 2u);  // the cut and the restore
  EXPECT_NE(svg.find("2.010 s: link_down east-&gt;west (flap.yaml:19:5 (at_iteration 2))"),
            std::string::npos)
      << svg;
  EXPECT_NE(svg.find("#c0392b"), std::string::npos);  // a cut is red
  EXPECT_NE(svg.find("#27ae60"), std::string::npos);  // a restore green
  EXPECT_NE(svg.find("RECV_F"), std::string::npos);
  EXPECT_NE(svg.find("simulated"), std::string::npos);
  // The page has the section when a schedule has a series, not otherwise.
  RunData d;
  d.schedules.push_back(s);
  EXPECT_NE(render_html(d).find("id=\"over-time\""), std::string::npos);
  // Nothing measured (xdc simulate): the prediction's panel alone, still with the changes.
  d.schedules[0].start_s.clear();
  const std::string sim = run_series_svg(d.schedules[0]);
  EXPECT_EQ(count(sim, "<circle"), 0u);
  EXPECT_EQ(count(sim, "class=\"bar\""), 0u);
  EXPECT_EQ(count(sim, "class=\"chg\""), 2u);
  EXPECT_NE(sim.find("simulated iteration time over the run"), std::string::npos);
  EXPECT_EQ(sim.find("measured</text>"), std::string::npos);
  EXPECT_NE(render_html(d).find("id=\"over-time\""), std::string::npos);
  d.schedules[0].simulated_series.clear();
  EXPECT_EQ(run_series_svg(d.schedules[0]), "");
  EXPECT_EQ(render_html(d).find("id=\"over-time\""), std::string::npos);
}

TEST(ReportGantt, EmptyTraceIsANote) {
  EXPECT_EQ(gantt_svg(trace::Trace{}, {}).find("<svg"), std::string::npos);
}

TEST(ReportLossChart, OneLinePerUnbrokenRunAndEscapedNames) {
  std::vector<LossSeries> s = {{"1f1b", {5.5, 5.0, 4.6, 4.1}}, {"<b>x</b>", {5.4, NAN, 4.5, 4.0}}};
  const std::string svg = loss_chart_svg(s);
  EXPECT_EQ(count(svg, "class=\"loss"), 2u);   // 1f1b, and x's run after the gap
  EXPECT_EQ(count(svg, "class=\"dot\""), 1u);  // x's lone first value
  EXPECT_NE(svg.find("&lt;b&gt;x&lt;/b&gt;"), std::string::npos);
  EXPECT_EQ(svg.find("<b>"), std::string::npos);
  EXPECT_EQ(loss_chart_svg({{"a", {NAN}}}), "");
}

ScheduleData measured_schedule(const std::string& name) {
  ScheduleData s;
  s.name = name;
  s.iteration_s_mean = 0.7892;
  s.iteration_s_p50 = 0.770;
  s.iteration_s_p95 = 0.8284;
  s.iterations = 20;
  s.bubble = trace::BubbleRatios{3.943, 0.819, 0.734};
  s.simulated_iteration_s = 0.4298;
  s.simulated_bubble = trace::BubbleRatios{1.709, 0.638, 0.531};
  s.tokens_per_s = 5190;
  s.mfu = 0.0729;
  s.peak_flops_per_rank = 95e9;
  s.simulated_mfu = 0.1339;
  return s;
}

TEST(ReportTable, ComparisonNamesEveryBubbleAndEscapes) {
  RunData d;
  d.schedules = {measured_schedule("1f1b"), measured_schedule("<img src=x>")};
  d.schedules[1].ok = false;
  d.schedules[1].error = "rank 2 on \"w1\" died";
  const std::string html = comparison_table_html(d);
  for (const char* head : {"measured mean", "p50 / p95", "simulated", "meas / sim", "bubble/comp",
                           "idle ZB", "idle CP", "tokens/s", "MFU"})
    EXPECT_NE(html.find(std::string(">") + head + "</th>"), std::string::npos) << head;
  EXPECT_NE(html.find("789.2 ms"), std::string::npos);
  EXPECT_NE(html.find("770 / 828.4 ms"), std::string::npos);
  // Megatron's bubble in computes (it passes 1), the idle shares in %.
  EXPECT_NE(html.find(">3.94 x<"), std::string::npos);
  EXPECT_NE(html.find("sim 1.71 x"), std::string::npos);
  EXPECT_NE(html.find(">81.9 %<"), std::string::npos);
  EXPECT_NE(html.find("sim 53.1 %"), std::string::npos);
  EXPECT_EQ(html.find("394.3 %"), std::string::npos);
  EXPECT_NE(html.find(">1.84<"), std::string::npos);  // measured / simulated
  EXPECT_NE(html.find("7.29 %"), std::string::npos);
  EXPECT_NE(html.find("sim 13.39 %"), std::string::npos);
  EXPECT_NE(html.find("&lt;img src=x&gt;"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_NE(html.find("rank 2 on &quot;w1&quot; died"), std::string::npos);
  EXPECT_EQ(count(html, "<tr class=\"failed\">"), 2u);
  // Only the schedule that ran counts for the fastest.
  EXPECT_EQ(count(html, "<b>789.2 ms</b>"), 1u);
  EXPECT_EQ(count(html, "<b>429.8 ms</b>"), 1u);
}

// The interval over repeats beside the mean; the prediction's band only when it has a
// width; agreement: a measured mean in or outside the band, or with a deterministic
// prediction, the prediction in or outside the measured interval.
TEST(ReportTable, IntervalBandAndAgreement) {
  RunData d;
  ScheduleData random = measured_schedule("1f1b"), fixed = measured_schedule("overlap");
  for (ScheduleData* s : {&random, &fixed}) {
    s->repeats = 3;
    s->run_means_s = {0.77, 0.79, 0.81};
    s->iteration_s_ci95.emplace(0.7395, 0.8389);
  }
  random.simulated_band_s.emplace(0.41, 0.45);
  random.within_band = false;
  fixed.simulated_iteration_s = 0.8;
  fixed.simulated_band_s.emplace(0.8, 0.8);
  fixed.within_band = false;  // a zero-width band never holds a mean: not what is shown
  d.schedules = {random, fixed};
  std::string html = comparison_table_html(d);
  EXPECT_NE(html.find("95% CI 739.5–838.9 ms, 3 runs"), std::string::npos);
  EXPECT_EQ(count(html, "<span class=\"sim\">90% band "), 1u);
  EXPECT_NE(html.find("90% band 410–450 ms"), std::string::npos);
  EXPECT_NE(html.find("<span class=\"bad\">outside band</span>"), std::string::npos);
  EXPECT_NE(html.find("<span class=\"good\">in CI</span>"), std::string::npos);
  // One run: no interval shown, and nothing to say about agreement without a band.
  d.schedules[1].run_means_s = {0.79};
  d.schedules[1].repeats = 1;
  html = comparison_table_html(d);
  EXPECT_EQ(count(html, "<span class=\"sim\">95% CI"), 1u);
  EXPECT_EQ(count(html, ">in CI</span>"), 0u);
  d.schedules.pop_back();
  d.schedules[0].simulated_band_s.reset();
  d.schedules[0].iteration_s_ci95.reset();
  EXPECT_EQ(comparison_table_html(d).find(">agreement</th>"), std::string::npos);
}

TEST(ReportFormat, RangesInOneUnit) {
  EXPECT_EQ(seconds_range_text(0.9569, 1.0426), "956.9–1043 ms");
  EXPECT_EQ(seconds_range_text(1.359, 1.488), "1.359–1.488 s");
  EXPECT_EQ(seconds_range_text(0.9935, 1.069, " / "), "993.5 / 1069 ms");
  EXPECT_EQ(seconds_range_text(NAN, 1), "-");
  // Beside its figure, in that figure's unit: a 1.103 s mean's CI.
  EXPECT_EQ(seconds_range_text(0.9018, 1.305, "–", 1.103), "0.9018–1.305 s");
  EXPECT_EQ(seconds_range_text(0.9569, 1.0426, "–", 0.9998), "956.9–1043 ms");
}

TEST(ReportTable, SimulationOnlyLeavesOutMeasuredColumns) {
  RunData d;
  d.simulated_only = true;
  ScheduleData s;
  s.name = "overlap";
  s.simulated_iteration_s = 0.6871;
  s.simulated_bubble = trace::BubbleRatios{0.431, 0.301, 0.301};
  d.schedules = {s};
  const std::string html = comparison_table_html(d);
  EXPECT_NE(html.find(">iteration (simulated)</th>"), std::string::npos);
  EXPECT_EQ(html.find(">p50 / p95</th>"), std::string::npos);
  EXPECT_EQ(html.find(">agreement</th>"), std::string::npos);
  EXPECT_EQ(html.find(">MFU</th>"), std::string::npos);
  EXPECT_NE(html.find(">0.43 x<"), std::string::npos);
  EXPECT_NE(html.find(">30.1 %<"), std::string::npos);
  // With the simulated iteration's MFU (xdc simulate of a shaped model), the column shows it.
  d.schedules[0].simulated_mfu = 0.2051;
  const std::string with_mfu = comparison_table_html(d);
  EXPECT_NE(with_mfu.find(">MFU</th>"), std::string::npos);
  EXPECT_NE(with_mfu.find("sim 20.51 %"), std::string::npos);
}

TEST(ReportTable, LinkCheckConfiguredBesideMeasured) {
  const auto j = nlohmann::json::parse(R"({"backend": "userspace", "links": [
    {"from": "east<", "to": "west", "configured": {"delay_ms": 20, "jitter_ms": 1,
     "loss_pct": 0.1, "rate_mbit": 1000}, "measured": {"base_rtt_ms": 0.12,
     "rtt_median_ms": 40.3, "rtt_stdev_ms": 1.4, "goodput_mbit": null, "loss_pct": 0.2},
     "ok": true},
    {"from": "west", "to": "east", "configured": {}, "measured": {}, "ok": false}]})");
  const std::string html = link_table_html(j);
  EXPECT_NE(html.find("east&lt; &rarr; west"), std::string::npos);
  EXPECT_NE(html.find(">40.30<"), std::string::npos);
  EXPECT_NE(html.find(">1000<"), std::string::npos);
  EXPECT_EQ(count(html, "class=\"good\">ok<"), 1u);
  EXPECT_EQ(count(html, "class=\"bad\">NO<"), 1u);
}

TEST(ReportPage, SelfContainedWithEverySection) {
  RunData d;
  d.experiment = "two-dc <&>";
  d.backend = "userspace";
  d.compute_mode = "real";
  d.setup = {{"stages", "4"}};
  ScheduleData s = measured_schedule("1f1b");
  s.loss = {4.7, 4.3, 4.0};
  s.measured = pipeline(4, 8);
  s.measured_label = "measured: iteration 1 (of 0-2, median time)";
  s.simulated = pipeline(4, 8, 500'000);
  d.schedules = {s};
  d.link_check = nlohmann::json::parse(R"({"backend": "userspace", "links": []})");
  d.notes = {"x/trace.csv: <bad>"};
  const std::string html = render_html(d);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  for (const char* id : {"comparison", "what-ran", "timelines", "loss", "links", "notes"})
    EXPECT_NE(html.find(std::string("<section id=\"") + id + "\">"), std::string::npos) << id;
  // The answer first, then the comparison, then what ran with the full record folded.
  EXPECT_NE(html.find("<h1>two-dc &lt;&amp;&gt;</h1><p class=\"answer\">1f1b: 789.2 ms per "
                      "iteration;"),
            std::string::npos);
  EXPECT_LT(html.find("<section id=\"comparison\">"), html.find("<section id=\"what-ran\">"));
  EXPECT_LT(html.find("<section id=\"what-ran\">"), html.find("<section id=\"timelines\">"));
  EXPECT_NE(html.find("<details class=\"env\"><summary>Full environment: 1 setting recorded"
                      "</summary><dl class=\"facts\"><div><dt>stages</dt><dd>4</dd></div>"),
            std::string::npos);
  EXPECT_NE(html.find(escape(trace::kBubbleLegend).substr(0, 60)), std::string::npos);
  EXPECT_NE(html.find("Non-default settings:</b> not recorded"), std::string::npos);
  EXPECT_NE(html.find("backend: userspace · compute: real"), std::string::npos);
  EXPECT_EQ(count(html, "<svg xmlns"), 3u);  // measured + simulated timeline, loss chart
  // + the legend's F, B, W, BW, second chunk, PREFILL
  EXPECT_EQ(count(html, "class=\"blk "), 2 * compute_events(s.measured.value()) + 6);
  EXPECT_EQ(html.find("<section id=\"prefill\">"), std::string::npos);  // no prefill run
  EXPECT_NE(html.find("x/trace.csv: &lt;bad&gt;"), std::string::npos);
  // Nothing is fetched: no scripts, no external resources.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
}

TEST(ReportPage, IdenticalLossesSaidSo) {
  RunData d;
  ScheduleData a, b;
  a.name = "1f1b";
  b.name = "overlap";
  a.loss = b.loss = {4.7, 4.3, 4.0};
  d.schedules = {a, b};
  EXPECT_NE(render_html(d).find("the lines lie on each other"), std::string::npos);
  d.schedules[1].loss[2] = 3.9;
  EXPECT_EQ(render_html(d).find("the lines lie on each other"), std::string::npos);
}

// A run with prefill in bubbles gets its table: utilisation without and with, the
// training's iteration against the run without, requests, TTFT.
TEST(ReportPage, PrefillRunGetsItsTable) {
  RunData d;
  ScheduleData a, b;
  a.name = "1f1b";
  b.name = "1f1b+prefill";
  b.prefill = {{"utilisation_without", 0.276},
               {"utilisation_with", 0.966},
               {"training_slowdown_pct", 0.27},
               {"served", 9569},
               {"rejected", 0},
               {"unfinished", 243},
               {"ttft_ms_p50", 560.2},
               {"ttft_ms_p99", 1568.4}};
  d.schedules = {a, b};
  const std::string html = render_html(d);
  ASSERT_NE(html.find("<section id=\"prefill\">"), std::string::npos);
  EXPECT_NE(html.find("<td>1f1b+prefill</td><td>27.6%</td><td>96.6%</td><td>+0.27%</td>"
                      "<td>9569</td><td>0</td><td>243</td><td>560 ms</td><td>1568 ms</td>"),
            std::string::npos)
      << html.substr(html.find("<section id=\"prefill\">"), 900);
}

}  // namespace
}  // namespace xdc::report
