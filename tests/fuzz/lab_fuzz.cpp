// Lab YAML (harness/lab/lab.h), its DCs assigned over topologies/three-dc.yaml.
#include "harness/lab/lab.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const xdc::topo::Topology three_dc =
      xdc::topo::load_topology(XDC_SOURCE_DIR "/topologies/three-dc.yaml");
  try {
    const xdc::lab::Lab lab =
        xdc::lab::parse_lab(xdc::fuzz::text(data, size), xdc::fuzz::yaml_label());
    xdc::lab::assign_dcs(lab, three_dc);
  } catch (const xdc::InputError&) {
  }
  return 0;
}
