#include "harness/report/results_dir.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "common/input_error.h"
#include "common/text_file.h"
#include "harness/report/html.h"
#include "harness/run/summary_schema.h"
#include "harness/trace/iterations.h"

namespace xdc::report {
namespace fs = std::filesystem;

namespace {

std::optional<nlohmann::json> read_json(const fs::path& p, std::vector<std::string>& notes) {
  auto text = read_text_file(p.string());
  if (!text) return std::nullopt;
  try {
    return nlohmann::json::parse(*text);
  } catch (const std::exception& e) {
    notes.push_back(p.filename().string() + ": not JSON (" + e.what() + ")");
    return std::nullopt;
  }
}

std::optional<trace::Trace> read_trace(const fs::path& p, std::vector<std::string>& notes) {
  auto text = read_text_file(p.string());
  if (!text) return std::nullopt;
  try {
    return trace::from_csv(*text);
  } catch (const std::exception& e) {
    notes.push_back(p.parent_path().filename().string() + "/" + p.filename().string() +
                    ": unreadable trace (" + e.what() + ")");
    return std::nullopt;
  }
}

std::optional<double> number(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return std::nullopt;
  return j[key].get<double>();
}

std::optional<trace::BubbleRatios> bubbles(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_object()) return std::nullopt;
  const auto& b = j[key];
  trace::BubbleRatios r;
  r.megatron = number(b, "megatron").value_or(NAN);
  r.zerobubble = number(b, "zerobubble").value_or(NAN);
  r.crosspipe = number(b, "crosspipe").value_or(NAN);
  return r;
}

std::string scalar_text(const std::string& key, const nlohmann::json& v) {
  auto ends_with = [&](std::string_view suffix) {
    return key.size() > suffix.size() && key.ends_with(suffix);
  };
  if (v.is_number() && ends_with("_ns")) return seconds_text(v.get<double>() / 1e9);
  if (v.is_number() && ends_with("_bps"))
    return v.get<double>() > 0 ? si_text(v.get<double>()) + "bit/s" : "unlimited";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number()) {
    std::ostringstream s;
    s << v.get<double>();
    return s.str();
  }
  return v.dump();
}

// Scalar members (and one level of objects, as "a.b") in file order.
void add_facts(const nlohmann::json& j, const std::vector<std::string>& skip,
               std::vector<std::pair<std::string, std::string>>& out) {
  if (!j.is_object()) return;
  for (auto& [k, v] : j.items()) {
    if (std::find(skip.begin(), skip.end(), k) != skip.end()) continue;
    if (v.is_primitive() && !v.is_null()) out.emplace_back(k, scalar_text(k, v));
    if (v.is_object())
      for (auto& [k2, v2] : v.items())
        if (v2.is_primitive() && !v2.is_null()) out.emplace_back(k + "." + k2, scalar_text(k2, v2));
  }
}

// The measured trace's median-time iteration, and which one it was.
// trace.csv is in undilated time (xdc run divides it by the time dilation when it reads
// the ranks' files); the ranks' own iteration bounds in rank<r>.json are raw, so they are
// divided by the same `time_dilation` here.
void pick_measured(ScheduleData& s, const fs::path& dir, double time_dilation,
                   std::vector<std::string>& notes) {
  auto all = read_trace(dir / "trace.csv", notes);
  if (!all || all->events.empty()) return;
  std::vector<std::vector<int64_t>> starts, ends;
  for (int r = 0; r < all->ranks; ++r) {
    std::vector<std::string> ignore;
    auto rep = read_json(dir / ("rank" + std::to_string(r) + ".json"), ignore);
    if (!rep || !rep->contains("iteration_start_ns") || !rep->contains("iteration_end_ns")) {
      starts.clear();
      ends.clear();
      break;
    }
    starts.push_back((*rep)["iteration_start_ns"].get<std::vector<int64_t>>());
    ends.push_back((*rep)["iteration_end_ns"].get<std::vector<int64_t>>());
    for (auto* v : {&starts.back(), &ends.back()})
      for (auto& t : *v)
        t = static_cast<int64_t>(std::llround(static_cast<double>(t) / time_dilation));
  }
  auto its = trace::split_iterations(*all, starts, ends);
  std::erase_if(its, [](const trace::Trace& t) { return t.events.empty(); });
  if (its.empty()) return;
  std::vector<std::pair<int64_t, size_t>> by_time;
  for (size_t i = 0; i < its.size(); ++i)
    by_time.emplace_back(trace::analyze(its[i]).iteration_ns, i);
  std::sort(by_time.begin(), by_time.end());
  const size_t k = by_time[(by_time.size() - 1) / 2].second;
  s.measured = from_zero(its[k]);
  s.measured_label = its.size() == 1 ? "measured"
                                     : "measured: iteration " + std::to_string(k) + " (of 0-" +
                                           std::to_string(its.size() - 1) + ", median time)";
}

std::vector<double> numbers(const nlohmann::json& j, const char* key) {
  std::vector<double> out;
  if (j.contains(key) && j[key].is_array())
    for (auto& v : j[key]) out.push_back(v.is_number() ? v.get<double>() : NAN);
  return out;
}

std::vector<ScheduleData::Applied> applied(const nlohmann::json& j) {
  std::vector<ScheduleData::Applied> out;
  if (j.is_array())
    for (auto& c : j)
      if (c.is_object() && c.contains("t_s") && c["t_s"].is_number())
        out.push_back({c["t_s"].get<double>(), c.value("what", std::string()),
                       c.value("source", std::string())});
  return out;
}

// Where a schedule's run files are (run/repeat.h run_subdir): <schedule>/, or with
// repeats the repeat whose mean is the median of run_means_s (the lower of two),
// <schedule>/repeat-<k>/, with `label` "repeat K: ".
fs::path run_files_dir(const ScheduleData& s, const fs::path& root, std::string& label) {
  if (s.repeats <= 1) return root / s.name;
  std::vector<std::pair<double, size_t>> by_mean;
  for (size_t k = 0; k < s.run_means_s.size(); ++k)
    if (std::isfinite(s.run_means_s[k])) by_mean.emplace_back(s.run_means_s[k], k);
  std::sort(by_mean.begin(), by_mean.end());
  const size_t k = by_mean.empty() ? 0 : by_mean[(by_mean.size() - 1) / 2].second;
  label = "repeat " + std::to_string(k) + " (median mean): ";
  return root / s.name / ("repeat-" + std::to_string(k));
}

// The run's series (summary.json "series", "changes", "simulated_series").
void read_series(const nlohmann::json& j, ScheduleData& s) {
  s.iteration_s = numbers(j, "iteration_s");
  if (j.contains("series") && j["series"].is_object()) {
    const auto& se = j["series"];
    s.start_s = numbers(se, "start_s");
    s.wan_bytes = numbers(se, "wan_bytes");
    if (se.contains("waits_s") && se["waits_s"].is_object())
      for (auto& [cause, v] : se["waits_s"].items()) {
        std::vector<double> vals;
        if (v.is_array())
          for (auto& x : v) vals.push_back(x.is_number() ? x.get<double>() : NAN);
        s.waits_series.emplace_back(cause, vals);
      }
  }
  if (j.contains("changes")) s.changes = applied(j["changes"]);
  if (j.contains("series") && j["series"].is_object() && j["series"].contains("bubble_ratio")) {
    const auto& b = j["series"]["bubble_ratio"];
    const auto m = numbers(b, "megatron"), z = numbers(b, "zerobubble"),
               c = numbers(b, "crosspipe");
    if (m.size() == z.size() && m.size() == c.size())
      for (size_t i = 0; i < m.size(); ++i) s.bubbles.push_back({m[i], z[i], c[i]});
  }
  if (j.contains("simulated_series") && j["simulated_series"].is_object()) {
    const auto& ss = j["simulated_series"];
    s.has_simulated_series = true;
    s.simulated_series = numbers(ss, "iteration_s");
    s.simulated_start_s = numbers(ss, "start_s");
    if (ss.contains("changes")) s.simulated_changes = applied(ss["changes"]);
    s.simulated_ended = ss.value("ended", std::string());
  }
}

// The entry's keys that only a run read back for pooling needs (ScheduleData's last ones).
void read_run_record(const nlohmann::json& j, ScheduleData& s) {
  if (j.contains("run_seeds") && j["run_seeds"].is_array())
    for (auto& v : j["run_seeds"])
      if (v.is_number_unsigned()) s.run_seeds.push_back(v.get<uint64_t>());
  s.transfers = j.value("transfers", nlohmann::json());
  s.simulated_transfers = j.value("simulated_transfers", nlohmann::json());
  if (j.contains("utilisation") && j["utilisation"].is_object())
    s.utilisation = numbers(j["utilisation"], "per_rank");
  if (j.contains("simulated_utilisation") && j["simulated_utilisation"].is_object())
    s.simulated_utilisation = numbers(j["simulated_utilisation"], "per_rank");
  s.clock_offset_max_us = number(j, "clock_offset_max_us");
  s.clock_residual_us = number(j, "clock_residual_us");
  s.simulated_steady_iteration_s = number(j, "simulated_steady_iteration_s");
  s.simulated_launch_s = number(j, "simulated_launch_to_measured_s");
  if (j.value("tokens_per_s_basis", "") == "modeled") s.modeled = true;
  if (j.contains("missing_runs") && j["missing_runs"].is_array())
    for (auto& m : j["missing_runs"])
      if (m.is_object())
        s.missing_runs.push_back(
            {m.value("repeat", 0), m.value("seed", uint64_t{0}), m.value("state", std::string())});
}

// One schedule's entry; with `traces`, its measured and simulated iterations drawn from
// the trace files beside it.
ScheduleData from_run_entry(const nlohmann::json& j, const fs::path& root, double time_dilation,
                            std::vector<std::string>& notes, bool traces) {
  ScheduleData s;
  s.name = j.value("schedule", std::string("?"));
  s.ok = j.value("ok", true);
  s.error = j.value("error", std::string());
  s.iterations = j.value("iterations", 0);
  s.iteration_s_mean = number(j, "iteration_s_mean");
  s.iteration_s_p50 = number(j, "iteration_s_p50");
  s.iteration_s_p95 = number(j, "iteration_s_p95");
  if (s.iterations == 0 && j.contains("iteration_s") && j["iteration_s"].is_array())
    s.iterations = static_cast<int>(j["iteration_s"].size());
  s.repeats = std::max(0, j.value("repeats", 1));
  s.run_means_s = numbers(j, "run_means_s");
  if (j.contains("iteration_s_ci95") && j["iteration_s_ci95"].is_array() &&
      j["iteration_s_ci95"].size() == 2 && j["iteration_s_ci95"][0].is_number() &&
      j["iteration_s_ci95"][1].is_number())
    s.iteration_s_ci95.emplace(j["iteration_s_ci95"][0].get<double>(),
                               j["iteration_s_ci95"][1].get<double>());
  if (s.iterations == 0 && s.iteration_s_mean.value_or(0) == 0)  // nothing was measured
    s.iteration_s_mean = s.iteration_s_p50 = s.iteration_s_p95 = std::nullopt;
  s.bubble = bubbles(j, "bubble_ratio");
  if (!s.iteration_s_mean) s.bubble = std::nullopt;
  s.simulated_iteration_s = number(j, "simulated_iteration_s");
  if (s.simulated_iteration_s.value_or(0) <= 0) s.simulated_iteration_s = std::nullopt;
  if (const auto band = numbers(j, "simulated_band_s");
      s.simulated_iteration_s && band.size() == 2 && std::isfinite(band[0]) &&
      std::isfinite(band[1]) && band[1] > 0)
    s.simulated_band_s.emplace(band[0], band[1]);
  if (j.contains("within_band") && j["within_band"].is_boolean() && s.iteration_s_mean)
    s.within_band = j["within_band"].get<bool>();
  s.simulated_bubble = bubbles(j, "simulated_bubble_ratio");
  if (!s.simulated_iteration_s) s.simulated_bubble = std::nullopt;
  s.measured_over_simulated = number(j, "measured_over_simulated");
  s.simulated_costs = j.value("simulated_costs", std::string());
  s.prefill = j.value("prefill", nlohmann::json());
  s.dp_sync = j.value("dp_sync", nlohmann::json());
  if (j.contains("eval_loss") && j["eval_loss"].is_number())
    s.eval_loss = j["eval_loss"].get<double>();
  s.tokens_per_s = number(j, "tokens_per_s");
  if (s.tokens_per_s.value_or(0) <= 0) s.tokens_per_s = std::nullopt;
  if (j.contains("tcp") && j["tcp"].is_object() && j["tcp"].contains("timeouts") &&
      j["tcp"]["timeouts"].is_number()) {
    s.tcp_timeouts = j["tcp"]["timeouts"].get<int64_t>();
    const double sent = j["tcp"].value("sent_segments", 0.0);
    if (sent > 0) s.tcp_retransmitted_share = j["tcp"].value("retransmitted_segments", 0.0) / sent;
  }
  if (j.contains("tp_stalls") && j["tp_stalls"].is_object()) {
    const nlohmann::json& t = j["tp_stalls"];
    if (t.value("stalled", nlohmann::json()).is_number() &&
        t.value("records", nlohmann::json()).is_number()) {
      s.tp_stalled = t["stalled"].get<int64_t>();
      s.tp_records = t["records"].get<int64_t>();
      s.tp_stall_excess_s = t.value("excess_ms", 0.0) / 1e3;
    }
  }
  if (j.contains("transfers") && j["transfers"].is_object()) {
    s.wan_goodput_mbit_p50 = number(j["transfers"], "goodput_mbit_p50");
    s.wan_connections = j["transfers"].value("connections", 0);
  }
  if (j.contains("simulated_transfers") && j["simulated_transfers"].is_object())
    s.simulated_wan_goodput_mbit_p50 = number(j["simulated_transfers"], "goodput_mbit_p50");
  if (j.contains("mfu") && j["mfu"].is_object()) {
    s.mfu = number(j["mfu"], "value");
    s.peak_flops_per_rank = number(j["mfu"], "peak_flops_per_rank");
    s.modeled = j["mfu"].value("basis", "") == "modeled";
  }
  if (j.contains("simulated_mfu") && j["simulated_mfu"].is_object() && s.simulated_iteration_s)
    s.simulated_mfu = number(j["simulated_mfu"], "value");
  if (j.contains("loss") && j["loss"].is_array())
    for (auto& v : j["loss"]) s.loss.push_back(v.is_number() ? v.get<double>() : NAN);
  if (j.contains("waits_s_per_iteration") && j["waits_s_per_iteration"].is_object())
    for (auto& [cause, v] : j["waits_s_per_iteration"].items())
      if (v.is_number()) s.waits_s.emplace_back(cause, v.get<double>());
  read_series(j, s);
  read_run_record(j, s);
  if (!traces) return s;
  std::string repeat_label;
  const fs::path dir = run_files_dir(s, root, repeat_label);
  pick_measured(s, dir, time_dilation, notes);
  if (s.measured) s.measured_label = repeat_label + s.measured_label;
  if (auto sim = read_trace(dir / "simulated.trace.csv", notes); sim && !sim->events.empty())
    s.simulated = from_zero(*sim);
  return s;
}

}  // namespace

int ScheduleData::measured_runs() const {
  return static_cast<int>(std::count_if(run_means_s.begin(), run_means_s.end(),
                                        [](double m) { return std::isfinite(m); }));
}

ScheduleData::Agreement ScheduleData::agreement() const {
  if (!iteration_s_mean || !simulated_iteration_s) return Agreement::kNone;
  if (simulated_band_s && simulated_band_s->first < simulated_band_s->second && within_band)
    return *within_band ? Agreement::kInBand : Agreement::kOutsideBand;
  if (!has_ci()) return Agreement::kNone;
  const double sim = *simulated_iteration_s;
  return iteration_s_ci95->first <= sim && sim <= iteration_s_ci95->second ? Agreement::kInCi
                                                                           : Agreement::kOutsideCi;
}

trace::Trace from_zero(trace::Trace t) {
  int64_t first = std::numeric_limits<int64_t>::max();
  for (auto& e : t.events) first = std::min(first, e.start_ns);
  if (t.events.empty()) return t;
  for (auto& e : t.events) {
    e.start_ns -= first;
    e.end_ns -= first;
  }
  return t;
}

std::string settings_text(const std::vector<std::string>& settings) {
  std::string list;
  for (const auto& x : settings) list += (list.empty() ? "" : ", ") + x;
  return list.empty() ? "none (stock OpenMPI and TCP)" : list;
}

namespace {
// The experiment as run, when the directory keeps it; a copy that no longer loads (a file
// it names is gone, a key renamed since) is a note, and the page goes without it.
void read_recorded(RunData& d) {
  const fs::path file = fs::path(d.dir) / "experiment.yaml";
  if (!fs::is_regular_file(file)) return;
  try {
    d.recorded = run::load_experiment(file.string());
    if (!d.non_default_settings) d.non_default_settings = run::non_default_settings(*d.recorded);
  } catch (const std::exception& e) {
    d.notes.push_back(std::string("experiment.yaml: does not load, the setup is not drawn (") +
                      e.what() + ")");
  }
}

RunData read_dir(const std::string& dir_text, bool traces) {
  const fs::path dir = dir_text;
  RunData d;
  d.dir = dir_text;
  auto summary = read_json(dir / "summary.json", d.notes);
  if (!summary || !summary->is_object())
    throw InputError(SourcePos{(dir / "summary.json").string(), 0, 0},
                     "no readable summary.json: not a results directory of xdc run or xdc "
                     "simulate");
  const auto& s = *summary;
  d.wan_csv = read_text_file_or_empty((dir / "wan.csv").string());
  d.steps_csv = read_text_file_or_empty((dir / "steps.csv").string());
  if (s.value("schema_version", 0) > run::kSummarySchemaVersion)
    throw InputError(SourcePos{(dir / "summary.json").string(), 0, 0},
                     fmt::format("schema_version {}: written by a newer xdc (this one reads up "
                                 "to {})",
                                 s.value("schema_version", 0), run::kSummarySchemaVersion));
  std::string name = fs::absolute(dir).lexically_normal().filename().string();
  if (name.empty()) name = fs::absolute(dir).lexically_normal().parent_path().filename().string();
  d.experiment = s.value("experiment", name);
  d.compute_mode = s.value("compute_mode", std::string());
  d.compute_costs = s.value("compute_costs", std::string());
  d.simulated_only = s.value("simulated", false);
  d.interrupted = s.value("interrupted", false) || !s.value("complete", true);
  d.backend = s.value("backend", std::string(d.simulated_only ? "none (simulated)" : ""));
  add_facts(s,
            {"schema_version", "experiment", "backend", "compute_mode", "simulated", "schedules"},
            d.setup);
  if (s.contains("time_dilation") && s["time_dilation"].is_number())
    d.time_dilation = std::max(1.0, s["time_dilation"].get<double>());
  if (auto env = read_json(dir / "environment.json", d.notes)) {
    add_facts(*env,
              {"wan_links", "notes", "compute_mode", "shaping_backend", "network", "mpi_tcp_links",
               "mpi_connections", "time_dilation"},
              d.setup);
    // Settings unlike stock OpenMPI / Linux TCP (experiment.h), one line.
    if (auto nd = env->find("non_default_settings"); nd != env->end() && nd->is_array()) {
      d.non_default_settings.emplace();
      for (auto& x : *nd)
        if (x.is_string()) d.non_default_settings->push_back(x.get<std::string>());
      d.setup.emplace_back("non_default_settings", settings_text(*d.non_default_settings));
    }
    if (auto td = env->find("time_dilation"); td != env->end() && td->is_object())
      for (auto& x : td->value("not_stretched", nlohmann::json::array()))
        if (x.is_string()) d.not_stretched.push_back(x.get<std::string>());
  }
  if (s.contains("schedules") && s["schedules"].is_array()) {
    for (const auto& j : s["schedules"])
      if (j.is_object())
        d.schedules.push_back(from_run_entry(j, dir, d.time_dilation, d.notes, traces));
  }
  if (traces) read_recorded(d);
  if (auto lc = read_json(dir / "link_check.json", d.notes)) {
    if (lc->is_object() && lc->contains("links") && (*lc)["links"].is_array())
      d.link_check = *lc;
    else
      d.notes.push_back("link_check.json: no \"links\" array");
    if (d.backend.empty()) d.backend = lc->value("backend", std::string());
  }
  for (const auto& sd : d.schedules)
    for (int k = 0; k < sd.repeats; ++k) {
      const std::string sub = sd.repeats == 1 ? sd.name : sd.name + "/repeat-" + std::to_string(k);
      for (const char* f : {"trace.json", "simulated.trace.json"})
        if (fs::is_regular_file(dir / sub / f)) d.trace_files.push_back(sub + "/" + f);
    }
  return d;
}
}  // namespace

ScheduleData read_schedule_entry(const nlohmann::json& entry) {
  std::vector<std::string> notes;
  return from_run_entry(entry, fs::path(), 1, notes, false);
}

RunData read_results_dir(const std::string& dir) {
  return read_dir(dir, true);
}

RunData read_summary(const std::string& dir) {
  return read_dir(dir, false);
}

}  // namespace xdc::report
