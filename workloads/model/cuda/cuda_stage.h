#pragma once
// The mini Llama stage on an NVIDIA GPU: the math of stage.h (same parameter layout, init,
// F/B/W split, loss scaling, AdamW, checkpoint format) with cuBLAS GEMMs and own kernels.
// Built only where CMake found the CUDA toolkit, as a module of its own (libxdc_model_cuda)
// that stage_api.cpp loads on first use through its one exported symbol; plain C++ header
// so that stage_api.cpp needs no CUDA compiler.
#include <memory>
#include <string>

#include "workloads/model/stage_api.h"

namespace xdc::model {

// GPUs the CUDA runtime sees; 0 with *why set (no driver, no device).
int cuda_gpu_count(std::string* why);
// The device's name ("NVIDIA H100 80GB HBM3"), "" when it cannot be read.
std::string cuda_gpu_name(int gpu);

// The CUDA stage on device `gpu` (made current for this thread), or nullptr with *why set
// when that GPU is not usable (no driver, no such device, or it refuses a context).
std::unique_ptr<StageApi> make_cuda_stage(const ModelConfig& cfg, StageRange range,
                                          int microbatch_size, int gpu, std::string* why);

// The module's entry points, as stage_api.cpp calls them.
struct CudaModule {
  int (*gpu_count)(std::string* why);
  std::string (*gpu_name)(int gpu);
  std::unique_ptr<StageApi> (*make_stage)(const ModelConfig& cfg, StageRange range,
                                          int microbatch_size, int gpu, std::string* why);
};

}  // namespace xdc::model

// The module's one exported symbol (kCudaModuleSymbol).
extern "C" const xdc::model::CudaModule* xdc_model_cuda_module();
inline constexpr const char* kCudaModuleSymbol = "xdc_model_cuda_module";
