// A schedule in PyTorch's CSV form (workloads/schedule/csv.h), validated as
// `xdc schedule validate` does.
#include "tests/fuzz/fuzz_input.h"
#include "workloads/schedule/csv.h"
#include "workloads/schedule/validate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const xdc::sched::Schedule s = xdc::sched::from_csv(xdc::fuzz::text(data, size), "fuzz.csv");
    xdc::sched::validate(s);
  } catch (const xdc::InputError&) {
  }
  return 0;
}
