// xdc-bench-gpu: the CUDA stage checked and timed on a GPU (scripts/test_gpu.sh and
// scripts/bench_gpu.sh run it; bench_torch.py is the PyTorch side). Every mode prints one
// JSON line on stdout; a machine without a usable GPU (or a build without the CUDA stage)
// exits 77 with the reason on stderr.
//
//   xdc-bench-gpu check    [MODEL] [--batch B] [--dump DIR]
//       one forward + backward of the whole model on the GPU and on the CPU from the same
//       weights and tokens: loss relative error and, per parameter tensor,
//       max|g_gpu - g_cpu| / max|g_cpu| (the largest over tensors). --dump writes the
//       weights, tokens, targets, loss and GPU gradients for `bench_torch.py --check DIR`.
//   xdc-bench-gpu pipeline [MODEL] [--stages S] [--batch B] [--microbatches M] [--steps N]
//       S stages on one GPU vs the same S stages on the CPU, N training steps (F and B of
//       M microbatches through every stage, global-norm clipping, AdamW): losses per step.
//   xdc-bench-gpu speed    [MODEL] [--batch B] [--seconds S]
//       training steps of the whole model on one stage: tokens/s (best 1 s window, as
//       bench_torch.py), achieved TFLOP/s by the FLOP formula of config.h.
// MODEL: --preset tiny|small|medium (default medium) and any of --layers --dim --heads
// --kv-heads --ffn --seq --vocab.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "workloads/model/local_model.h"
#include "workloads/model/parallel.h"
#include "workloads/model/stage_api.h"

namespace xdc::model {
namespace {

struct Args {
  std::string mode;
  ModelConfig cfg = ModelConfig::preset("medium");
  int batch = 8, stages = 4, microbatches = 4, steps = 5;
  double seconds = 10;
  std::string dump;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "xdc-bench-gpu: %s\nusage: xdc-bench-gpu check|pipeline|speed [--preset NAME] "
               "[--layers N --dim N --heads N --kv-heads N --ffn N --seq N --vocab N] [--batch B] "
               "[--stages S] [--microbatches M] [--steps N] [--seconds S] [--dump DIR]\n",
               why.c_str());
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  if (argc < 2) usage("a mode is required");
  a.mode = argv[1];
  if (a.mode != "check" && a.mode != "pipeline" && a.mode != "speed")
    usage("unknown mode \"" + a.mode + "\"");
  std::map<std::string, int*> ints = {
      {"--layers", &a.cfg.layers},         {"--dim", &a.cfg.dim}, {"--heads", &a.cfg.heads},
      {"--kv-heads", &a.cfg.kv_heads},     {"--ffn", &a.cfg.ffn}, {"--seq", &a.cfg.seq},
      {"--vocab", &a.cfg.vocab},           {"--batch", &a.batch}, {"--stages", &a.stages},
      {"--microbatches", &a.microbatches}, {"--steps", &a.steps}};
  // The preset first, so that explicit sizes override it wherever they stand.
  for (int i = 2; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--preset") {
      try {
        a.cfg = ModelConfig::preset(argv[i + 1]);
      } catch (const std::exception& e) {
        usage(e.what());
      }
    }
  }
  for (int i = 2; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) usage(k + " needs a value");
    const std::string v = argv[++i];
    try {
      if (k == "--preset") continue;
      if (auto it = ints.find(k); it != ints.end()) {
        *it->second = std::stoi(v);
      } else if (k == "--seconds") {
        a.seconds = std::stod(v);
      } else if (k == "--dump") {
        a.dump = v;
      } else {
        usage("unknown option " + k);
      }
    } catch (const std::logic_error&) {
      usage(k + ": expected a number, got \"" + v + "\"");
    }
  }
  try {
    a.cfg.validate();
  } catch (const std::exception& e) {
    usage(e.what());
  }
  return a;
}

nlohmann::json config_json(const ModelConfig& c, int batch) {
  return {{"vocab", c.vocab},      {"dim", c.dim},           {"layers", c.layers},
          {"heads", c.heads},      {"kv_heads", c.kv_heads}, {"ffn", c.ffn},
          {"seq", c.seq},          {"batch", batch},         {"rope_theta", c.rope_theta},
          {"norm_eps", c.norm_eps}};
}

// Deterministic tokens and next-token targets of n sequences (any stream will do: the
// check compares two computations of the same inputs).
void make_batch(const ModelConfig& c, int n_seq, uint64_t seed, std::vector<int32_t>& tok,
                std::vector<int32_t>& tgt) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> pick(0, c.vocab - 1);
  tok.resize(size_t(n_seq) * c.seq);
  tgt.resize(tok.size());
  for (int s = 0; s < n_seq; ++s) {
    int32_t prev = pick(rng);
    for (int t = 0; t < c.seq; ++t) {
      const int32_t next = pick(rng);
      tok[size_t(s) * c.seq + t] = prev;
      tgt[size_t(s) * c.seq + t] = next;
      prev = next;
    }
  }
}

template <typename V>
void write_raw(const std::filesystem::path& p, const V& v) {
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * sizeof(v[0])));
  if (!out) throw std::runtime_error("cannot write " + p.string());
}

std::unique_ptr<StageApi> gpu_stage(const ModelConfig& cfg, StageRange r, int batch) {
  std::string why;
  auto s = make_stage(cfg, r, batch, Device::kCuda, &why);
  if (!why.empty()) {
    std::fprintf(stderr, "xdc-bench-gpu: no GPU to run on: %s\n", why.c_str());
    std::exit(77);
  }
  return s;
}

int check(const Args& a) {
  const ModelConfig& cfg = a.cfg;
  const StageRange all{0, cfg.layers};
  auto gpu = gpu_stage(cfg, all, a.batch);
  set_compute_threads(int(std::max(1u, std::thread::hardware_concurrency())));
  auto cpu = make_stage(cfg, all, a.batch, Device::kCpu);
  std::vector<int32_t> tok, tgt;
  make_batch(cfg, a.batch, 7, tok, tgt);
  auto one = [&](StageApi& s) {
    s.zero_grad();
    s.set_microbatches(1);
    StageInput<float> in;
    in.tokens = tok;
    in.targets = tgt;
    const double loss = s.forward(0, in).loss;
    s.backward(0, {});
    return loss;
  };
  const auto t0 = std::chrono::steady_clock::now();
  const double lg = one(*gpu);
  const auto t1 = std::chrono::steady_clock::now();
  const double lc = one(*cpu);
  const auto t2 = std::chrono::steady_clock::now();
  std::vector<float> gg(gpu->grads().begin(), gpu->grads().end());
  std::span<float> gc = cpu->grads();
  double worst = 0;
  std::string worst_name;
  for (const ParamTensor& t : stage_tensors(cfg, all)) {
    double scale = 0, err = 0;
    for (int64_t i = t.offset; i < t.offset + t.size; ++i) {
      scale = std::max(scale, double(std::abs(gc[i])));
      err = std::max(err, double(std::abs(gg[i] - gc[i])));
    }
    const double rel = scale > 0 ? err / scale : err;
    if (rel >= worst) worst = rel, worst_name = t.name;
  }
  nlohmann::json j = {{"mode", "check"},
                      {"device", gpu->device()},
                      {"config", config_json(cfg, a.batch)},
                      {"loss_gpu", lg},
                      {"loss_cpu", lc},
                      {"loss_rel_err", std::abs(lg - lc) / std::abs(lc)},
                      {"grad_max_rel_err", worst},
                      {"grad_worst_tensor", worst_name},
                      {"gpu_s", std::chrono::duration<double>(t1 - t0).count()},
                      {"cpu_s", std::chrono::duration<double>(t2 - t1).count()},
                      {"cpu_threads", compute_threads()}};
  if (!a.dump.empty()) {
    const std::filesystem::path d = a.dump;
    std::filesystem::create_directories(d);
    std::vector<float> p(gpu->params().begin(), gpu->params().end());
    write_raw(d / "params.f32", p);
    write_raw(d / "grads.f32", gg);
    write_raw(d / "tokens.i32", tok);
    write_raw(d / "targets.i32", tgt);
    nlohmann::json meta = {{"config", config_json(cfg, a.batch)}, {"loss", lg}};
    for (const ParamTensor& t : stage_tensors(cfg, all))
      meta["tensors"].push_back({{"name", t.name}, {"offset", t.offset}, {"size", t.size}});
    std::ofstream(d / "meta.json") << meta.dump(1) << "\n";
  }
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

int pipeline(const Args& a) {
  const ModelConfig& cfg = a.cfg;
  std::vector<std::unique_ptr<StageApi>> g, c;
  set_compute_threads(int(std::max(1u, std::thread::hardware_concurrency())));
  for (const StageRange& r : split_layers(cfg, a.stages)) {
    g.push_back(gpu_stage(cfg, r, a.batch));
    c.push_back(make_stage(cfg, r, a.batch, Device::kCpu));
  }
  const std::string device = g[0]->device();
  LocalModelT<float, StageApi> gm(std::move(g)), cm(std::move(c));
  AdamWConfig opt;
  nlohmann::json steps = nlohmann::json::array();
  double worst = 0;
  for (int s = 0; s < a.steps; ++s) {
    std::vector<int32_t> tok, tgt;
    make_batch(cfg, a.batch * a.microbatches, 100 + s, tok, tgt);
    const double lg = gm.train_step(tok, tgt, a.microbatches, opt, 1e-3);
    const double lc = cm.train_step(tok, tgt, a.microbatches, opt, 1e-3);
    const double rel = std::abs(lg - lc) / std::abs(lc);
    worst = std::max(worst, rel);
    steps.push_back({{"loss_gpu", lg}, {"loss_cpu", lc}, {"rel_err", rel}});
  }
  nlohmann::json j = {{"mode", "pipeline"},
                      {"device", device},
                      {"stages", a.stages},
                      {"microbatches", a.microbatches},
                      {"config", config_json(cfg, a.batch)},
                      {"steps", steps},
                      {"loss_max_rel_err", worst}};
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

int speed(const Args& a) {
  const ModelConfig& cfg = a.cfg;
  std::vector<std::unique_ptr<StageApi>> v;
  v.push_back(gpu_stage(cfg, {0, cfg.layers}, a.batch));
  const std::string device = v[0]->device();
  LocalModelT<float, StageApi> m(std::move(v));
  AdamWConfig opt;
  std::vector<int32_t> tok, tgt;
  make_batch(cfg, a.batch, 3, tok, tgt);
  const double tokens_per_step = double(a.batch) * cfg.seq;
  for (int i = 0; i < 3; ++i) m.train_step(tok, tgt, 1, opt, 1e-3);  // warm-up, pool filled
  // Best window of >= 1 s (the loss comes back to the host every step, so a step's time
  // is its whole GPU time), and the mean over all.
  using clk = std::chrono::steady_clock;
  const auto t0 = clk::now();
  auto w0 = t0;
  int steps = 0, wsteps = 0;
  double best = 0, loss = 0;
  while (steps < 5 || std::chrono::duration<double>(clk::now() - t0).count() < a.seconds) {
    loss = m.train_step(tok, tgt, 1, opt, 1e-3);
    ++steps, ++wsteps;
    const auto now = clk::now();
    const double w = std::chrono::duration<double>(now - w0).count();
    if (wsteps >= 2 && w >= 1.0) {
      best = std::max(best, wsteps * tokens_per_step / w);
      w0 = now, wsteps = 0;
    }
  }
  const double mean =
      steps * tokens_per_step / std::chrono::duration<double>(clk::now() - t0).count();
  const double tps = std::max(best, mean);
  const double flops = cfg.train_flops_per_token();
  nlohmann::json j = {{"mode", "speed"},
                      {"device", device},
                      {"config", config_json(cfg, a.batch)},
                      {"tokens_per_s", tps},
                      {"mean_tokens_per_s", mean},
                      {"steps", steps},
                      {"flops_per_token", flops},
                      {"achieved_tflops", tps * flops / 1e12},
                      {"last_loss", loss},
                      {"peak_activation_bytes", m.stage(0).peak_activation_bytes()}};
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

}  // namespace
}  // namespace xdc::model

int main(int argc, char** argv) {
  using namespace xdc::model;
  const Args a = parse(argc, argv);
  try {
    if (a.mode == "check") return check(a);
    if (a.mode == "pipeline") return pipeline(a);
    return speed(a);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "xdc-bench-gpu: %s\n", e.what());
    return 1;
  }
}
