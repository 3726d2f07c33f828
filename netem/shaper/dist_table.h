#pragma once
// netem's delay distribution tables: inverse-CDF samples (s16) scaled by kDistScale,
// as iproute2 ships them (normal.dist, pareto.dist, paretonormal.dist). The kernel
// backend hands them to netem; the userspace delay line samples them the way netem
// does (tabledist), so both backends draw jitter from the same distribution.
#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "netem/shaper/link_params.h"

namespace xdc::netem {

constexpr int kDistScale = 8192;  // NETEM_DIST_SCALE

// Directories searched for <name>.dist, in order: $XDC_TC_DIST_DIR, then where
// iproute2 installs them on Debian (/usr/lib/<multiarch>/tc) and elsewhere.
std::vector<std::string> dist_table_dirs();

// The table for `d`; empty for uniform (netem draws uniform jitter without a table).
// `normal` falls back to a table computed like iproute2's maketable when no file is
// found; the others throw std::runtime_error naming the paths tried.
std::vector<int16_t> load_dist_table(JitterDist d);

// Parses the .dist text format (whitespace-separated integers, '#' comments).
// Throws std::runtime_error("<what>: ...") on a bad token or an empty table.
std::vector<int16_t> parse_dist_table(std::istream& in, const std::string& what);

// The expected largest of `n` draws of delay + jitter above the delay, in units of the
// jitter (netem's tabledist: a table value / kDistScale, or uniform in [-1, 1) without a
// table): sum over the sorted table of v_i ((i/N)^n - ((i-1)/N)^n). 0 for n < 2.
double expected_largest_draw(const std::vector<int16_t>& table, int64_t n);
// The expected largest of z_j - j x lambda over n draws z_0..z_{n-1} as above (units of the
// jitter): packets that reach a delay line one after another and leave it through a slower
// rate stage, lambda being how much longer each takes at that rate than it took to arrive
// (the later a packet, the less of the serialisation after it its delay can push back).
// lambda 0: expected_largest_draw. Numerical, on a grid of 1/64 of the jitter.
double expected_largest_spaced(const std::vector<int16_t>& table, int64_t n, double lambda);
// The distribution of that largest (n >= 1; for n = 1 one draw), on the same grid: its
// value at each of the probabilities (i + 0.5) / q, i = 0..q-1, in units of the jitter.
// One of them picked at random is a draw of the largest (a prediction's band replica
// draws each message's jitter so); their mean is the expectation within the grid's step.
std::vector<double> largest_spaced_quantiles(const std::vector<int16_t>& table, int64_t n,
                                             double lambda, int q);

// iproute2's normal table (4096 entries), computed.
std::vector<int16_t> computed_normal_table();

}  // namespace xdc::netem
