// xdc-bench-model: training throughput of the mini Llama on this machine (a program, not a
// test). Prints and writes JSON:
//   sgemm_peak_gflops_1t   best single-thread cblas_sgemm over square sizes 256..1024
//   tokens_per_s_{1,2}t    training tokens/s (forward + backward + clip + AdamW), one stage,
//                          best 1-second window (mean_tokens_per_s_*: over the whole run)
//   achieved_gflops_1t     tokens/s x (6N + 12 L d T) FLOPs per token
//   peak_rss_mb            process high-water mark (VmHWM) after the training steps
//   activations            per stage of a 4-stage cut: accounted bytes after F vs the
//                          resident memory the forward pass actually added
// scripts/bench_model.sh runs it together with the PyTorch reference and passes PyTorch's
// figures in with --torch-1t/--torch-2t so one JSON holds both.
#include <cblas.h>
#include <malloc.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/number_text.h"
#include "workloads/model/data.h"
#include "workloads/model/local_model.h"

namespace {

using namespace xdc::model;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Resident set and its high-water mark, from /proc/self/status (kB -> bytes).
size_t proc_status_bytes(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const size_t n = std::strlen(key);
  while (std::getline(in, line)) {
    if (line.compare(0, n, key) == 0)
      return std::strtoull(line.c_str() + n + 1, nullptr, 10) * 1024;
  }
  return 0;
}

double sgemm_peak_gflops() {
  set_compute_threads(1);
  double best = 0;
  for (int n : {256, 384, 512, 768, 1024}) {
    std::vector<float> a(size_t(n) * n, 0.5f), b(a), c(a);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.f, a.data(), n, b.data(), n,
                0.f, c.data(), n);
    const int reps = std::max(3, int(2e9 / (2.0 * n * n * n)));
    for (int trial = 0; trial < 3; ++trial) {
      const auto t0 = Clock::now();
      for (int r = 0; r < reps; ++r)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.f, a.data(), n, b.data(),
                    n, 0.f, c.data(), n);
      best = std::max(best, 2.0 * n * n * n * reps / seconds_since(t0) / 1e9);
    }
  }
  return best;
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string first;
  in >> first;
  return first.empty() ? "0" : first;
}

double cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

struct TrainResult {
  double tokens_per_s = 0;
  double tokens_per_cpu_s = 0;  // robust to other processes sharing the cores
  double mean_tokens_per_s = 0;
  size_t activation_peak_bytes = 0;  // pool high-water mark of the stage during the steps
  size_t state_bytes = 0;            // parameters, gradients, AdamW moments
  double loss = 0;
};

TrainResult train_throughput(const ModelConfig& cfg, int batch, int threads, double min_seconds,
                             const TextCorpus& corpus) {
  set_compute_threads(threads);
  LocalModel model(cfg, 1, batch);
  BatchLoader loader(corpus.train(), batch, cfg.seq, 1);
  std::vector<int32_t> tok(size_t(batch) * cfg.seq), tgt(tok.size());
  AdamWConfig opt;
  for (int i = 0; i < 3; ++i) {  // warm-up: pools filled, caches and BLAS buffers ready
    loader.next(tok.data(), tgt.data());
    model.train_step(tok, tgt, 1, opt, 1e-3);
  }
  // Windows of >= 1 s: the best window is the figure least disturbed by other processes
  // (as timeit takes the minimum); the mean over the whole run is kept too.
  TrainResult r;
  int steps = 0, window_steps = 0;
  const auto t0 = Clock::now();
  auto w0 = t0;
  const double c0 = cpu_seconds();
  while (steps < 5 || seconds_since(t0) < min_seconds) {
    loader.next(tok.data(), tgt.data());
    r.loss = model.train_step(tok, tgt, 1, opt, 1e-3);
    ++steps;
    if (++window_steps >= 2 && seconds_since(w0) >= 1.0) {
      r.tokens_per_s =
          std::max(r.tokens_per_s, window_steps * double(tok.size()) / seconds_since(w0));
      w0 = Clock::now();
      window_steps = 0;
    }
  }
  r.mean_tokens_per_s = double(steps) * tok.size() / seconds_since(t0);
  r.activation_peak_bytes = model.stage(0).peak_activation_bytes();
  r.state_bytes = 4 * sizeof(float) * size_t(model.stage(0).param_count());  // p, g, m, v
  r.tokens_per_s = std::max(r.tokens_per_s, r.mean_tokens_per_s);
  r.tokens_per_cpu_s = double(steps) * tok.size() / (cpu_seconds() - c0);
  return r;
}

struct ActivationCheck {
  int stage;
  size_t accounted, measured;
};

// A fresh stage per measurement, so its pool is empty and the forward's buffers are new
// pages: the resident-set growth is what the microbatch really holds.
std::vector<ActivationCheck> activation_checks(const ModelConfig& cfg, int batch, int stages) {
  std::vector<ActivationCheck> out;
  const auto ranges = split_layers(cfg, stages);
  std::vector<int32_t> tok(size_t(batch) * cfg.seq, 1), tgt(tok.size(), 2);
  std::vector<float> acts(tok.size() * cfg.dim, 0.01f);
  for (int s = 0; s < stages; ++s) {
    Stage st(cfg, ranges[s], batch);
    StageInput<float> in;
    if (st.is_first())
      in.tokens = tok;
    else
      in.acts = acts;
    if (st.is_last()) in.targets = tgt;
    const size_t before = proc_status_bytes("VmRSS:");
    st.forward(0, in);
    const size_t after = proc_status_bytes("VmRSS:");
    out.push_back({s, st.activation_bytes_after_forward(), after - before});
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  double torch_1t = 0, torch_2t = 0, min_seconds = 10;
  double torch_cpu_1t = 0, torch_cpu_2t = 0;  // PyTorch's tokens per CPU-second
  int profile_threads = 0;  // > 0: only measure training at this thread count, one JSON line
  // Throughput measured outside (scripts/bench_model.sh alternates ours and PyTorch's runs in
  // rounds, so that both sides see the same background load): reported as given.
  double ours_1t = 0, ours_2t = 0, ours_cpu_1t = 0, ours_cpu_2t = 0, given_peak = 0;
  std::string json_path = "results/bench/model.json";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&] {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s: expected a value\n", a.c_str());
        std::exit(2);
      }
      return std::string(argv[++i]);
    };
    if (a == "--torch-1t") {
      torch_1t = std::stod(value());
    } else if (a == "--torch-2t") {
      torch_2t = std::stod(value());
    } else if (a == "--torch-cpu-1t") {
      torch_cpu_1t = std::stod(value());
    } else if (a == "--torch-cpu-2t") {
      torch_cpu_2t = std::stod(value());
    } else if (a == "--seconds") {
      min_seconds = std::stod(value());
    } else if (a == "--profile" || a == "--throughput") {
      profile_threads = std::stoi(value());
    } else if (a == "--sgemm-peak") {
      given_peak = std::stod(value());
    } else if (a == "--ours-1t") {
      ours_1t = std::stod(value());
    } else if (a == "--ours-2t") {
      ours_2t = std::stod(value());
    } else if (a == "--ours-cpu-1t") {
      ours_cpu_1t = std::stod(value());
    } else if (a == "--ours-cpu-2t") {
      ours_cpu_2t = std::stod(value());
    } else if (a == "-o" || a == "--json") {
      json_path = value();
    } else {
      std::fprintf(stderr,
                   "usage: xdc-bench-model [--seconds S] [--torch-1t TOK/S] [--torch-2t TOK/S]\n"
                   "         [--torch-cpu-1t TOK/CPU-S] [--torch-cpu-2t TOK/CPU-S]\n"
                   "         [--ours-1t TOK/S --ours-2t TOK/S --ours-cpu-1t .. --ours-cpu-2t ..]\n"
                   "         [--sgemm-peak GFLOP/S]\n"
                   "         [-o results/bench/model.json] [--throughput THREADS]\n");
      return 2;
    }
  }
  if (profile_threads > 0) {
    const ModelConfig cfg;
    const auto corpus = TextCorpus::load_default();
    const TrainResult r = train_throughput(cfg, 8, profile_threads, min_seconds, corpus);
    const double peak = profile_threads == 1 ? sgemm_peak_gflops() : 0.0;
    std::printf(
        "{\"threads\": %d, \"tokens_per_s\": %.1f, \"mean_tokens_per_s\": %.1f, "
        "\"tokens_per_cpu_s\": %.1f, \"sgemm_peak_gflops\": %.1f}\n",
        profile_threads, r.tokens_per_s, r.mean_tokens_per_s, r.tokens_per_cpu_s, peak);
    return 0;
  }
  const ModelConfig cfg;  // reference: vocab 256, dim 256, 4 layers, 4 heads, ffn 688, seq 128
  const int batch = 8;
  const double flops_tok = cfg.train_flops_per_token();
  std::printf(
      "config: vocab %d dim %d layers %d heads %d ffn %d seq %d batch %d fp32, %lld params\n",
      cfg.vocab, cfg.dim, cfg.layers, cfg.heads, cfg.ffn, cfg.seq, batch,
      (long long)cfg.param_count());
  std::printf("FLOPs/token = 6N + 12 L d T = 6*%lld + 12*%d*%d*%d = %.4g\n",
              (long long)cfg.non_embedding_params(), cfg.layers, cfg.dim, cfg.seq, flops_tok);

  // Big buffers straight from mmap and back to the kernel on free (a fixed threshold turns
  // off glibc's adaptive one), so a stage's resident growth shows its own buffers only.
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  // Best of this measurement and the rounds' (--sgemm-peak): the peak is a property of the
  // machine, the largest figure is the least disturbed one.
  const double peak = std::max(sgemm_peak_gflops(), given_peak);  // also warms OpenBLAS
  const auto checks = activation_checks(cfg, batch, 4);
  const auto corpus = TextCorpus::load_default();
  std::printf("sgemm peak, 1 thread: %.1f GFLOP/s (OpenBLAS core %s), load average %s\n", peak,
              openblas_get_corename(), load_average().c_str());
  // With the throughput given (--ours-*), a few steps still run for the memory figures.
  const bool given = ours_1t > 0 && ours_2t > 0;
  TrainResult r1 = train_throughput(cfg, batch, 1, given ? 0 : min_seconds, corpus);
  if (given) {
    r1.tokens_per_s = r1.mean_tokens_per_s = ours_1t;
    r1.tokens_per_cpu_s = ours_cpu_1t;
  }
  std::printf(
      "1 thread : %8.0f tokens/s  %6.1f GFLOP/s  (%.0f%% of sgemm peak), %.0f tokens/cpu-s, "
      "loss %.3f\n",
      r1.tokens_per_s, r1.tokens_per_s * flops_tok / 1e9,
      100 * r1.tokens_per_s * flops_tok / 1e9 / peak, r1.tokens_per_cpu_s, r1.loss);
  TrainResult r2 = train_throughput(cfg, batch, 2, given ? 0 : min_seconds, corpus);
  if (given) {
    r2.tokens_per_s = r2.mean_tokens_per_s = ours_2t;
    r2.tokens_per_cpu_s = ours_cpu_2t;
  }
  std::printf("2 threads: %8.0f tokens/s  %6.1f GFLOP/s, %.0f tokens/cpu-s, loss %.3f\n",
              r2.tokens_per_s, r2.tokens_per_s * flops_tok / 1e9, r2.tokens_per_cpu_s, r2.loss);
  const double peak_rss_mb = proc_status_bytes("VmHWM:") / 1048576.0;
  std::printf(
      "peak RSS: %.1f MB (a training step: %.1f MB activations at peak + %.1f MB "
      "parameters, gradients and AdamW state)\n",
      peak_rss_mb, r1.activation_peak_bytes / 1048576.0, r1.state_bytes / 1048576.0);
  std::printf("activations per microbatch (4-stage cut, batch %d): accounted vs resident\n", batch);
  for (const auto& c : checks) {
    std::printf("  stage %d: %9zu B accounted, %9zu B resident (%+.2f%%)\n", c.stage, c.accounted,
                c.measured, 100.0 * (double(c.measured) - double(c.accounted)) / c.accounted);
  }
  if (torch_1t > 0) {
    std::printf("ours / PyTorch, 1 thread : %.2fx wall-clock, %.2fx per CPU-second\n",
                r1.tokens_per_s / torch_1t,
                torch_cpu_1t > 0 ? r1.tokens_per_cpu_s / torch_cpu_1t : 0.0);
  }
  if (torch_2t > 0) {
    std::printf("ours / PyTorch, 2 threads: %.2fx wall-clock, %.2fx per CPU-second\n",
                r2.tokens_per_s / torch_2t,
                torch_cpu_2t > 0 ? r2.tokens_per_cpu_s / torch_cpu_2t : 0.0);
  }

  std::string json = "{\n";
  auto field = [&](const char* k, double v, int prec = 1) {
    json += std::string("  \"") + k + "\": " + xdc::format_fixed(v, prec) + ",\n";
  };
  field("tokens_per_s_1t", r1.tokens_per_s);
  field("tokens_per_s_2t", r2.tokens_per_s);
  field("torch_tokens_per_s_1t", torch_1t);
  field("torch_tokens_per_s_2t", torch_2t);
  field("sgemm_peak_gflops_1t", peak);
  field("achieved_gflops_1t", r1.tokens_per_s * flops_tok / 1e9);
  field("achieved_gflops_2t", r2.tokens_per_s * flops_tok / 1e9);
  field("peak_rss_mb", peak_rss_mb);
  field("step_activation_peak_mb", r1.activation_peak_bytes / 1048576.0);
  field("step_state_mb", r1.state_bytes / 1048576.0);
  if (!given) {  // measured here: the whole run's mean beside the best window
    field("mean_tokens_per_s_1t", r1.mean_tokens_per_s);
    field("mean_tokens_per_s_2t", r2.mean_tokens_per_s);
  }
  field("tokens_per_cpu_s_1t", r1.tokens_per_cpu_s);
  field("tokens_per_cpu_s_2t", r2.tokens_per_cpu_s);
  field("torch_tokens_per_cpu_s_1t", torch_cpu_1t);
  field("torch_tokens_per_cpu_s_2t", torch_cpu_2t);
  json += std::string("  \"openblas_core\": \"") + openblas_get_corename() + "\",\n";
  json += "  \"load_average_1min\": " + load_average() + ",\n";
  field("speedup_vs_torch_1t", torch_1t > 0 ? r1.tokens_per_s / torch_1t : 0, 3);
  field("speedup_vs_torch_2t", torch_2t > 0 ? r2.tokens_per_s / torch_2t : 0, 3);
  field("flops_per_token", flops_tok, 0);
  json += "  \"flops_formula\": \"6N + 12*L*d*T, N = non-embedding params incl. LM head\",\n";
  json += std::string("  \"throughput_method\": \"") +
          (given ? "best of alternating rounds with PyTorch (scripts/bench_model.sh), each "
                   "run's best 1-s window"
                 : "best 1-s window of one run") +
          "\",\n";
  json += "  \"activation_bytes_per_microbatch\": [";
  for (size_t i = 0; i < checks.size(); ++i) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s{\"stage\": %d, \"accounted\": %zu, \"resident\": %zu}",
                  i ? ", " : "", checks[i].stage, checks[i].accounted, checks[i].measured);
    json += buf;
  }
  json += "]\n}\n";
  std::filesystem::path p(json_path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << json;
  std::printf("%s", json.c_str());
  return 0;
}
