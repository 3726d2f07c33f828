// netem's per-packet decisions in userspace: loss models, jitter distribution, FIFO.
#include "netem/delayline/impairment.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "netem/shaper/dist_table.h"

namespace xdc::delayline {
namespace {

using netem::LinkParams;
using netem::LossModel;

constexpr int64_t kMs = 1'000'000;

// Fraction of `n` packets (1 ms apart) that the model drops.
double drop_rate(const LinkParams& p, int n, uint64_t seed = 7) {
  Impairment imp(p, {}, seed);
  int drops = 0;
  for (int i = 0; i < n; ++i)
    drops += imp.on_packet(int64_t{i} * kMs).verdict == Impairment::Verdict::kDrop;
  return double(drops) / n;
}

TEST(Impairment, ProbabilityScale) {
  EXPECT_EQ(probability_u32(0), 0u);
  EXPECT_EQ(probability_u32(100), UINT32_MAX);
  EXPECT_EQ(probability_u32(50), 2147483648u);
  EXPECT_EQ(probability_u32(150), UINT32_MAX);
}

TEST(Impairment, RandomLossWithinThreeSigma) {
  for (double pct : {0.1, 1.0, 5.0, 30.0}) {
    LinkParams p;
    p.loss.kind = LossModel::Kind::kRandom;
    p.loss.p_pct = pct;
    const int n = 200'000;
    double pr = pct / 100, sigma = std::sqrt(pr * (1 - pr) / n);
    EXPECT_NEAR(drop_rate(p, n), pr, 3 * sigma) << pct << "%";
  }
}

TEST(Impairment, NoLossAndFullLoss) {
  LinkParams p;
  p.loss.kind = LossModel::Kind::kRandom;
  EXPECT_EQ(drop_rate(p, 10'000), 0.0);
  p.loss.p_pct = 100;
  EXPECT_EQ(drop_rate(p, 10'000), 1.0);
}

TEST(Impairment, CorrelatedLossKeepsItsMeanAndComesInBursts) {
  // Mean p, lag-1 correlation c: P(loss | previous lost) = c + (1 - c) p.
  LinkParams p;
  p.loss.kind = LossModel::Kind::kRandom;
  p.loss.p_pct = 10;
  p.loss.correlation_pct = 75;
  Impairment imp(p, {}, 3);
  int drops = 0, pairs = 0;
  bool prev = false;
  const int n = 1'000'000;
  for (int i = 0; i < n; ++i) {
    bool d = imp.on_packet(i * kMs).verdict == Impairment::Verdict::kDrop;
    drops += d;
    pairs += d && prev;
    prev = d;
  }
  double p_loss = double(drops) / n, p_after_loss = double(pairs) / std::max(drops, 1);
  EXPECT_NEAR(p_loss, 0.10, 0.01);
  EXPECT_NEAR(p_after_loss, 0.75 + 0.25 * 0.10, 0.01);
}

TEST(Impairment, GilbertElliottStationaryLoss) {
  // p 1%, r 10%: the bad state holds 1/11 of the time; it loses 1 - h = 70%, the good
  // state 1 - k = 0.5%.
  LinkParams p;
  p.loss.kind = LossModel::Kind::kGilbertElliott;
  p.loss.p_pct = 1;
  p.loss.r_pct = 10;
  p.loss.h_pct = 30;
  p.loss.k_pct = 99.5;
  double expected = netem::stationary_loss(p.loss);
  EXPECT_NEAR(expected, 1.0 / 11 * 0.7 + 10.0 / 11 * 0.005, 1e-12);
  EXPECT_NEAR(drop_rate(p, 1'000'000), expected, 0.004);  // bursty: a wide margin
}

TEST(Impairment, GilbertElliottDefaultsLoseEverythingInBadOnly) {
  // h 0 / k 100 (LinkParams defaults): Gilbert's simple model, loss iff bad.
  LossModel m;
  m.kind = LossModel::Kind::kGilbertElliott;
  m.p_pct = 5;
  m.r_pct = 50;
  GilbertElliott ge(m);
  std::mt19937 rng(11);
  int lost = 0, lost_in_good_after_good = 0;
  bool was_bad = false;
  for (int i = 0; i < 100'000; ++i) {
    bool l = ge.lose(rng);
    lost += l;
    if (l && !was_bad) ++lost_in_good_after_good;
    was_bad = ge.bad();
  }
  EXPECT_EQ(lost_in_good_after_good, 0);
  EXPECT_NEAR(lost / 1e5, netem::stationary_loss(m), 0.01);
}

// The simulator's TCP model meets a Gilbert-Elliott WAN as loss episodes
// (netem::loss_episodes_per_packet): each stay in the bad state that loses a packet, and
// each good-state loss. Counted here on the delay line's own chain, the ground truth.
TEST(Impairment, GilbertElliottLossEpisodesAreTheChainsLossyBadStays) {
  struct Case {
    double p, r, h, k;
  };
  for (const Case c : {Case{1, 10, 0, 100}, Case{0.5, 25, 50, 100}, Case{1, 30, 30, 99.9},
                       Case{0.2, 50, 0, 100}}) {
    LossModel m;
    m.kind = LossModel::Kind::kGilbertElliott;
    m.p_pct = c.p, m.r_pct = c.r, m.h_pct = c.h, m.k_pct = c.k;
    GilbertElliott ge(m);
    std::mt19937 rng(7);
    const int n = 2'000'000;
    long episodes = 0;
    bool counted = false;  // this bad stay already lost a packet
    for (int i = 0; i < n; ++i) {
      const bool bad = ge.bad();  // the state the packet is drawn in, before its transition
      const bool lost = ge.lose(rng);
      if (!bad) counted = false;
      if (lost && (!bad || !counted)) ++episodes;
      if (lost && bad) counted = true;
    }
    const double expected = netem::loss_episodes_per_packet(m);
    const double sigma = std::sqrt(expected / n);
    EXPECT_NEAR(static_cast<double>(episodes) / n, expected, 5 * sigma + 1e-5)
        << "p " << c.p << " r " << c.r << " h " << c.h << " k " << c.k;
    EXPECT_LT(expected, netem::stationary_loss(m));  // bursts count once
  }
  // Random loss: every loss is an episode; with correlation, its Gilbert chain's.
  LossModel random;
  random.kind = LossModel::Kind::kRandom;
  random.p_pct = 0.5;
  EXPECT_DOUBLE_EQ(netem::loss_episodes_per_packet(random), 0.005);
  random.correlation_pct = 50;
  EXPECT_NEAR(netem::stationary_loss(random), 0.005, 1e-12);
  EXPECT_LT(netem::loss_episodes_per_packet(random), 0.005);
}

TEST(Impairment, TabledistUniformAndTable) {
  EXPECT_EQ(tabledist(100, 0, 12345, {}), 100);
  for (uint32_t r : {0u, 1u, 199u, 4000000000u}) {
    int64_t v = tabledist(1000, 100, r, {});
    EXPECT_GE(v, 900);
    EXPECT_LT(v, 1100);
  }
  std::vector<int16_t> t = {-8192, 0, 8192};              // -1, 0, +1 sigma
  EXPECT_EQ(tabledist(1000, 100, 0, t), 900);             // first third of the u32 range
  EXPECT_EQ(tabledist(1000, 100, 0x60000000u, t), 1000);  // second third
  EXPECT_EQ(tabledist(1000, 100, 0xF0000000u, t), 1100);  // last third
}

TEST(Impairment, NormalJitterHasTheConfiguredSpread) {
  // Packets far apart (100 ms): order preservation never binds, so the hold times
  // are plain draws.
  LinkParams p;
  p.delay_us = 20'000;
  p.jitter_us = 5'000;
  p.jitter_dist = netem::JitterDist::kNormal;
  Impairment imp(p, netem::load_dist_table(p.jitter_dist), 5);
  std::vector<double> hold_ms;
  for (int i = 0; i < 50'000; ++i) {
    int64_t now = int64_t{i} * 100 * kMs;
    hold_ms.push_back((imp.on_packet(now).send_ns - now) / 1e6);
  }
  double m = std::accumulate(hold_ms.begin(), hold_ms.end(), 0.0) / hold_ms.size(), s = 0;
  for (double h : hold_ms) s += (h - m) * (h - m);
  s = std::sqrt(s / hold_ms.size());
  EXPECT_NEAR(m, 20.0, 0.1);
  EXPECT_NEAR(s, 5.0, 0.1);
}

// The simulator's expected largest of n jitter draws (netem::expected_largest_draw, what a
// bunch of n packets waits behind) against the delay line's own draws (tabledist).
TEST(Impairment, ExpectedLargestDrawIsWhatTheDelayLinesDrawsGive) {
  for (auto d : {netem::JitterDist::kNormal, netem::JitterDist::kUniform}) {
    const auto table = netem::load_dist_table(d);
    std::mt19937 rng(11);
    for (int n : {2, 16, 256}) {
      double sum = 0;
      const int trials = 4000;
      for (int t = 0; t < trials; ++t) {
        int64_t top = std::numeric_limits<int64_t>::min();
        for (int i = 0; i < n; ++i) top = std::max(top, tabledist(0, 1'000'000, rng(), table));
        sum += static_cast<double>(top) / 1e6;
      }
      EXPECT_NEAR(sum / trials, netem::expected_largest_draw(table, n), 0.03)
          << netem::to_string(d) << " n " << n;
    }
  }
  EXPECT_NEAR(netem::expected_largest_draw({}, 3), 0.5, 1e-12);  // uniform: (n-1)/(n+1)
  EXPECT_EQ(netem::expected_largest_draw(netem::load_dist_table(netem::JitterDist::kNormal), 1), 0);
}

// The distribution of that largest (netem::largest_spaced_quantiles: a prediction's band
// replica draws each message's jitter lag from it) against the delay line's own draws:
// Y = max_j (z_j - j lambda) over n tabledist draws, its 11th, 52nd and 89th percentiles
// and mean, for one packet, a bunch, and packets spaced by a slower rate stage.
TEST(Impairment, LargestSpacedQuantilesAreTheDelayLinesDrawsDistribution) {
  constexpr int q = 32;
  for (auto d : {netem::JitterDist::kNormal, netem::JitterDist::kUniform}) {
    const auto table = netem::load_dist_table(d);
    std::mt19937 rng(17);
    for (int n : {1, 16, 256})
      for (double lambda : {0.0, 0.05}) {
        const auto quantiles = netem::largest_spaced_quantiles(table, n, lambda, q);
        ASSERT_EQ(quantiles.size(), size_t{q});
        EXPECT_TRUE(std::is_sorted(quantiles.begin(), quantiles.end()));
        std::vector<double> ys;
        for (int t = 0; t < 4000; ++t) {
          double y = -1e9;
          for (int j = 0; j < n; ++j)
            y = std::max(y, tabledist(0, 1'000'000, rng(), table) / 1e6 - j * lambda);
          ys.push_back(y);
        }
        std::sort(ys.begin(), ys.end());
        const std::string what = std::string(netem::to_string(d)) + " n " + std::to_string(n) +
                                 " lambda " + std::to_string(lambda);
        for (int i : {3, 16, 28}) {
          const double p = (i + 0.5) / q;
          EXPECT_NEAR(quantiles[i], ys[static_cast<size_t>(p * ys.size())], 0.06)
              << what << " at " << p;
        }
        const double mean = std::accumulate(quantiles.begin(), quantiles.end(), 0.0) / q;
        EXPECT_NEAR(mean, std::accumulate(ys.begin(), ys.end(), 0.0) / ys.size(), 0.04) << what;
        if (n > 1) {
          EXPECT_NEAR(mean, netem::expected_largest_spaced(table, n, lambda), 0.03) << what;
        }
      }
  }
}

TEST(Impairment, CorrelatedJitterKeepsItsSpread) {
  LinkParams p;
  p.delay_us = 20'000;
  p.jitter_us = 5'000;
  p.jitter_correlation_pct = 80;
  p.jitter_dist = netem::JitterDist::kNormal;
  Impairment imp(p, netem::load_dist_table(p.jitter_dist), 17);
  std::vector<double> h;
  for (int i = 0; i < 100'000; ++i) {
    int64_t now = int64_t{i} * 100 * kMs;
    h.push_back((imp.on_packet(now).send_ns - now) / 1e6);
  }
  double m = std::accumulate(h.begin(), h.end(), 0.0) / h.size(), var = 0, cov = 0;
  for (size_t i = 0; i < h.size(); ++i) {
    var += (h[i] - m) * (h[i] - m);
    if (i) cov += (h[i] - m) * (h[i - 1] - m);
  }
  EXPECT_NEAR(m, 20.0, 0.2);
  EXPECT_NEAR(std::sqrt(var / h.size()), 5.0, 0.15);
  EXPECT_NEAR(cov / var, 0.8, 0.03);
}

TEST(Impairment, SendTimesNeverDecrease) {
  // Back-to-back packets with a large jitter: FIFO order is kept.
  LinkParams p;
  p.delay_us = 10'000;
  p.jitter_us = 8'000;
  p.jitter_dist = netem::JitterDist::kNormal;
  Impairment imp(p, netem::load_dist_table(p.jitter_dist), 9);
  int64_t last = 0;
  for (int i = 0; i < 100'000; ++i) {
    auto d = imp.on_packet(int64_t{i} * 10'000);  // 10 us apart
    ASSERT_EQ(d.verdict, Impairment::Verdict::kHold);
    ASSERT_GE(d.send_ns, last);
    ASSERT_GE(d.send_ns, int64_t{i} * 10'000);  // never before arrival
    last = d.send_ns;
  }
}

TEST(Impairment, DuplicateAndCorruptAsNetem) {
  LinkParams p;
  p.delay_us = 1000;
  p.duplicate_pct = 10;
  p.corrupt_pct = 20;
  p.loss.kind = LossModel::Kind::kRandom;
  p.loss.p_pct = 50;
  Impairment imp(p, {}, 21);
  const int n = 200'000;
  int dup = 0, corrupt = 0, drop = 0;
  for (int i = 0; i < n; ++i) {
    auto d = imp.on_packet(int64_t{i} * kMs);
    drop += d.verdict == Impairment::Verdict::kDrop;
    dup += d.duplicate;
    corrupt += d.corrupt;
    if (d.verdict == Impairment::Verdict::kDrop) {
      ASSERT_FALSE(d.duplicate || d.corrupt);
    }
  }
  // Duplicated and lost: one copy goes, so drops are (1 - 0.1) x 0.5 and duplicates
  // 0.1 x 0.5 (duplicated, not lost).
  auto near = [n](int count, double p) {
    EXPECT_NEAR(double(count) / n, p, 4 * std::sqrt(p * (1 - p) / n)) << p;
  };
  near(drop, 0.45);
  near(dup, 0.05);
  near(corrupt, 0.55 * 0.2);
  // A copy is never copied again.
  for (int i = 0; i < 10'000; ++i) ASSERT_FALSE(imp.on_packet(n * kMs + i, true).duplicate);
}

TEST(Impairment, ReorderSendsAFractionAtOnce) {
  LinkParams p;
  p.delay_us = 10'000;
  p.reorder_pct = 25;
  Impairment imp(p, {}, 13);
  int now_count = 0;
  const int n = 100'000;
  for (int i = 0; i < n; ++i)
    now_count += imp.on_packet(int64_t{i} * kMs).verdict == Impairment::Verdict::kSendNow;
  EXPECT_NEAR(double(now_count) / n, 0.25, 3 * std::sqrt(0.25 * 0.75 / n));
  // Without a delay there is nothing to overtake (netem refuses reorder without delay).
  p.delay_us = 0;
  Impairment none(p, {}, 13);
  for (int i = 0; i < 1000; ++i)
    ASSERT_NE(none.on_packet(i * kMs).verdict, Impairment::Verdict::kSendNow);
}

}  // namespace
}  // namespace xdc::delayline
