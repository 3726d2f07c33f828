// The `dp_sync:` block (experiment.h's DpSync): how data-parallel replicas synchronise.
#include "harness/experiment/dp_sync_parser.h"

#include "workloads/model/payload.h"

namespace xdc::run {

DpSync parse_dp_sync(const yaml::Value& v, const Experiment& e) {
  yaml::Map m = v.map({},
                      "a map like {method: diloco, inner_steps: 30, outer: {optimizer: "
                      "nesterov, lr: 0.7, momentum: 0.9}, payload: fp32}");
  for (const char* k : {"fragments", "overlap_steps", "merge"})
    if (auto x = m.get(k))
      x->error(
          "streaming DiLoCo (fragments synchronised in turn, overlapped with the inner "
          "steps) is not built yet; drop it");
  m.check_keys({"method", "inner_steps", "outer", "payload"}, {{"H", "inner_steps"},
                                                               {"h", "inner_steps"},
                                                               {"steps", "inner_steps"},
                                                               {"quantization", "payload"},
                                                               {"format", "payload"},
                                                               {"outer_optimizer", "outer"}});
  DpSync d;
  d.pos = v.pos();
  const yaml::Value method = m.require("method");
  if (method.is_scalar() && method.scalar("a method") == "streaming")
    method.error("streaming DiLoCo (fragments, overlap) is not built yet; use sync or diloco");
  d.method = method.choice({"sync", "diloco"}) == "diloco" ? DpSync::Method::kDiloco
                                                           : DpSync::Method::kSync;
  const auto inner = m.get("inner_steps");
  const auto outer = m.get("outer");
  const auto payload = m.get("payload");
  if (!d.diloco()) {
    for (const auto* x : {&inner, &outer, &payload})
      if (*x)
        (*x)->error(
            "method sync all-reduces the gradients every iteration in fp32; inner_steps, "
            "outer and payload go with method: diloco");
    return d;
  }
  if (e.data_parallel < 2)
    method.error(
        "diloco synchronises data-parallel replicas: set pipeline.data_parallel "
        "to 2 or more");
  d.inner_steps = static_cast<int>(m.require("inner_steps").integer(1, 100000));
  if (outer) {
    yaml::Map om = outer->map({}, "a map like {optimizer: nesterov, lr: 0.7, momentum: 0.9}");
    om.check_keys({"optimizer", "lr", "momentum"}, {{"learning_rate", "lr"}, {"mu", "momentum"}});
    if (auto o = om.get("optimizer")) o->choice({"nesterov"});
    if (auto l = om.get("lr")) d.outer_lr = l->number(0, 10);
    if (auto mu = om.get("momentum")) {
      d.outer_momentum = mu->number(0, 1);
      if (d.outer_momentum >= 1) mu->fail("a momentum below 1, like 0.9");
    }
  }
  if (payload) d.payload = payload->choice(model::payload_names());
  if (e.compute.mode == Compute::Mode::kReal && e.compute.real_device == "cuda")
    v.error(
        "dp_sync diloco runs on the CPU stage only for now (its outer step writes the "
        "parameters in host memory); use compute: real on cpu or modeled compute");
  if (e.tensor_parallel > 1)
    v.error("dp_sync diloco is built for tensor_parallel 1; use tensor_parallel: 1");
  return d;
}

}  // namespace xdc::run
