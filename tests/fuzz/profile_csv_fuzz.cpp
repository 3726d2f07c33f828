// A per-stage profile CSV (harness/sim/cost_model.h's profile_costs).
#include "harness/sim/cost_model.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    xdc::sim::profile_costs(xdc::fuzz::text(data, size), "fuzz.csv");
  } catch (const xdc::InputError&) {
  }
  return 0;
}
