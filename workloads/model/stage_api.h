#pragma once
// One interface over the devices a stage can compute on, for the pipeline executor:
// the CPU stage (StageT<float>, OpenBLAS) and, where the CUDA toolkit was found at build
// time, the CUDA stage (cuBLAS + own kernels). The semantics are those of stage.h; spans
// are host memory on every device (the executor sends them with MPI and allreduces
// grads()), so a device stage copies at its boundary. Every call returns with its device
// work finished, so the time a caller measures around it is the action's time, host
// staging copies included.
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "workloads/model/stage.h"

namespace xdc::model {

class StageApi {
 public:
  virtual ~StageApi() = default;

  virtual std::string device() const = 0;  // "cpu (N threads)" or "cuda:0 (NAME)"
  virtual const ModelConfig& config() const = 0;
  virtual StageRange range() const = 0;
  virtual int microbatch_size() const = 0;
  bool is_first() const { return range().first(); }
  bool is_last() const { return range().last(config()); }

  virtual int64_t param_count() const = 0;
  virtual size_t boundary_bytes() const = 0;
  virtual double flops_per_token() const = 0;
  virtual size_t activation_bytes_after_forward() const = 0;
  virtual size_t activation_bytes_after_backward_input() const = 0;
  virtual size_t live_activation_bytes() const = 0;
  virtual size_t peak_activation_bytes() const = 0;

  virtual void set_microbatches(int m) = 0;
  virtual StageOutput<float> forward(int mb, const StageInput<float>& in) = 0;
  virtual std::span<const float> backward_input(int mb, std::span<const float> grad_out) = 0;
  virtual void backward_weight(int mb) = 0;
  virtual std::span<const float> backward(int mb, std::span<const float> grad_out) = 0;
  virtual void discard(int mb) = 0;

  // Host views. A device stage copies its gradients to the host in grads() and takes them
  // back (allreduced or not) in optimizer_step(); params() is a host copy.
  virtual std::span<float> params() = 0;
  virtual std::span<float> grads() = 0;
  virtual void zero_grad() = 0;
  virtual double grad_sq_norm() = 0;
  virtual void optimizer_step(const AdamWConfig& opt, double lr, double grad_scale) = 0;
  virtual void save(const std::string& path) = 0;
  virtual void load(const std::string& path) = 0;

  // Tensor parallelism (stage.h): the TP group's sum, in place, on the calling thread.
  // Only the CPU stage has TP > 1; the default refuses. Inline, as is every member here:
  // the CUDA stage's module (stage_api.cpp) then needs nothing of this library's objects.
  virtual void set_tp_allreduce(std::function<void(std::span<float>)>) {
    throw std::invalid_argument("stage on " + device() + ": no tensor parallelism");
  }
};

enum class Device { kCpu, kCuda };

// Whether this build has the CUDA stage (the toolkit was found at configure time). The
// stage is a module of its own, loaded on the first call that needs it (cuda_gpus,
// make_stage on kCuda), so that a program that never asks for a GPU does not load cuBLAS
// and the CUDA runtime, whose relocation costs every process time and memory at start.
bool cuda_built();

// The GPUs a CUDA stage could use here, with their names ("NVIDIA H100 80GB HBM3"); empty
// with *why set when there are none (a build without the CUDA stage, no driver, no device).
std::vector<std::string> cuda_gpus(std::string* why = nullptr);

// A stage on `want` (GPU number `gpu` for CUDA). CUDA falls back to the CPU when the build
// has no CUDA stage or that GPU is not usable; the reason is stored in *fallback_reason if
// given (empty when no fallback happened), else printed to stderr ("xdc model: ...").
// Callers that must not fall back (an experiment that asked for a GPU) check it.
// `tp`: this stage's share of a tensor-parallel group (stage.h); the CUDA stage has no
// tensor parallelism, so TP > 1 on kCuda throws std::invalid_argument.
std::unique_ptr<StageApi> make_stage(const ModelConfig& cfg, StageRange range, int microbatch_size,
                                     Device want, std::string* fallback_reason = nullptr,
                                     int gpu = 0, TensorParallel tp = {});

}  // namespace xdc::model
