// A Mahimahi packet-delivery trace, read as a topology's `trace:` with format: mahimahi
// reads it (parse.h's read_trace), under a 1 ms window (the finest); loop: true for an input
// of odd length (as trace_csv_fuzz.cpp).
#include "harness/topology/parse.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const std::string path = xdc::fuzz::scratch_file("trace.mahi", data, size);
    const xdc::yaml::Value trace = xdc::yaml::parse(
        "{file: '" + path +
            "', format: mahimahi, window: 1ms, loop: " + (size % 2 ? "true" : "false") + "}",
        "trace.yaml");
    xdc::topo::read_trace(trace);
  } catch (const xdc::InputError&) {
  }
  return 0;
}
