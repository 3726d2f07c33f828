#pragma once
// "What ran", the part of the report right under the answer: the settings that differ from
// stock OpenMPI and Linux TCP in a coloured box (or, plainly, that none do), the network
// drawn (topology_svg.h) beside the model, compute, pipeline, iterations and schedules, the
// WAN messages' goodput measured beside simulated, and the full environment folded away.
#include <string>

#include "harness/report/results_dir.h"

namespace xdc::report {

// The section's body (HTML, escaped); parts without data are left out.
std::string what_ran_html(const RunData& d);

// The non-default settings box alone: "none (stock OpenMPI and TCP)" when the list is
// empty, "not recorded" when the directory does not say.
std::string non_default_html(const RunData& d);

}  // namespace xdc::report
