#include "harness/run/workload_run.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <yaml-cpp/yaml.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <list>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "common/input_error.h"
#include "common/text_file.h"
#include "harness/launch/launcher.h"
#include "harness/plan/plan.h"
#include "harness/plan/predict.h"
#include "harness/process/process.h"
#include "harness/run/environment.h"
#include "harness/run/results.h"
#include "harness/run/run_network.h"
#include "harness/run/workload_results.h"
#include "harness/trace/chrome.h"
#include "netem/nl/netns.h"
#include "netem/shaper/shaper.h"

namespace xdc::run {
namespace fs = std::filesystem;
namespace {

using Say = std::function<void(const std::string&)>;

double realtime_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The WAN's sampling grid: under 10 ms so that a late wake-up on a loaded machine still
// leaves most intervals within 10 ms (summary.json's wan states the intervals achieved).
constexpr std::chrono::milliseconds kSamplePeriod{8};

// The hosts' data interface (harness/network/builder.cpp names it in every host).
constexpr const char* kDataIfname = "eth0";

// Reads every WAN direction's counters every `period`, each direction on its own thread
// (one slow read does not delay the others), until stopped.
class WanSampler {
 public:
  WanSampler(const net::NetworkState& s, std::chrono::milliseconds period) : period_(period) {
    samples_.resize(s.links.size());  // before any thread writes into it
    for (size_t i = 0; i < s.links.size(); ++i)
      threads_.emplace_back([this, l = s.links[i], i] { loop(l, i); });
  }
  ~WanSampler() { stop(); }
  // Every sample, in time order per direction, the directions one after the other.
  std::vector<WanSample> stop() {
    stop_ = true;
    for (auto& t : threads_)
      if (t.joinable()) t.join();
    std::vector<WanSample> out;
    for (const auto& v : samples_) out.insert(out.end(), v.begin(), v.end());
    return out;
  }

 private:
  // tx bytes and packets of `ifname` in the calling thread's namespace.
  static std::pair<uint64_t, uint64_t> tx(const std::string& ifname) {
    std::istringstream in(read_text_file_or_empty("/proc/thread-self/net/dev"));
    for (std::string line; std::getline(in, line);) {
      const auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string name = line.substr(0, colon);
      name.erase(0, name.find_first_not_of(' '));
      if (name != ifname) continue;
      std::istringstream f(line.substr(colon + 1));
      uint64_t v[10] = {};
      for (auto& x : v) f >> x;  // rx: bytes packets errs drop fifo frame compressed
      return {v[8], v[9]};       // multicast; tx: bytes packets
    }
    return {0, 0};
  }
  void loop(const net::ShapedLink& l, size_t index) {
    std::vector<WanSample>& out = samples_[index];
    const netem::ShapeRecord record = netem::ShapeRecord::from_json(l.record);
    prctl(PR_SET_TIMERSLACK, 1UL);  // wake on the grid, not up to 50 us after it
    auto next = std::chrono::steady_clock::now();
    while (!stop_) {
      WanSample s;
      s.link = l.from + "->" + l.to;
      try {
        {
          nl::NetnsGuard in(l.netns);
          std::tie(s.bytes, s.packets) = tx(l.ifname);
        }
        s.t_s = realtime_s();
        if (l.backend != "none") {
          const netem::ShapeCounters c = netem::shape_counters(record);
          s.drops = c.loss_drops + c.delay_queue_drops + c.rate_queue_drops;
          s.queued = c.queued;
        }
        out.push_back(s);
      } catch (const std::exception&) {
        return;  // the namespace went away: the run is ending
      }
      next += period_;
      const auto now = std::chrono::steady_clock::now();
      if (next < now) next = now;  // a slow sample shifts the grid, it does not burst
      std::this_thread::sleep_until(next);
    }
  }
  std::chrono::milliseconds period_;
  std::vector<std::vector<WanSample>> samples_;  // per direction, each its thread's
  std::list<std::thread> threads_;
  std::atomic<bool> stop_{false};
};

struct ProcessOutcome {
  int rank = 0, local_rank = 0;
  std::string host;
  std::optional<int> exit_code;  // none: unknown (mpi ranks that mpirun did not name)
  bool stopped = false;          // stopped by xdc (another rank failed, time limit, SIGINT)
  double seconds = 0;
};

struct LaunchOutcome {
  std::vector<ProcessOutcome> processes;
  std::string error;  // "" when every process exited 0
};

std::string events_path(const fs::path& root) {
  return (root / "events.jsonl").string();
}

// XDC_* variables every process gets, and the user's (with OMP_NUM_THREADS=1 and
// PYTHONUNBUFFERED=1 unless the user sets them).
std::vector<std::pair<std::string, std::string>> common_env(const Workload& w,
                                                            const fs::path& root) {
  std::vector<std::pair<std::string, std::string>> env = {{"XDC_EVENTS", events_path(root)}};
  const auto has = [&](const std::string& k) {
    for (const auto& [key, v] : w.env)
      if (key == k) return true;
    return false;
  };
  if (!has("OMP_NUM_THREADS")) env.emplace_back("OMP_NUM_THREADS", "1");
  if (!has("PYTHONUNBUFFERED")) env.emplace_back("PYTHONUNBUFFERED", "1");
  env.insert(env.end(), w.env.begin(), w.env.end());
  return env;
}

LaunchOutcome launch_torch(const Experiment& e, const net::NetworkState& s, const fs::path& root,
                           const RunOptions& opts, const Say& say) {
  const Workload& w = *e.workload;
  const std::vector<std::string> hosts = w.rank_hosts();
  const net::HostState* master = s.find_host(w.hosts.front());
  const auto common = common_env(w, root);
  std::vector<std::unique_ptr<proc::Background>> procs;
  LaunchOutcome out;
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < w.world_size(); ++r) {
    ProcessOutcome p;
    p.rank = r;
    p.local_rank = r % w.per_host;
    p.host = hosts[static_cast<size_t>(r)];
    std::vector<std::string> argv = {
        "env",
        "-C",
        w.cwd,
        fmt::format("RANK={}", r),
        fmt::format("WORLD_SIZE={}", w.world_size()),
        fmt::format("LOCAL_RANK={}", p.local_rank),
        fmt::format("LOCAL_WORLD_SIZE={}", w.per_host),
        fmt::format("GROUP_RANK={}", r / w.per_host),
        "MASTER_ADDR=" + master->data_ip,
        fmt::format("MASTER_PORT={}", w.port),
        std::string("GLOO_SOCKET_IFNAME=") + kDataIfname,
        std::string("NCCL_SOCKET_IFNAME=") + kDataIfname,
        "XDC_HOST=" + p.host,
        "XDC_PROFILE=" + (root / fmt::format("rank{}.profile.json", r)).string()};
    for (const auto& [k, v] : common) argv.push_back(k + "=" + v);
    argv.insert(argv.end(), w.command.begin(), w.command.end());
    write_text_file((root / fmt::format("rank{}.cmd", r)).string(),
                    fmt::format("{}\n", fmt::join(argv, " ")));
    procs.push_back(std::make_unique<proc::Background>(
        proc::in_host(s.name, p.host, argv), (root / fmt::format("rank{}.stdout", r)).string(),
        (root / fmt::format("rank{}.stderr", r)).string()));
    out.processes.push_back(p);
  }
  say(fmt::format("started {} process(es) on {}", procs.size(), fmt::join(w.hosts, ", ")));
  const auto deadline = t0 + std::chrono::microseconds(w.time_limit_us);
  bool stopping = false;
  const auto stop_all = [&] {
    stopping = true;
    for (size_t i = 0; i < procs.size(); ++i)
      if (!out.processes[i].exit_code) {
        ::kill(procs[i]->pid(), SIGTERM);
        out.processes[i].stopped = true;
      }
  };
  std::optional<std::chrono::steady_clock::time_point> kill_at;
  for (;;) {
    bool running = false;
    for (size_t i = 0; i < procs.size(); ++i) {
      ProcessOutcome& p = out.processes[i];
      if (p.exit_code) continue;
      if (procs[i]->running()) {
        running = true;
        continue;
      }
      p.exit_code = procs[i]->wait_for(std::chrono::milliseconds(0));
      p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (*p.exit_code != 0 && !p.stopped && out.error.empty()) {
        out.error =
            fmt::format("rank {} on host {} exited with code {}", p.rank, p.host, *p.exit_code);
        say(out.error + ": stopping the other ranks");
        stop_all();
      }
    }
    if (!running) break;
    const auto now = std::chrono::steady_clock::now();
    if (!stopping && now >= deadline) {
      out.error = fmt::format("time limit {:g}s reached with rank(s) still running",
                              static_cast<double>(w.time_limit_us) / 1e6);
      say(out.error + ": stopping them");
      stop_all();
    }
    if (!stopping && opts.cancel && opts.cancel->load()) {
      out.error = "interrupted";
      stop_all();
    }
    if (stopping && !kill_at) kill_at = now + std::chrono::seconds(5);
    if (kill_at && now >= *kill_at) {
      for (size_t i = 0; i < procs.size(); ++i)
        if (!out.processes[i].exit_code) ::kill(procs[i]->pid(), SIGKILL);
    }
    // Wakes at once when a rank exits: ranks that fail together (a peer's exit breaks the
    // others' collectives) are seen in the order they exited, and the first one is named.
    std::vector<int> live;
    for (size_t i = 0; i < procs.size(); ++i)
      if (!out.processes[i].exit_code) live.push_back(procs[i]->pid());
    proc::wait_any_exit(live, std::chrono::milliseconds(20));
  }
  return out;
}

LaunchOutcome launch_mpi(const Experiment& e, const net::NetworkState& s, const fs::path& root,
                         const RunOptions& opts, const Say& say) {
  const Workload& w = *e.workload;
  launch::Job job;
  job.run_dir = root.string();
  job.rank_hosts = w.rank_hosts();
  job.program = {"/usr/bin/env", "-C", w.cwd};
  job.program.insert(job.program.end(), w.command.begin(), w.command.end());
  job.env = common_env(w, root);
  job.stall_timeout = std::chrono::seconds(std::max<uint64_t>(1, w.time_limit_us / 1000000));
  job.cancel = opts.cancel;
  say(fmt::format("mpirun: {} rank(s) on {}", w.world_size(), fmt::join(w.hosts, ", ")));
  const launch::Result r = launch::run_job(s, job);
  LaunchOutcome out;
  for (int i = 0; i < w.world_size(); ++i) {
    ProcessOutcome p;
    p.rank = i;
    p.local_rank = i % w.per_host;
    p.host = job.rank_hosts[static_cast<size_t>(i)];
    p.seconds = r.seconds;
    if (r.ok()) p.exit_code = 0;
    out.processes.push_back(p);
  }
  if (!r.ok()) {
    out.error = r.message();
    if (!r.failures.empty() && r.failures[0].rank >= 0 && r.failures[0].rank < w.world_size())
      out.error = fmt::format("rank {} on host {} {}", r.failures[0].rank, r.failures[0].host,
                              r.failures[0].what);
  }
  return out;
}

// Kills every process whose environment holds this run's XDC_EVENTS: what the program
// started and left behind. Returns how many.
int kill_leftovers(const fs::path& root) {
  const std::string mark = "XDC_EVENTS=" + events_path(root);
  int killed = 0;
  for (const auto& d : fs::directory_iterator("/proc")) {
    const std::string pid = d.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string env = read_text_file_or_empty((d.path() / "environ").string());
    size_t at = 0;
    for (size_t i = 0; i <= env.size(); ++i)
      if (i == env.size() || env[i] == '\0') {
        if (env.compare(at, i - at, mark) == 0 && ::kill(std::stoi(pid), SIGKILL) == 0) ++killed;
        at = i + 1;
      }
  }
  return killed;
}

nlohmann::json processes_json(const LaunchOutcome& l) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& p : l.processes)
    out.push_back({{"rank", p.rank},
                   {"host", p.host},
                   {"local_rank", p.local_rank},
                   {"exit_code", p.exit_code ? nlohmann::json(*p.exit_code) : nlohmann::json()},
                   {"stopped_by_xdc", p.stopped},
                   {"seconds", p.seconds}});
  return out;
}

// The modeled experiment of the program's step: data parallelism over its ranks' hosts,
// one stage, each step `compute_s` of compute then `bytes` all-reduced (torch: gloo's
// ring, dp_sync.collective gloo; mpi: OpenMPI's), no iteration barrier, the program's
// warm-up; the experiment's network keys kept. YAML text, loadable from `root`.
std::string modeled_experiment(const Experiment& e, double compute_s, int64_t bytes, int steps) {
  YAML::Node n = YAML::Load(e.text);
  n.remove("workload");
  n.remove("seed");
  n["name"] = e.name + "-predicted";
  if (!e.topology_file.empty()) n["topology"] = fs::absolute(e.topology_file).string();
  const double ms = compute_s * 1e3;
  YAML::Node modeled;
  modeled["f"] = fmt::format("{:.3f}ms", ms / 3);
  modeled["b"] = fmt::format("{:.3f}ms", ms - ms / 3);
  modeled["grad"] = fmt::format("{}b", bytes);
  n["compute"]["modeled"] = modeled;
  YAML::Node placement;
  for (const auto& h : e.workload->rank_hosts()) {
    YAML::Node replica;
    replica.push_back(h);
    placement.push_back(replica);
  }
  n["pipeline"]["stages"] = 1;
  n["pipeline"]["data_parallel"] = e.workload->world_size();
  n["pipeline"]["placement"] = placement;
  n["microbatches"] = 1;
  n["iterations"] = std::max(1, steps);
  n["warmup"] = e.workload->warmup_steps;  // the program's warm-up, left out alike
  n["iteration_barrier"] = false;          // the program's steps start when its ranks are ready
  YAML::Node schedules;
  schedules.push_back("1f1b");
  n["schedules"] = schedules;
  if (e.workload->launcher == Workload::Launcher::kTorch) {
    n["dp_sync"]["method"] = "sync";
    n["dp_sync"]["collective"] = "gloo";
  }
  YAML::Emitter out;
  out << n;
  return std::string("# The modeled experiment of ") + e.source_file +
         "'s step (xdc run wrote it; xdc simulate predicts it).\n" + out.c_str() + "\n";
}

}  // namespace

// The prediction of the same step (predicted.yaml: the measured compute, the bytes it
// all-reduces), into r's simulated figures; the summary's "prediction" (null: none).
nlohmann::json predict_step(const Experiment& e, const fs::path& root, const Steps& steps,
                            int64_t bytes, ScheduleResult& r, const Say& say) {
  nlohmann::json prediction;
  const Workload& w = *e.workload;
  if (r.ok && bytes > 0 && steps.mean_compute_s() > 0 && w.world_size() > 1) {
    const std::string text = modeled_experiment(e, steps.mean_compute_s(), bytes,
                                                static_cast<int>(r.iteration_s.size()));
    const std::string file = (root / "predicted.yaml").string();
    write_text_file(file, text);
    try {
      const Plan plan = make_plan(parse_experiment(text, file));
      const Prediction p = predict(plan, plan.schedules[0], plan.schedules[0].costs);
      r.simulated_iteration_s = p.iteration_s();
      r.simulated_steady_iteration_s = static_cast<double>(p.summary.iteration_ns) / 1e9;
      r.simulated_costs = fmt::format(
          "modeled: {:.1f} ms of the step outside its all-reduce (measured), {} bytes "
          "all-reduced (predicted.yaml)",
          steps.mean_compute_s() * 1e3, bytes);
      write_text_file((root / "simulated.trace.json").string(), trace::to_chrome_json(p.trace));
      prediction = {{"compute_s", steps.mean_compute_s()},
                    {"allreduce_bytes", bytes},
                    {"experiment", "predicted.yaml"},
                    {"simulated_step_s", r.simulated_iteration_s}};
    } catch (const std::exception& ex) {
      prediction = {{"error", ex.what()}};
      say(std::string("no prediction: ") + ex.what());
    }
  }
  return prediction;
}

RunOutcome run_workload(const Experiment& e, const RunOptions& opts) {
  const Say say = [&](const std::string& m) {
    if (opts.progress) opts.progress(m);
  };
  const Workload& w = *e.workload;
  if (!opts.lab_file.empty())
    throw InputError(w.pos, "workload: runs on one machine; --lab is not supported with it");
  if (opts.resume) throw InputError(w.pos, "workload: --resume is not supported with it");
  if (!opts.network.empty()) RunNetwork::reusable(e, opts);
  RunOutcome out;
  out.out_dir = fs::absolute(opts.out_dir.empty() ? default_out_dir(e) : opts.out_dir).string();
  const fs::path root = out.out_dir;
  write_experiment(root.string(), e);
  say(fmt::format("{}: {} x {} process(es) per host on {} ({}), results in {}", e.name,
                  w.hosts.size(), w.per_host, fmt::join(w.hosts, ", "), w.launcher_name(),
                  out.out_dir));
  ScheduleResult r;
  r.schedule = "workload";
  r.simulated_costs = "none";
  std::string backend, network;
  ProgramEvents events;
  std::vector<WanSample> samples;
  LaunchOutcome launched;
  double t0 = 0;
  {
    RunNetwork net(e, opts, nullptr);
    const net::NetworkState& s = net.state();
    backend = shaping_backend(s);
    network = s.name;
    write_text_file((root / "environment.json").string(),
                    environment_json(e, s, !net.owned()).dump(2) + "\n");
    write_text_file(events_path(root), "");
    t0 = realtime_s();
    WanSampler sampler(s, kSamplePeriod);
    try {
      launched = w.launcher == Workload::Launcher::kTorch ? launch_torch(e, s, root, opts, say)
                                                          : launch_mpi(e, s, root, opts, say);
    } catch (...) {
      kill_leftovers(root);
      throw;
    }
    if (int n = kill_leftovers(root))
      say(fmt::format("killed {} process(es) the program left behind", n));
    samples = sampler.stop();
  }  // ~RunNetwork tears down
  write_text_file((root / "processes.json").string(), processes_json(launched).dump(2) + "\n");
  events = read_program_events(read_text_file_or_empty(events_path(root)));
  const Steps steps = program_steps(events, w.world_size(), w.warmup_steps);
  r.ok = launched.error.empty();
  r.error = launched.error;
  for (size_t i = static_cast<size_t>(w.warmup_steps); i < steps.step_s.size(); ++i) {
    r.iteration_s.push_back(steps.step_s[i]);
    if (!std::isnan(steps.loss[i])) r.loss.push_back(steps.loss[i]);
  }
  if (r.ok && r.iteration_s.empty())
    say("the program reported no step (XDC_EVENTS lines with \"name\": \"step\")");
  // steps.csv
  std::string csv = "step,start_s,step_s,loss,compute_s,allreduce_bytes\n";
  for (size_t i = 0; i < steps.step_s.size(); ++i)
    csv += fmt::format("{},{:.6f},{:.6f},{},{:.6f},{}\n", i, steps.start_s[i] - t0, steps.step_s[i],
                       std::isnan(steps.loss[i]) ? "" : fmt::format("{:g}", steps.loss[i]),
                       steps.compute_s[i], steps.allreduce_bytes[i]);
  write_text_file((root / "steps.csv").string(), csv);
  write_text_file((root / "wan.csv").string(), wan_csv(samples, t0));
  std::vector<nlohmann::json> profiles;
  for (int i = 0; i < w.world_size(); ++i) {
    const auto text = read_text_file((root / fmt::format("rank{}.profile.json", i)).string());
    profiles.push_back(text ? nlohmann::json::parse(*text, nullptr, false) : nlohmann::json());
  }
  write_text_file((root / "trace.json").string(),
                  workload_trace(events, samples, w.rank_hosts(), profiles, t0).dump() + "\n");
  const int64_t bytes = w.allreduce_bytes > 0 ? w.allreduce_bytes : steps.bytes_per_step();
  const nlohmann::json prediction = predict_step(e, root, steps, bytes, r, say);
  nlohmann::json entry = summary_json(r);
  nlohmann::json per_rank = nlohmann::json::array();
  for (int n : steps.per_rank) per_rank.push_back(n);
  entry["steps"] = {{"all_s", steps.step_s},
                    {"warmup", w.warmup_steps},
                    {"per_rank", per_rank},
                    {"compute_s_mean", steps.mean_compute_s()},
                    {"allreduce_bytes", bytes}};
  if (!prediction.is_null()) entry["prediction"] = prediction;
  const nlohmann::json summary = {{"schema_version", kSummarySchemaVersion},
                                  {"kind", "workload"},
                                  {"experiment", e.name},
                                  {"launcher", w.launcher_name()},
                                  {"command", w.command},
                                  {"hosts", w.hosts},
                                  {"per_host", w.per_host},
                                  {"world_size", w.world_size()},
                                  {"backend", backend},
                                  {"network", network},
                                  {"complete", true},
                                  {"interrupted", opts.cancel && opts.cancel->load()},
                                  {"processes", processes_json(launched)},
                                  {"events_bad_lines", events.bad_lines},
                                  {"wan", wan_json(samples)},
                                  {"schedules", nlohmann::json::array({entry})}};
  write_text_file((root / "summary.json").string(), summary.dump(2) + "\n");
  out.schedules.push_back(std::move(r));
  return out;
}

}  // namespace xdc::run
