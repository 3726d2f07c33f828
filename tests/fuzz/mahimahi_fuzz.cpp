// A Mahimahi packet-delivery trace, read as a topology's `trace:` with format: mahimahi
// and loop: true reads it (parse.h's read_trace), under a 1 ms window (the finest).
#include "harness/topology/parse.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const std::string path = xdc::fuzz::scratch_file("trace.mahi", data, size);
    const xdc::yaml::Value trace = xdc::yaml::parse(
        "{file: '" + path + "', format: mahimahi, window: 1ms, loop: true}", "trace.yaml");
    xdc::topo::read_trace(trace);
  } catch (const xdc::InputError&) {
  }
  return 0;
}
