#include "harness/experiment/experiment.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "common/text_file.h"
#include "harness/common/units.h"
#include "harness/common/yaml_reader.h"
#include "harness/topology/parse.h"
#include "workloads/model/stage_api.h"
#include "workloads/schedule/generators.h"
#include "workloads/trace/trace.h"

namespace xdc::run {

std::string ProgressEvent::source() const {
  return fmt::format("{}:{}:{} (at_iteration {})", change.pos.file, change.pos.line, change.pos.col,
                     at_iteration);
}

std::string Prefill::describe() const {
  std::string tokens = dist == "fixed"
                           ? fmt::format("fixed({:g})", mean_tokens)
                           : fmt::format("{}(mean {:g}, max {})", dist, mean_tokens, max_tokens);
  return fmt::format("rate_rps={:g} tokens={} deadline={:g}s seed={}", rate_rps, tokens,
                     static_cast<double>(deadline_us) / 1e6, seed);
}

const char* DpSync::method_name() const {
  switch (method) {
    case Method::kDiloco:
      return "diloco";
    case Method::kStreaming:
      return "streaming";
    case Method::kSync:
      break;
  }
  return "sync";
}

std::string DpSync::describe() const {
  if (!outer_loop()) return collective == Collective::kGloo ? "sync collective=gloo" : "sync";
  std::string out = fmt::format("{} inner_steps={}", method_name(), inner_steps);
  if (sync_steps > 0) out += fmt::format(" sync_steps={}", sync_steps);
  if (method == Method::kStreaming)
    out +=
        fmt::format(" fragments={} overlap_steps={} merge={:g}", fragments, overlap_steps, merge);
  if (eager) out += " eager";
  return out + fmt::format(" outer=nesterov(lr {:g}, momentum {:g}) payload={}", outer_lr,
                           outer_momentum, payload);
}

std::vector<std::string> Workload::rank_hosts() const {
  std::vector<std::string> out;
  for (const auto& h : hosts) out.insert(out.end(), static_cast<size_t>(per_host), h);
  return out;
}

std::vector<std::string> Experiment::rank_hosts() const {
  if (workload) return workload->rank_hosts();
  std::vector<std::string> out;
  for (auto& replica : tp_placement)
    for (auto& group : replica) out.insert(out.end(), group.begin(), group.end());
  return out;
}

std::vector<std::string> Experiment::pipeline_hosts() const {
  std::vector<std::string> out;
  for (auto& replica : placement) out.insert(out.end(), replica.begin(), replica.end());
  return out;
}

std::string Compute::costs_source() const {
  if (mode == Mode::kReal) {
    if (real_device == "cuda") return fmt::format("real on cuda (GPUs {})", fmt::join(gpus, ", "));
    return "real on cpu";
  }
  switch (source) {
    case Source::kShape:
      if (node_tp > 1)
        return fmt::format(
            "modeled: {} on {}, seq {}, efficiency {:g} (assumed), TP {} inside each rank's node "
            "at {:g} GB/s bus bandwidth ({})",
            shape, device, seq, efficiency, node_tp,
            (node_busbw > 0 ? node_busbw : sim::find_device(device).node_busbw) / 1e9,
            node_busbw > 0 ? "given" : "assumed");
      return fmt::format("modeled: {} on {}, seq {}, efficiency {:g} (assumed)", shape, device, seq,
                         efficiency);
    case Source::kConstant:
      return "modeled: constants";
    case Source::kProfile: {
      std::string s = "modeled: profile " + std::filesystem::path(profile_file).filename().string();
      std::istringstream in(profile_text);
      std::string line;
      if (std::getline(in, line) && line.rfind("# ", 0) == 0) s += " (" + line.substr(2) + ")";
      return s;
    }
  }
  return "modeled";
}

std::vector<int> Experiment::rank_gpus() const {
  std::vector<int> out;
  if (compute.mode != Compute::Mode::kReal || compute.real_device != "cuda") return out;
  std::map<std::string, size_t> next;  // host -> ranks placed on it so far
  for (const std::string& h : rank_hosts())
    out.push_back(compute.gpus[next[h]++ % compute.gpus.size()]);
  return out;
}

std::vector<std::string> check_gpus_here(const Experiment& e) {
  std::vector<std::string> notes;
  const std::vector<int> gpus = e.rank_gpus();
  if (gpus.empty()) return notes;
  std::string why;
  const std::vector<std::string> names = model::cuda_gpus(&why);
  if (names.empty()) {
    throw InputError(e.compute.device_pos,
                     "compute.real.device: cuda asked, but there is no GPU to run on here: " + why);
  }
  for (int g : e.compute.gpus) {
    if (g >= static_cast<int>(names.size())) {
      throw InputError(e.compute.gpus_pos.file.empty() ? e.compute.device_pos : e.compute.gpus_pos,
                       fmt::format("compute.real.gpus: GPU {} asked, this machine has {} ({})", g,
                                   names.size(), fmt::join(names, ", ")));
    }
  }
  const std::vector<std::string> hosts = e.rank_hosts();
  std::map<std::pair<std::string, int>, std::vector<size_t>> sharing;  // (host, gpu) -> ranks
  for (size_t r = 0; r < hosts.size(); ++r) sharing[{hosts[r], gpus[r]}].push_back(r);
  for (const auto& [key, ranks] : sharing) {
    notes.push_back(fmt::format("host {}: rank{} {} on GPU {} ({}){}", key.first,
                                ranks.size() > 1 ? "s" : "", fmt::join(ranks, ", "), key.second,
                                names[key.second], ranks.size() > 1 ? ", sharing it" : ""));
  }
  return notes;
}

Record record(const Experiment& e) {
  namespace fs = std::filesystem;
  auto absolute = [](const yaml::FileRef& r) -> std::optional<std::string> {
    if (fs::path(r.written).is_relative()) return fs::absolute(r.path).lexically_normal().string();
    return std::nullopt;
  };
  Record out;
  out.experiment = yaml::rename_files(e.text, e.files,
                                      [&](const yaml::FileRef& r) -> std::optional<std::string> {
                                        if (!e.topology_file.empty() && r.path == e.topology_file)
                                          return "topology.yaml";
                                        return absolute(r);
                                      });
  if (!e.topology_file.empty())
    out.topology = yaml::rename_files(e.topology_text, e.topology_files, absolute);
  return out;
}

void write_experiment(const std::string& dir, const Experiment& e) {
  namespace fs = std::filesystem;
  const Record r = record(e);
  fs::create_directories(dir);
  write_text_file((fs::path(dir) / "experiment.yaml").string(), r.experiment);
  if (!e.topology_file.empty())
    write_text_file((fs::path(dir) / "topology.yaml").string(), r.topology);
}

nlohmann::json model_json(const model::ModelConfig& m) {
  return {{"vocab", m.vocab},
          {"dim", m.dim},
          {"layers", m.layers},
          {"heads", m.heads},
          {"kv_heads", m.kv_heads},
          {"ffn", m.ffn},
          {"seq", m.seq},
          {"rope_theta", m.rope_theta},
          {"norm_eps", m.norm_eps},
          {"seed", m.seed},
          {"precision", m.precision}};
}

std::vector<std::string> non_default_settings(const Experiment& e) {
  std::vector<std::string> out;
  for (auto& [k, v] : e.mca) out.push_back("mpi.mca." + k + "=" + v);
  if (e.tcp_links > 1) out.push_back("mpi.tcp_links=" + std::to_string(e.tcp_links));
  if (e.connections_wan > 0)
    out.push_back("mpi.connections.wan=" + std::to_string(e.connections_wan));
  if (e.connections_dc > 0) out.push_back("mpi.connections.dc=" + std::to_string(e.connections_dc));
  if (e.wan_temporal) out.push_back("mpi.wan_sharing=temporal");
  const topo::TcpSettings stock;
  std::set<std::string> tcp;
  for (auto& dc : e.topology.dcs)
    for (auto& h : dc.hosts) {
      const topo::TcpSettings& t = h.tcp;
      if (t.congestion != stock.congestion) tcp.insert("tcp.congestion=" + t.congestion);
      if (t.rmem_max_bytes != stock.rmem_max_bytes)
        tcp.insert("tcp.rmem_max=" + std::to_string(t.rmem_max_bytes));
      if (t.wmem_max_bytes != stock.wmem_max_bytes)
        tcp.insert("tcp.wmem_max=" + std::to_string(t.wmem_max_bytes));
      if (t.slow_start_after_idle != stock.slow_start_after_idle)
        tcp.insert("tcp.slow_start_after_idle=false");
      if (t.ecn != stock.ecn) tcp.insert("tcp.ecn=" + topo::ecn_word(t.ecn));
    }
  out.insert(out.end(), tcp.begin(), tcp.end());
  if (e.prefill.on) out.push_back("prefill: " + e.prefill.describe());
  if (e.dp_sync.outer_loop() || e.dp_sync.collective != DpSync::Collective::kOpenMpi)
    out.push_back("dp_sync: " + e.dp_sync.describe());
  if (e.topology.backend != topo::NetworkBackend::kNative)
    out.push_back("network.backend=" + topo::to_string(e.topology.backend));
  return out;
}

}  // namespace xdc::run
