#include "harness/run/workload_results.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>

namespace xdc::run {
namespace {

double nan() {
  return std::numeric_limits<double>::quiet_NaN();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

ProgramEvents read_program_events(const std::string& text) {
  ProgramEvents out;
  std::map<std::pair<int, std::string>, std::vector<nlohmann::json>> open;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("t") || !j["t"].is_number() ||
        !j.contains("rank") || !j["rank"].is_number_integer() || !j.contains("name") ||
        !j["name"].is_string()) {
      ++out.bad_lines;
      continue;
    }
    const std::pair<int, std::string> key{j["rank"].get<int>(), j["name"].get<std::string>()};
    const std::string phase = j.value("phase", "");
    if (phase == "begin") {
      open[key].push_back(std::move(j));
    } else if (phase == "end") {
      auto it = open.find(key);
      if (it == open.end() || it->second.empty()) {
        ++out.bad_lines;
        continue;
      }
      ProgramSpan s;
      s.rank = key.first;
      s.name = key.second;
      s.begin_s = it->second.back()["t"].get<double>();
      s.end_s = j["t"].get<double>();
      s.end = std::move(j);
      it->second.pop_back();
      out.spans.push_back(std::move(s));
    } else {
      out.instants.push_back(std::move(j));
    }
  }
  return out;
}

double Steps::mean_s() const {
  if (step_s.size() <= static_cast<size_t>(warmup)) return 0;
  double sum = 0;
  for (size_t i = static_cast<size_t>(warmup); i < step_s.size(); ++i) sum += step_s[i];
  return sum / static_cast<double>(step_s.size() - static_cast<size_t>(warmup));
}

double Steps::mean_compute_s() const {
  if (compute_s.size() <= static_cast<size_t>(warmup)) return 0;
  double sum = 0;
  for (size_t i = static_cast<size_t>(warmup); i < compute_s.size(); ++i) sum += compute_s[i];
  return sum / static_cast<double>(compute_s.size() - static_cast<size_t>(warmup));
}

int64_t Steps::bytes_per_step() const {
  std::vector<double> v;
  for (size_t i = static_cast<size_t>(warmup); i < allreduce_bytes.size(); ++i)
    if (allreduce_bytes[i] > 0) v.push_back(static_cast<double>(allreduce_bytes[i]));
  return static_cast<int64_t>(median(v));
}

Steps program_steps(const ProgramEvents& ev, int world_size, int warmup) {
  Steps out;
  out.warmup = warmup;
  std::vector<std::vector<const ProgramSpan*>> steps(static_cast<size_t>(world_size));
  for (const auto& s : ev.spans)
    if (s.name == "step" && s.rank >= 0 && s.rank < world_size)
      steps[static_cast<size_t>(s.rank)].push_back(&s);
  size_t n = std::numeric_limits<size_t>::max();
  for (auto& r : steps) {
    std::sort(r.begin(), r.end(), [](auto* a, auto* b) { return a->begin_s < b->begin_s; });
    out.per_rank.push_back(static_cast<int>(r.size()));
    n = std::min(n, r.size());
  }
  if (steps.empty()) n = 0;
  for (size_t i = 0; i < n; ++i) {
    // Rank r's i-th step is the window from its (i-1)-th step's end to its i-th step's end
    // (its own begin for the first): what it does between steps counts, and its steps add
    // up to its time.
    auto window = [&](size_t r) {
      return std::pair{i == 0 ? steps[r][0]->begin_s : steps[r][i - 1]->end_s, steps[r][i]->end_s};
    };
    double begin = std::numeric_limits<double>::infinity(), sum = 0;
    for (size_t r = 0; r < steps.size(); ++r) {
      begin = std::min(begin, steps[r][i]->begin_s);
      sum += window(r).second - window(r).first;
    }
    out.step_s.push_back(sum / static_cast<double>(steps.size()));
    out.start_s.push_back(begin);
    double loss = nan();  // the lowest rank's that reports one (a pipeline's last stage)
    for (auto it = steps.rbegin(); it != steps.rend(); ++it)
      if (const auto& line = (*it)[i]->end; line.contains("loss") && line["loss"].is_number())
        loss = line["loss"].get<double>();
    out.loss.push_back(loss);
    // The "compute" and "allreduce" spans inside each rank's i-th window.
    std::vector<double> compute(static_cast<size_t>(world_size), 0.0);
    std::vector<double> allreduce(static_cast<size_t>(world_size), -1.0);  // -1: none
    int64_t bytes = 0;
    for (const auto& s : ev.spans) {
      if (s.rank < 0 || s.rank >= world_size) continue;
      const auto r = static_cast<size_t>(s.rank);
      const auto [from, to] = window(r);
      if (s.begin_s < from || s.end_s > to) continue;
      if (s.name == "compute") compute[r] += s.end_s - s.begin_s;
      if (s.name == "allreduce") allreduce[r] = std::max(allreduce[r], 0.0) + s.end_s - s.begin_s;
      if (s.name == "allreduce" && s.rank == 0 && s.end.contains("bytes") &&
          s.end["bytes"].is_number_integer())
        bytes += s.end["bytes"].get<int64_t>();
    }
    // A rank's own time in the step: outside its all-reduces where it reports them (what
    // lies between its spans is the program's too), else inside its compute spans.
    double slowest = 0;
    for (size_t r = 0; r < steps.size(); ++r)
      slowest =
          std::max(slowest, allreduce[r] >= 0 ? window(r).second - window(r).first - allreduce[r]
                                              : compute[r]);
    out.compute_s.push_back(slowest);
    out.allreduce_bytes.push_back(bytes);
  }
  return out;
}

std::string wan_csv(const std::vector<WanSample>& samples, double t0_s) {
  std::string out = "t_s,link,bytes,packets,drops,queued,bytes_delta,mbit_s\n";
  std::map<std::string, const WanSample*> last;
  for (const auto& s : samples) {
    uint64_t delta = 0;
    double mbit = 0;
    if (auto it = last.find(s.link); it != last.end() && s.t_s > it->second->t_s) {
      delta = s.bytes - it->second->bytes;
      mbit = static_cast<double>(delta) * 8 / (s.t_s - it->second->t_s) / 1e6;
    }
    last[s.link] = &s;
    out += fmt::format("{:.6f},{},{},{},{},{},{},{:.3f}\n", s.t_s - t0_s, s.link, s.bytes,
                       s.packets, s.drops, s.queued, delta, mbit);
  }
  return out;
}

nlohmann::json wan_json(const std::vector<WanSample>& samples) {
  std::map<std::string, std::vector<const WanSample*>> by;
  for (const auto& s : samples) by[s.link].push_back(&s);
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [link, v] : by) {
    double peak = 0, interval_max = 0;
    std::vector<double> intervals;
    for (size_t i = 1; i < v.size(); ++i) {
      const double dt = v[i]->t_s - v[i - 1]->t_s;
      interval_max = std::max(interval_max, dt);
      intervals.push_back(dt);
      if (dt > 0)
        peak = std::max(peak, static_cast<double>(v[i]->bytes - v[i - 1]->bytes) * 8 / dt / 1e6);
    }
    const double span = v.back()->t_s - v.front()->t_s;
    const uint64_t bytes = v.back()->bytes - v.front()->bytes;
    out[link] = {{"samples", v.size()},
                 {"interval_max_s", interval_max},
                 {"interval_p50_s", median(intervals)},
                 {"bytes", bytes},
                 {"drops", v.back()->drops - v.front()->drops},
                 {"mean_mbit_s", span > 0 ? static_cast<double>(bytes) * 8 / span / 1e6 : 0.0},
                 {"peak_mbit_s", peak}};
  }
  return out;
}

nlohmann::json workload_trace(const ProgramEvents& ev, const std::vector<WanSample>& samples,
                              const std::vector<std::string>& rank_hosts,
                              const std::vector<nlohmann::json>& profiles, double t0_s) {
  nlohmann::json events = nlohmann::json::array();
  const auto us = [t0_s](double t) { return (t - t0_s) * 1e6; };
  const int world = static_cast<int>(rank_hosts.size());
  std::vector<double> first(static_cast<size_t>(world), std::numeric_limits<double>::infinity());
  for (int r = 0; r < world; ++r) {
    events.push_back({{"ph", "M"},
                      {"name", "process_name"},
                      {"pid", r},
                      {"args", {{"name", fmt::format("rank {} ({})", r, rank_hosts[r])}}}});
    events.push_back({{"ph", "M"},
                      {"name", "thread_name"},
                      {"pid", r},
                      {"tid", 0},
                      {"args", {{"name", "steps"}}}});
    events.push_back({{"ph", "M"},
                      {"name", "thread_name"},
                      {"pid", r},
                      {"tid", 1},
                      {"args", {{"name", "program"}}}});
  }
  for (const auto& s : ev.spans) {
    if (s.rank < 0 || s.rank >= world) continue;
    first[static_cast<size_t>(s.rank)] = std::min(first[static_cast<size_t>(s.rank)], s.begin_s);
    nlohmann::json args = s.end;
    for (const char* k : {"t", "rank", "name", "phase"}) args.erase(k);
    events.push_back({{"ph", "X"},
                      {"name", s.name},
                      {"pid", s.rank},
                      {"tid", s.name == "step" ? 0 : 1},
                      {"ts", us(s.begin_s)},
                      {"dur", (s.end_s - s.begin_s) * 1e6},
                      {"args", args}});
  }
  const int wan_pid = world;
  events.push_back(
      {{"ph", "M"}, {"name", "process_name"}, {"pid", wan_pid}, {"args", {{"name", "WAN"}}}});
  std::map<std::string, const WanSample*> last;
  for (const auto& s : samples) {
    auto it = last.find(s.link);
    if (it != last.end() && s.t_s > it->second->t_s) {
      const double dt = s.t_s - it->second->t_s;
      const uint64_t bytes = s.bytes - it->second->bytes;
      events.push_back({{"ph", "C"},
                        {"name", s.link + " bytes"},
                        {"pid", wan_pid},
                        {"ts", us(it->second->t_s)},
                        {"args", {{"bytes", bytes}}}});
      events.push_back({{"ph", "C"},
                        {"name", s.link + " Mbit/s"},
                        {"pid", wan_pid},
                        {"ts", us(it->second->t_s)},
                        {"args", {{"mbit_s", static_cast<double>(bytes) * 8 / dt / 1e6}}}});
    }
    events.push_back({{"ph", "C"},
                      {"name", s.link + " queue"},
                      {"pid", wan_pid},
                      {"ts", us(s.t_s)},
                      {"args", {{"packets", s.queued}, {"drops", s.drops}}}});
    last[s.link] = &s;
  }
  // Profiler traces: their processes renumbered past ours, their clock moved onto ours.
  for (int r = 0; r < world && r < static_cast<int>(profiles.size()); ++r) {
    const nlohmann::json& p = profiles[static_cast<size_t>(r)];
    if (!p.is_object() || !p.contains("traceEvents") || !p["traceEvents"].is_array()) continue;
    double min_ts = std::numeric_limits<double>::infinity();
    for (const auto& e : p["traceEvents"])
      if (e.is_object() && e.contains("ts") && e["ts"].is_number())
        min_ts = std::min(min_ts, e["ts"].get<double>());
    if (!std::isfinite(min_ts)) continue;
    // Microseconds since the epoch (Kineto's clock) map directly; any other clock is
    // placed at the rank's first span.
    double base_us = p.value("baseTimeNanoseconds", 0.0) / 1e3;
    double shift = base_us > 0 || min_ts > 1e15 ? base_us - t0_s * 1e6
                   : std::isfinite(first[static_cast<size_t>(r)])
                       ? us(first[static_cast<size_t>(r)]) - min_ts
                       : -min_ts;
    std::map<std::string, int> pids;
    for (auto e : p["traceEvents"]) {
      if (!e.is_object()) continue;
      const std::string key = e.contains("pid") ? e["pid"].dump() : "0";
      auto [it, added] = pids.emplace(key, wan_pid + 1 + r * 100 + static_cast<int>(pids.size()));
      if (added)
        events.push_back({{"ph", "M"},
                          {"name", "process_name"},
                          {"pid", it->second},
                          {"args", {{"name", fmt::format("rank {} profiler {}", r, key)}}}});
      e["pid"] = it->second;
      if (e.contains("ts") && e["ts"].is_number()) e["ts"] = e["ts"].get<double>() + shift;
      if (e.value("ph", "") == "M" && e.value("name", "") == "process_name") continue;
      events.push_back(std::move(e));
    }
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

}  // namespace xdc::run
