#pragma once
// Placement search (`xdc plan`): which DCs to train in and how to lay a pipeline and its
// data-parallel replicas over them. A search file holds an inventory of DCs (GPUs each,
// the WAN between them) and a base experiment without topology or pipeline; every
// placement that fits is made into an experiment (a generated inline topology: the DCs it
// uses, one host per GPU used there, one rank per host) and predicted through plan/plan.h
// (make_plan + predict), the one prediction `xdc simulate` and `xdc run` make. Nothing is
// simulated here. Errors are InputError "FILE:LINE:COL: KEY: expected ..., got ...";
// unknown keys are errors.
//
//   name: plan-3dc                  # required; names the experiment written
//   dcs:                            # the inventory: GPUs (hosts, one rank each) per DC
//     - {name: useast, gpus: 2}
//     - {name: uswest, gpus: 2}
//   wan:                            # topology.h's WAN links (every key, one per DC pair)
//     - {between: [useast, uswest], delay: 32ms, rate: 1gbit}
//   intra_dc: {rate: 10gbit, delay: 50us}   # optional, topology.h's
//   gpus: 4                         # ranks to use, stages x data_parallel; or a list [4, 6]
//   constraints: {min_stages: 2, max_stages: 4, max_placements: 5000}   # optional
//   # ... and the experiment keys (experiment.h) but topology, pipeline, wan and events:
//   compute: {modeled: {model: llama2-7b, device: a100, seq: 4096}}   # split over the
//                                   # stages; constants or a profile (one stage's costs)
//                                   # only with one pipeline depth to compare
//   microbatches: 8
//   schedules: [1f1b, overlap]      # each placement is predicted with each
//
// A placement: `stages` x `data_parallel` ranks; each replica is a pipeline of contiguous
// segments, one per DC in the order the stages pass through them (Segment), every DC used
// at most once per replica. Enumerated: every divisor `stages` of each `gpus` within the
// constraints; every ordered sequence of distinct DCs with every split of the stages into
// positive counts that fit the DC's GPUs (the orders matter: they decide which WAN links
// the activations cross); every multiset of `data_parallel` such pipelines that fits the
// GPUs of each DC. Kept only when
//  - the DCs used are closed under routing (the routes between them, over the whole
//    inventory, pass through no other DC: the generated topology leaves that DC out), and
//  - every replica's pipeline sees the same links as replica 0's (the simulator simulates
//    one replica and takes the others as identical, sim/worker_model.h): replicas with the
//    same segments (data parallelism within each DC), replicas each inside one DC (data
//    parallelism across DCs), or pipelines over equal WAN links.
// Replicas whose pipelines cross one WAN direction share it in the prediction (plan.h:
// LinkModel::copies); several stages' data-parallel all-reduces at once do not slow each
// other down (each is timed alone).
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/input_error.h"
#include "harness/experiment/experiment.h"

namespace xdc::placement {

struct DcGpus {
  std::string name;
  int gpus = 0;
};

struct Search {
  std::string file;  // as given
  std::string text;  // the file as read
  std::string name;
  std::vector<DcGpus> dcs;                 // in file order
  std::vector<int> gpus;                   // totals to try
  int min_stages = 1, max_stages = 1024;   // constraints
  size_t max_placements = 5000;            // refuse a search larger than this
  SourcePos gpus_pos, max_placements_pos;  // for errors
  YAML::Node root;                         // the file's tree (its nodes keep their marks)
  run::Experiment inventory;               // the base experiment over every DC and GPU
};

Search parse_search(const std::string& text, const std::string& file_label);
Search load_search(const std::string& path);

struct Segment {
  int dc = 0;  // index into Search::dcs
  int stages = 0;
  bool operator==(const Segment& o) const { return dc == o.dc && stages == o.stages; }
  bool operator!=(const Segment& o) const { return !(*this == o); }
};

struct Placement {
  int stages = 0, data_parallel = 0;
  std::vector<std::vector<Segment>> replicas;  // [replica] -> its segments, in stage order

  // GPUs used per DC (index as Search::dcs).
  std::vector<int> gpus_per_dc(size_t dcs) const;
  // Pipeline boundaries between DCs (over every replica) plus, per stage, the DCs its
  // replicas span beyond the first: the ranking's tie-break.
  int wan_crossings() const;
  // Some stage's replicas sit in more than one DC (its all-reduce crosses the WAN).
  bool dp_across_dcs() const;
  // "useast:2>uswest:2" per replica, "2x " for repeats, " | " between different ones.
  std::string describe(const Search& s) const;
};

// Every placement as described above, in a fixed order; InputError (at `gpus`) when
// there are more than max_placements.
std::vector<Placement> enumerate(const Search& s);

// The placement as an experiment tree (the base keys as written in the search file, an
// inline topology, the pipeline, `schedules: [schedule]`), and as text with `header`
// lines as comments first.
YAML::Node experiment_tree(const Search& s, const Placement& p, const std::string& schedule);
std::string experiment_text(const Search& s, const Placement& p, const std::string& schedule,
                            const std::vector<std::string>& header);
run::Experiment experiment(const Search& s, const Placement& p, const std::string& schedule);

struct Ranked {
  Placement placement;
  std::string schedule;
  double iteration_s = 0;  // predicted (plan/predict.h Prediction::iteration_s)
  int64_t wan_bytes = 0;   // per iteration: pipeline messages between DCs (every replica)
                           // and all-reduce messages between DCs (modeled compute)
  int wan_crossings = 0;
};

struct Outcome {
  std::vector<Ranked> ranked;  // fastest first; ties (equal to 0.1 ms) by fewer WAN
                               // crossings, then fewer WAN bytes, then enumeration order
  size_t placements = 0;       // enumerated
  std::vector<std::string> not_predicted;  // "placement, schedule: why" (e.g. a schedule
                                           // that needs more stages)
};

// Predicts every placement with every schedule of the search. `progress(done, total)` is
// called after each placement.
Outcome rank(const Search& s, const std::function<void(size_t, size_t)>& progress = {});

}  // namespace xdc::placement
