#pragma once
// Reads an experiment's `dp_sync:` block against what the experiment already holds (its
// data parallelism, compute, tensor parallelism): InputError at the offending key.
#include "harness/common/yaml_reader.h"
#include "harness/experiment/experiment.h"

namespace xdc::run {

DpSync parse_dp_sync(const yaml::Value& v, const Experiment& e);

}  // namespace xdc::run
