#pragma once
// Finite-difference gradient checking in double precision (the llm.c testing habit).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace xdc::model::testing {

// Token ids 0..vocab-1 in a fixed pattern that `salt` varies (inputs and targets).
inline std::vector<int32_t> ids(size_t n, int vocab, int salt) {
  std::vector<int32_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = int32_t((i * 7 + salt * 3 + (i * i) % 5) % vocab);
  return v;
}

inline std::vector<double> randn(size_t n, unsigned seed, double scale = 1.0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(0.0, scale);
  std::vector<double> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Central differences of f() with respect to every element of x (restored afterwards).
inline std::vector<double> numeric_grad(double* x, size_t n, const std::function<double()>& f,
                                        double h = 1e-5) {
  std::vector<double> g(n);
  for (size_t i = 0; i < n; ++i) {
    const double keep = x[i];
    x[i] = keep + h;
    const double up = f();
    x[i] = keep - h;
    const double down = f();
    x[i] = keep;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

// Max |a - n| relative to max(|n|_inf, 1e-3); asserts it is below tol and that the
// gradient is not trivially zero.
inline void expect_grad_close(const std::vector<double>& analytic,
                              const std::vector<double>& numeric, const std::string& what,
                              double tol = 1e-6) {
  ASSERT_EQ(analytic.size(), numeric.size()) << what;
  double scale = 0, err = 0;
  for (size_t i = 0; i < numeric.size(); ++i) {
    scale = std::max(scale, std::abs(numeric[i]));
    err = std::max(err, std::abs(analytic[i] - numeric[i]));
  }
  EXPECT_GT(scale, 1e-8) << what << ": gradient is zero, the check would prove nothing";
  EXPECT_LT(err / std::max(scale, 1e-3), tol)
      << what << ": max abs error " << err << " at gradient scale " << scale;
}

}  // namespace xdc::model::testing
