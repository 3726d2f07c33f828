#include "workloads/model/stage_api.h"

#include <cstdio>
#include <stdexcept>

#ifdef XDC_MODEL_CUDA
#include <dlfcn.h>

#include <mutex>

#include "workloads/model/cuda/cuda_stage.h"
#endif

namespace xdc::model {

namespace {

[[maybe_unused]] constexpr const char* kNoCudaBuild =
    "this build has no CUDA stage (no CUDA toolkit at configure time, or XDC_CUDA=OFF)";

// The CPU stage behind the interface: plain forwarding.
class CpuStage final : public StageApi {
 public:
  CpuStage(const ModelConfig& cfg, StageRange range, int b, TensorParallel tp)
      : s_(cfg, range, b, tp) {}

  std::string device() const override {
    return "cpu (" + std::to_string(compute_threads()) + " threads)";
  }
  const ModelConfig& config() const override { return s_.config(); }
  StageRange range() const override { return s_.range(); }
  int microbatch_size() const override { return s_.microbatch_size(); }
  int64_t param_count() const override { return s_.param_count(); }
  size_t boundary_bytes() const override { return s_.boundary_bytes(); }
  double flops_per_token() const override { return s_.flops_per_token(); }
  size_t activation_bytes_after_forward() const override {
    return s_.activation_bytes_after_forward();
  }
  size_t activation_bytes_after_backward_input() const override {
    return s_.activation_bytes_after_backward_input();
  }
  size_t live_activation_bytes() const override { return s_.live_activation_bytes(); }
  size_t peak_activation_bytes() const override { return s_.peak_activation_bytes(); }
  void set_microbatches(int m) override { s_.set_microbatches(m); }
  StageOutput<float> forward(int mb, const StageInput<float>& in) override {
    return s_.forward(mb, in);
  }
  std::span<const float> backward_input(int mb, std::span<const float> g) override {
    return s_.backward_input(mb, g);
  }
  void backward_weight(int mb) override { s_.backward_weight(mb); }
  std::span<const float> backward(int mb, std::span<const float> g) override {
    return s_.backward(mb, g);
  }
  void discard(int mb) override { s_.discard(mb); }
  std::span<float> params() override { return s_.params(); }
  std::span<float> grads() override { return s_.grads(); }
  void zero_grad() override { s_.zero_grad(); }
  double grad_sq_norm() override { return s_.grad_sq_norm(); }
  void optimizer_step(const AdamWConfig& opt, double lr, double scale) override {
    s_.optimizer_step(opt, lr, scale);
  }
  void save(const std::string& path) override { s_.save(path); }
  void load(const std::string& path) override { s_.load(path); }
  void set_tp_allreduce(std::function<void(std::span<float>)> allreduce) override {
    s_.set_tp_allreduce(std::move(allreduce));
  }

 private:
  Stage s_;
};

#ifdef XDC_MODEL_CUDA
// The CUDA stage's module (XDC_MODEL_CUDA_MODULE: its path in the build tree), loaded once
// and kept; nullptr with *why set when it cannot be loaded.
const CudaModule* cuda_module(std::string* why) {
  static std::once_flag once;
  static const CudaModule* module = nullptr;
  static std::string error;
  std::call_once(once, [] {
    void* handle = dlopen(XDC_MODEL_CUDA_MODULE, RTLD_NOW | RTLD_LOCAL);
    if (handle) {
      using Entry = const CudaModule* (*)();
      if (auto entry = reinterpret_cast<Entry>(dlsym(handle, kCudaModuleSymbol))) module = entry();
    }
    if (!module) {
      const char* e = dlerror();
      error =
          std::string("the CUDA stage's module did not load (") + (e ? e : "no entry point") + ")";
    }
  });
  if (!module && why) *why = error;
  return module;
}
#endif

}  // namespace

bool cuda_built() {
#ifdef XDC_MODEL_CUDA
  return true;
#else
  return false;
#endif
}

std::vector<std::string> cuda_gpus(std::string* why) {
  std::vector<std::string> names;
#ifdef XDC_MODEL_CUDA
  if (const CudaModule* m = cuda_module(why)) {
    const int n = m->gpu_count(why);
    for (int i = 0; i < n; ++i) names.push_back(m->gpu_name(i));
  }
#else
  if (why) *why = kNoCudaBuild;
#endif
  return names;
}

std::unique_ptr<StageApi> make_stage(const ModelConfig& cfg, StageRange range, int microbatch_size,
                                     Device want, std::string* fallback_reason, int gpu,
                                     TensorParallel tp) {
  std::string why;
  if (want == Device::kCuda && tp.size > 1)
    throw std::invalid_argument("tensor parallel size " + std::to_string(tp.size) +
                                ": the CUDA stage has no tensor parallelism (use the CPU stage)");
  if (want == Device::kCuda) {
#ifdef XDC_MODEL_CUDA
    if (const CudaModule* m = cuda_module(&why)) {
      if (auto s = m->make_stage(cfg, range, microbatch_size, gpu, &why)) {
        if (fallback_reason) fallback_reason->clear();
        return s;
      }
    }
#else
    (void)gpu;
    why = kNoCudaBuild;
#endif
    if (!fallback_reason)  // callers that take the reason decide what to say
      std::fprintf(stderr, "xdc model: CUDA requested but %s; running on the CPU\n", why.c_str());
  }
  if (fallback_reason) *fallback_reason = why;
  if (cfg.precision != "fp32") {
    throw std::invalid_argument("model precision " + cfg.precision +
                                ": the CPU stage computes in fp32 only" +
                                (why.empty() ? std::string() : " (CUDA stage: " + why + ")"));
  }
  return std::make_unique<CpuStage>(cfg, range, microbatch_size, tp);
}

}  // namespace xdc::model
