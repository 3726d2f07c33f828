// A WAN trace CSV (topology.h's load_trace_csv), looped as `loop: true` does.
#include "harness/topology/topology.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const std::string path = xdc::fuzz::scratch_file("trace.csv", data, size);
    const auto changes = xdc::topo::load_trace_csv(path, 20);
    xdc::topo::loop_changes(changes, 1000);
  } catch (const xdc::InputError&) {
  }
  return 0;
}
