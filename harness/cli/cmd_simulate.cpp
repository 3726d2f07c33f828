// xdc simulate: predict a pipeline run with the discrete-event simulator; no root, no
// namespaces, nothing built.
//   xdc simulate EXP.yaml [-o DIR]     the experiment as `xdc run` would run it (its plan,
//                                      run/plan.h): DIR/summary.json in `xdc run`'s schema,
//                                      per schedule the simulated trace, report.html
//                                      (run/simulate.h)
//   xdc simulate SWEEP.yaml [-o DIR]   every point of a sweep (sweep/runner.h's
//                                      simulate_sweep): DIR/sweep.csv, index.html
//   xdc simulate --schedule 1f1b,overlap --stages 4 --microbatches 8 --dcs 2
//     --latency 20ms --bandwidth 10gbit --tf 20ms --tb 40ms --activation 10mb -o DIR
//                                      a run described by flags: DIR/summary.json and per
//                                      schedule DIR/<schedule>/{trace.json,trace.csv,schedule.csv}
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.h"
#include "common/input_error.h"
#include "common/text_file.h"
#include "harness/common/units.h"
#include "harness/report/report.h"
#include "harness/run/results.h"
#include "harness/run/simulate.h"
#include "harness/sim/setup.h"
#include "harness/sim/simulator.h"
#include "harness/sweep/runner.h"
#include "harness/trace/analysis.h"
#include "harness/trace/chrome.h"
#include "workloads/schedule/csv.h"
#include "workloads/schedule/generators.h"
#include "workloads/schedule/validate.h"

namespace xdc::cli {

namespace {
struct SimArgs {
  std::string measured;  // with an experiment: a results directory of `xdc run`
  std::string experiment, schedules = "1f1b", out_dir = "results/simulate";
  int stages = 4, microbatches = 8, chunks = 2, dcs = 1;
  std::string latency = "0", bandwidth, lan_latency = "0", lan_bandwidth;
  std::string tf = "1ms", tb = "2ms", tw, activation = "0";
  std::string profile, model, device = "a100";
  int seq = 4096, mbs = 1;
  double efficiency = 0.5, memory_cap = 0, milp_seconds = 10;
  double coexec_interference = sim::CostModel::kAssumedCoexecInterference;
  int node_tp = 1;
};

double duration_ms(const std::string& flag, const std::string& text) {
  auto d = parse_duration_us(text);
  if (!d) throw InputError(flag + ": expected " + d.expected + ", got \"" + text + "\"");
  return static_cast<double>(*d.value) / 1000.0;
}
double rate_bps(const std::string& flag, const std::string& text) {
  if (text.empty()) return 0;  // infinite
  auto r = parse_rate_bps(text);
  if (!r) throw InputError(flag + ": expected " + r.expected + ", got \"" + text + "\"");
  return static_cast<double>(*r.value);
}

// A sweep file names its base experiment (`experiment:`, or its alias `base:`) and has a
// `grid:` or a `zip:` (sweep.cpp); an experiment has none of these keys. Anything else is
// read as an experiment (whose parser reports what is wrong with it, FILE:LINE:COL).
bool is_sweep_file(const std::string& path) {
  try {
    const YAML::Node n = YAML::LoadFile(path);
    return n.IsMap() && (n["experiment"] || n["base"] || n["grid"] || n["zip"]);
  } catch (const std::exception&) {
    return false;
  }
}

int simulate_file(const std::string& file, const std::string& out_dir,
                  const std::string& measured) {
  if (is_sweep_file(file)) {
    const auto t0 = std::chrono::steady_clock::now();
    const sweep::Sweep s = sweep::load_sweep(file);
    const sweep::SweepOutcome r = sweep::simulate_sweep(s, out_dir);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("sweep %s: %zu points simulated in %.2f s\nresults: %s/sweep.csv, %s/index.html\n",
                s.name.c_str(), r.points.size(), secs, r.out_dir.c_str(), r.out_dir.c_str());
    return kExitOk;
  }
  const run::Plan plan = run::make_plan(run::load_experiment(file));
  const std::string dir = out_dir.empty() ? "results/simulate-" + plan.experiment.name : out_dir;
  const auto results = run::simulate_plan(plan, dir, run::SimulateOptions{true, measured});
  std::printf("%-18s %12s %10s %10s %10s  %s\n", "schedule", "simulated", "megatron", "zerobubble",
              "crosspipe", "costs");
  bool ok = true;
  for (const auto& r : results) {
    ok = ok && r.ok;
    if (!r.ok) {
      std::printf("%-18s FAILED: %s\n", r.schedule.c_str(), r.error.c_str());
      continue;
    }
    std::printf("%-18s %10.3f s %9.1f%% %9.1f%% %9.1f%%  %s\n", r.schedule.c_str(),
                r.simulated_iteration_s, 100 * r.simulated_bubble.megatron,
                100 * r.simulated_bubble.zerobubble, 100 * r.simulated_bubble.crosspipe,
                r.simulated_costs.c_str());
  }
  std::printf("results: %s/summary.json\n", dir.c_str());
  try {
    std::printf("report:  %s\n", report::write_report(dir).c_str());
  } catch (const std::exception& ex) {  // the prediction stands anyway
    std::fprintf(stderr, "xdc: no report: %s\n", ex.what());
  }
  return ok ? kExitOk : kExitRunFailed;
}

int run(const SimArgs& a) {
  if (a.stages < 1 || a.microbatches < 1 || a.dcs < 1 || a.dcs > a.stages)
    throw InputError("--stages, --microbatches >= 1 and 1 <= --dcs <= --stages expected");
  sim::CostSpec spec;
  if (!a.model.empty()) {
    spec.source = sim::CostSpec::Source::kShape;
    spec.model = a.model;
    spec.device = a.device;
    spec.workload = {a.seq, a.mbs, a.efficiency, 2, 1, a.node_tp};
  } else if (!a.profile.empty()) {
    spec.source = sim::CostSpec::Source::kProfile;
    spec.profile_text = read_input_file(a.profile, "the profile");
    spec.profile_file = a.profile;
  } else {
    spec.f_ms = duration_ms("--tf", a.tf);
    spec.b_ms = duration_ms("--tb", a.tb);
    spec.w_ms = a.tw.empty() ? -1 : duration_ms("--tw", a.tw);
    if (spec.w_ms > spec.b_ms) throw InputError("--tw: the weight grad is part of --tb");
    auto bytes = parse_size_bytes(a.activation);
    if (!bytes)
      throw InputError("--activation: expected " + bytes.expected + ", got \"" + a.activation +
                       "\"");
    spec.activation_bytes = static_cast<int64_t>(*bytes.value);
  }
  sim::Network net;
  net.dcs = a.dcs;
  net.wan = {static_cast<int64_t>(duration_ms("--latency", a.latency) * 1e6),
             rate_bps("--bandwidth", a.bandwidth)};
  net.lan = {static_cast<int64_t>(duration_ms("--lan-latency", a.lan_latency) * 1e6),
             rate_bps("--lan-bandwidth", a.lan_bandwidth)};
  const sched::Params p =
      sim::make_params(spec, net, a.stages, a.microbatches, a.chunks, a.memory_cap);
  sched::Params params = p;
  params.milp_seconds = a.milp_seconds;

  std::vector<std::string> names;
  std::stringstream list(a.schedules);
  for (std::string n; std::getline(list, n, ',');) {
    if (n.empty()) continue;
    const auto& known = sched::schedule_names();
    if (std::find(known.begin(), known.end(), n) == known.end())
      throw InputError("--schedule: unknown schedule \"" + n + "\" (xdc schedule list)");
    names.push_back(n);
  }
  // Every schedule generated before anything is printed or written: bad flags leave nothing.
  std::vector<sched::Schedule> schedules;
  std::vector<sched::ValidationReport> reports;
  for (const auto& name : names) {
    try {
      schedules.push_back(sched::generate(name, params));
    } catch (const std::invalid_argument& e) {
      throw InputError(std::string("--schedule: ") + e.what());
    }
    reports.push_back(sched::validate(schedules.back(), a.memory_cap));
    if (reports.back().ok()) continue;
    // A fixed schedule (1f1b, gpipe, ...) does not adapt to the cap: refused, not run past it.
    if (a.memory_cap > 0)
      throw InputError("--memory-cap: " + name + " does not fit:\n" + reports.back().message());
    throw std::runtime_error(name + ": generated an invalid schedule:\n" +
                             reports.back().message());
  }
  std::filesystem::create_directories(a.out_dir);
  nlohmann::json summary = {
      {"simulated", true},
      {"stages", a.stages},
      {"microbatches", a.microbatches},
      {"dcs", a.dcs},
      {"wan", {{"latency_ns", net.wan.latency_ns}, {"bandwidth_bps", net.wan.bandwidth_bps}}}};
  std::printf("%-18s %12s %12s %10s %10s %10s %6s\n", "schedule", "iteration", "per mb", "megatron",
              "zerobubble", "crosspipe", "peak");
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    const sched::Schedule& s = schedules[i];
    const sched::ValidationReport& rep = reports[i];
    sim::CostModel costs = sim::make_costs(spec, a.stages, s.stage_rank);
    costs.coexec_interference = a.coexec_interference;
    const auto t = sim::simulate(s, costs, sim::make_links(net, a.stages));
    const auto sum = trace::analyze(t);
    const auto dir = std::filesystem::path(a.out_dir) / name;
    std::filesystem::create_directories(dir);
    trace::write_file(dir / "trace.json", trace::to_chrome_json(t));
    trace::write_file(dir / "trace.csv", trace::to_csv(t));
    sched::write_csv_file(dir / "schedule.csv", s);
    double peak = 0;
    for (double x : rep.peak_activations) peak = std::max(peak, x);
    std::printf("%-18s %9.3f ms %9.3f ms %9.1f%% %9.1f%% %9.1f%% %6g\n", name.c_str(),
                sum.iteration_ns / 1e6, sum.time_per_microbatch_ns / 1e6, 100 * sum.bubble.megatron,
                100 * sum.bubble.zerobubble, 100 * sum.bubble.crosspipe, peak);
    nlohmann::json j = {{"iteration_ns", sum.iteration_ns},
                        {"time_per_microbatch_ns", sum.time_per_microbatch_ns},
                        {"bubble",
                         {{"megatron", sum.bubble.megatron},
                          {"zerobubble", sum.bubble.zerobubble},
                          {"crosspipe", sum.bubble.crosspipe}}},
                        {"peak_activations", rep.peak_activations},
                        {"comm_bytes", sum.comm_bytes}};
    for (const auto& [k, v] : s.info) j["info"][k] = v;
    summary["schedules"][name] = j;
  }
  std::ofstream(std::filesystem::path(a.out_dir) / "summary.json") << summary.dump(2) << "\n";
  std::printf("wrote %s/summary.json and per-schedule traces\n", a.out_dir.c_str());
  return kExitOk;
}
}  // namespace

void add_simulate_command(CLI::App& app, Commands& out) {
  static SimArgs a;
  auto* c =
      app.add_subcommand("simulate", "predict a pipeline run with the discrete-event simulator");
  c->add_option("file", a.experiment,
                "experiment or sweep YAML (else the run is described by the flags)");
  c->add_option("-s,--schedule", a.schedules, "schedules, comma-separated (xdc schedule list)")
      ->capture_default_str();
  c->add_option("-p,--stages", a.stages, "pipeline ranks")->capture_default_str();
  c->add_option("-m,--microbatches", a.microbatches, "microbatches")->capture_default_str();
  c->add_option("-v,--chunks", a.chunks, "chunks per rank (interleaved)")->capture_default_str();
  c->add_option("--dcs", a.dcs, "DCs, ranks split into contiguous blocks")->capture_default_str();
  c->add_option("--latency", a.latency, "WAN one-way latency, e.g. 20ms")->capture_default_str();
  c->add_option("--bandwidth", a.bandwidth,
                "WAN rate per direction, e.g. 10gbit (default: infinite)");
  c->add_option("--lan-latency", a.lan_latency, "intra-DC one-way latency")->capture_default_str();
  c->add_option("--lan-bandwidth", a.lan_bandwidth, "intra-DC rate (default: infinite)");
  c->add_option("--tf", a.tf, "forward time per microbatch per rank")->capture_default_str();
  c->add_option("--tb", a.tb, "full backward time (B + W)")->capture_default_str();
  c->add_option("--tw", a.tw, "weight-grad part of --tb (default: half)");
  c->add_option("--activation", a.activation, "bytes per activation message, e.g. 10mb")
      ->capture_default_str();
  c->add_option("--profile", a.profile,
                "per-rank or per-stage cost CSV (stage,f_ms,b_ms,w_ms[,bytes])");
  c->add_option("--model", a.model,
                "cost from a model shape: llama2-7b, llama2-13b, llama2-70b, llama-72b");
  c->add_option("--node-tp", a.node_tp,
                "with --model: each rank is a node of this many devices in tensor parallel "
                "(their all-reduces at the device's node bandwidth, inside F and B)")
      ->check(CLI::Range(1, 64));
  c->add_option("--device", a.device, "device for --model: a100, a40, h100, 910b")
      ->capture_default_str();
  c->add_option("--seq", a.seq, "sequence length for --model")->capture_default_str();
  c->add_option("--mbs", a.mbs, "microbatch size for --model")->capture_default_str();
  c->add_option("--efficiency", a.efficiency, "achieved / peak FLOP/s for --model")
      ->capture_default_str();
  c->add_option("--memory-cap", a.memory_cap, "peak activations per rank (microbatches)");
  c->add_option("--coexec-interference", a.coexec_interference,
                "dhelix's co-executed pairs: how much computation slows beside the other "
                "half's communication (assumed)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 10.0));
  c->add_option("--milp-seconds", a.milp_seconds, "time limit of `optimal`")->capture_default_str();
  auto* measured_opt =
      c->add_option("--measured", a.measured,
                    "with EXP.yaml: predict with the compute durations this `xdc run` results "
                    "directory measured (its <schedule>/trace.csv)");
  auto* out_opt = c->add_option("-o,--output", a.out_dir,
                                "output directory (with a file: results/simulate-<name>, "
                                "results/simulate-sweep-<name>)")
                      ->check(kOutputDir);
  out.push_back(
      {c, [c, out_opt, measured_opt] {
         if (a.experiment.empty()) {
           if (measured_opt->count()) throw InputError("--measured: needs an experiment file");
           return run(a);
         }
         // The flags describe a run of their own; with a file they would be ignored.
         for (const CLI::Option* o : c->get_options())
           if (o != out_opt && o != measured_opt && o->get_name() != "file" && o->count() > 0)
             throw InputError(o->get_name() + ": describes a run without a file; " + a.experiment +
                              " describes its own");
         if (measured_opt->count() && is_sweep_file(a.experiment))
           throw InputError("--measured: takes an experiment, not a sweep");
         return simulate_file(a.experiment, out_opt->count() ? a.out_dir : "", a.measured);
       }});
}

}  // namespace xdc::cli
