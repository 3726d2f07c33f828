// xdc schedule show|validate|list: draw, check and export pipeline schedules.
//   xdc schedule show 1f1b --stages 4 --microbatches 8          text Gantt (T_F units)
//   xdc schedule show zbv --stages 4 --microbatches 8 --csv     PyTorch CSV form
//   xdc schedule show FILE.csv                                  draw a schedule file
//   xdc schedule show EXP.yaml                                  each schedule of an
//       experiment as planned (plan/plan.h) and predicted, in the experiment's own costs
//   xdc schedule validate FILE.csv [--memory-cap N]             exit 2 when invalid
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>

#include "commands.h"
#include "common/input_error.h"
#include "common/text_file.h"
#include "harness/plan/predict.h"
#include "harness/sim/simulator.h"
#include "harness/trace/analysis.h"
#include "harness/trace/gantt.h"
#include "workloads/schedule/csv.h"
#include "workloads/schedule/generators.h"
#include "workloads/schedule/validate.h"

namespace xdc::cli {

namespace {
struct ShowArgs {
  std::string name;
  int stages = 4, microbatches = 8, chunks = 2, dcs = 1;
  double tf = 1, tb = 1, tw = 1, latency = 0, transfer = 0, memory_cap = 0, milp_seconds = 10;
  bool csv = false, no_optimizer = false;
};

bool is_experiment(const std::string& name) {
  return name.ends_with(".yaml") || name.ends_with(".yml");
}
bool is_schedule_file(const std::string& name) {
  return name.ends_with(".csv") || std::filesystem::is_regular_file(name);
}

// Options given that `name` cannot honour are bad input, not silently dropped.
void refuse_given(const std::vector<CLI::Option*>& options, const std::string& name,
                  const std::string& why) {
  std::string given;
  for (const CLI::Option* o : options)
    if (o->count() > 0) given += (given.empty() ? "" : ", ") + o->get_name();
  if (!given.empty())
    throw InputError("schedule show " + name + ": " + given + " cannot apply (" + why +
                     "); drop them");
}

sched::Schedule load_or_generate(const ShowArgs& a, sched::Params& p) {
  if (is_schedule_file(a.name)) return sched::read_csv_file(a.name);
  p.ranks = a.stages;
  p.microbatches = a.microbatches;
  p.chunks = a.chunks;
  p.t_f = a.tf, p.t_b = a.tb, p.t_w = a.tw;
  p.memory_cap = a.memory_cap;
  p.milp_seconds = a.milp_seconds;
  p.optimizer = !a.no_optimizer;
  if (a.dcs > 1) {
    p.links.assign(a.stages, std::vector<sched::LinkDelay>(a.stages));
    for (int x = 0; x < a.stages; ++x)
      for (int y = 0; y < a.stages; ++y)
        if (x * a.dcs / a.stages != y * a.dcs / a.stages) p.links[x][y] = {a.latency, a.transfer};
  }
  try {
    return sched::generate(a.name, p);
  } catch (const std::invalid_argument& e) {
    throw InputError(std::string("schedule: ") + e.what());
  }
}

// Every schedule of an experiment's plan, drawn from its prediction (`xdc simulate`'s).
int show_experiment(const std::string& file) {
  const run::Plan plan = run::make_plan(run::load_experiment(file));
  for (const run::SchedulePlan& sp : plan.schedules) {
    const run::Prediction p = run::predict(plan, sp, sp.costs);
    const sched::ValidationReport rep = sched::validate(sp.schedule);
    std::printf(
        "%s: %d ranks, %d stages, %d microbatches; simulated iteration %.3f s (the steady "
        "state drawn: %.3f s)\n",
        sp.choice.name.c_str(), sp.schedule.ranks, sp.schedule.stages, sp.schedule.microbatches,
        p.iteration_s(), p.steady_iteration_s());
    // Measured-scale durations share no useful gcd: 150 columns across the iteration.
    const int64_t quantum = std::max<int64_t>(1, p.summary.iteration_ns / 150);
    std::cout << trace::text_gantt(p.trace, sp.schedule.chunks(), quantum, 160);
    std::printf(
        "bubble: megatron %.1f%%, zerobubble %.1f%%, crosspipe %.1f%%\npeak activations "
        "(microbatches):",
        100 * p.summary.bubble.megatron, 100 * p.summary.bubble.zerobubble,
        100 * p.summary.bubble.crosspipe);
    for (double x : rep.peak_activations) std::printf(" %g", x);
    std::printf("\n");
    for (const auto& [k, val] : sp.schedule.info) std::printf("%s: %s\n", k.c_str(), val.c_str());
    std::printf("\n");
  }
  return kExitOk;
}

int show(const ShowArgs& a) {
  if (is_experiment(a.name)) return show_experiment(a.name);
  if (a.stages < 1 || a.microbatches < 1)
    throw InputError("--stages and --microbatches must be >= 1");
  sched::Params p;
  const sched::Schedule s = load_or_generate(a, p);
  const auto rep = sched::validate(s, a.memory_cap);  // a schedule past the cap is INVALID
  if (a.csv) {
    std::cout << sched::to_csv(s);
    return rep.ok() ? kExitOk : kExitBadInput;
  }
  // Draw with the simulator at T_F = 1 unit (1 ms of simulated time).
  const double v = static_cast<double>(s.stages) / s.ranks;
  auto ns = [&](double units) { return static_cast<int64_t>(std::llround(units / v * 1e6)); };
  auto costs = sim::constant_costs(s.stages, ns(a.tf), ns(a.tb), ns(a.tw), 1'000'000);
  sim::LinkModel links = sim::LinkModel::uniform(s.ranks, {});
  if (a.dcs > 1)
    for (int x = 0; x < s.ranks; ++x)
      for (int y = 0; y < s.ranks; ++y)
        if (x * a.dcs / s.ranks != y * a.dcs / s.ranks)
          links.at(x, y) = {ns(a.latency * v),
                            a.transfer > 0 ? 8e6 / (a.transfer * 1e-3) : 0};  // 1 MB message
  std::cout << s.name << ": " << s.ranks << " ranks, " << s.stages << " stages, " << s.microbatches
            << " microbatches";
  if (a.dcs > 1)
    std::cout << ", " << a.dcs << " DCs (latency " << a.latency << ", transfer " << a.transfer
              << " T_F)";
  std::cout << "\n";
  if (!rep.ok()) {
    std::cout << "INVALID:\n" << rep.message() << "\n";
    return kExitBadInput;
  }
  trace::Trace t;
  try {
    t = sim::simulate(s, costs, links);
  } catch (const std::invalid_argument& e) {
    throw InputError(e.what());
  }
  std::cout << trace::text_gantt(t, s.chunks());
  const auto sum = trace::analyze(t);
  std::printf(
      "iteration %.2f T_F, %.3f T_F per microbatch; bubble: megatron %.1f%%, "
      "zerobubble %.1f%%, crosspipe %.1f%%\npeak activations (microbatches):",
      sum.iteration_ns / 1e6, sum.time_per_microbatch_ns / 1e6, 100 * sum.bubble.megatron,
      100 * sum.bubble.zerobubble, 100 * sum.bubble.crosspipe);
  for (double x : rep.peak_activations) std::printf(" %g", x);
  std::printf("\n");
  for (const auto& [k, val] : s.info) std::printf("%s: %s\n", k.c_str(), val.c_str());
  return kExitOk;
}
}  // namespace

void add_schedule_commands(CLI::App& app, Commands& out) {
  auto* sc = app.add_subcommand("schedule", "draw, export and check pipeline schedules");
  sc->require_subcommand(1);

  static ShowArgs a;
  auto* show_cmd = sc->add_subcommand("show", "print a schedule as a text Gantt chart (or CSV)");
  show_cmd
      ->add_option("name", a.name,
                   "schedule name (xdc schedule list), a schedule CSV file, or an "
                   "experiment YAML (its schedules as planned)")
      ->required();
  // Options that make a schedule (a file or an experiment brings its own) and options that
  // draw one (an experiment brings its own costs and links).
  static std::vector<CLI::Option*> making, drawing;
  making = {
      show_cmd->add_option("-p,--stages", a.stages, "pipeline ranks (stages)")
          ->capture_default_str(),
      show_cmd->add_option("-m,--microbatches", a.microbatches, "microbatches")
          ->capture_default_str(),
      show_cmd->add_option("-v,--chunks", a.chunks, "chunks per rank for interleaved")
          ->capture_default_str(),
      show_cmd->add_flag("--no-optimizer", a.no_optimizer, "leave out ALLREDUCE/OPT"),
      show_cmd->add_option("--milp-seconds", a.milp_seconds, "time limit of `optimal`")
          ->capture_default_str(),
  };
  static CLI::Option* latency = nullptr;
  static CLI::Option* transfer = nullptr;
  latency = show_cmd->add_option("--latency", a.latency, "one-way latency between DCs (T_F units)");
  transfer =
      show_cmd->add_option("--transfer", a.transfer, "bytes/bandwidth of one message (T_F units)");
  drawing = {
      show_cmd->add_flag("--csv", a.csv, "print PyTorch's CSV form instead"),
      show_cmd->add_option("--tf", a.tf, "forward cost (T_F units)")->capture_default_str(),
      show_cmd->add_option("--tb", a.tb, "input-grad cost; a full backward is tb + tw")
          ->capture_default_str(),
      show_cmd->add_option("--tw", a.tw, "weight-grad cost")->capture_default_str(),
      show_cmd->add_option("--dcs", a.dcs, "split the ranks into this many DCs")
          ->capture_default_str(),
      latency,
      transfer,
      show_cmd->add_option("--memory-cap", a.memory_cap,
                           "peak activations per rank (microbatches)"),
  };
  out.push_back({show_cmd, [] {
                   if (is_experiment(a.name)) {
                     std::vector<CLI::Option*> all = making;
                     all.insert(all.end(), drawing.begin(), drawing.end());
                     refuse_given(all, a.name,
                                  "an experiment brings its own schedules, costs and links");
                   } else {
                     if (is_schedule_file(a.name))
                       refuse_given(making, a.name,
                                    "a schedule file fixes its ranks, microbatches and actions");
                     if (a.dcs <= 1)
                       refuse_given({latency, transfer}, a.name, "they need --dcs 2 or more");
                   }
                   return show(a);
                 }});

  static std::string file;
  static double cap = 0;
  auto* val = sc->add_subcommand("validate", "check a schedule CSV (PyTorch form)");
  val->add_option("file", file, "schedule CSV")->required();
  val->add_option("--memory-cap", cap, "peak activations per rank (microbatches)");
  out.push_back({val, [] {
                   const auto s = sched::read_csv_file(file);
                   const auto rep = sched::validate(s, cap);
                   if (!rep.ok()) {
                     // At the row of the rank the first error is about (1:1: the whole file).
                     const std::vector<int> rows =
                         sched::csv_row_lines(read_text_file_or_empty(file));
                     const int r = rep.rank_of.empty() ? -1 : rep.rank_of[0];
                     const int line = r >= 0 && r < static_cast<int>(rows.size()) ? rows[r] : 1;
                     throw InputError(SourcePos{file, line, 1}, rep.message());
                   }
                   std::cout << file << ": ok: " << s.ranks << " ranks, " << s.stages << " stages, "
                             << s.microbatches << " microbatches; peak activations";
                   for (double x : rep.peak_activations) std::cout << " " << x;
                   std::cout << "\n";
                   return kExitOk;
                 }});

  auto* list = sc->add_subcommand("list", "list the schedule generators");
  out.push_back({list, [] {
                   for (const auto& n : sched::schedule_names()) std::cout << n << "\n";
                   return kExitOk;
                 }});
}

}  // namespace xdc::cli
