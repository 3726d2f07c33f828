// Sweep files (unit): grid expansion, overrides by dotted path, point states for
// resumption, sweep.csv, SVG plots, and bad sweep files -> InputError at file:line:col
// (and exit 2 from the CLI).
#include "harness/sweep/sweep.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "common/text_file.h"
#include "harness/sweep/metrics.h"
#include "harness/sweep/outputs.h"
#include "harness/sweep/plot.h"
#include "tests/network/leftovers.h"

namespace {
namespace fs = std::filesystem;
using namespace xdc::sweep;

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("xdc-sweep-unit-" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// The shipped congestion sweep: one point per congestion control, set on every host.
TEST(Sweep, ShippedTcpCongestionSetsEveryHost) {
  const Sweep s = load_sweep("experiments/tcp-congestion.yaml");
  const auto points = expand(s);
  ASSERT_EQ(points.size(), 2u);
  const char* expected[] = {"cubic", "bbr"};
  for (size_t i = 0; i < points.size(); ++i) {
    const auto e = point_experiment(s, points[i]);
    for (const auto* h : e.topology.hosts()) EXPECT_EQ(h->tcp.congestion, expected[i]) << h->name;
  }
}

TEST(Sweep, GridExpandsFirstAxisSlowestWithZipAsOneAxis) {
  const Sweep s = load_sweep("tests/sweep/grid.yaml");
  ASSERT_EQ(s.axes.size(), 3u);
  EXPECT_EQ(s.axes[0].name, "wan.delay");
  EXPECT_EQ(s.axes[1].labels, (std::vector<std::string>{"1f1b", "gpipe"}));
  EXPECT_EQ(s.axes[2].name, "size");
  EXPECT_EQ(s.axes[2].keys, (std::vector<std::string>{"microbatches", "mpi.timeout_s"}));
  const auto pts = expand(s);
  ASSERT_EQ(pts.size(), 12u);
  EXPECT_EQ(pts[0].id, "delay-0ms_schedules-1f1b_size-small");
  EXPECT_EQ(pts[1].id, "delay-0ms_schedules-1f1b_size-large");
  EXPECT_EQ(pts[2].id, "delay-0ms_schedules-gpipe_size-small");
  EXPECT_EQ(pts[11].id, "delay-20ms_schedules-gpipe_size-large");
  EXPECT_EQ(pts[11].at, (std::vector<size_t>{2, 1, 1}));
  EXPECT_EQ(s.plots.size(), 2u);
}

TEST(Sweep, PointsOverrideByDottedPath) {
  const Sweep s = load_sweep("tests/sweep/grid.yaml");
  const auto pts = expand(s);
  const xdc::run::Experiment e = point_experiment(s, pts[11]);
  EXPECT_EQ(e.microbatches, 8);
  EXPECT_EQ(e.timeout_s, 120);
  ASSERT_EQ(e.schedules.size(), 1u);
  EXPECT_EQ(e.schedules[0].name, "gpipe");
  ASSERT_EQ(e.topology.wan.size(), 1u);
  EXPECT_EQ(e.topology.wan[0].a_to_b.delay_us, 20000u);
  EXPECT_EQ(e.topology.wan[0].b_to_a.delay_us, 20000u);
  // Untouched keys keep the base's values.
  EXPECT_EQ(e.stages, 2);
  EXPECT_EQ(e.iterations, 2);
}

TEST(Sweep, SetByPathCreatesMapsAndRefusesScalars) {
  YAML::Node root = YAML::Load("a: {b: 1}\nc: 2\n");
  set_by_path(root, "a.b", YAML::Node(5));
  set_by_path(root, "x.y.z", YAML::Node("v"));
  EXPECT_EQ(root["a"]["b"].as<int>(), 5);
  EXPECT_EQ(root["x"]["y"]["z"].as<std::string>(), "v");
  EXPECT_THROW(set_by_path(root, "c.d", YAML::Node(1)), std::invalid_argument);
}

TEST(Sweep, SetByPathIndexesListsSoChangeParametersSweepLikeAnyKey) {
  // A flap's length and a trace file, as a sweep over experiments/flap.yaml would set them.
  YAML::Node root = YAML::Load(
      "events: [{at_iteration: 5, link: [east, west], down_for: 2s}]\n"
      "topology: {wan: [{between: [east, west], trace: a.csv}]}\n");
  set_by_path(root, "events.0.down_for", YAML::Node("4s"));
  set_by_path(root, "topology.wan.0.trace", YAML::Node("b.csv"));
  EXPECT_EQ(root["events"][0]["down_for"].as<std::string>(), "4s");
  EXPECT_EQ(root["events"][0]["at_iteration"].as<int>(), 5);
  EXPECT_EQ(root["topology"]["wan"][0]["trace"].as<std::string>(), "b.csv");
  EXPECT_THROW(set_by_path(root, "events.3.down_for", YAML::Node("1s")), std::invalid_argument);
  EXPECT_THROW(set_by_path(root, "events.first.down_for", YAML::Node("1s")), std::invalid_argument);
}

TEST(Sweep, LabelsAndNumericAxes) {
  EXPECT_EQ(label_of(YAML::Load("[overlap]")), "overlap");
  EXPECT_EQ(label_of(YAML::Load("[1f1b, overlap]")), "[1f1b, overlap]");
  EXPECT_DOUBLE_EQ(*numeric_value("20ms"), 20.0);
  EXPECT_DOUBLE_EQ(*numeric_value("1gbit"), 1000.0);
  EXPECT_DOUBLE_EQ(*numeric_value("0.5%"), 0.5);
  EXPECT_DOUBLE_EQ(*numeric_value("8"), 8.0);
  EXPECT_FALSE(numeric_value("1f1b"));
  const Sweep s = load_sweep("tests/sweep/grid.yaml");
  EXPECT_TRUE(axis_is_numeric(s.axes[0]));
  EXPECT_FALSE(axis_is_numeric(s.axes[1]));
  EXPECT_EQ(reference_axis(s), 0u);
}

// A summary.json as `xdc run` writes it.
std::string summary(bool interrupted, const std::vector<std::pair<std::string, double>>& its,
                    bool ok = true) {
  nlohmann::json j = {{"interrupted", interrupted}, {"schedules", nlohmann::json::array()}};
  for (auto& [name, t] : its)
    j["schedules"].push_back({{"schedule", name},
                              {"ok", ok},
                              {"iteration_s_mean", t},
                              {"bubble_ratio", {{"megatron", 0.5}, {"zerobubble", 0.25}}},
                              {"simulated_iteration_s", t * 0.9},
                              {"tokens_per_s", 100.0 / t}});
  return j.dump();
}

TEST(Sweep, PointStateDecidesResumption) {
  const Sweep s = load_sweep("tests/sweep/grid.yaml");
  const Point p = expand(s)[0];
  const std::string text = point_text(s, p);
  const xdc::run::Record rec{text, ""};
  const fs::path d = fresh_dir("state");
  EXPECT_EQ(point_state(d.string(), rec, text, {"1f1b"}), PointState::kMissing);
  write(d / "experiment.yaml", text);
  write(d / "summary.json", summary(true, {{"1f1b", 1.0}}));
  EXPECT_EQ(point_state(d.string(), rec, text, {"1f1b"}), PointState::kInterrupted);
  write(d / "summary.json", summary(false, {{"1f1b", 1.0}}));
  EXPECT_EQ(point_state(d.string(), rec, text, {"1f1b"}), PointState::kDone);
  EXPECT_EQ(point_state(d.string(), rec, text, {"1f1b", "gpipe"}), PointState::kInterrupted);
  write(d / "summary.json", summary(false, {{"1f1b", 1.0}}, false));
  EXPECT_EQ(point_state(d.string(), rec, text, {"1f1b"}), PointState::kFailed);
  write(d / "experiment.yaml", text + "# edited\n");
  EXPECT_EQ(point_state(d.string(), rec, text, {"1f1b"}), PointState::kStale);
}

TEST(Sweep, APointIsStaleWhenItsTopologyFileChanges) {
  // A base experiment naming its topology file: a run writes the file's copy beside the
  // point's experiment.yaml, which names it "topology.yaml".
  const fs::path d = fresh_dir("topofile");
  fs::copy_file("topologies/two-dc.yaml", d / "t.yaml");
  write(d / "base.yaml",
        "name: x\ntopology: t.yaml\ncompute: {modeled: {f: 1ms, b: 1ms}}\n"
        "pipeline: {stages: 2, placement: [east-h1, w1]}\nmicrobatches: 2\n"
        "schedules: [1f1b]\n");
  write(d / "s.yaml", "name: s\nexperiment: base.yaml\ngrid:\n  wan.delay: [10ms]\n");
  const Sweep s = load_sweep((d / "s.yaml").string());
  const Point p = expand(s)[0];
  const xdc::run::Experiment e = point_experiment(s, p);
  const fs::path point = d / "out" / p.id;
  xdc::run::write_experiment(point.string(), e);
  write(point / "summary.json", summary(false, {{"1f1b", 1.0}}));
  EXPECT_NE(xdc::read_text_file_or_empty(point / "experiment.yaml").find("topology: topology.yaml"),
            std::string::npos);
  EXPECT_EQ(point_state(point.string(), xdc::run::record(e), point_text(s, p), {"1f1b"}),
            PointState::kDone);
  // The same sweep named by another path (relative here, absolute above): the same point,
  // done, though point_text's first line names the file as given.
  const Sweep again = load_sweep(fs::relative(d / "s.yaml").string());
  ASSERT_NE(point_text(again, p), point_text(s, p));
  EXPECT_EQ(point_state(point.string(), point_experiment(again, p)), PointState::kDone);
  // The same experiment text, another topology: stale (the point read again, as a resumed
  // sweep reads it).
  write(d / "t.yaml", xdc::read_text_file_or_empty(d / "t.yaml") + "# edited\n");
  const xdc::run::Experiment edited = point_experiment(s, p);
  EXPECT_EQ(point_state(point.string(), xdc::run::record(edited), point_text(s, p), {"1f1b"}),
            PointState::kStale);
  // A point written before results directories kept run::record (its experiment.yaml the
  // point's text, topology.yaml a copy) still counts as done.
  write(point / "experiment.yaml", point_text(s, p));
  write(point / "topology.yaml", xdc::read_text_file_or_empty(d / "t.yaml"));
  EXPECT_EQ(point_state(point.string(), xdc::run::record(edited), point_text(s, p), {"1f1b"}),
            PointState::kDone);
  EXPECT_EQ(point_state(point.string(), edited), PointState::kDone);  // the runner's form
}

TEST(Sweep, CsvPlotsAndIndexFromPointSummaries) {
  const Sweep s = load_sweep("tests/sweep/grid.yaml");
  const fs::path d = fresh_dir("outputs");
  std::vector<PointStatus> points;
  for (auto& p : expand(s)) {
    const double delay_ms = *numeric_value(s.axes[0].labels[p.at[0]]);
    if (p.at[2] == 0) {  // the "large" points are left unrun
      write(d / p.id / "experiment.yaml", point_text(s, p));
      write(d / p.id / "summary.json",
            summary(false, {{s.axes[1].labels[p.at[1]], 1.0 + delay_ms / 10}}));
      points.push_back({p, PointState::kDone});
    } else {
      points.push_back({p, PointState::kMissing});
    }
  }
  const std::vector<Row> rows = write_sweep_outputs(s, points, d.string());
  ASSERT_EQ(rows.size(), 6u);
  // Slowdown against the first delay, same schedule and size: 1 + 20/10 = 3x at 20 ms.
  EXPECT_DOUBLE_EQ(rows.back().m.at("slowdown"), 3.0);
  std::ifstream csv_in(d / "sweep.csv");
  std::string header, line;
  std::getline(csv_in, header);
  EXPECT_EQ(header.rfind("point,id,wan.delay,schedules,size,schedule,status,iteration_s,", 0), 0u)
      << header;
  size_t lines = 0;
  while (std::getline(csv_in, line)) ++lines;
  EXPECT_EQ(lines, 6u);

  // slowdown vs delay: 2 series (1f1b, gpipe; "size" has one value run but two listed ->
  // it names the series: 1f1b size=small, gpipe size=small), 3 points each.
  std::ifstream svg_in(d / "slowdown-vs-wan.delay.svg");
  const std::string svg((std::istreambuf_iterator<char>(svg_in)), {});
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_EQ(count(svg, "<polyline"), 2u);
  EXPECT_EQ(count(svg, "<circle"), 6u);
  EXPECT_EQ(count(svg, "stroke-dasharray"), 0u);
  // iteration_s with simulated lines: 2 measured + 2 dashed (polyline and legend each).
  std::ifstream sim_in(d / "iteration_s-vs-wan.delay.svg");
  const std::string sim((std::istreambuf_iterator<char>(sim_in)), {});
  EXPECT_EQ(count(sim, "<polyline"), 4u);
  EXPECT_EQ(count(sim, "<circle"), 12u);
  EXPECT_EQ(count(sim, "stroke-dasharray"), 4u);
  EXPECT_EQ(count(sim, "http://"), 1u);  // the xmlns only: nothing fetched

  std::ifstream html_in(d / "index.html");
  const std::string html((std::istreambuf_iterator<char>(html_in)), {});
  EXPECT_EQ(count(html, "<svg"), 2u);
  EXPECT_EQ(count(html, "/summary.json\">"), 6u);
  EXPECT_EQ(count(html, ">to run<"), 6u);
}

TEST(Sweep, PlotOfCategoricalAxisUsesLabels) {
  Plot p;
  p.title = "t";
  p.categories = {"pp", "dp"};
  p.series.push_back({"a", {0, 1}, {1, 2}, false});
  const std::string svg = svg_line_plot(p);
  EXPECT_NE(svg.find(">pp<"), std::string::npos);
  EXPECT_NE(svg.find(">dp<"), std::string::npos);
  EXPECT_EQ(count(svg, "<polyline"), 1u);
}

struct BadCase {
  const char* file;
  int line, col;
  const char* words;
};

class BadSweep : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadSweep, FailsWithFileLineColumn) {
  const BadCase c = GetParam();
  const std::string path = std::string("tests/sweep/bad/") + c.file;
  try {
    load_sweep(path);
    FAIL() << path << " loaded";
  } catch (const xdc::InputError& e) {
    const std::string want =
        path + ":" + std::to_string(c.line) + ":" + std::to_string(c.col) + ":";
    EXPECT_EQ(std::string(e.what()).rfind(want, 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find(c.words), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Files, BadSweep,
    ::testing::Values(BadCase{"bad-value.yaml", 3, 20, "wan.delay: expected a duration"},
                      BadCase{"empty-list.yaml", 3, 14, "non-empty list"},
                      BadCase{"not-a-list.yaml", 3, 14, "a list of values"},
                      BadCase{"missing-base.yaml", 1, 13, "the base experiment"},
                      BadCase{"unknown-key.yaml", 3, 3, "dleay"},
                      BadCase{"no-axis.yaml", 1, 1, "at least one axis"},
                      BadCase{"zip-lengths.yaml", 7, 19, "a list of 2 values"},
                      BadCase{"set-twice.yaml", 4, 3, "set twice"},
                      BadCase{"plot-axis.yaml", 5, 9, "one of the sweep's axes"},
                      BadCase{"typo-top.yaml", 2, 1, "unknown key"},
                      BadCase{"through-scalar.yaml", 3, 24, "not a map"},
                      BadCase{"duplicate-value.yaml", 3, 14, "appears twice"},
                      BadCase{"too-many-points.yaml", 6, 3, "at most 1000 points"}),
    [](const auto& info) {
      std::string n = info.param.file;
      n = n.substr(0, n.find('.'));
      for (auto& ch : n)
        if (ch == '-') ch = '_';
      return n;
    });

TEST(SweepCli, BadFileExitsTwoWithPosition) {
  auto r = xdc::testing::run_xdc({"sweep", "tests/sweep/bad/bad-value.yaml"}, 60);
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("tests/sweep/bad/bad-value.yaml:3:20:"), std::string::npos) << r.out;
}

}  // namespace
