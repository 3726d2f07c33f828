#pragma once
// The links among hosts of an experiment, as link_model() (plan.h) describes them: the
// building block of the pipeline's, the world's and the all-reduces' link models.
#include <string>
#include <vector>

#include "harness/experiment/experiment.h"
#include "harness/sim/link_model.h"

namespace xdc::run {

// The links among `hosts` (one rank each, in order). `striped`: point-to-point messages,
// which mpi.connections stripes; false for the all-reduces, which stay on OpenMPI.
// `per_host`: a row per distinct host (LinkModel::host; a pair's link, channel and path
// depend on its hosts alone), for a world whose ranks^2 pairs would not fit; false: a row
// per rank. Either way every rank pair has a connection until LinkModel::set_pairs.
sim::LinkModel links_between(const Experiment& e, const std::vector<std::string>& hosts,
                             bool striped, bool per_host = false);

}  // namespace xdc::run
