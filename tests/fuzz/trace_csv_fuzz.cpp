// A WAN trace CSV, read as a topology's `trace: {file: F, compress: 20, loop: L}` reads it
// (parse.h's read_trace: load_trace_csv, then loop_changes at the trace's own period). L is
// true for an input of odd length: both paths fuzzed, the loop's up to 20000 changes per
// input (the slow part) half the time.
#include "harness/topology/parse.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const std::string path = xdc::fuzz::scratch_file("trace.csv", data, size);
    const xdc::yaml::Value trace = xdc::yaml::parse(
        "{file: '" + path + "', compress: 20, loop: " + (size % 2 ? "true" : "false") + "}",
        "trace.yaml");
    xdc::topo::read_trace(trace);
  } catch (const xdc::InputError&) {
  }
  return 0;
}
