#include <stdexcept>

#include "workloads/schedule/generators.h"

namespace xdc::sched {
Schedule gen_optimal(const Params& p) {
  return gen_crosspipe_greedy(p);
}
}  // namespace xdc::sched
