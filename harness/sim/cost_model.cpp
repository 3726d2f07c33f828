#include "harness/sim/cost_model.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "common/input_error.h"
#include "common/mix64.h"
#include "common/utf8.h"

namespace xdc::sim {

using sched::Kind;

int64_t CostModel::duration_ns(const sched::Action& a) const {
  // The sleeps' lateness (sleep_slack_ns): an F or B sleeps once per slice, a W and an OPT once.
  const int64_t late = sleep_slack_ns;
  auto slices = [&](int64_t ns) {
    const int n = tp_allreduces.empty() ? 1 : std::max(tp_allreduces[a.stage], 1);
    return ns > 0 ? late * n : 0;
  };
  auto once = [&](int64_t ns) { return ns > 0 ? late : 0; };
  switch (a.kind) {
    case Kind::F:
      return f_ns[a.stage] + slices(f_ns[a.stage]);
    case Kind::B:
      return b_ns[a.stage] + slices(b_ns[a.stage]);
    case Kind::W:
      return w_ns[a.stage] + once(w_ns[a.stage]);
    case Kind::BW:
      return b_ns[a.stage] + w_ns[a.stage] + slices(b_ns[a.stage]) + once(w_ns[a.stage]);
    case Kind::ALLREDUCE:
      return allreduce_stage_ns.empty() ? allreduce_ns : allreduce_stage_ns[a.stage];
    case Kind::OPT:
      return opt_ns + once(opt_ns);
    default:
      return 0;
  }
}

double CostModel::end_ns(const sched::Action& a, double start, double duration,
                         const std::function<double(double at)>& chance) const {
  const bool sliced = a.kind == Kind::F || a.kind == Kind::B || a.kind == Kind::BW;
  if (!sliced || a.paired || tp_port_wait_ns.empty() || tp_allreduces.empty())
    return start + duration;
  const int n = tp_allreduces[a.stage];
  const auto wait = static_cast<double>(tp_port_wait_ns[a.stage]);
  const auto planned = static_cast<double>(duration_ns(a));
  if (n <= 0 || wait <= 0 || planned <= 0) return start + duration;
  // The part before a BW's weight gradients, as drawn (duration / planned: its noise).
  const int64_t w =
      a.kind == Kind::BW ? w_ns[a.stage] + (w_ns[a.stage] > 0 ? sleep_slack_ns : 0) : 0;
  const double head = (planned - static_cast<double>(w)) * duration / planned;
  const auto ar = static_cast<double>(tp_allreduce_ns[a.stage]);
  const double slice = std::max(0.0, (head - n * ar) / n);
  const int hosts = tp_hosts.empty() ? 1 : std::max(tp_hosts[a.stage], 1);
  double waited = 0;
  for (int k = 0; k < n; ++k) {
    const double p = std::clamp(chance(start + waited + (k + 1) * slice + k * ar), 0.0, 1.0);
    waited += std::round(wait * (1 - std::pow(1 - p, hosts)));  // integer ns, as the rest
  }
  return start + duration + waited;
}

bool CostModel::tp_root_backlog(const sched::Action& a) const {
  if (tp_window_bytes.empty() || a.paired || (a.kind != Kind::F && a.kind != Kind::B)) return false;
  return !tp_allreduces.empty() && tp_allreduces[a.stage] > 0 && tp_window_bytes[a.stage] > 0;
}

bool CostModel::noisy() const {
  auto any = [](const std::vector<Noise>& v) {
    return std::any_of(v.begin(), v.end(), [](const auto& r) { return !r.empty(); });
  };
  return any(f_ratio) || any(b_ratio) || any(w_ratio) || any(bw_ratio);
}

double CostModel::noise_factor(const sched::Action& a, uint64_t key, uint64_t iteration_key) const {
  const std::vector<Noise>* per_stage = nullptr;
  switch (a.kind) {
    case Kind::F:
      per_stage = &f_ratio;
      break;
    case Kind::B:
      per_stage = &b_ratio;
      break;
    case Kind::W:
      per_stage = &w_ratio;
      break;
    case Kind::BW:
      per_stage = &bw_ratio;
      break;
    default:
      return 1;
  }
  if (a.stage < 0 || static_cast<size_t>(a.stage) >= per_stage->size()) return 1;
  const Noise& n = (*per_stage)[a.stage];
  if (n.ratio.empty()) return 1;
  size_t lo = 0, hi = n.ratio.size();
  if (n.iteration_begin.size() > 1) {
    const size_t j = mix64(iteration_key + kGoldenGamma) % n.iteration_begin.size();
    lo = n.iteration_begin[j];
    hi = j + 1 < n.iteration_begin.size() ? n.iteration_begin[j + 1] : n.ratio.size();
  }
  // splitmix64's finaliser over the key and the action's identity.
  uint64_t z = key ^ (static_cast<uint64_t>(a.kind) << 56) ^
               (static_cast<uint64_t>(a.stage) << 40) ^ static_cast<uint64_t>(a.microbatch + 1);
  for (int round = 0; round < 2; ++round) z = mix64(z + kGoldenGamma);
  return n.ratio[lo + z % (hi - lo)];
}

std::vector<sched::Op> CostModel::coexec_ops(const sched::Action& a) const {
  const int st = a.stage;
  const int launched = tp_allreduces.empty() ? 0 : tp_allreduces[st];
  const int folded = node_tp_allreduces.empty() ? 0 : node_tp_allreduces[st];
  const int n = std::max(launched, folded);
  const double comm = static_cast<double>(tp_time_ns(st));
  const double compute = static_cast<double>(a.kind == Kind::F ? f_ns[st] : b_ns[st]) - comm;
  const double tail = a.kind == Kind::BW ? static_cast<double>(w_ns[st]) : 0;
  return sched::sliced_ops(compute, n, comm, tail);
}

sched::CoexecPlan CostModel::pair_plan(const sched::Action& f, const sched::Action& partner) const {
  return sched::plan_coexec(coexec_ops(f), coexec_ops(partner), coexec_interference);
}

int64_t CostModel::pair_ns(const sched::Action& f, const sched::Action& partner) const {
  if (!coexec_overlaps) return duration_ns(f) + duration_ns(partner);
  return std::llround(pair_plan(f, partner).time);
}

int64_t CostModel::message_bytes(const sched::Action& a) const {
  if (a.kind == Kind::SEND_F) return activation_bytes[a.stage];
  if (a.kind == Kind::SEND_B) return a.stage > 0 ? activation_bytes[a.stage - 1] : 0;
  return 0;
}

CostModel constant_costs(int stages, int64_t f_ns, int64_t b_ns, int64_t w_ns,
                         int64_t activation_bytes) {
  CostModel c;
  c.f_ns.assign(stages, f_ns);
  c.b_ns.assign(stages, b_ns);
  c.w_ns.assign(stages, w_ns);
  c.activation_bytes.assign(stages, activation_bytes);
  return c;
}

namespace {

std::string hex_byte(unsigned char b) {
  const char* digits = "0123456789ABCDEF";
  return std::string("0x") + digits[b >> 4] + digits[b & 15];
}

// The whole cell as a number, blanks around it allowed: "43.04x" is not 43.04.
template <class Parse>
auto whole_cell(const std::string& v, Parse parse) {
  size_t used = 0;
  const auto x = parse(v, &used);
  if (v.find_first_not_of(" \t\r", used) != std::string::npos)
    throw std::invalid_argument("trailing text");
  return x;
}

}  // namespace

CostModel profile_costs(const std::string& text, const std::string& file) {
  // Its first comment line labels the costs in summary.json: the file must be text.
  if (const size_t bad = invalid_utf8_at(text); bad != std::string::npos) {
    const size_t line_start = text.rfind('\n', bad == 0 ? 0 : bad - 1);
    const size_t col = line_start == std::string::npos || bad == 0 ? bad + 1 : bad - line_start;
    throw InputError(
        SourcePos{file, 1 + static_cast<int>(std::count(text.begin(), text.begin() + bad, '\n')),
                  static_cast<int>(col)},
        "expected UTF-8 text, got the byte " + hex_byte(static_cast<unsigned char>(text[bad])));
  }
  CostModel c;
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty() || line[0] == '#' || line.rfind("stage", 0) == 0) continue;
    std::istringstream ls(line);
    std::string cell[5];
    int n = 0;
    while (n < 5 && std::getline(ls, cell[n], ',')) ++n;
    try {
      if (n < 4) throw std::invalid_argument("columns");
      const int st =
          whole_cell(cell[0], [](const std::string& v, size_t* u) { return std::stoi(v, u); });
      if (st != c.stages()) throw std::invalid_argument("order");
      // A duration is a time: not negative, and at most a day (so that its nanoseconds fit).
      auto ms = [](const std::string& v) {
        const double x =
            whole_cell(v, [](const std::string& t, size_t* u) { return std::stod(t, u); });
        if (!(x >= 0 && x <= 86'400'000)) throw std::invalid_argument("range");
        return std::llround(x * 1e6);
      };
      c.f_ns.push_back(ms(cell[1]));
      c.b_ns.push_back(ms(cell[2]));
      c.w_ns.push_back(ms(cell[3]));
      const long long bytes =
          n == 5 ? whole_cell(cell[4],
                              [](const std::string& v, size_t* u) { return std::stoll(v, u); })
                 : 0;
      if (bytes < 0) throw std::invalid_argument("range");
      c.activation_bytes.push_back(bytes);
    } catch (const std::exception&) {
      throw InputError(SourcePos{file, line_no, 1},
                       "expected \"stage,f_ms,b_ms,w_ms[,activation_bytes]\" with stages "
                       "0, 1, ... in order, times of 0 to 86400000 ms and no negative size, "
                       "got \"" +
                           line + "\"");
    }
  }
  if (c.stages() == 0)  // at its last line: where a row is missing
    throw InputError(SourcePos{file, std::max(line_no, 1), 1}, "profile has no stage rows");
  return c;
}

const std::vector<ModelShape>& model_presets() {
  static const std::vector<ModelShape> m = {
      {"llama2-7b", 32, 4096, 11008, 32, 32, 32000},
      {"llama2-13b", 40, 5120, 13824, 40, 40, 32000},
      {"llama2-70b", 80, 8192, 28672, 64, 8, 32000},
      // GeoPipe trains a "72B" Llama-2-style model without giving its shape; this is the
      // Llama architecture at 72B as Qwen2-72B has it (72.7B parameters).
      {"llama-72b", 80, 8192, 29568, 64, 8, 152064},
  };
  return m;
}

const std::vector<Device>& device_presets() {
  static const std::vector<Device> d = {
      // Node interconnects (assumed, for TP inside a node): all-reduce bus bandwidth as
      // nccl-tests report it on 8-GPU NVLink nodes (A100 NVLink3 ~230 GB/s, H100 NVLink4
      // ~450 GB/s), and for the 910B half of its 7 x 56 GB/s HCCS full mesh; 10 us a step.
      {"a100", 312e12, 230e9, 10e-6},  // A100 SXM dense bf16
      // A40 dense fp16/bf16 tensor; 8 per node over PCIe 4.0 (no NVLink): NCCL bus
      // bandwidth of about 20 GB/s, 20 us per ring step (assumed, DHelix's A40 cluster).
      {"a40", 149.7e12, 20e9, 20e-6},
      {"h100", 989e12, 450e9, 10e-6},  // H100 SXM dense bf16
      {"910b", 313e12, 196e9, 10e-6},  // Ascend 910B fp16 (vendor figure, approx.)
  };
  return d;
}

namespace {
template <typename T>
const T& find_named(const std::vector<T>& v, const std::string& name, const char* what) {
  std::string known;
  for (const auto& x : v) {
    if (x.name == name) return x;
    known += (known.empty() ? "" : ", ") + x.name;
  }
  throw InputError(std::string(what) + ": expected one of " + known + ", got \"" + name + "\"");
}
}  // namespace

const ModelShape& find_model(const std::string& name) {
  return find_named(model_presets(), name, "model");
}
const Device& find_device(const std::string& name) {
  return find_named(device_presets(), name, "device");
}

int64_t node_allreduce_ns(int devices, int64_t bytes, double busbw, double step_s) {
  if (devices <= 1) return 0;
  const double d = devices;
  return std::llround(
      (2 * (d - 1) / d * static_cast<double>(bytes) / busbw + 2 * (d - 1) * step_s) * 1e9);
}

CostModel shape_costs(const ModelShape& m, const Device& d, const ShapeWorkload& w, int stages) {
  const double h = m.hidden, s = w.seq;
  const double kv = static_cast<double>(m.hidden) / m.heads * m.kv_heads;
  const double params = h * (h + 2 * kv) + h * h + 3 * h * m.ffn;  // attn qkv+o, SwiGLU
  const double tokens = s * w.microbatch_size;
  const double f_layer = tokens * (2 * params + 4 * s * h);
  const double b_layer = tokens * (2 * params + 8 * s * h);
  const double w_layer = tokens * 2 * params;
  const double head = tokens * 2 * h * m.vocab;
  const double rate = d.peak_flops * w.efficiency;
  const double t = static_cast<double>(w.tensor_parallel) * w.node_tp;
  const double busbw = w.node_busbw > 0 ? w.node_busbw : d.node_busbw;
  CostModel c;
  for (int st = 0; st < stages; ++st) {
    const int layers = m.layers / stages + (st < m.layers % stages ? 1 : 0);
    // The LM head: whole on each launched TP rank (the model replicates it); split by
    // vocabulary across a node's TP devices (Megatron's vocab-parallel output layer).
    const double extra = st == stages - 1 ? head / w.node_tp : 0;
    c.f_ns.push_back(std::llround((layers * f_layer / t + extra) / rate * 1e9));
    c.b_ns.push_back(std::llround((layers * b_layer / t + extra) / rate * 1e9));
    c.w_ns.push_back(std::llround((layers * w_layer / t + extra) / rate * 1e9));
    c.activation_bytes.push_back(static_cast<int64_t>(tokens * h * w.bytes_per_element));
    if (w.tensor_parallel > 1) {
      c.tp_allreduces.push_back(2 * layers);
      c.tp_allreduce_bytes.push_back(c.activation_bytes.back());
      c.tp_allreduce_ns.push_back(0);
    }
    if (w.node_tp > 1) {
      const int64_t in_f =
          2 * layers *
          node_allreduce_ns(w.node_tp, c.activation_bytes.back(), busbw, d.node_step_s);
      c.node_tp_ns.push_back(in_f);
      c.node_tp_allreduces.push_back(2 * layers);
      c.f_ns.back() += in_f;
      c.b_ns.back() += in_f;
    }
  }
  return c;
}

CostModel replicated(const CostModel& c, int replicas) {
  CostModel out = c;
  auto tile = [replicas](auto& v) {
    const auto one = v;
    for (int q = 1; q < replicas; ++q) v.insert(v.end(), one.begin(), one.end());
  };
  tile(out.f_ns);
  tile(out.b_ns);
  tile(out.w_ns);
  tile(out.activation_bytes);
  tile(out.tp_allreduces);
  tile(out.tp_allreduce_bytes);
  tile(out.tp_allreduce_ns);
  tile(out.tp_port_wait_ns);
  tile(out.tp_first_bytes);
  tile(out.tp_hosts);
  tile(out.tp_window_bytes);
  tile(out.tp_bdp_bytes);
  tile(out.node_tp_ns);
  tile(out.node_tp_allreduces);
  tile(out.allreduce_stage_ns);
  tile(out.grad_bytes);
  tile(out.sync_grad_bytes);
  tile(out.outer_bytes);
  tile(out.f_ratio);
  tile(out.b_ratio);
  tile(out.w_ratio);
  tile(out.bw_ratio);
  return out;
}

}  // namespace xdc::sim
