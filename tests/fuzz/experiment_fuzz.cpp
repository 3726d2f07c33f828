// Experiment YAML (harness/experiment/experiment.h), with the record a run writes of it.
#include "harness/experiment/experiment.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const xdc::run::Experiment e =
        xdc::run::parse_experiment(xdc::fuzz::text(data, size), xdc::fuzz::yaml_label());
    xdc::run::record(e);
  } catch (const xdc::InputError&) {
  }
  return 0;
}
