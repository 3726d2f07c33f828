#pragma once
// Per-stage compute costs of the mini Llama measured on a device: what `xdc profile` writes
// as the profile CSV that modeled runs and the simulator read (harness/sim/cost_model.h:
// stage,f_ms,b_ms,w_ms,activation_bytes). Each stage of split_layers(cfg, stages) is built
// on the device alone and timed action by action (forward, backward-input, backward-weight,
// each returning with its device work done: stage_api.h); the figure is the median of
// `repeats` microbatches after `warmup` ones.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "workloads/model/config.h"
#include "workloads/model/stage_api.h"

namespace xdc::model {

struct StageCosts {
  StageRange range;
  double f_ms = 0, b_ms = 0, w_ms = 0;  // B: input gradient only; W: weight gradient
  int64_t activation_bytes = 0;         // the stage's output message (B x T x dim fp32)
  int64_t peak_activation_bytes = 0;    // on the device, one microbatch in flight
};

struct ProfileOptions {
  int stages = 1;
  int microbatch_size = 1;
  Device device = Device::kCpu;
  int gpu = 0;
  int warmup = 2, repeats = 10;
};

struct Profile {
  std::string device;  // as the stage names it: "cuda:0 (NVIDIA H100 80GB HBM3)", "cpu (4 threads)"
  std::vector<StageCosts> stages;
};

// Throws std::runtime_error when the device cannot be used (no silent CPU fallback).
// `progress` (optional) is called after each stage with a line for the user.
Profile profile_stages(const ModelConfig& cfg, const ProfileOptions& opt,
                       const std::function<void(const std::string&)>& progress = {});

}  // namespace xdc::model
