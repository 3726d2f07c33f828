#pragma once
// Validator: a schedule the executor can run without surprises.
//  - structure: placement covers every stage, compute sits on its stage's rank, every
//    (stage, microbatch) has one F and either one BW or one B and one W;
//  - communication: every cross-rank dependency has a SEND on the producer's rank after
//    the producer and a matching RECV on the consumer's rank before the consumer, with
//    the right peer;
//  - pairs: a paired F is followed at once by its partner B / BW of another microbatch;
//  - deadlock freedom: the dependency engine (engine.h) runs the lists to the end with
//    zero durations (a dependency on a later action of the same rank is a cycle);
//  - peak activation memory per rank (F holds one stage unit until its W or BW; a paired
//    F and BW together hold no more than before them: the BW frees as the F fills),
//    reported in microbatches, checked against a cap when one is given.
// Errors name the rank, the action's index in the rank's list and the action.
#include <string>
#include <vector>

#include "workloads/schedule/schedule.h"

namespace xdc::sched {

struct ValidationReport {
  std::vector<std::string> errors;
  std::vector<int> rank_of;              // per error, the rank it is about; -1: the schedule
  std::vector<int> peak_units;           // per rank, stage activations
  std::vector<double> peak_activations;  // per rank, microbatches (units / chunks)
  bool ok() const { return errors.empty(); }
  std::string message() const;  // errors joined by newlines
};

// memory_cap in microbatches per rank; 0 = no cap.
ValidationReport validate(const Schedule& s, double memory_cap = 0);

}  // namespace xdc::sched
