// The `dp_sync:` block (experiment.h's DpSync): how data-parallel replicas synchronise.
#include "harness/experiment/dp_sync_parser.h"

#include <fmt/format.h>

#include "workloads/model/payload.h"

namespace xdc::run {

DpSync parse_dp_sync(const yaml::Value& v, const Experiment& e) {
  yaml::Map m = v.map({},
                      "a map like {method: diloco, inner_steps: 30, outer: {optimizer: "
                      "nesterov, lr: 0.7, momentum: 0.9}, payload: fp32}");
  m.check_keys({"method", "collective", "inner_steps", "sync_steps", "fragments", "overlap_steps",
                "merge", "eager", "outer", "payload"},
               {{"H", "inner_steps"},
                {"h", "inner_steps"},
                {"steps", "inner_steps"},
                {"pretrain_steps", "sync_steps"},
                {"warmup_steps", "sync_steps"},
                {"P", "fragments"},
                {"tau", "overlap_steps"},
                {"overlap", "overlap_steps"},
                {"alpha", "merge"},
                {"eager_updates", "eager"},
                {"quantization", "payload"},
                {"format", "payload"},
                {"outer_optimizer", "outer"},
                {"library", "collective"},
                {"backend", "collective"}});
  DpSync d;
  d.pos = v.pos();
  const yaml::Value method = m.require("method");
  const std::string name = method.choice({"sync", "diloco", "streaming"});
  d.method = name == "diloco"      ? DpSync::Method::kDiloco
             : name == "streaming" ? DpSync::Method::kStreaming
                                   : DpSync::Method::kSync;
  const auto inner = m.get("inner_steps");
  const auto outer = m.get("outer");
  const auto payload = m.get("payload");
  const auto fragments = m.get("fragments");
  const auto overlap = m.get("overlap_steps");
  const auto merge = m.get("merge");
  const auto sync_steps = m.get("sync_steps");
  const auto eager = m.get("eager");
  if (const auto c = m.get("collective")) {
    d.collective_pos = c->pos();
    if (c->choice({"openmpi", "gloo"}) == "gloo") {
      d.collective = DpSync::Collective::kGloo;
      if (d.outer_loop())
        c->error(
            "collective: gloo goes with method: sync (a torch program's gradient "
            "all-reduce); the outer loop's syncs are xdc-worker's, over OpenMPI");
    }
  }
  if (!d.outer_loop()) {
    for (const auto* x :
         {&inner, &outer, &payload, &fragments, &overlap, &merge, &sync_steps, &eager})
      if (*x)
        (*x)->error(
            "method sync all-reduces the gradients every iteration in fp32; inner_steps, "
            "sync_steps, outer, payload and eager go with method: diloco or streaming");
    return d;
  }
  if (d.method == DpSync::Method::kDiloco)
    for (const auto* x : {&fragments, &overlap, &merge})
      if (*x)
        (*x)->error(
            "fragments, overlap_steps and merge go with method: streaming (diloco is one "
            "fragment, synchronised at once)");
  if (e.data_parallel < 2)
    method.error(
        "an outer loop synchronises data-parallel replicas: set pipeline.data_parallel "
        "to 2 or more");
  d.inner_steps = static_cast<int>(m.require("inner_steps").integer(1, 100000));
  if (sync_steps) d.sync_steps = static_cast<int>(sync_steps->integer(0, 10000000));
  if (fragments) {
    d.fragments = static_cast<int>(fragments->integer(1, d.inner_steps));
    // A model shape's layers are checked by the plan (plan.cpp, outer_sync_runs).
    const bool shape =
        e.compute.mode == Compute::Mode::kModeled && e.compute.source == Compute::Source::kShape;
    if (!shape && d.fragments > e.model.layers)
      fragments->fail(fmt::format("at most the model's {} layers (a fragment is whole layers)",
                                  e.model.layers));
    if (!shape && d.fragments > 1 && e.stages > e.model.layers)
      fragments->fail(
          fmt::format("one fragment where the {} stages are more than the model's {} layers",
                      e.stages, e.model.layers));
  }
  if (overlap) d.overlap_steps = static_cast<int>(overlap->integer(0, d.inner_steps - 1));
  d.merge = d.overlap_steps > 0 ? 0.5 : 0;
  if (merge) d.merge = merge->number(0, 1);
  if (eager) d.eager = eager->boolean();
  if (d.eager)
    for (const auto* x : {&overlap, &merge})
      if (*x)
        (*x)->error(
            "eager overlaps each sync with its fragment's whole next outer step and takes the "
            "outer step at once from the outer parameters: no overlap_steps or merge with it");
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
        "dp_sync's outer loop runs on the CPU stage only for now (its outer step writes the "
        "parameters in host memory); use compute: real on cpu or modeled compute");
  return d;
}

}  // namespace xdc::run
