// A WAN direction's `changes:` list (topology.h's WanChange), read as the whole document,
// then applied and dilated as a run does.
#include "harness/topology/parse.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const xdc::yaml::Value root =
        xdc::yaml::parse(xdc::fuzz::text(data, size), xdc::fuzz::yaml_label());
    xdc::netem::LinkParams p;
    for (const xdc::topo::WanChange& c : xdc::topo::read_changes(root)) {
      p = xdc::topo::applied(p, c);
      xdc::topo::time_dilated(c, xdc::topo::kMaxTimeDilation);
    }
  } catch (const xdc::InputError&) {
  }
  return 0;
}
