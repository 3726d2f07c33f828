#pragma once
// The links among hosts of an experiment, as link_model() (plan.h) describes them: the
// building block of the pipeline's, the world's and the all-reduces' link models.
#include <string>
#include <vector>

#include "harness/experiment/experiment.h"
#include "harness/sim/cost_model.h"
#include "harness/sim/link_model.h"

namespace xdc::run {

// The links among `hosts` (one rank each, in order). `striped`: point-to-point messages,
// which mpi.connections stripes; false for the all-reduces, which stay on OpenMPI.
// `per_host`: a row per distinct host (LinkModel::host; a pair's link, channel and path
// depend on its hosts alone), for a world whose ranks^2 pairs would not fit; false: a row
// per rank. Either way every rank pair has a connection until LinkModel::set_pairs.
sim::LinkModel links_between(const Experiment& e, const std::vector<std::string>& hosts,
                             bool striped, bool per_host = false);

// Tensor parallelism: each stage's TP all-reduce time (`stage_rank`: its pipeline rank) from
// its TP group's links (replica 0's; a stage's groups sit in one DC alike) as the workers run
// it (MPI_Iallreduce in place: sim::allreduce_ns), after the compute between two without
// traffic, added to F and B; and its probe timer's wait where its first packet finds its
// host's port full (CostModel::tp_port_wait_ns).
void add_tp_allreduces(const Experiment& e, const std::vector<int>& stage_rank, sim::CostModel& c);

}  // namespace xdc::run
