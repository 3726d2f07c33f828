// Topology YAML (harness/topology/topology.h), with the routes a valid one gets.
#include "harness/topology/topology.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const xdc::topo::Topology t =
        xdc::topo::parse_topology(xdc::fuzz::text(data, size), xdc::fuzz::yaml_label());
    xdc::topo::compute_routes(t);
    xdc::topo::time_dilated(t, xdc::topo::kMaxTimeDilation);
  } catch (const xdc::InputError&) {
  }
  return 0;
}
