// ZB-H1 and ZB-V as their authors published them (Qi et al., "Zero Bubble Pipeline
// Parallelism", ICLR 2024; Qi et al., "Pipeline Parallelism with Controllable Memory",
// NeurIPS 2024; code: github.com/sail-sg/zero-bubble-pipeline-parallelism).
//
// ZB-H1 (paper section 2.1, Figure 3 top) is handcrafted: 1F1B with B split from W and
// the W passes delayed so that every stage holds p microbatches. In slot x = 0 .. m+p-2
// stage i runs F_x, B_{x-(p-1-i)}, W_{x-(p-1)} (each only when its index is in 0..m-1),
// which gives p-1-i warm-up forwards, i (F, B) pairs, m-p+1 (F, B, W) triples, p-1-i
// (B, W) pairs and i trailing W. The authors' Megatron patch (branch zb-h1-quick-start,
// schedules.py) runs the same counts with B and W fused where nothing is deferred.
//
// ZB-V is the heuristic PipelineGraph.try_v_schedule of their scheduler/zbv.py (also
// v_schedule.py): two chunks per rank in a V, a fixed warm-up, then per round every rank
// puts one B (chunk-1 backward first on ranks whose input gradient has arrived) and one F,
// filling waits with pending W when the wait is at least T_W or exceeds the bubble budget,
// and W before F or B when memory requires; the whole pass repeats with each rank's bubble
// as the budget while that lowers the largest bubble; the best of the four fill_f/fill_b
// variants is kept. It plans with one scalar T_F, T_B, T_W (the authors take the median over
// stages of the per-stage average) and zero communication cost, as the original runs it
// inside a cluster. Memory cap: 2p chunk units (1F1B's peak, p microbatches) unless
// Params::memory_cap says otherwise (kWShare below for how W's memory is counted).
// At zero delay, p = 4, m = 8, T_F = T_B = T_W: ZB-H1's bubble is 3/27 = 11.1% (the
// paper's (p-1)(T_F+T_B-T_W)); ZB-V has no bubble inside any rank's span (the authors'
// measure), makespan 25.5 T_F for 24 T_F of work per rank, peak p microbatches.
#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <stdexcept>
#include <string>

#include "workloads/schedule/generators.h"

namespace xdc::sched {

Schedule gen_zbh1(const Params& p) {
  check_sizes(p);
  const int P = p.ranks, m = p.microbatches;
  if (p.memory_cap > 0 && p.memory_cap + 1e-9 < P)
    throw std::invalid_argument("zbh1: memory_cap (" + std::to_string(p.memory_cap) +
                                ") below its fixed peak of ranks (" + std::to_string(P) +
                                ") microbatches");
  std::vector<std::vector<Action>> order(P);
  for (int i = 0; i < P; ++i)
    for (int x = 0; x < m + P - 1; ++x) {
      const int b = x - (P - 1 - i), w = x - (P - 1);
      if (x < m) order[i].push_back({Kind::F, i, x});
      if (b >= 0 && b < m) order[i].push_back({Kind::B, i, b});
      if (w >= 0 && w < m) order[i].push_back({Kind::W, i, w});
    }
  return lower("zbh1", P, m, plain_placement(P), order, p.optimizer);
}

namespace {
// Share of an F's activation that its W still holds. The authors' code frees most of it
// at B (W keeps 32h of 34h + 5as per token); our IR (schedule.h) and validator count the
// whole unit until W, and so does this port. At T_F = T_B = T_W both give the same orders
// for p = 4, m = 6, 8 and p = 8, m = 16, 32.
constexpr double kWShare = 1.0;
// try_v_schedule of zbv.py. Indices follow the original: cat 0/1/2 = F/B/W, and "chunk" 0
// flows from rank 0 to rank p-1, chunk 1 back (for B, chunk 0 is model chunk 1's backward).
class VSchedule {
 public:
  VSchedule(int stages, int micro, double f, double b, double w, double max_mem, double b_mem,
            double w_mem)
      : n_(stages), m_(micro), cost_{f, b, w}, mem_{1, b_mem, w_mem}, max_mem_(max_mem) {}

  struct Result {
    std::vector<std::vector<std::array<int, 3>>> order;  // per rank (cat, chunk, micro)
    double max_bubble = 0;
  };

  Result run(bool fill_f, bool fill_b, std::vector<double> approved) {
    Result res;
    for (int pass = 0; pass < 64; ++pass) {
      Result r = once(fill_f, fill_b, approved);
      const double max_approved =
          approved.empty() ? -1 : *std::max_element(approved.begin(), approved.end());
      const bool first = res.order.empty();
      if (!first && r.max_bubble >= res.max_bubble) return res;
      res = std::move(r);
      if (!(max_approved < 0 || res.max_bubble < max_approved)) return res;
      approved = bubble_;
    }
    return res;
  }

 private:
  int id(int cat, int chunk, int stage, int micro) const {
    return ((cat * 2 + chunk) * n_ + stage) * m_ + micro;
  }

  Result once(bool fill_f, bool fill_b, const std::vector<double>& approved_in) {
    const int n = n_;
    std::vector<double> approved = approved_in.empty() ? std::vector<double>(n, -1) : approved_in;
    const double max_approved = *std::max_element(approved.begin(), approved.end());
    std::vector<std::array<int, 6>> count(n, std::array<int, 6>{});
    end_.assign(6 * n * m_, -1);
    std::vector<double> cur(n, 0), mem(n, 0);
    bubble_.assign(n, 0);
    std::vector<std::deque<int>> pending_w(n);  // chunk of each pending W, FIFO
    Result res;
    res.order.assign(n, {});

    auto max_stage_bubble = [&](int stage) {
      double mb = *std::max_element(bubble_.begin(), bubble_.end());
      if (stage >= 0) mb = std::max(mb, max_approved - approved[stage]);
      return mb;
    };
    auto put = [&](int cat, int chunk, int stage) {
      const double no_bubble = cur[stage] + cost_[cat];
      double t = no_bubble;
      const int cnt = count[stage][cat * 2 + chunk];
      if (cnt >= m_ || mem[stage] + mem_[cat] > max_mem_ + 1e-9)
        throw std::logic_error("zbv: heuristic put out of range");
      if (cat < 2) {
        if (chunk == 1 && stage < n - 1)
          t = std::max(t, end_[id(cat, chunk, stage + 1, cnt)] + cost_[cat]);
        if (chunk == 0 && stage > 0)
          t = std::max(t, end_[id(cat, chunk, stage - 1, cnt)] + cost_[cat]);
      }
      if (count[stage][0] > 0) bubble_[stage] += t - no_bubble;
      end_[id(cat, chunk, stage, cnt)] = t;
      cur[stage] = t;
      mem[stage] += mem_[cat];
      res.order[stage].push_back({cat, chunk, cnt});
      if (cat == 1) pending_w[stage].push_back(chunk);
      count[stage][cat * 2 + chunk]++;
    };
    auto put_w = [&](int stage) {
      const int chunk = pending_w[stage].front();
      pending_w[stage].pop_front();
      put(2, chunk, stage);
    };
    auto done = [&](int cat, int chunk, int stage, int micro) {
      return micro < m_ && end_[id(cat, chunk, stage, micro)] >= 0;
    };

    // Warm-up: chunk-0 forwards down the pipe, then chunk-1 forwards back up, each rank
    // adding chunk-0 forwards while they fit before its chunk-1 input arrives.
    for (int i = 0; i < n; ++i) put(0, 0, i);
    for (int i = n - 1; i >= 0; --i) {
      if (i == n - 1) {
        put(0, 1, i);
        continue;
      }
      const double arrive = end_[id(0, 1, i + 1, 0)];
      while (mem[i] + mem_[0] * (2 + i * 2) <= max_mem_ && cur[i] + cost_[0] <= arrive &&
             count[i][0] < m_)
        for (int j = 0; j <= i; ++j) put(0, 0, j);
      put(0, 1, i);
    }
    int iter_chunk = 0;
    for (int i = 1; i < n; ++i)
      while (count[i][0] + count[i][1] < count[i - 1][0] + count[i - 1][1] ||
             (count[i][1] <= count[i - 1][1] && count[i - 1][1] < m_)) {
        for (int j = n - 1; j >= i; --j)
          if (count[j][iter_chunk] < m_) put(0, iter_chunk, j);
        iter_chunk = 1 - iter_chunk;
      }

    auto fill_before = [&](int i, int fa, bool allow) {
      // Fill the wait for input `fa` with pending W: whole W while they fit, one more when
      // the wait exceeds this rank's bubble budget (and `allow`).
      if (fa < 0) return;
      while (!pending_w[i].empty() && end_[fa] >= cur[i] + cost_[2]) put_w(i);
      if (!pending_w[i].empty() && end_[fa] - cur[i] > max_stage_bubble(i) - bubble_[i] && allow)
        put_w(i);
    };
    for (int round = 0; round < 2 * m_; ++round) {
      for (int i = 0; i < n; ++i)
        while (mem[i] + mem_[1] > max_mem_ + 1e-9) put_w(i);
      std::vector<int> b0, b1;
      for (int i = 0; i < n; ++i) {
        if (count[i][3] >= count[i][2])
          b0.push_back(i);
        else if (i == n - 1)
          b1.push_back(i);
        else if (done(1, 1, i + 1, count[i][3]) || count[i][2] >= m_)
          b1.push_back(i);
        else
          b0.push_back(i);
      }
      std::vector<std::pair<int, int>> b_ranks;
      for (auto it = b1.rbegin(); it != b1.rend(); ++it) b_ranks.push_back({*it, 1});
      for (int i : b0) b_ranks.push_back({i, 0});
      for (auto [i, chunk] : b_ranks) {
        int fa = -1;
        if (chunk == 1 && i < n - 1) fa = id(1, 1, i + 1, count[i][3]);
        if (chunk == 0 && i > 0) fa = id(1, 0, i - 1, count[i][2]);
        fill_before(i, fa, chunk == 1 || fill_b);
        put(1, chunk, i);
      }
      for (int i = 0; i < n; ++i) {
        if (count[i][1] >= m_) continue;
        int item = -1;
        if (count[i][1] >= count[i][0])
          item = 0;
        else if (i == n - 1)
          item = 1;
        else if (done(0, 1, i + 1, count[i][1]))
          item = 1;
        else if (count[i][0] < m_ && (i == 0 || done(0, 0, i - 1, count[i][0])))
          item = 0;
        if (item < 0) continue;
        while (mem[i] + mem_[0] > max_mem_ + 1e-9) put_w(i);
        int fa = -1;
        if (item == 0 && i > 0) fa = id(0, 0, i - 1, count[i][0]);
        if (item == 1 && i < n - 1) fa = id(0, 1, i + 1, count[i][1]);
        fill_before(i, fa, fill_f);
        put(0, item, i);
      }
    }
    for (int i = 0; i < n; ++i)
      while (!pending_w[i].empty()) put_w(i);
    res.max_bubble = max_stage_bubble(-1);
    return res;
  }

  int n_, m_;
  std::array<double, 3> cost_, mem_;
  double max_mem_;
  std::vector<double> end_, bubble_;
};
}  // namespace

Schedule gen_zbv(const Params& p) {
  check_sizes(p);
  const int P = p.ranks, m = p.microbatches;
  const StageCosts c = stage_costs(p, 2 * P);
  // The authors' costs: each rank's average over its two chunks, then the median rank.
  auto mid = [&](const std::vector<double>& x) {
    std::vector<double> avg(P);
    for (int r = 0; r < P; ++r) avg[r] = (x[r] + x[2 * P - 1 - r]) / 2;
    std::sort(avg.begin(), avg.end());
    return avg[P / 2];
  };
  const double cap_units = p.memory_cap > 0 ? std::floor(p.memory_cap * 2 + 1e-9) : 2.0 * P;
  VSchedule v(P, m, mid(c.f), mid(c.b), mid(c.w), cap_units, kWShare - 1, -kWShare);
  VSchedule::Result best;
  for (bool fill_b : {true, false})
    for (bool fill_f : {true, false}) {
      auto r = v.run(fill_f, fill_b, {});
      if (best.order.empty() || r.max_bubble < best.max_bubble) best = std::move(r);
    }
  std::vector<std::vector<Action>> order(P);
  const Kind kinds[3] = {Kind::F, Kind::B, Kind::W};
  for (int r = 0; r < P; ++r)
    for (auto [cat, chunk, micro] : best.order[r]) {
      // F: chunk 0 = stage r, chunk 1 = stage 2P-1-r; B and W: chunk 0 = model chunk 1.
      const bool model_chunk1 = cat == 0 ? chunk == 1 : chunk == 0;
      order[r].push_back({kinds[cat], model_chunk1 ? 2 * P - 1 - r : r, micro});
    }
  return lower("zbv", P, m, v_placement(P), order, p.optimizer);
}

}  // namespace xdc::sched
