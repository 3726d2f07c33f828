// bench_shaping: measures shaping fidelity (acceptance item 1) for each backend this
// machine can run, prints one line per figure and writes them as JSON.
//   bench_shaping [OUT.json]     (default results/bench/shaping.json)
#include <sys/utsname.h>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>

#include "netem/shaper/shaper.h"
#include "tests/shaper/fidelity.h"

int main(int argc, char** argv) {
  using namespace xdc;
  std::string out = argc > 1 ? argv[1] : "results/bench/shaping.json";
  std::string why;
  bool netem = netem::kernel_has_netem(&why);
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
  bool all_ok = true;
  try {
    testbed::Line line("bench");
    for (auto b : backends) {
      std::vector<testbed::Figure> figs;
      for (double d : {1.0, 10.0, 50.0, 100.0}) figs.push_back(testbed::measure_delay(line, b, d));
      figs.push_back(testbed::measure_jitter(line, b, 20, 5));
      for (double r : {10.0, 100.0, 1000.0}) figs.push_back(testbed::measure_rate(line, b, r, 20));
      for (double l : {1.0, 5.0}) figs.push_back(testbed::measure_loss(line, b, l));
      for (const auto& f : figs) {
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
  std::ifstream loadavg("/proc/loadavg");
  double l1 = 0, l5 = 0;
  loadavg >> l1 >> l5;
  j["loadavg_1m"] = l1;
  j["loadavg_5m"] = l5;
  std::ofstream(out) << j.dump(2) << "\n";
  std::printf("wrote %s\n", out.c_str());
  return all_ok ? 0 : 1;
}
