#pragma once
// Trace analysis, one piece of code for measured and simulated traces.
// Compute = F, B, W, BW events. With C_r the compute of rank r:
//  - iteration time: last event end - first event start;
//  - Megatron bubble: (iteration - max_r C_r) / max_r C_r  (bubble / ideal compute);
//  - ZeroBubble bubble: (span - C) / span of the rank with the longest span, a rank's
//    span running from its first to its last compute;
//  - CrossPipe bubble: mean over ranks of idle / total, total from the first F of
//    stage 0 to the last operation of any rank.
#include <cstdint>
#include <vector>

#include "workloads/trace/trace.h"

namespace xdc::trace {

struct BubbleRatios {
  double megatron = 0;
  double zerobubble = 0;
  double crosspipe = 0;
};

// The tables' bubble columns (the terminal's and the report's), said once under them:
// Megatron's bubble is a multiple of the compute (it passes 1 when the WAN dominates), the
// other two are idle shares.
inline constexpr const char* kBubbleLegend =
    "bubble/comp: Megatron's bubble, (iteration - compute) / compute, in computes (can pass "
    "1);\nidle ZB / CP: the idle share of the longest rank span (ZeroBubble's) / of every "
    "rank, averaged (CrossPipe's)\n";

struct Summary {
  int64_t iteration_ns = 0;
  double time_per_microbatch_ns = 0;
  BubbleRatios bubble;
  std::vector<int64_t> compute_ns;  // per rank
  std::vector<int64_t> span_ns;     // per rank, first to last compute
  int64_t comm_bytes = 0;           // sum over SEND events
};

// PREFILL events (prefill in bubbles, workloads/worker/prefill.h) are not the training's:
// analyze() ignores them.
Summary analyze(const Trace& t);

}  // namespace xdc::trace
