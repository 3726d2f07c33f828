#pragma once
// Reads an experiment's `workload:` block (workload.h) against its topology: InputError at
// the offending key for a bad block (a program that is not there, a host the topology
// lacks, a variable the launcher sets itself).
#include <string>

#include "harness/common/yaml_reader.h"
#include "harness/experiment/workload.h"
#include "harness/topology/topology.h"

namespace xdc::run {

// `source_file`: the experiment's file; a relative program path is taken from its folder.
Workload parse_workload(const yaml::Value& v, const topo::Topology& topology,
                        const std::string& source_file);

}  // namespace xdc::run
