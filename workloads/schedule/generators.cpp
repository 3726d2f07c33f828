#include "workloads/schedule/generators.h"

#include <functional>
#include <map>
#include <stdexcept>

namespace xdc::sched {

namespace {
const std::map<std::string, std::function<Schedule(const Params&)>>& registry() {
  static const std::map<std::string, std::function<Schedule(const Params&)>> r = {
      {"gpipe", gen_gpipe},
      {"1f1b", gen_1f1b},
      {"interleaved", gen_interleaved},
      {"zbh1", gen_zbh1},
      {"zbh2", gen_zbh2},
      {"zbv", gen_zbv},
      {"overlap", gen_overlap},
      {"crosspipe-greedy", gen_crosspipe_greedy},
      {"optimal", gen_optimal},
      {"dhelix", gen_dhelix},
  };
  return r;
}
}  // namespace

const std::vector<std::string>& schedule_names() {
  static const std::vector<std::string> names = {
      "gpipe", "1f1b",    "interleaved",      "zbh1",    "zbh2",
      "zbv",   "overlap", "crosspipe-greedy", "optimal", "dhelix"};
  return names;
}

Schedule generate(const std::string& name, const Params& p) {
  auto it = registry().find(name);
  if (it == registry().end()) {
    std::string known;
    for (const auto& n : schedule_names()) known += (known.empty() ? "" : ", ") + n;
    throw std::invalid_argument("unknown schedule \"" + name + "\" (known: " + known + ")");
  }
  return it->second(p);
}

}  // namespace xdc::sched
