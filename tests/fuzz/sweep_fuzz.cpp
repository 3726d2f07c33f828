// Sweep YAML (harness/sweep/sweep.h): loading checks every point's experiment.
#include "harness/sweep/sweep.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    xdc::sweep::parse_sweep(xdc::fuzz::text(data, size), xdc::fuzz::yaml_label());
  } catch (const xdc::InputError&) {
  }
  return 0;
}
