#pragma once
// The compute-utilisation model behind Table 4 of Streaming DiLoCo (Douillard et al., arXiv
// 2501.18512): the bandwidth two workers need between them for a target compute utilisation
// (CU = compute time / wall time), under the paper's assumptions rather than xdc's link and
// TCP models. It lets xdc print the paper's table next to its own predictions.
//
// The model, as the paper describes its simulator (a DAG of forward, backward w.r.t.
// activations, backward w.r.t. parameters and reduction nodes, one per layer, 4L-1 per step):
// - One device per worker runs the 3L-1 compute nodes of a step in order, each step_s / (3L-1)
//   long: forward 0..L-1, then for L-1..0 the activation gradient (none for layer 0) and the
//   parameter gradient.
// - A layer's (outer) gradient reduction starts once its parameter gradient exists; all
//   reductions share one link of the given rate, first come first served, with zero latency;
//   one reduction takes bytes * 8 / rate (the all-reduce between the two workers moves the
//   payload once each way). Parameters are spread evenly over the layers (no embedding node).
// - Forward of layer l in a step waits for the latest reduction of layer l that the step needs:
//   the previous step's, or, with overlap tau = 1, the one issued a step earlier still.
// - Data-parallel reduces every layer every step in bf16. DiLoCo reduces every layer on the
//   last of every H = 100 steps. Streaming splits the layers into L/3 strided fragments of 3
//   layers and syncs one every H / (L/3 + 1) steps (11, 5, 2 for the paper's models, as the
//   paper states), each fragment once per H steps; FP4 sends 4 bits a parameter instead of 16.
// - CU is averaged over one period of the schedule in steady state.
//
// The parameter counts of PaperModel are not in the paper: paper_models() holds counts fitted
// to the Vanilla DiLoCo rows of Table 4 alone (paper_fit_params), one number per model. The
// data-parallel and Streaming rows are then predictions from the same counts.
#include <array>
#include <string>
#include <vector>

namespace xdc::sim {

struct PaperModel {
  std::string name;
  int layers = 0;
  double step_s = 0;  // pure compute time of one inner step
  double params = 0;  // parameters reduced by a full sync
};

enum class PaperMethod {
  kDataParallel,
  kDiloco,
  kStreaming,
  kStreamingOverlapped,
  kStreamingOverlappedFp4,
};

const char* paper_method_name(PaperMethod method);

// Table 4's CU columns, and one row of its cells in Gbit/s.
inline constexpr std::array<double, 5> kPaperCu = {0.50, 0.80, 0.90, 0.95, 0.99};
struct PaperRow {
  std::string model;  // PaperModel::name
  PaperMethod method;
  std::array<double, 5> gbit_per_s;
};

// The paper's 1B, 10B and 100B models with the fitted parameter counts.
const std::vector<PaperModel>& paper_models();
// Table 4 as printed: 3 models x 5 methods.
const std::vector<PaperRow>& paper_table4();

// CU in (0, 1] of `model` trained with `method` over a link of `gbit_per_s`. Throws
// std::invalid_argument for a Streaming method on a model whose layers are not a multiple of 3
// or that has more than 99 fragments.
double paper_utilisation(const PaperModel& model, PaperMethod method, double gbit_per_s);

// The bandwidths the paper's cells appear to be drawn from: 10^(-1 + 4k/49) Gbit/s for k = 0..49
// (numpy's logspace(-1, 3, 50)); consecutive points differ by about 20.7%.
const std::vector<double>& paper_bandwidth_grid();
// The smallest grid bandwidth whose CU reaches `cu`; +infinity when none does. Relies on CU
// rising with bandwidth.
double paper_bandwidth_for(const PaperModel& model, PaperMethod method, double cu);
// The bandwidth at which CU reaches `cu`, found by bisection (1e-3 to 1e5 Gbit/s, relative
// error below 1e-6); +infinity beyond that range.
double paper_bandwidth_threshold(const PaperModel& model, PaperMethod method, double cu);

// The parameter count that puts every cell of `diloco_gbit_per_s` (a Vanilla DiLoCo row) on the
// grid point nearest the paper's value: the geometric middle of the range of counts that do.
// Returns 0 when no count does.
double paper_fit_params(int layers, double step_s, const std::array<double, 5>& diloco_gbit_per_s);

}  // namespace xdc::sim
