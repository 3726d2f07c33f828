// bench_shaping: measures shaping fidelity (fidelity.h's figures) for each backend this
// machine can run, prints one line per figure and writes them as JSON.
//   bench_shaping [OUT.json]     (default results/bench/shaping.json)
//   bench_shaping --kernel-summary OUT.json
//     the kernel backend only (fails without sch_netem), plus a summary for
//     scripts/bench_wan.sh (via scripts/uml/bench_kernel_backend.sh):
//     "ran", "rtt_err_pct_max" (worst |delay measured - configured| / configured, %;
//     one direction shaped, so this is the RTT increase's error), "goodput_ratio_min"
//     (worst TCP goodput / rate) and "loss_sigma_max" (worst |loss - configured| / sigma,
//     over random loss and loss per wire packet under TCP).
#include <sys/utsname.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>

#include "netem/shaper/shaper.h"
#include "tests/shaper/fidelity.h"

int main(int argc, char** argv) {
  using namespace xdc;
  bool summary = argc > 1 && std::string(argv[1]) == "--kernel-summary";
  if (summary && argc != 3) {
    std::fprintf(stderr, "usage: bench_shaping [OUT.json] | --kernel-summary OUT.json\n");
    return 2;
  }
  std::string out = summary ? argv[2] : argc > 1 ? argv[1] : "results/bench/shaping.json";
  std::string why;
  bool netem = netem::kernel_has_netem(&why);
  if (summary && !netem) {
    std::fprintf(stderr, "bench_shaping: this kernel has no sch_netem (%s)\n", why.c_str());
    return 1;
  }
  utsname u{};
  uname(&u);
  nlohmann::json j = {{"kernel", u.release},
                      {"sch_netem", netem},
                      {"sch_netem_probe", netem ? "" : why},
                      {"started_unix", std::time(nullptr)},
                      {"figures", nlohmann::json::array()}};
  std::printf("shaping fidelity on %s; backends: %s\n", u.release,
              netem::describe_backends().c_str());
  std::vector<netem::Backend> backends = {netem::Backend::kUserspace};
  if (netem) backends.push_back(netem::Backend::kKernel);
  if (summary) backends = {netem::Backend::kKernel};
  double rtt_err_pct_max = 0, goodput_ratio_min = INFINITY, loss_sigma_max = 0;
  bool all_ok = true;
  try {
    testbed::Line line("bench");
    for (auto b : backends) {
      std::vector<testbed::Figure> figs;
      for (double d : {1.0, 10.0, 50.0, 100.0}) figs.push_back(testbed::measure_delay(line, b, d));
      figs.push_back(testbed::measure_jitter(line, b, 20, 5));
      for (double r : {10.0, 100.0, 1000.0}) figs.push_back(testbed::measure_rate(line, b, r, 20));
      for (double l : {1.0, 5.0}) figs.push_back(testbed::measure_loss(line, b, l));
      figs.push_back(testbed::measure_wire_loss(line, b, 1, 1));
      for (const auto& f : figs) {
        if (f.what == "delay")
          rtt_err_pct_max =
              std::max(rtt_err_pct_max, 100 * std::abs(f.measured - f.configured) / f.configured);
        if (f.what == "rate")
          goodput_ratio_min = std::min(goodput_ratio_min, f.measured / f.configured);
        if (f.what == "loss" || f.what == "wireloss")
          loss_sigma_max = std::max(loss_sigma_max, std::abs(f.measured - f.configured) /
                                                        f.detail.at("sigma_pct").get<double>());
        std::printf("%s\n", f.line().c_str());
        std::fflush(stdout);
        j["figures"].push_back(f.to_json());
        all_ok = all_ok && f.ok();
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_shaping: %s\n", e.what());
    return 1;
  }
  j["all_ok"] = all_ok;
  if (summary) {
    j["ran"] = true;
    j["rtt_err_pct_max"] = rtt_err_pct_max;
    j["goodput_ratio_min"] = goodput_ratio_min;
    j["loss_sigma_max"] = loss_sigma_max;
  }
  std::ifstream loadavg("/proc/loadavg");
  double l1 = 0, l5 = 0;
  loadavg >> l1 >> l5;
  j["loadavg_1m"] = l1;
  j["loadavg_5m"] = l5;
  std::ofstream(out) << j.dump(2) << "\n";
  std::printf("wrote %s\n", out.c_str());
  return all_ok ? 0 : 1;
}
