#include "tests/worker/mpirun.h"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/process/process.h"
#include "workloads/model/data.h"
#include "workloads/model/local_model.h"
#include "workloads/schedule/csv.h"

namespace xdc::worker::test {

namespace fs = std::filesystem;

std::string temp_run_dir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("xdc-worker-test-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

MpiRun run_worker(RunSpec& spec, const sched::Schedule& s, int timeout_s) {
  spec.schedule_csv = spec.run_dir + "/schedule.csv";
  if (spec.schedule_name.empty()) spec.schedule_name = s.name;
  sched::write_csv_file(spec.schedule_csv, s);
  const std::string spec_path = spec.run_dir + "/spec.json";
  write_run_spec(spec_path, spec);
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  const std::vector<std::string> argv = {"mpirun",
                                         "-np",
                                         std::to_string(spec.world_size()),
                                         "--oversubscribe",
                                         "--bind-to",
                                         "none",
                                         "--mca",
                                         "btl",
                                         "tcp,self",
                                         "--mca",
                                         "btl_tcp_if_include",
                                         "lo",
                                         XDC_WORKER_EXE,
                                         "--spec",
                                         spec_path};
  const auto t0 = std::chrono::steady_clock::now();
  proc::Result r = proc::run(argv, std::chrono::seconds(timeout_s));
  MpiRun out;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.exit_code = r.exit_code;
  out.out = std::move(r.out);
  out.err = std::move(r.err);
  return out;
}

RankReport read_report(const std::string& run_dir, int world_rank) {
  std::ifstream in(run_dir + "/rank" + std::to_string(world_rank) + ".json");
  if (!in) throw std::runtime_error("no report of rank " + std::to_string(world_rank));
  return nlohmann::json::parse(in).get<RankReport>();
}

trace::Trace read_trace(const std::string& run_dir, int world_rank) {
  std::ifstream in(run_dir + "/rank" + std::to_string(world_rank) + ".trace.csv");
  if (!in) throw std::runtime_error("no trace of rank " + std::to_string(world_rank));
  std::stringstream ss;
  ss << in.rdbuf();
  return trace::from_csv(ss.str());
}

trace::Trace iteration_trace(const std::string& run_dir, int first, int count, int i,
                             int microbatches) {
  trace::Trace t;
  t.ranks = count;
  t.microbatches = microbatches;
  for (int r = first; r < first + count; ++r) {
    const RankReport rep = read_report(run_dir, r);
    const int64_t b = rep.iteration_start_ns.at(i), e = rep.iteration_end_ns.at(i);
    for (trace::Event ev : read_trace(run_dir, r).events) {
      if (ev.start_ns < b || ev.start_ns > e) continue;
      ev.rank -= first;
      t.events.push_back(ev);
    }
  }
  return t;
}

std::vector<double> reference_losses(const RunSpec& spec, int microbatches, int steps) {
  model::set_compute_threads(1);
  model::ModelConfig cfg = model::ModelConfig::from_yaml(YAML::Load(spec.model.dump()));
  cfg.seed = spec.seed;
  model::LocalModel local(cfg, 1, spec.microbatch_size);
  const auto corpus = model::TextCorpus::load({model::kDefaultCorpus});
  model::BatchLoader loader(corpus.train(), spec.microbatch_size, cfg.seq, spec.seed);
  const size_t n = size_t(spec.microbatch_size) * cfg.seq;
  std::vector<int32_t> tok(n * microbatches), tgt(tok.size());
  model::AdamWConfig opt;
  opt.grad_clip = spec.grad_clip;
  std::vector<double> out;
  for (int step = 0; step < steps; ++step) {
    for (int mb = 0; mb < microbatches; ++mb) loader.next(&tok[mb * n], &tgt[mb * n]);
    out.push_back(local.train_step(tok, tgt, microbatches, opt, spec.learning_rate));
  }
  return out;
}

}  // namespace xdc::worker::test
