#pragma once
// Co-execution of two microbatches on one rank (DHelix's strand interleaving, Wang et al.
// 2024): the F of one strand and the backward of the other run together, operator by
// operator, so that one's communication (tensor-parallel all-reduces) runs while the other
// computes. A schedule marks such pairs (schedule.h: Action::paired); this file says how
// long a pair takes and which operators run side by side: the plan.
//
// Model. Each half is a sequence of operators, each with compute time (the device busy)
// and communication time (an all-reduce on the node's links). Two operators side by side
// in one step: their computations share the device and run one after the other, their
// communications share the links likewise, and computation overlaps communication, slowed
// by `interference` (a fraction: the communication kernels take SMs and memory bandwidth)
// while both run. A step lasts
//   C = c1 + c2, M = m1 + m2;  M = 0: C;  C (1 + k) <= M: M;  else C + M k / (1 + k)
// (the computation advances at 1 / (1 + k) during the M of communication). A step of one
// operator lasts c + m. Each half keeps its operators in order and a step ends when both
// of its operators have: plan_coexec finds the fastest sequence of steps by dynamic
// programming over (operators of half a done, operators of half b done), O(n m).
#include <vector>

namespace xdc::sched {

struct Op {
  double compute = 0;
  double comm = 0;
};

struct CoexecStep {
  int a = -1;  // operator of half a (the F) in this step; -1: none
  int b = -1;  // operator of half b (the backward); -1: none
  double time = 0;
  double compute_time = 0;  // how long the device computes in the step (slowdown included)
};

struct CoexecPlan {
  std::vector<CoexecStep> steps;
  double time = 0;    // the pair's duration: the sum of the steps
  double serial = 0;  // a then b, one after the other
  // Activation memory beyond one half's: a fills its activations as it computes and b
  // frees its own as it does (coexec_step order, a half's share of its computation done
  // so far), so together they hold one half's worth plus, at the worst step boundary,
  // (a's share done, the step's operator included) - (b's share done before the step):
  // that excess, as a fraction of one half's activations.
  double peak_excess = 0;
  // Communication time that ran beside the other half's computation: serial - time,
  // net of the interference.
  double hidden() const { return serial - time; }
};

// One step of operators x and y (either may be null: a step of one operator).
CoexecStep coexec_step(const Op* x, const Op* y, double interference);

// The fastest plan for halves a and b. Throws std::invalid_argument for a negative time
// or an interference < 0.
CoexecPlan plan_coexec(const std::vector<Op>& a, const std::vector<Op>& b, double interference);

// The operators of one F or backward as the workers run it (workloads/worker/compute.cpp):
// `compute` in `n` equal slices, each followed by one of n equal communications that
// take `comm` in all (n = 0: one operator of the whole compute), and `tail` compute (a
// BW's weight gradients, which need no communication; 0: none) spread over the slices:
// each layer's weight gradients with its input gradients, so that its activations go as
// its slice ends.
std::vector<Op> sliced_ops(double compute, int n, double comm, double tail = 0);

}  // namespace xdc::sched
