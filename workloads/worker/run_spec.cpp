#include "workloads/worker/run_spec.h"

#include <algorithm>
#include <fstream>
#include <stdexcept>
#include <string_view>

#include "common/text_file.h"

namespace xdc::worker {
using nlohmann::json;

void to_json(json& j, const ModeledCosts& c) {
  j = json{{"f_ns", c.f_ns},
           {"b_ns", c.b_ns},
           {"w_ns", c.w_ns},
           {"activation_bytes", c.activation_bytes},
           {"grad_bytes", c.grad_bytes},
           {"opt_ns", c.opt_ns},
           {"tp_allreduces", c.tp_allreduces},
           {"tp_allreduce_bytes", c.tp_allreduce_bytes},
           {"node_tp_ns", c.node_tp_ns},
           {"node_tp_allreduces", c.node_tp_allreduces},
           {"coexec_interference", c.coexec_interference}};
}
void from_json(const json& j, ModeledCosts& c) {
  c.f_ns = j.value("f_ns", std::vector<int64_t>{});
  c.b_ns = j.value("b_ns", std::vector<int64_t>{});
  c.w_ns = j.value("w_ns", std::vector<int64_t>{});
  c.activation_bytes = j.value("activation_bytes", std::vector<int64_t>{});
  c.grad_bytes = j.value("grad_bytes", std::vector<int64_t>{});
  c.opt_ns = j.value("opt_ns", int64_t{0});
  c.tp_allreduces = j.value("tp_allreduces", std::vector<int>{});
  c.tp_allreduce_bytes = j.value("tp_allreduce_bytes", std::vector<int64_t>{});
  c.node_tp_ns = j.value("node_tp_ns", std::vector<int64_t>{});
  c.node_tp_allreduces = j.value("node_tp_allreduces", std::vector<int>{});
  c.coexec_interference = j.value("coexec_interference", 0.0);
}

void to_json(json& j, const PrefillSpec& p) {
  j = json{{"on", p.on},
           {"rate_rps", p.rate_rps},
           {"dist", p.dist},
           {"mean_tokens", p.mean_tokens},
           {"max_tokens", p.max_tokens},
           {"deadline_ns", p.deadline_ns},
           {"seed", p.seed},
           {"ns_per_token", p.ns_per_token},
           {"pass_tokens", p.pass_tokens},
           {"calibrate", p.calibrate},
           {"action_start_ns", p.action_start_ns},
           {"iteration_ns", p.iteration_ns},
           {"guard_ns", p.guard_ns}};
}
void from_json(const json& j, PrefillSpec& p) {
  PrefillSpec d;
  p.on = j.value("on", d.on);
  p.rate_rps = j.value("rate_rps", d.rate_rps);
  p.dist = j.value("dist", d.dist);
  p.mean_tokens = j.value("mean_tokens", d.mean_tokens);
  p.max_tokens = j.value("max_tokens", d.max_tokens);
  p.deadline_ns = j.value("deadline_ns", d.deadline_ns);
  p.seed = j.value("seed", d.seed);
  p.ns_per_token = j.value("ns_per_token", d.ns_per_token);
  p.pass_tokens = j.value("pass_tokens", d.pass_tokens);
  p.calibrate = j.value("calibrate", d.calibrate);
  p.action_start_ns = j.value("action_start_ns", d.action_start_ns);
  p.iteration_ns = j.value("iteration_ns", d.iteration_ns);
  p.guard_ns = j.value("guard_ns", d.guard_ns);
}

void to_json(json& j, const DpSyncSpec& d) {
  j = json{{"method", d.method},
           {"inner_steps", d.inner_steps},
           {"sync_steps", d.sync_steps},
           {"overlap_steps", d.overlap_steps},
           {"merge", d.merge},
           {"eager", d.eager},
           {"fragment_runs", d.fragment_runs},
           {"outer_lr", d.outer_lr},
           {"outer_momentum", d.outer_momentum},
           {"payload", d.payload}};
}
void from_json(const json& j, DpSyncSpec& d) {
  DpSyncSpec x;
  d.method = j.value("method", x.method);
  d.inner_steps = j.value("inner_steps", x.inner_steps);
  d.sync_steps = j.value("sync_steps", x.sync_steps);
  d.overlap_steps = j.value("overlap_steps", x.overlap_steps);
  d.merge = j.value("merge", x.merge);
  d.eager = j.value("eager", x.eager);
  d.fragment_runs = j.value("fragment_runs", x.fragment_runs);
  d.outer_lr = j.value("outer_lr", x.outer_lr);
  d.outer_momentum = j.value("outer_momentum", x.outer_momentum);
  d.payload = j.value("payload", x.payload);
}

void to_json(json& j, const RunSpec& s) {
  j = json{{"run_dir", s.run_dir},
           {"schedule_name", s.schedule_name},
           {"schedule_csv", s.schedule_csv},
           {"pipeline_ranks", s.pipeline_ranks},
           {"data_parallel", s.data_parallel},
           {"tensor_parallel", s.tensor_parallel},
           {"rank_hosts", s.rank_hosts},
           {"microbatches", s.microbatches},
           {"microbatch_size", s.microbatch_size},
           {"iterations", s.iterations},
           {"warmup", s.warmup},
           {"seed", s.seed},
           {"compute", s.compute},
           {"model", s.model},
           {"stage_layers", s.stage_layers},
           {"modeled", s.modeled},
           {"data_glob", s.data_glob},
           {"learning_rate", s.learning_rate},
           {"threads", s.threads},
           {"rank_gpus", s.rank_gpus},
           {"timeout_s", s.timeout_s},
           {"time_dilation", s.time_dilation},
           {"grad_clip", s.grad_clip},
           {"progress", s.progress},
           {"progress_poll_us", s.progress_poll_us},
           {"iteration_barrier", s.iteration_barrier},
           {"clock_check", s.clock_check},
           {"rank_dcs", s.rank_dcs},
           {"connections_wan", s.connections_wan},
           {"wan_send_order_ns", s.wan_send_order_ns},
           {"wan_release_ahead_bytes", s.wan_release_ahead_bytes},
           {"connections_dc", s.connections_dc},
           {"data_cidr", s.data_cidr},
           {"prefill", s.prefill},
           {"dp_sync", s.dp_sync},
           {"debug_exit_rank", s.debug_exit_rank},
           {"debug_exit_after_iteration", s.debug_exit_after_iteration}};
}
void from_json(const json& j, RunSpec& s) {
  RunSpec d;
  s.run_dir = j.at("run_dir");
  s.schedule_name = j.value("schedule_name", d.schedule_name);
  s.schedule_csv = j.at("schedule_csv");
  s.pipeline_ranks = j.value("pipeline_ranks", d.pipeline_ranks);
  s.data_parallel = j.value("data_parallel", d.data_parallel);
  s.tensor_parallel = j.value("tensor_parallel", d.tensor_parallel);
  s.rank_hosts = j.value("rank_hosts", d.rank_hosts);
  s.microbatches = j.value("microbatches", d.microbatches);
  s.microbatch_size = j.value("microbatch_size", d.microbatch_size);
  s.iterations = j.value("iterations", d.iterations);
  s.warmup = j.value("warmup", d.warmup);
  s.seed = j.value("seed", d.seed);
  s.compute = j.value("compute", d.compute);
  s.model = j.value("model", json::object());
  s.stage_layers = j.value("stage_layers", d.stage_layers);
  s.modeled = j.value("modeled", ModeledCosts{});
  s.data_glob = j.value("data_glob", d.data_glob);
  s.learning_rate = j.value("learning_rate", d.learning_rate);
  s.threads = j.value("threads", d.threads);
  s.rank_gpus = j.value("rank_gpus", d.rank_gpus);
  s.timeout_s = j.value("timeout_s", d.timeout_s);
  s.time_dilation = j.value("time_dilation", d.time_dilation);
  s.grad_clip = j.value("grad_clip", d.grad_clip);
  s.progress = j.value("progress", d.progress);
  s.progress_poll_us = j.value("progress_poll_us", d.progress_poll_us);
  s.iteration_barrier = j.value("iteration_barrier", d.iteration_barrier);
  s.clock_check = j.value("clock_check", d.clock_check);
  s.rank_dcs = j.value("rank_dcs", d.rank_dcs);
  s.connections_wan = j.value("connections_wan", d.connections_wan);
  s.wan_send_order_ns = j.value("wan_send_order_ns", d.wan_send_order_ns);
  s.wan_release_ahead_bytes = j.value("wan_release_ahead_bytes", d.wan_release_ahead_bytes);
  s.connections_dc = j.value("connections_dc", d.connections_dc);
  s.data_cidr = j.value("data_cidr", d.data_cidr);
  s.prefill = j.value("prefill", PrefillSpec{});
  s.dp_sync = j.value("dp_sync", DpSyncSpec{});
  s.debug_exit_rank = j.value("debug_exit_rank", d.debug_exit_rank);
  s.debug_exit_after_iteration =
      j.value("debug_exit_after_iteration", d.debug_exit_after_iteration);
}

void to_json(json& j, const RankReport::Connection& c) {
  j = json{{"peer", c.peer},
           {"index", c.index},
           {"bytes_sent", c.bytes_sent},
           {"bytes_received", c.bytes_received},
           {"kernel_bytes_acked", c.kernel_bytes_acked},
           {"kernel_retransmits", c.kernel_retransmits}};
}
void from_json(const json& j, RankReport::Connection& c) {
  c.peer = j.value("peer", -1);
  c.index = j.value("index", 0);
  c.bytes_sent = j.value("bytes_sent", int64_t{0});
  c.bytes_received = j.value("bytes_received", int64_t{0});
  c.kernel_bytes_acked = j.value("kernel_bytes_acked", int64_t{0});
  c.kernel_retransmits = j.value("kernel_retransmits", int64_t{0});
}

void to_json(json& j, const RankReport& r) {
  j = json{{"world_rank", r.world_rank},
           {"replica", r.replica},
           {"pipeline_rank", r.pipeline_rank},
           {"tp_index", r.tp_index},
           {"host", r.host},
           {"stages", r.stages},
           {"iteration_start_ns", r.iteration_start_ns},
           {"iteration_end_ns", r.iteration_end_ns},
           {"loss", r.loss},
           {"param_checksums", r.param_checksums},
           {"clock_offset_ns", r.clock_offset_ns},
           {"clock_offset_drift_ns", r.clock_offset_drift_ns},
           {"clock_residual_ns", r.clock_residual_ns},
           {"waits", r.waits},
           {"peak_activation_bytes", r.peak_activation_bytes},
           {"eval_loss", r.eval_loss},
           {"compute", r.compute},
           {"complete", r.complete},
           {"iterations_done", r.iterations_done},
           {"progress", r.progress},
           {"mpi_thread_level", r.mpi_thread_level},
           {"connections", r.connections}};
  if (!r.prefill.is_null()) j["prefill"] = r.prefill;
  if (r.wan_grants_served > 0) j["wan_grants_served"] = r.wan_grants_served;
}
void from_json(const json& j, RankReport& r) {
  r.world_rank = j.at("world_rank");
  r.replica = j.value("replica", 0);
  r.pipeline_rank = j.value("pipeline_rank", 0);
  r.tp_index = j.value("tp_index", 0);
  r.host = j.value("host", "");
  r.stages = j.value("stages", std::vector<int>{});
  r.iteration_start_ns = j.value("iteration_start_ns", std::vector<int64_t>{});
  r.iteration_end_ns = j.value("iteration_end_ns", std::vector<int64_t>{});
  r.loss = j.value("loss", std::vector<double>{});
  r.param_checksums = j.value("param_checksums", std::vector<std::string>{});
  r.clock_offset_ns = j.value("clock_offset_ns", int64_t{0});
  r.clock_offset_drift_ns = j.value("clock_offset_drift_ns", int64_t{0});
  r.clock_residual_ns = j.value("clock_residual_ns", int64_t{-1});
  r.waits = j.value("waits", json::object());
  r.peak_activation_bytes = j.value("peak_activation_bytes", int64_t{0});
  r.eval_loss = j.value("eval_loss", -1.0);
  r.compute = j.value("compute", "");
  r.complete = j.value("complete", false);
  r.iterations_done = j.value("iterations_done", 0);
  r.progress = j.value("progress", "");
  r.mpi_thread_level = j.value("mpi_thread_level", 0);
  r.connections = j.value("connections", std::vector<RankReport::Connection>{});
  r.prefill = j.value("prefill", json());
  r.wan_grants_served = j.value("wan_grants_served", int64_t{0});
}

namespace {

// Where the top-level key `key` of the JSON object `text` starts (its last occurrence;
// nlohmann keeps the last), or 1:1 when it has none. `text` is valid JSON: its strings
// hold no newline.
SourcePos key_pos(const std::string& text, const std::string& key, const std::string& path) {
  SourcePos found{path, 1, 1};
  int line = 1, col = 1, depth = 0;
  for (size_t i = 0; i < text.size(); ++i, ++col) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      col = 0;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      --depth;
    } else if (c == '"') {
      size_t end = i + 1;
      while (end < text.size() && text[end] != '"') end += text[end] == '\\' ? 2 : 1;
      end = std::min(end, text.size());
      const size_t next = text.find_first_not_of(" \t\r\n", end + 1);
      if (depth == 1 && std::string_view(text).substr(i + 1, end - i - 1) == key &&
          next != std::string::npos && text[next] == ':')
        found = {path, line, col};
      col += static_cast<int>(end - i);
      i = end;
    }
  }
  return found;
}

// A spec's fractional numbers are its rates, factors and per-token times: 0 <= x < 2^31.
// Outside that one is no spec the launcher wrote, and nlohmann's conversion of it to an
// integer field (1e300 as an int, -2.5 as a seed) would be undefined behaviour.
void check_fractions(const json& j) {
  if (j.is_number_float()) {
    const double x = j.get<double>();
    if (!(x > -1 && x < 2147483648.0))
      throw std::invalid_argument("expected integers, or fractions in 0..2^31, got " + j.dump());
  }
  if (j.is_structured())
    for (const json& child : j) check_fractions(child);
}

// The top-level key whose value does not convert, each tried alone over a default spec;
// "" when none fails alone (a required key is missing, or `j` is no object).
std::string failing_key(const json& j) {
  if (!j.is_object()) return "";
  for (const auto& [k, v] : j.items()) {
    json probe = RunSpec{};
    probe[k] = v;
    try {
      probe.get<RunSpec>();
    } catch (const json::exception&) {
      return k;
    }
  }
  return "";
}

}  // namespace

RunSpec read_run_spec(const std::string& path) {
  const std::string text = read_input_file(path, "the run spec");
  json j;
  // The line and column of `text`'s character at 0-based `offset` (1:1 when npos).
  auto pos_at = [&](size_t offset) {
    SourcePos at{path, 1, 1};
    for (size_t i = 0; offset != std::string::npos && i < offset && i < text.size(); ++i) {
      at.col = text[i] == '\n' ? 1 : at.col + 1;
      at.line += text[i] == '\n';
    }
    return at;
  };
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {  // e.byte: 1-based offset of the bad character
    throw InputError(pos_at(e.byte > 0 ? e.byte - 1 : 0), e.what());
  } catch (const json::out_of_range& e) {
    // A number past double's range ("number overflow parsing '1e999'"): no offset is
    // given, so the number is found in the text.
    const std::string what = e.what();
    const size_t q = what.find("parsing '"), end = what.rfind('\'');
    throw InputError(
        pos_at(q != std::string::npos && end > q + 9 ? text.find(what.substr(q + 9, end - q - 9))
                                                     : std::string::npos),
        what);
  }
  // Errors of a valid JSON document point at the top-level key whose value is wrong.
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) try {
        check_fractions(v);
      } catch (const std::invalid_argument& e) {
        throw InputError(key_pos(text, k, path), k + ": " + e.what());
      }
  } else {
    try {
      check_fractions(j);
    } catch (const std::invalid_argument& e) {
      throw InputError(SourcePos{path, 1, 1}, e.what());
    }
  }
  try {
    return j.get<RunSpec>();
  } catch (const json::exception& e) {
    const std::string k = failing_key(j);
    throw InputError(k.empty() ? SourcePos{path, 1, 1} : key_pos(text, k, path),
                     (k.empty() ? "" : k + ": ") + e.what());
  }
}

void write_run_spec(const std::string& path, const RunSpec& s) {
  std::ofstream out(path);
  out << json(s).dump(2) << "\n";
  if (!out) throw std::runtime_error("cannot write run spec " + path);
}

}  // namespace xdc::worker
