// Sweep rows, point states and sweep.csv (see metrics.h).
#include "harness/sweep/metrics.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>

#include "common/input_error.h"
#include "common/text_file.h"
#include "harness/report/results_dir.h"
#include "harness/run/prefill_results.h"

namespace xdc::sweep {
namespace fs = std::filesystem;

namespace {

// A point's summary through the report's reader (one reader of summary.json); none where
// the point has no readable one yet.
std::optional<report::RunData> read_summary(const std::string& dir) {
  if (!fs::exists(fs::path(dir) / "summary.json")) return std::nullopt;
  try {
    return report::read_summary(dir);
  } catch (const InputError&) {
    return std::nullopt;
  }
}

void put(Row& r, const std::string& name, std::optional<double> v) {
  if (v && std::isfinite(*v)) r.m[name] = *v;
}

std::optional<double> max_of(const std::vector<double>& v) {
  std::optional<double> m;
  for (double x : v)
    if (std::isfinite(x) && (!m || x > *m)) m = x;
  return m;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

const char* state_name(PointState s) {
  switch (s) {
    case PointState::kMissing:
      return "to run";
    case PointState::kDone:
      return "done";
    case PointState::kFailed:
      return "failed";
    case PointState::kInterrupted:
      return "interrupted";
    case PointState::kStale:
      return "stale";
  }
  return "?";
}

PointState point_state(const std::string& dir, const run::Record& record, const std::string& text,
                       const std::vector<std::string>& schedules) {
  const auto summary = read_summary(dir);
  if (!summary) return PointState::kMissing;
  // The text after point_text's first line ("# SWEEP-FILE, point ID").
  auto body = [](const std::string& t) -> std::string_view {
    const std::string_view v(t);
    if (v.rfind("# ", 0) != 0) return v;
    const size_t eol = v.find('\n');
    return eol == std::string_view::npos ? std::string_view() : v.substr(eol + 1);
  };
  const std::string kept = read_text_file_or_empty(fs::path(dir) / "experiment.yaml");
  if (body(kept) != body(record.experiment) && body(kept) != body(text)) return PointState::kStale;
  if (!record.topology.empty() &&
      read_text_file_or_empty(fs::path(dir) / "topology.yaml") != record.topology)
    return PointState::kStale;
  if (summary->interrupted) return PointState::kInterrupted;
  bool failed = false;
  for (auto& name : schedules) {
    bool found = false;
    for (const report::ScheduleData& s : summary->schedules)
      if (s.name == name) {
        found = true;
        failed = failed || !s.ok;
      }
    if (!found) return PointState::kInterrupted;
  }
  return failed ? PointState::kFailed : PointState::kDone;
}

PointState point_state(const std::string& dir, const run::Experiment& e) {
  std::vector<std::string> names;
  for (const auto& c : e.schedules) names.push_back(c.name);
  return point_state(dir, run::record(e), e.text, names);
}

std::vector<Row> read_rows(const Point& p, const std::string& dir) {
  std::vector<Row> rows;
  const auto summary = read_summary(dir);
  if (!summary) return rows;
  for (const report::ScheduleData& s : summary->schedules) {
    Row r;
    r.point = p.index;
    r.id = p.id;
    r.at = p.at;
    r.schedule = s.name;
    r.status = s.ok ? "ok" : summary->interrupted ? "interrupted" : "failed: " + s.error;
    put(r, "iteration_s", s.iteration_s_mean);
    put(r, "iteration_s_p50", s.iteration_s_p50);
    put(r, "iteration_s_p95", s.iteration_s_p95);
    for (const auto& [name, b] :
         {std::pair{"bubble.", s.bubble}, std::pair{"simulated_bubble.", s.simulated_bubble}})
      if (b) {
        put(r, std::string(name) + "megatron", b->megatron);
        put(r, std::string(name) + "zerobubble", b->zerobubble);
        put(r, std::string(name) + "crosspipe", b->crosspipe);
      }
    put(r, "simulated_iteration_s", s.simulated_iteration_s);
    put(r, "measured_over_simulated", s.measured_over_simulated);
    put(r, "tokens_per_s", s.tokens_per_s);
    // The slowest iteration, measured and predicted with the WAN's changes (a flap's cost).
    put(r, "iteration_s_max", max_of(s.iteration_s));
    put(r, "simulated_iteration_s_max", max_of(s.simulated_series));
    put(r, "eval_loss", s.eval_loss);
    const auto mean = [](const std::vector<double>& v) -> std::optional<double> {
      if (v.empty()) return std::nullopt;
      return run::mean_of(v);
    };
    put(r, "utilisation", mean(s.utilisation));
    put(r, "simulated_utilisation", mean(s.simulated_utilisation));
    if (s.dp_sync.is_object()) {
      const auto number = [&](const char* k) -> std::optional<double> {
        if (!s.dp_sync.contains(k) || !s.dp_sync[k].is_number()) return std::nullopt;
        return s.dp_sync[k].get<double>();
      };
      put(r, "outer_bytes_per_step", number("payload_bytes_per_outer_step"));
      put(r, "stall_s_per_sync", number("stall_s_per_sync"));
    }
    if (!s.ok) {  // a failed run's partial figures are not results
      for (const char* k :
           {"iteration_s", "iteration_s_p50", "iteration_s_p95", "iteration_s_max", "tokens_per_s",
            "measured_over_simulated", "bubble.megatron", "bubble.zerobubble", "bubble.crosspipe",
            "eval_loss", "outer_bytes_per_step", "stall_s_per_sync", "utilisation"})
        r.m.erase(k);
    }
    if (r.m.count("iteration_s") && r.m["iteration_s"] <= 0) r.m.erase("iteration_s");
    if (!(r.m.count("simulated_iteration_s") && r.m["simulated_iteration_s"] > 0))
      for (const char* k : {"simulated_iteration_s", "simulated_bubble.megatron",
                            "simulated_bubble.zerobubble", "simulated_bubble.crosspipe"})
        r.m.erase(k);  // 0: the run stopped before its simulation
    rows.push_back(std::move(r));
  }
  return rows;
}

void add_slowdown(const Sweep& s, size_t axis, std::vector<Row>& rows) {
  for (const auto& [of, key] : {std::pair<std::string, std::string>{"iteration_s", "slowdown"},
                                {"simulated_iteration_s", "simulated_slowdown"}})
    for (auto& r : rows) {
      r.m.erase(key);
      if (!r.m.count(of)) continue;
      for (auto& base : rows) {
        if (base.schedule != r.schedule || !base.m.count(of)) continue;
        bool same = base.at[axis] == 0;
        for (size_t a = 0; a < s.axes.size() && same; ++a)
          if (a != axis && base.at[a] != r.at[a]) same = false;
        if (same) r.m[key] = r.m[of] / base.m[of];
      }
    }
}

std::string sweep_csv(const Sweep& s, const std::vector<Row>& rows) {
  std::ostringstream out;
  out << "point,id";
  for (auto& a : s.axes) out << "," << csv_field(a.name);
  out << ",schedule,status";
  for (auto& m : metric_names()) out << "," << m;
  out << "\n";
  for (auto& r : rows) {
    out << r.point << "," << csv_field(r.id);
    for (size_t a = 0; a < s.axes.size(); ++a) out << "," << csv_field(s.axes[a].labels[r.at[a]]);
    out << "," << csv_field(r.schedule) << "," << csv_field(r.status);
    for (auto& m : metric_names()) {
      out << ",";
      auto it = r.m.find(m);
      if (it != r.m.end()) out << it->second;
    }
    out << "\n";
  }
  return out.str();
}

}  // namespace xdc::sweep
