#pragma once
// A sweep (experiments/repro/*.yaml, `xdc sweep`): one base experiment and a grid of
// overrides of its keys, by dotted path. Each grid point is the base experiment's YAML
// tree with the point's values set, validated by the experiment loader (experiment/experiment.h)
// exactly as `xdc run` would. Loading checks every value and every point up front, so a
// bad sweep costs nothing; errors are InputError "SWEEP:LINE:COL: grid.KEY: ...".
//
//   name: atlas                      # optional (default: the file's stem); names
//   results/sweep-NAME description: ...                 # optional, shown on the index page
//   experiment: atlas-base.yaml      # required; relative to this file
//   grid:                            # axes of the cartesian product, first varies slowest
//     wan.delay: [0ms, 5ms, 10ms]    # any experiment key by dotted path ("a.b.c"; a number
//                                    # indexes a list: events.0.down_for: [1s, 2s, 4s],
//                                    # topology.wan.0.trace.file: [a.csv, b.csv]);
//     schedules: [[1f1b], [overlap]] # a value replaces the key's whole value
//   zip:                             # optional: keys that advance together, one axis each
//     - name: parallelism            # optional (default: the first key)
//       labels: [pp, dp]             # optional: what the CSV and plots call each value
//       set:
//         pipeline.stages: [6, 1]
//         pipeline.data_parallel: [1, 6]
//   plots:                           # optional (default: iteration_s and slowdown vs the
//     - {x: wan.delay, y: slowdown}  #   first numeric axis); y: metrics.h's metric_names;
//     - {x: wan.delay, y: iteration_s, simulated: true}   # simulated: dashed sim lines
//   (iteration_s, slowdown and the bubbles have simulated lines; a sweep only simulated,
//   `xdc simulate SWEEP.yaml`, draws them whatever `simulated:` says)
//
// A point's directory name comes from its values ("delay-20ms_schedules-1f1b"), not its
// index, so adding values to an axis keeps the points already run.
#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "common/input_error.h"
#include "harness/experiment/experiment.h"

namespace xdc::sweep {

struct Axis {
  std::string name;                             // CSV column: the key, or the zip group's name
  std::vector<std::string> keys;                // dotted experiment keys this axis sets
  std::vector<std::vector<YAML::Node>> values;  // [key][value index]
  std::vector<SourcePos> value_pos;             // [value index], of the first key's value
  std::vector<std::string> labels;              // [value index]
  SourcePos pos;                                // of the axis' key
  size_t size() const { return labels.size(); }
};

struct PlotSpec {
  std::string x;           // an axis name
  std::string y;           // a metric (metrics.h, metric_names)
  bool simulated = false;  // also the simulated_<y> line, where there is one
};

// Loading checks every point (about 1.5 ms each), and running one is minutes: the product
// of the axes' sizes is at most this (10 axes of 10 values would never finish loading).
inline constexpr size_t kMaxPoints = 1000;

struct Sweep {
  std::string name, description;
  std::string file;       // the sweep file as given
  std::string base_file;  // the base experiment, resolved
  YAML::Node base;        // its YAML tree
  std::vector<Axis> axes;
  std::vector<PlotSpec> plots;
};

struct Point {
  size_t index = 0;
  std::vector<size_t> at;  // value index per axis
  std::string id;          // directory name
};

// The metrics a plot's `y:` may name (metrics.h lists them).
std::vector<std::string> metric_names();
// Axis values as numbers: durations in ms, rates in Mbit/s, percentages in %, plain
// numbers as they are; nothing when a label is none of these.
std::optional<double> numeric_value(const std::string& label, std::string* unit = nullptr);
bool axis_is_numeric(const Axis& a);
// The axis slowdown and the CSV refer to: the first numeric one (else the first).
size_t reference_axis(const Sweep& s);

Sweep parse_sweep(const std::string& text, const std::string& file_label);
Sweep load_sweep(const std::string& path);

// Every point, first axis slowest; ids made unique.
std::vector<Point> expand(const Sweep& s);

// Sets `value` at the dotted `key` of `root`, creating maps on the way; a step through
// something that is not a map throws std::invalid_argument naming the step.
void set_by_path(YAML::Node& root, const std::string& key, const YAML::Node& value);

// The base experiment with the point's values set, as YAML text.
std::string point_text(const Sweep& s, const Point& p);
// ... validated; InputError points at the sweep file.
run::Experiment point_experiment(const Sweep& s, const Point& p);
// An error of point `p` (its experiment's, its plan's) as InputError at the sweep file's
// first axis, naming the point's values.
InputError point_error(const Sweep& s, const Point& p, const InputError& e);

// "20ms" for a scalar, "1f1b" for a one-element list, "[a, b]" flow style otherwise.
std::string label_of(const YAML::Node& v);

}  // namespace xdc::sweep
