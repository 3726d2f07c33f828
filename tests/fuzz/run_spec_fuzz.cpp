// The worker's spec.json (workloads/worker/run_spec.h's read_run_spec).
#include "tests/fuzz/fuzz_input.h"
#include "workloads/worker/run_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    xdc::worker::read_run_spec(xdc::fuzz::scratch_file("spec.json", data, size));
  } catch (const xdc::InputError&) {
  }
  return 0;
}
