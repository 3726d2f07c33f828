#pragma once
// What a sweep reports: one row per point per schedule, read from the point's
// summary.json (run/runner.h), so points finished by an earlier invocation count alike.
//
// Metrics (CSV columns after the axes, point and schedule; plot `y:` names):
//   iteration_s, iteration_s_p50, iteration_s_p95, slowdown, bubble.megatron,
//   bubble.zerobubble, bubble.crosspipe, simulated_iteration_s, simulated_bubble.megatron,
//   simulated_bubble.zerobubble, simulated_bubble.crosspipe, measured_over_simulated,
//   tokens_per_s, iteration_s_max (the slowest measured iteration), simulated_iteration_s_max
//   (the slowest of the run predicted with its WAN changes, plan/predict.h; absent
//   without changes), eval_loss (summary.json's, where evaluated), outer_bytes_per_step
//   and stall_s_per_sync (a DiLoCo run's dp_sync: payload_bytes_per_outer_step and
//   stall_s_per_sync), utilisation and simulated_utilisation (summary.json's means over
//   the ranks: compute over wall time, measured and predicted)
// slowdown = iteration_s / iteration_s of the same schedule at the reference axis' first
// value, everything else equal (the reference axis is a plot's x, or in the CSV the first
// numeric axis).
//
// A point's state decides resumption: done when summary.json exists, says it was not
// interrupted, lists every schedule, and experiment.yaml and topology.yaml are what a run
// of the point's experiment writes (else stale).
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/sweep/sweep.h"

namespace xdc::sweep {

enum class PointState { kMissing, kDone, kFailed, kInterrupted, kStale };
const char* state_name(PointState s);
// `record` is what a run of the point writes (run::record of its experiment): the point
// is stale when its experiment.yaml or topology.yaml differ from it. An experiment.yaml
// equal to `text` (point_text(), what runs wrote before results directories kept
// run::record) counts as the same. The first line, point_text's comment naming the sweep
// file as it was given, is not compared: a sweep named by another path (absolute, from
// another directory) has the same points. `schedules` are the experiment's schedule names.
PointState point_state(const std::string& dir, const run::Record& record, const std::string& text,
                       const std::vector<std::string>& schedules);
// The same for a point's experiment (point_experiment): its record, text and schedules.
PointState point_state(const std::string& dir, const run::Experiment& e);

struct Row {
  size_t point = 0;
  std::string id;
  std::vector<size_t> at;  // value index per axis
  std::string schedule;
  std::string status;               // "ok", "failed: ...", "interrupted"
  std::map<std::string, double> m;  // metrics present
};

// Rows of one point from DIR/summary.json (none when it is missing or unreadable).
std::vector<Row> read_rows(const Point& p, const std::string& dir);
// Sets m["slowdown"] against `axis`' first value.
void add_slowdown(const Sweep& s, size_t axis, std::vector<Row>& rows);
std::string sweep_csv(const Sweep& s, const std::vector<Row>& rows);

}  // namespace xdc::sweep
