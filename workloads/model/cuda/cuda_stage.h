#pragma once
// The mini Llama stage on an NVIDIA GPU: the math of stage.h (same parameter layout, init,
// F/B/W split, loss scaling, AdamW, checkpoint format) with cuBLAS GEMMs and own kernels.
// Built only where CMake found the CUDA toolkit; plain C++ header so that stage_api.cpp
// needs no CUDA compiler.
#include <memory>
#include <string>

#include "workloads/model/stage_api.h"

namespace xdc::model {

// The CUDA stage on device 0, or nullptr with *why set when no usable GPU is present
// (no driver, no device, or the device refuses a context).
std::unique_ptr<StageApi> make_cuda_stage(const ModelConfig& cfg, StageRange range,
                                          int microbatch_size, std::string* why);

}  // namespace xdc::model
