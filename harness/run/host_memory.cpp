#include "harness/run/host_memory.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/text_file.h"

namespace xdc::run {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The rates of warm memory can swing on a VM from one allocation to the next (a sum 1-8
// GB/s, a copy 0.4-1.2 GB/s: which guest pages a buffer gets), so each pass takes buffers
// of its own and the best pass is the host's rate; the fresh copy's page faults are steady.
constexpr int kFreshPasses = 3, kWarmPasses = 7;
constexpr size_t kWarmBytes = 16 << 20;

sim::HostMemory probe() {
  double fresh = 1e30, reused = 1e30, sum = 1e30;
  {
    const auto n = static_cast<size_t>(kProbeBytes);
    std::vector<char> src(n, 1);
    for (int pass = 0; pass < kFreshPasses; ++pass) {
      const auto t0 = std::chrono::steady_clock::now();
      // As libnbc's tmpbuf: malloc, the copy's first touch of every page, free (munmap).
      void* tmp = std::malloc(n);
      if (!tmp) break;
      std::memcpy(tmp, src.data(), n);
      fresh = std::min(fresh, seconds_since(t0));
      asm volatile("" : : "r"(tmp) : "memory");  // the copy is not elided
      std::free(tmp);
    }
  }
  for (int pass = 0; pass < kWarmPasses; ++pass) {
    std::vector<float> src(kWarmBytes / sizeof(float), 1.0f), acc(src), warm(src);
    auto t0 = std::chrono::steady_clock::now();
    std::memcpy(warm.data(), src.data(), kWarmBytes);
    reused = std::min(reused, seconds_since(t0));
    t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < acc.size(); ++i) acc[i] += warm[i];
    sum = std::min(sum, seconds_since(t0));
    asm volatile("" : : "r"(acc.data()) : "memory");
  }
  sim::HostMemory m;
  if (fresh < 1e30) m.fresh_copy_bps = static_cast<double>(kProbeBytes) / std::max(fresh, 1e-9);
  m.warm_copy_bps = static_cast<double>(kWarmBytes) / std::max(reused, 1e-9);
  m.sum_bps = static_cast<double>(kWarmBytes) / std::max(sum, 1e-9);
  return m;
}

}  // namespace

sim::HostMemory measure_host_memory() {
  static const sim::HostMemory measured = probe();
  return measured;
}

nlohmann::json host_memory_json(const sim::HostMemory& m) {
  return {{"fresh_copy_mbps", m.fresh_copy_bps / 1e6},
          {"warm_copy_mbps", m.warm_copy_bps / 1e6},
          {"sum_mbps", m.sum_bps / 1e6}};
}

std::optional<sim::HostMemory> host_memory_from(const nlohmann::json& environment) {
  if (!environment.is_object() || !environment.contains("host_memory")) return std::nullopt;
  const nlohmann::json& j = environment["host_memory"];
  if (!j.is_object()) return std::nullopt;
  sim::HostMemory m;
  m.fresh_copy_bps = j.value("fresh_copy_mbps", 0.0) * 1e6;
  m.warm_copy_bps = j.value("warm_copy_mbps", 0.0) * 1e6;
  m.sum_bps = j.value("sum_mbps", 0.0) * 1e6;
  return m;
}

sim::HostMemory host_memory_for(const std::string& run_dir, std::string* source) {
  if (!run_dir.empty()) {
    const std::string file = run_dir + "/environment.json";
    if (const auto text = read_text_file(file))
      if (const auto m = host_memory_from(nlohmann::json::parse(*text, nullptr, false))) {
        if (source) *source = file;
        return *m;
      }
  }
  if (source) *source = "measured on this host";
  return measure_host_memory();
}

}  // namespace xdc::run
