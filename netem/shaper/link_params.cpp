#include "netem/shaper/link_params.h"

namespace xdc::netem {

const char* to_string(Backend b) {
  switch (b) {
    case Backend::kAuto:
      return "auto";
    case Backend::kKernel:
      return "kernel";
    case Backend::kUserspace:
      return "userspace";
  }
  return "?";
}

const char* to_string(JitterDist d) {
  switch (d) {
    case JitterDist::kUniform:
      return "uniform";
    case JitterDist::kNormal:
      return "normal";
    case JitterDist::kPareto:
      return "pareto";
    case JitterDist::kParetoNormal:
      return "paretonormal";
  }
  return "?";
}

}  // namespace xdc::netem
