#include "harness/sim/paper_utilisation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace xdc::sim {
namespace {

constexpr int kOuterSteps = 100;  // H
constexpr int kFragmentLayers = 3;
constexpr double kBf16Bits = 16;
constexpr double kFp4Bits = 4;
constexpr double kInf = std::numeric_limits<double>::infinity();

// What a method syncs: sync_at[step % period] lists the layers reduced at the end of that
// step, and the result is needed by the forward of step + 1 + tau.
struct SyncPlan {
  int period = 1;
  int tau = 0;
  double bits_per_param = kBf16Bits;
  std::vector<std::vector<int>> sync_at;
};

SyncPlan plan_for(const PaperModel& model, PaperMethod method) {
  const int layers = model.layers;
  std::vector<int> all(static_cast<size_t>(layers));
  for (int l = 0; l < layers; ++l) all[static_cast<size_t>(l)] = l;
  SyncPlan plan;
  switch (method) {
    case PaperMethod::kDataParallel:
      plan.sync_at = {all};
      return plan;
    case PaperMethod::kDiloco:
      plan.period = kOuterSteps;
      plan.sync_at.resize(kOuterSteps);
      plan.sync_at.back() = all;
      return plan;
    case PaperMethod::kStreaming:
    case PaperMethod::kStreamingOverlapped:
    case PaperMethod::kStreamingOverlappedFp4:
      break;
  }
  const int fragments = layers / kFragmentLayers;
  if (layers % kFragmentLayers != 0 || fragments < 1 || fragments + 1 > kOuterSteps) {
    throw std::invalid_argument("paper_utilisation: Streaming needs a multiple of 3 layers, " +
                                std::to_string(kFragmentLayers) + " to " +
                                std::to_string(kFragmentLayers * (kOuterSteps - 1)) + ", got " +
                                std::to_string(layers));
  }
  plan.period = kOuterSteps;
  plan.sync_at.resize(kOuterSteps);
  const int interval = kOuterSteps / (fragments + 1);
  for (int f = 0; f < fragments; ++f) {
    std::vector<int>& at = plan.sync_at[static_cast<size_t>(f * interval + interval - 1)];
    for (int j = 0; j < kFragmentLayers; ++j) at.push_back(f + j * fragments);  // strided
  }
  plan.tau = method == PaperMethod::kStreaming ? 0 : 1;
  if (method == PaperMethod::kStreamingOverlappedFp4) plan.bits_per_param = kFp4Bits;
  return plan;
}

// Runs enough steps to reach the periodic steady state and returns the wall time of one period.
double period_wall_s(const PaperModel& model, const SyncPlan& plan, double gbit_per_s) {
  const int layers = model.layers;
  const auto L = static_cast<size_t>(layers);
  const double node_s = model.step_s / (3.0 * layers - 1);
  const double layer_s = model.params / layers * plan.bits_per_param / (gbit_per_s * 1e9);
  // needed[step % slots][l]: when the reduction step's forward of layer l waits for arrives.
  const auto slots = static_cast<size_t>(plan.tau + 2);
  std::vector<std::vector<double>> needed(slots, std::vector<double>(L, 0.0));
  std::vector<double> grad_ready(L);
  const int first = plan.period + plan.tau + 1;  // a full period after the first syncs land
  const int steps = first + plan.period + 1;
  double t = 0, link_free = 0, first_end = 0;
  for (int step = 0; step < steps; ++step) {
    std::vector<double>& need = needed[static_cast<size_t>(step) % slots];
    for (size_t l = 0; l < L; ++l) t = std::max(t, need[l]) + node_s;
    std::fill(need.begin(), need.end(), 0.0);
    for (size_t l = L; l-- > 0;) {
      t += (l > 0 ? 2 : 1) * node_s;  // activation gradient, then parameter gradient
      grad_ready[l] = t;
    }
    if (step == first) first_end = t;
    if (step == first + plan.period) return t - first_end;
    // Layers become ready from L-1 down to 0, so descending order is arrival order.
    std::vector<int> sync = plan.sync_at[static_cast<size_t>(step % plan.period)];
    std::sort(sync.begin(), sync.end(), [](int a, int b) { return a > b; });
    std::vector<double>& lands = needed[static_cast<size_t>(step + 1 + plan.tau) % slots];
    for (int l : sync) {
      link_free = std::max(link_free, grad_ready[static_cast<size_t>(l)]) + layer_s;
      lands[static_cast<size_t>(l)] = link_free;
    }
  }
  return 0;  // not reached
}

// The index of the grid point paper_bandwidth_for picks, or the grid's size when none.
size_t grid_index_for(const PaperModel& model, PaperMethod method, double cu) {
  const std::vector<double>& grid = paper_bandwidth_grid();
  size_t lo = 0, hi = grid.size();
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (paper_utilisation(model, method, grid[mid]) >= cu) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

size_t nearest_grid_index(double gbit_per_s) {
  const std::vector<double>& grid = paper_bandwidth_grid();
  size_t best = 0;
  for (size_t k = 1; k < grid.size(); ++k) {
    if (std::abs(std::log(grid[k] / gbit_per_s)) < std::abs(std::log(grid[best] / gbit_per_s))) {
      best = k;
    }
  }
  return best;
}

}  // namespace

const char* paper_method_name(PaperMethod method) {
  switch (method) {
    case PaperMethod::kDataParallel:
      return "Data-Parallel";
    case PaperMethod::kDiloco:
      return "Vanilla DiLoCo";
    case PaperMethod::kStreaming:
      return "Streaming DiLoCo";
    case PaperMethod::kStreamingOverlapped:
      return "Streaming DiLoCo w/ overlapped com.";
    case PaperMethod::kStreamingOverlappedFp4:
      return "Streaming DiLoCo w/ overlapped FP4 com.";
  }
  return "?";
}

const std::vector<PaperModel>& paper_models() {
  // params: paper_fit_params of each model's DiLoCo row (the test checks they still are).
  static const std::vector<PaperModel> models = {
      {"1B", 24, 0.1, 0.844e9},
      {"10B", 48, 0.8, 8.375e9},
      {"100B", 108, 4.9, 81.0e9},
  };
  return models;
}

const std::vector<PaperRow>& paper_table4() {
  using M = PaperMethod;
  static const std::vector<PaperRow> rows = {
      {"1B", M::kDataParallel, {86.8, 152.6, 184.2, 222.3, 569.0}},
      {"1B", M::kDiloco, {1.4, 6.2, 13.3, 23.3, 86.8}},
      {"1B", M::kStreaming, {1.4, 5.2, 9.1, 16.0, 28.1}},
      {"1B", M::kStreamingOverlapped, {1.4, 4.3, 6.2, 9.1, 11.0}},
      {"1B", M::kStreamingOverlappedFp4, {0.4, 0.9, 1.7, 2.0, 3.0}},
      {"10B", M::kDataParallel, {104.8, 222.3, 222.3, 268.3, 471.5}},
      {"10B", M::kDiloco, {1.7, 7.5, 16.0, 33.9, 104.8}},
      {"10B", M::kStreaming, {1.7, 5.2, 9.1, 13.3, 19.3}},
      {"10B", M::kStreamingOverlapped, {1.7, 3.6, 5.2, 6.2, 7.5}},
      {"10B", M::kStreamingOverlappedFp4, {0.4, 0.9, 1.4, 1.4, 1.7}},
      {"100B", M::kDataParallel, {184.2, 323.8, 390.7, 390.7, 471.5}},
      {"100B", M::kDiloco, {3.0, 11.0, 23.3, 49.4, 184.2}},
      {"100B", M::kStreaming, {2.4, 6.2, 9.1, 11.0, 19.3}},
      {"100B", M::kStreamingOverlapped, {1.7, 3.6, 4.3, 5.2, 5.2}},
      {"100B", M::kStreamingOverlappedFp4, {0.5, 0.9, 1.1, 1.1, 1.4}},
  };
  return rows;
}

double paper_utilisation(const PaperModel& model, PaperMethod method, double gbit_per_s) {
  const SyncPlan plan = plan_for(model, method);
  return plan.period * model.step_s / period_wall_s(model, plan, gbit_per_s);
}

const std::vector<double>& paper_bandwidth_grid() {
  static const std::vector<double> grid = [] {
    std::vector<double> g(50);
    for (size_t k = 0; k < g.size(); ++k) g[k] = std::pow(10.0, -1.0 + 4.0 * k / 49.0);
    return g;
  }();
  return grid;
}

double paper_bandwidth_for(const PaperModel& model, PaperMethod method, double cu) {
  const std::vector<double>& grid = paper_bandwidth_grid();
  const size_t k = grid_index_for(model, method, cu);
  return k < grid.size() ? grid[k] : kInf;
}

double paper_bandwidth_threshold(const PaperModel& model, PaperMethod method, double cu) {
  double lo = 1e-3, hi = 1e5;
  if (paper_utilisation(model, method, hi) < cu) return kInf;
  while (hi / lo > 1 + 1e-7) {
    const double mid = std::sqrt(lo * hi);
    if (paper_utilisation(model, method, mid) >= cu) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return hi;
}

double paper_fit_params(int layers, double step_s, const std::array<double, 5>& diloco_gbit_per_s) {
  // The chosen grid index only rises with the parameter count, so each cell admits an interval
  // of counts; bisect both of its ends in log space.
  auto index_at = [&](double params, size_t cell) {
    const PaperModel m{"fit", layers, step_s, params};
    return grid_index_for(m, PaperMethod::kDiloco, kPaperCu[cell]);
  };
  double low = 1e3, high = 1e15;
  for (size_t cell = 0; cell < kPaperCu.size(); ++cell) {
    const size_t want = nearest_grid_index(diloco_gbit_per_s[cell]);
    double a = 1e3, b = 1e15;  // lowest count with index >= want
    double c = 1e3, d = 1e15;  // highest count with index <= want
    for (int i = 0; i < 60; ++i) {
      const double ab = std::sqrt(a * b), cd = std::sqrt(c * d);
      (index_at(ab, cell) >= want ? b : a) = ab;
      (index_at(cd, cell) <= want ? c : d) = cd;
    }
    low = std::max(low, b);
    high = std::min(high, c);
  }
  return low <= high ? std::sqrt(low * high) : 0.0;
}

}  // namespace xdc::sim
