// xdc simulate: predict a pipeline run with the discrete-event simulator; no root, no
// namespaces, nothing built.
//   xdc simulate EXP.yaml [-o DIR]     the experiment as `xdc run` would run it (its plan,
//                                      plan/plan.h): DIR/summary.json in `xdc run`'s schema,
//                                      per schedule the simulated trace, report.html
//                                      (run/simulate.h)
//   xdc simulate SWEEP.yaml [-o DIR]   every point of a sweep (sweep/runner.h's
//                                      simulate_sweep): DIR/sweep.csv, index.html
//   xdc simulate --schedule 1f1b,overlap --stages 4 --microbatches 8 --dcs 2
//     --latency 20ms --bandwidth 10gbit --tf 20ms --tb 40ms --activation 10mb -o DIR
//                                      a run described by flags: the experiment they
//                                      describe (DIR/experiment.yaml), predicted as above
//   xdc simulate EXP|SWEEP.yaml --utilisation 0.95 [--rate-range 1mbit:10tbit]
//                                      the WAN rate (every direction, the experiment's
//                                      `wan: {rate}`) at which each schedule's predicted
//                                      compute utilisation reaches 0.95 (of every point of
//                                      a sweep): a bisection over the full prediction
//                                      (stdout, and -o DIR/rate.json)
//   xdc simulate --paper-table4 [-o DIR]
//                                      Streaming DiLoCo's Table 4 under the paper's own
//                                      assumptions (sim/paper_utilisation.h), beside the
//                                      paper's cells (stdout, DIR/table4.json)
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.h"
#include "common/input_error.h"
#include "common/text_file.h"
#include "harness/common/units.h"
#include "harness/experiment/experiment.h"
#include "harness/plan/predict.h"
#include "harness/report/report.h"
#include "harness/run/host_memory.h"
#include "harness/run/results.h"
#include "harness/run/simulate.h"
#include "harness/sim/paper_utilisation.h"
#include "harness/sweep/runner.h"
#include "harness/sweep/sweep.h"
#include "workloads/schedule/generators.h"

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
  double utilisation = 0;  // with a file: the rate for this predicted utilisation
  std::string rate_range = "1mbit:10tbit";
  bool paper_table4 = false;
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

int print_prediction(const run::Plan& plan, const std::string& dir, const std::string& measured);

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
  return print_prediction(
      plan, out_dir.empty() ? "results/simulate-" + plan.experiment.name : out_dir, measured);
}

// The experiment `text` (its file `label`, for relative paths) with every WAN direction at
// `bps` (its `wan: {rate}` override).
run::Experiment at_rate(const std::string& text, const std::string& label, double bps) {
  YAML::Node root = YAML::Load(text);
  sweep::set_by_path(root, "wan.rate", YAML::Node(fmt::format("{:.0f}bit", bps)));
  YAML::Emitter out;
  out << root;
  return run::parse_experiment(out.c_str(), label);
}

// Each schedule's predicted mean utilisation over its ranks at `bps`.
std::vector<double> utilisation_at(const std::string& text, const std::string& label, double bps) {
  const run::Plan plan = run::make_plan(at_rate(text, label, bps));
  std::vector<double> out;
  for (const auto& sp : plan.schedules) {
    const auto u = run::simulated_utilisation(run::predict(plan, sp, sp.costs));
    double sum = 0;
    for (double x : u) sum += x;
    out.push_back(u.empty() ? 0 : sum / static_cast<double>(u.size()));
  }
  return out;
}

// One experiment's rows of `xdc simulate --utilisation`: per schedule, the lowest rate in
// [lo0, hi0] at which the prediction reaches `target`, by bisection on a log scale to 0.5%
// (the prediction's utilisation rises with the rate).
nlohmann::json rates_for(const std::string& text, const std::string& label, const std::string& id,
                         double target, double lo0, double hi0) {
  const run::Plan plan = run::make_plan(at_rate(text, label, hi0));
  const std::vector<double> at_lo = utilisation_at(text, label, lo0);
  const std::vector<double> at_hi = utilisation_at(text, label, hi0);
  nlohmann::json rows = nlohmann::json::array();
  for (size_t k = 0; k < plan.schedules.size(); ++k) {
    const std::string name = plan.schedules[k].choice.name;
    nlohmann::json row = {{"schedule", name}};
    if (!id.empty()) row["point"] = id;
    const std::string who = id.empty() ? name : id + " " + name;
    if (at_hi[k] < target) {
      std::printf("%-40s %16s %12.4f (at the range's top)\n", who.c_str(), "above range", at_hi[k]);
      row["rate_bps"] = nullptr;
      row["utilisation_at_top"] = at_hi[k];
    } else if (at_lo[k] >= target) {
      std::printf("%-40s %16s %12.4f (at the range's bottom)\n", who.c_str(), "below range",
                  at_lo[k]);
      row["rate_bps"] = lo0;
      row["utilisation"] = at_lo[k];
    } else {
      double lo = lo0, hi = hi0, u_hi = at_hi[k];
      int n = 3;
      while (hi / lo > 1.005) {
        const double mid = std::sqrt(lo * hi);
        const double u = utilisation_at(text, label, mid)[k];
        ++n;
        (u >= target ? hi : lo) = mid;
        if (u >= target) u_hi = u;
      }
      std::printf("%-40s %11.4g Mbit/s %12.4f %d\n", who.c_str(), hi / 1e6, u_hi, n);
      row["rate_bps"] = hi;
      row["utilisation"] = u_hi;
      row["predictions"] = n;
    }
    rows.push_back(row);
  }
  return rows;
}

// `xdc simulate EXP|SWEEP --utilisation U`: rates_for every schedule (of every point).
int rate_for_utilisation(const SimArgs& a, const std::string& out_dir) {
  if (!(a.utilisation > 0 && a.utilisation < 1))
    throw InputError("--utilisation: expected a fraction in (0, 1), like 0.95");
  const auto colon = a.rate_range.find(':');
  if (colon == std::string::npos)
    throw InputError("--rate-range: expected LOW:HIGH, like 1mbit:10tbit");
  const double lo = rate_bps("--rate-range", a.rate_range.substr(0, colon));
  const double hi = rate_bps("--rate-range", a.rate_range.substr(colon + 1));
  if (!(lo > 0 && hi > lo)) throw InputError("--rate-range: expected 0 < LOW < HIGH");
  nlohmann::json j = {{"file", a.experiment},
                      {"utilisation", a.utilisation},
                      {"rate_range_bps", {lo, hi}},
                      {"schedules", nlohmann::json::array()}};
  std::printf("%-40s %16s %12s %s\n", "schedule", "rate", "utilisation", "predictions");
  auto add = [&j](const nlohmann::json& rows) {
    for (const auto& r : rows) j["schedules"].push_back(r);
  };
  if (is_sweep_file(a.experiment)) {
    const sweep::Sweep s = sweep::load_sweep(a.experiment);
    for (const sweep::Point& p : sweep::expand(s))
      add(rates_for(sweep::point_text(s, p), s.base_file, p.id, a.utilisation, lo, hi));
  } else {
    add(rates_for(read_input_file(a.experiment, "the experiment"), a.experiment, "", a.utilisation,
                  lo, hi));
  }
  if (!out_dir.empty()) {
    std::filesystem::create_directories(out_dir);
    write_text_file(out_dir + "/rate.json", j.dump(2) + "\n");
    std::printf("results: %s/rate.json\n", out_dir.c_str());
  }
  return kExitOk;
}

// `xdc simulate --paper-table4`: every cell of Streaming DiLoCo's Table 4, the paper's
// beside sim/paper_utilisation.h's under the paper's assumptions.
int paper_table4(const std::string& out_dir) {
  nlohmann::json cells = nlohmann::json::array();
  std::printf("%-5s %-42s %4s %9s %9s %7s\n", "model", "method", "CU", "paper", "xdc", "diff");
  int within = 0, streaming = 0;
  for (const sim::PaperRow& row : sim::paper_table4()) {
    const sim::PaperModel* model = nullptr;
    for (const auto& m : sim::paper_models())
      if (m.name == row.model) model = &m;
    if (!model) continue;
    for (size_t c = 0; c < sim::kPaperCu.size(); ++c) {
      const double paper = row.gbit_per_s[c];
      const double ours = sim::paper_bandwidth_for(*model, row.method, sim::kPaperCu[c]);
      const double diff = 100 * (ours - paper) / paper;
      if (row.method != sim::PaperMethod::kDataParallel) {
        ++streaming;
        within += std::abs(diff) <= 20;
      }
      std::printf("%-5s %-42s %3.0f%% %9.2f %9.2f %+6.1f%%\n", row.model.c_str(),
                  sim::paper_method_name(row.method), 100 * sim::kPaperCu[c], paper, ours, diff);
      cells.push_back({{"model", row.model},
                       {"method", sim::paper_method_name(row.method)},
                       {"utilisation", sim::kPaperCu[c]},
                       {"paper_gbit", paper},
                       {"xdc_gbit", ours},
                       {"params", model->params}});
    }
  }
  std::printf("DiLoCo and Streaming cells within 20%% of the paper's: %d of %d\n", within,
              streaming);
  const std::string dir = out_dir.empty() ? "results/simulate-paper-table4" : out_dir;
  std::filesystem::create_directories(dir);
  write_text_file(dir + "/table4.json", cells.dump(2) + "\n");
  std::printf("results: %s/table4.json\n", dir.c_str());
  return kExitOk;
}

// Predicts every schedule of `plan` into `dir` and prints the table.
int print_prediction(const run::Plan& plan, const std::string& dir, const std::string& measured) {
  // What libnbc's copies and sums take, said below (host_memory.h).
  std::string source;
  const sim::HostMemory memory = plan.experiment.data_parallel > 1
                                     ? run::host_memory_for(measured, &source)
                                     : sim::HostMemory{};
  const auto results =
      run::simulate_plan(plan, dir, run::SimulateOptions{true, measured, true, &memory});
  std::printf("%-18s %12s %11s %9s %9s  %s\n", "schedule", "simulated", "bubble/comp", "idle ZB",
              "idle CP", "costs");
  bool ok = true;
  for (const auto& r : results) {
    ok = ok && r.ok;
    if (!r.ok) {
      std::printf("%-18s FAILED: %s\n", r.schedule.c_str(), r.error.c_str());
      continue;
    }
    std::printf("%-18s %10.3f s %9.2f x %8.1f%% %8.1f%%  %s\n", r.schedule.c_str(),
                r.simulated_iteration_s, r.simulated_bubble.megatron,
                100 * r.simulated_bubble.zerobubble, 100 * r.simulated_bubble.crosspipe,
                r.simulated_costs.c_str());
  }
  std::printf("%s", trace::kBubbleLegend);
  if (plan.experiment.data_parallel > 1) {
    std::printf(
        "all-reduce memory work (libnbc): copy into fresh pages %.0f MB/s, reused %.0f MB/s, "
        "sum %.0f MB/s (%s)\n",
        memory.fresh_copy_bps / 1e6, memory.warm_copy_bps / 1e6, memory.sum_bps / 1e6,
        source.c_str());
  }
  std::printf("results: %s/summary.json\n", dir.c_str());
  try {
    std::printf("report:  %s\n", report::write_report(dir).c_str());
  } catch (const std::exception& ex) {  // the prediction stands anyway
    std::fprintf(stderr, "xdc: no report: %s\n", ex.what());
  }
  return ok ? kExitOk : kExitRunFailed;
}

// A run described by flags is sugar for an experiment: the flags become one (an inline
// topology of --dcs DCs, the ranks split into contiguous blocks, every pair of DCs joined
// by the --latency / --bandwidth WAN; modeled compute from --tf/--tb/--tw/--activation,
// --profile or --model), written to OUT/experiment.yaml and predicted as `xdc simulate
// OUT/experiment.yaml` would predict it.
std::string flags_experiment(const SimArgs& a) {
  if (a.stages < 1 || a.microbatches < 1 || a.dcs < 1 || a.dcs > a.stages || a.chunks < 1)
    throw InputError("--stages, --microbatches, --chunks >= 1 and 1 <= --dcs <= --stages expected");
  for (const auto& [flag, text] :
       {std::pair{"--latency", a.latency}, {"--lan-latency", a.lan_latency}})
    duration_ms(flag, text);
  for (const auto& [flag, text] :
       {std::pair{"--bandwidth", a.bandwidth}, {"--lan-bandwidth", a.lan_bandwidth}})
    rate_bps(flag, text);
  std::vector<std::string> names;
  std::stringstream list(a.schedules);
  for (std::string n; std::getline(list, n, ',');) {
    if (n.empty()) continue;
    const auto& known = sched::schedule_names();
    if (std::find(known.begin(), known.end(), n) == known.end())
      throw InputError("--schedule: unknown schedule \"" + n + "\" (xdc schedule list)");
    names.push_back(n);
  }
  if (names.empty()) throw InputError("--schedule: expected at least one schedule");
  std::string compute;
  if (!a.model.empty()) {
    compute = fmt::format(
        "{{model: {}, device: {}, seq: {}, efficiency: {}, tensor_parallel: {}, "
        "coexec_interference: {}}}",
        a.model, a.device, a.seq, a.efficiency, a.node_tp, a.coexec_interference);
  } else if (!a.profile.empty()) {
    read_input_file(a.profile, "the profile");  // a missing file named by its flag
    compute = fmt::format("{{profile: \"{}\", coexec_interference: {}}}",
                          std::filesystem::absolute(a.profile).string(), a.coexec_interference);
  } else {
    duration_ms("--tf", a.tf);
    duration_ms("--tb", a.tb);
    if (!a.tw.empty() && duration_ms("--tw", a.tw) > duration_ms("--tb", a.tb))
      throw InputError("--tw: the weight grad is part of --tb");
    if (auto bytes = parse_size_bytes(a.activation); !bytes)
      throw InputError("--activation: expected " + bytes.expected + ", got \"" + a.activation +
                       "\"");
    compute = fmt::format("{{f: {}, b: {}{}, activation: {}, coexec_interference: {}}}", a.tf, a.tb,
                          a.tw.empty() ? "" : ", w: " + a.tw, a.activation, a.coexec_interference);
  }
  std::string y =
      "# Written by xdc simulate from its flags; `xdc simulate` of this file predicts the same.\n";
  y += "name: simulate-flags\n";
  y += "topology:\n  name: flags\n";
  y += fmt::format("  intra_dc: {{delay: {}{}}}\n", a.lan_latency,
                   a.lan_bandwidth.empty() ? "" : ", rate: " + a.lan_bandwidth);
  y += "  dcs:\n";
  std::vector<std::string> placement;
  for (int d = 0; d < a.dcs; ++d) {
    int hosts = 0;
    for (int r = 0; r < a.stages; ++r)
      if (r * a.dcs / a.stages == d) placement.push_back(fmt::format("dc{}-h{}", d + 1, ++hosts));
    y += fmt::format("    - {{name: dc{}, hosts: {}}}\n", d + 1, hosts);
  }
  if (a.dcs > 1) {
    y += "  wan:\n";
    for (int x = 0; x < a.dcs; ++x)
      for (int z = x + 1; z < a.dcs; ++z)
        y += fmt::format("    - {{between: [dc{}, dc{}], delay: {}{}}}\n", x + 1, z + 1, a.latency,
                         a.bandwidth.empty() ? "" : ", rate: " + a.bandwidth);
  }
  y += "compute:\n  modeled: " + compute + "\n";
  y += fmt::format("pipeline:\n  stages: {}\n  placement: [{}]\n  chunks: {}\n", a.stages,
                   fmt::join(placement, ", "), a.chunks);
  if (a.memory_cap > 0) y += fmt::format("  memory_cap: {}\n", a.memory_cap);
  y += fmt::format("  milp_seconds: {}\n", a.milp_seconds);
  y += fmt::format("microbatches: {}\nmicrobatch_size: {}\nschedules: [{}]\n", a.microbatches,
                   a.mbs, fmt::join(names, ", "));
  return y;
}

int run(const SimArgs& a) {
  // Planned before anything is written: flags the experiment refuses leave nothing.
  const std::string file = (std::filesystem::path(a.out_dir) / "experiment.yaml").string();
  const run::Plan plan = run::make_plan(run::parse_experiment(flags_experiment(a), file));
  return print_prediction(plan, a.out_dir, "");
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
  c->add_option("--lan-bandwidth", a.lan_bandwidth,
                "intra-DC rate (default: a topology's intra_dc default, 10gbit)");
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
                    "with EXP.yaml: predict this `xdc run` results directory again as it "
                    "predicted itself: the schedules it ran, its costs (the compute durations "
                    "it measured where compute is real) and launch offsets");
  auto* util_opt = c->add_option("--utilisation", a.utilisation,
                                 "with EXP.yaml: the WAN rate at which each schedule's predicted "
                                 "compute utilisation reaches this fraction (bisection)");
  auto* range_opt = c->add_option("--rate-range", a.rate_range,
                                  "with --utilisation: the rates searched, LOW:HIGH")
                        ->capture_default_str();
  CLI::Option* table4_opt = c->add_flag("--paper-table4", a.paper_table4,
                                        "Streaming DiLoCo's Table 4 under the paper's assumptions "
                                        "(bandwidth for a utilisation), beside the paper's cells");
  auto* out_opt = c->add_option("-o,--output", a.out_dir,
                                "output directory (with a file: results/simulate-<name>, "
                                "results/simulate-sweep-<name>)")
                      ->check(kOutputDir);
  out.push_back({c, [c, out_opt, measured_opt, util_opt, range_opt, table4_opt] {
                   if (table4_opt->count()) {
                     for (const CLI::Option* o : c->get_options())
                       if (o != out_opt && o != table4_opt && o->count() > 0)
                         throw InputError(o->get_name() + ": --paper-table4 takes only -o");
                     return paper_table4(out_opt->count() ? a.out_dir : "");
                   }
                   if (a.experiment.empty()) {
                     if (measured_opt->count())
                       throw InputError("--measured: needs an experiment file");
                     if (util_opt->count())
                       throw InputError("--utilisation: needs an experiment file");
                     return run(a);
                   }
                   // The flags describe a run of their own; with a file they would be ignored.
                   for (const CLI::Option* o : c->get_options())
                     if (o != out_opt && o != measured_opt && o != util_opt && o != range_opt &&
                         o->get_name() != "file" && o->count() > 0)
                       throw InputError(o->get_name() + ": describes a run without a file; " +
                                        a.experiment + " describes its own");
                   if (range_opt->count() && !util_opt->count())
                     throw InputError("--rate-range: goes with --utilisation");
                   if (util_opt->count()) {
                     if (measured_opt->count())
                       throw InputError("--utilisation: does not take --measured");
                     return rate_for_utilisation(a, out_opt->count() ? a.out_dir : "");
                   }
                   if (measured_opt->count() && is_sweep_file(a.experiment))
                     throw InputError("--measured: takes an experiment, not a sweep");
                   return simulate_file(a.experiment, out_opt->count() ? a.out_dir : "",
                                        a.measured);
                 }});
}

}  // namespace xdc::cli
