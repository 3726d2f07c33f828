// xdc profile MODEL: measure the mini Llama's per-stage compute costs on this machine's CPU
// or GPU and write the profile CSV that modeled experiments ({modeled: {profile: FILE}})
// and `xdc simulate --profile` read (harness/sim/cost_model.h), so that a modeled run can
// say where its costs came from ("measured on cuda:0 (NVIDIA H100 80GB HBM3)").
//   xdc profile MODEL [--device cpu|cuda] [--gpu N] [--stages S] [--microbatch-size B]
//               [--repeats N] [--threads N] -o costs.csv
// MODEL: a preset (tiny, small, medium) or a YAML file: an experiment (its `model:`) or a
// bare model map (model/config.h keys). The CSV's first line is a comment naming the
// device, the model, the microbatch size, the statistic and the date; modeled runs quote
// it in their summary and report (compute_costs).
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "commands.h"
#include "common/input_error.h"
#include "workloads/model/parallel.h"
#include "workloads/model/profile.h"

namespace xdc::cli {

namespace {

struct ProfileArgs {
  std::string model, device = "cpu", out;
  int gpu = 0, stages = 1, microbatch_size = 1, repeats = 10, threads = 1;
};

model::ModelConfig load_model(const std::string& what) {
  if (!std::filesystem::exists(what)) {
    try {
      return model::ModelConfig::preset(what);
    } catch (const std::invalid_argument& e) {
      throw InputError(std::string("MODEL: a preset or a YAML file; ") + e.what() +
                       " (and no such file)");
    }
  }
  YAML::Node root;
  try {
    root = YAML::LoadFile(what);
  } catch (const YAML::Exception& e) {
    throw InputError(SourcePos{what, e.mark.line + 1, e.mark.column + 1}, "YAML syntax: " + e.msg);
  }
  return model::ModelConfig::from_yaml(root["model"] ? root["model"] : root, what);
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

int run_profile(const ProfileArgs& a) {
  const model::ModelConfig cfg = load_model(a.model);
  if (a.stages < 1 || a.stages > cfg.layers)
    throw InputError(
        fmt::format("--stages: expected 1..{} (the model's layers), got {}", cfg.layers, a.stages));
  model::ProfileOptions o;
  o.stages = a.stages;
  o.microbatch_size = a.microbatch_size;
  o.device = a.device == "cuda" ? model::Device::kCuda : model::Device::kCpu;
  o.gpu = a.gpu;
  o.repeats = a.repeats;
  if (o.device == model::Device::kCuda) {
    std::string why;
    const auto gpus = model::cuda_gpus(&why);
    if (gpus.empty()) throw InputError("--device cuda: there is no GPU to run on here: " + why);
    if (a.gpu >= static_cast<int>(gpus.size()))
      throw InputError(fmt::format("--gpu: GPU {} asked, this machine has {}", a.gpu, gpus.size()));
  }
  model::set_compute_threads(a.threads);
  const model::Profile p = model::profile_stages(
      cfg, o, [](const std::string& line) { std::cerr << "xdc profile: " << line << "\n"; });
  std::ostringstream csv;
  csv << fmt::format(
      "# xdc profile: measured on {}; model dim {}, {} layers, {} heads ({} kv), ffn {}, seq {}, "
      "vocab {}, fp32; microbatch size {}; {} stage(s); median of {} after {} warm-up; {}\n",
      p.device, cfg.dim, cfg.layers, cfg.heads, cfg.kv_heads, cfg.ffn, cfg.seq, cfg.vocab,
      a.microbatch_size, a.stages, o.repeats, o.warmup, utc_now());
  csv << "stage,f_ms,b_ms,w_ms,activation_bytes\n";
  for (size_t s = 0; s < p.stages.size(); ++s) {
    const auto& c = p.stages[s];
    csv << fmt::format("{},{:.4f},{:.4f},{:.4f},{}\n", s, c.f_ms, c.b_ms, c.w_ms,
                       c.activation_bytes);
  }
  std::ofstream out(a.out);
  out << csv.str();
  if (!out) throw std::runtime_error("cannot write " + a.out);
  std::cout << csv.str() << "wrote " << a.out << "\n";
  return kExitOk;
}

}  // namespace

void add_profile_command(CLI::App& app, Commands& out) {
  static ProfileArgs a;
  auto* c = app.add_subcommand(
      "profile",
      "measure the mini Llama's per-stage F/B/W costs on the CPU or a GPU -> profile CSV");
  c->add_option("model", a.model, "preset (tiny, small, medium) or a YAML file with model keys")
      ->required();
  c->add_option("--device", a.device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  static CLI::Option* gpu = nullptr;
  gpu = c->add_option("--gpu", a.gpu, "GPU number with --device cuda")->check(CLI::Range(0, 1023));
  c->add_option("--stages", a.stages, "pipeline stages the layers are split into");
  c->add_option("--microbatch-size", a.microbatch_size, "sequences per microbatch")
      ->check(CLI::Range(1, 4096));
  c->add_option("--repeats", a.repeats, "timed microbatches per stage (median)")
      ->check(CLI::Range(1, 100000));
  c->add_option("--threads", a.threads, "CPU compute threads")->check(CLI::Range(1, 1024));
  c->add_option("-o,--output", a.out, "the profile CSV to write")->required();
  out.push_back({c, [] {
                   if (gpu->count() > 0 && a.device != "cuda")
                     throw InputError("--gpu: applies to --device cuda; this profile runs on the " +
                                      a.device);
                   return run_profile(a);
                 }});
}

}  // namespace xdc::cli
