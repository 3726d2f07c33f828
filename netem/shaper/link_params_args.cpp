#include "netem/shaper/link_params_args.h"

#include <cstdlib>
#include <stdexcept>

#include "common/number_text.h"

namespace xdc::netem {

namespace {

// Reads back as the same double (the delay line parses its arguments).
std::string exact(double v) {
  return format_general(v, 17);
}

const char* loss_name(LossModel::Kind k) {
  switch (k) {
    case LossModel::Kind::kRandom:
      return "random";
    case LossModel::Kind::kGilbertElliott:
      return "gemodel";
    case LossModel::Kind::kNone:
      break;
  }
  return "none";
}

uint64_t to_u64(const std::string& arg, const std::string& v) {
  char* end = nullptr;
  unsigned long long x = std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || *end || v[0] == '-')
    throw std::invalid_argument(arg + ": expected an unsigned integer");
  return x;
}

double to_pct(const std::string& arg, const std::string& v) {
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end || !(x >= 0 && x <= 100))
    throw std::invalid_argument(arg + ": expected a percentage in 0..100");
  return x;
}

}  // namespace

std::vector<std::string> to_args(const LinkParams& p) {
  return {
      "--delay-us=" + std::to_string(p.delay_us),
      "--jitter-us=" + std::to_string(p.jitter_us),
      std::string("--jitter-dist=") + to_string(p.jitter_dist),
      "--jitter-corr=" + exact(p.jitter_correlation_pct),
      std::string("--loss-model=") + loss_name(p.loss.kind),
      "--loss-p=" + exact(p.loss.p_pct),
      "--loss-corr=" + exact(p.loss.correlation_pct),
      "--loss-r=" + exact(p.loss.r_pct),
      "--loss-h=" + exact(p.loss.h_pct),
      "--loss-k=" + exact(p.loss.k_pct),
      "--rate-bps=" + std::to_string(p.rate_bps),
      "--queue-pkts=" + std::to_string(p.queue_pkts),
      "--duplicate=" + exact(p.duplicate_pct),
      "--reorder=" + exact(p.reorder_pct),
      "--corrupt=" + exact(p.corrupt_pct),
  };
}

bool apply_arg(const std::string& arg, LinkParams& p) {
  auto eq = arg.find('=');
  if (arg.rfind("--", 0) != 0 || eq == std::string::npos) return false;
  std::string key = arg.substr(2, eq - 2), v = arg.substr(eq + 1);
  if (key == "delay-us") {
    p.delay_us = to_u64(arg, v);
  } else if (key == "jitter-us") {
    p.jitter_us = to_u64(arg, v);
  } else if (key == "jitter-dist") {
    if (v == "uniform")
      p.jitter_dist = JitterDist::kUniform;
    else if (v == "normal")
      p.jitter_dist = JitterDist::kNormal;
    else if (v == "pareto")
      p.jitter_dist = JitterDist::kPareto;
    else if (v == "paretonormal")
      p.jitter_dist = JitterDist::kParetoNormal;
    else
      throw std::invalid_argument(arg + ": expected uniform|normal|pareto|paretonormal");
  } else if (key == "jitter-corr") {
    p.jitter_correlation_pct = to_pct(arg, v);
  } else if (key == "loss-model") {
    if (v == "none")
      p.loss.kind = LossModel::Kind::kNone;
    else if (v == "random")
      p.loss.kind = LossModel::Kind::kRandom;
    else if (v == "gemodel")
      p.loss.kind = LossModel::Kind::kGilbertElliott;
    else
      throw std::invalid_argument(arg + ": expected none|random|gemodel");
  } else if (key == "loss-p") {
    p.loss.p_pct = to_pct(arg, v);
  } else if (key == "loss-corr") {
    p.loss.correlation_pct = to_pct(arg, v);
  } else if (key == "loss-r") {
    p.loss.r_pct = to_pct(arg, v);
  } else if (key == "loss-h") {
    p.loss.h_pct = to_pct(arg, v);
  } else if (key == "loss-k") {
    p.loss.k_pct = to_pct(arg, v);
  } else if (key == "rate-bps") {
    p.rate_bps = to_u64(arg, v);
  } else if (key == "queue-pkts") {
    uint64_t q = to_u64(arg, v);
    if (q > UINT32_MAX) throw std::invalid_argument(arg + ": expected at most 2^32-1 packets");
    p.queue_pkts = static_cast<uint32_t>(q);
  } else if (key == "duplicate") {
    p.duplicate_pct = to_pct(arg, v);
  } else if (key == "reorder") {
    p.reorder_pct = to_pct(arg, v);
  } else if (key == "corrupt") {
    p.corrupt_pct = to_pct(arg, v);
  } else {
    return false;
  }
  return true;
}

}  // namespace xdc::netem
