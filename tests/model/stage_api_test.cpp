// make_stage(): the CPU stage behind the interface, and the CUDA stage or its fallback.
#include "workloads/model/stage_api.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace xdc::model {
namespace {

ModelConfig small() {
  ModelConfig c;
  c.vocab = 37;
  c.dim = 64;
  c.layers = 2;
  c.heads = 4;
  c.kv_heads = 2;
  c.ffn = 96;
  c.seq = 32;
  return c;
}

// One F/B/W of a whole model on a stage; returns the loss.
double run(StageApi& s, int mb) {
  const int n = s.microbatch_size() * s.config().seq;
  std::vector<int32_t> tok(n), tgt(n);
  for (int i = 0; i < n; ++i) {
    tok[i] = (i * 5 + 3) % s.config().vocab;
    tgt[i] = (i * 7 + 1) % s.config().vocab;
  }
  StageInput<float> in;
  in.tokens = tok;
  in.targets = tgt;
  const double loss = s.forward(mb, in).loss;
  s.backward_input(mb, {});
  s.backward_weight(mb);
  return loss;
}

TEST(StageApi, CpuStageThroughTheInterfaceIsTheStage) {
  const ModelConfig cfg = small();
  std::string why = "unset";
  auto api = make_stage(cfg, {0, cfg.layers}, 2, Device::kCpu, &why);
  EXPECT_TRUE(why.empty());
  EXPECT_EQ(api->device().rfind("cpu", 0), 0u);
  Stage direct(cfg, {0, cfg.layers}, 2);
  const double l_api = run(*api, 0);
  StageInput<float> in;
  std::vector<int32_t> tok(64), tgt(64);
  for (int i = 0; i < 64; ++i) tok[i] = (i * 5 + 3) % cfg.vocab, tgt[i] = (i * 7 + 1) % cfg.vocab;
  in.tokens = tok;
  in.targets = tgt;
  EXPECT_EQ(direct.forward(0, in).loss, l_api);
  direct.backward(0, {});
  auto g = api->grads();
  ASSERT_EQ(g.size(), direct.grads().size());
  for (size_t i = 0; i < g.size(); ++i) ASSERT_EQ(g[i], direct.grads()[i]);
}

// On a machine with a GPU: the CUDA stage computes what the CPU stage computes. Without one
// (or in a build without CUDA): the request falls back to the CPU and says why; with
// XDC_EXPECT_GPU=1 (scripts/test_gpu.sh) a fallback fails.
TEST(StageApi, CudaStageMatchesCpuOrFallsBackWithAReason) {
  const ModelConfig cfg = small();
  std::string why;
  auto gpu = make_stage(cfg, {0, cfg.layers}, 2, Device::kCuda, &why);
  const char* expect = std::getenv("XDC_EXPECT_GPU");
  if (expect && std::string(expect) == "1") {
    ASSERT_TRUE(why.empty()) << why;
  }
  if (!why.empty()) {
    EXPECT_EQ(gpu->device().rfind("cpu", 0), 0u) << why;
    std::printf("CUDA fallback: %s (CUDA stage built: %s)\n", why.c_str(),
                cuda_built() ? "yes" : "no");
    EXPECT_GT(run(*gpu, 0), 0.0);  // the fallback trains
    return;
  }
  auto cpu = make_stage(cfg, {0, cfg.layers}, 2, Device::kCpu);
  const double lg = run(*gpu, 0), lc = run(*cpu, 0);
  EXPECT_NEAR(lg, lc, 1e-4 * lc) << gpu->device();
  auto gg = gpu->grads();
  auto gc = cpu->grads();
  double scale = 0, err = 0;
  for (size_t i = 0; i < gc.size(); ++i) {
    scale = std::max(scale, double(std::abs(gc[i])));
    err = std::max(err, double(std::abs(gg[i] - gc[i])));
  }
  EXPECT_LT(err, 1e-3 * scale);
  EXPECT_EQ(gpu->live_activation_bytes(), 0u);
}

// bf16 is the CUDA stage's alone: the CPU stage refuses it rather than compute in fp32.
TEST(StageApi, CpuStageRefusesBf16) {
  ModelConfig cfg = small();
  cfg.precision = "bf16";
  EXPECT_THROW(make_stage(cfg, {0, cfg.layers}, 2, Device::kCpu), std::invalid_argument);
}

// The GPUs an experiment may ask for: named ones, or none with the reason (what `xdc run`
// prints when an experiment asks for cuda here).
TEST(StageApi, CudaGpusNamesEachDeviceOrSaysWhyThereIsNone) {
  std::string why;
  const std::vector<std::string> gpus = cuda_gpus(&why);
  if (gpus.empty()) {
    EXPECT_FALSE(why.empty());
    std::printf("no GPU: %s\n", why.c_str());
  }
  for (const std::string& name : gpus) EXPECT_FALSE(name.empty());
  if (!cuda_built()) {
    EXPECT_TRUE(gpus.empty());
  }
}

bool mapped(const std::string& library) {
  std::ifstream maps("/proc/self/maps");
  std::stringstream all;
  all << maps.rdbuf();
  return all.str().find(library) != std::string::npos;
}

// A process that links the model maps cuBLAS and the CUDA runtime only once it asks for a
// GPU (stage_api.h): before, it has neither; after cuda_gpus(), a CUDA build has loaded the
// stage's module. In a fresh process (the death test re-runs this binary for this test).
TEST(StageApi, CudaLibrariesAreLoadedOnlyWhenAGpuIsAskedFor) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        if (mapped("libcublas") || mapped("libcudart") || mapped("libxdc_model_cuda")) {
          std::cerr << "mapped before any GPU was asked for\n";
          std::exit(1);
        }
        std::string why;
        cuda_gpus(&why);
        if (cuda_built() && !mapped("libxdc_model_cuda")) {
          std::cerr << "the CUDA stage's module was not loaded: " << why << "\n";
          std::exit(2);
        }
        if (why.find("did not load") != std::string::npos) {
          std::cerr << why << "\n";
          std::exit(3);
        }
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace xdc::model
