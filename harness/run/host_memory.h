#pragma once
// The host's memory rates behind libnbc's work in the workers' all-reduce (sim::HostMemory,
// harness/sim/worker_model.h), measured on this machine as the workers do that work: a
// copy into a buffer just allocated above glibc's largest mmap threshold (mapped anew,
// every page faulting; the best of three over kProbeBytes, ~0.6 s on a VM whose page faults
// run at ~300 MB/s), a copy into a reused buffer and a float sum into another (the best of
// seven passes over buffers of their own), once a process. Recorded in environment.json
// (host_memory) by `xdc run` and read back by `xdc simulate --measured` so that a run is
// predicted again with its own.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "harness/sim/worker_model.h"

namespace xdc::run {

inline constexpr int64_t kProbeBytes = sim::HostMemory::kFreshBufferBytes * 2;

sim::HostMemory measure_host_memory();                      // once a process
nlohmann::json host_memory_json(const sim::HostMemory& m);  // MB/s, as environment.json keeps
// environment.json's host_memory; none when the run did not record it.
std::optional<sim::HostMemory> host_memory_from(const nlohmann::json& environment);
// The rates a prediction takes: those `run_dir` recorded (its environment.json), else this
// host's (measure_host_memory). `source` says which.
sim::HostMemory host_memory_for(const std::string& run_dir, std::string* source = nullptr);

}  // namespace xdc::run
