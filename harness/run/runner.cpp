#include "harness/run/runner.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "common/input_error.h"
#include "common/text_file.h"
#include "harness/check/link_check.h"
#include "harness/common/units.h"
#include "harness/lab/remote.h"
#include "harness/lab/run_files.h"
#include "harness/launch/launcher.h"
#include "harness/linkctl/change_schedule.h"
#include "harness/network/builder.h"
#include "harness/network/names.h"
#include "harness/network/tcp.h"
#include "harness/network/teardown.h"
#include "harness/plan/plan.h"
#include "harness/plan/predict.h"
#include "harness/process/process.h"
#include "harness/run/environment.h"
#include "harness/run/host_memory.h"
#include "harness/run/prefill_results.h"
#include "harness/run/repeat.h"
#include "harness/run/resume.h"
#include "harness/run/run_network.h"
#include "harness/run/workload_run.h"
#include "harness/sim/simulator.h"
#include "harness/trace/chrome.h"
#include "netem/nl/netns.h"
#include "workloads/schedule/csv.h"

namespace xdc::run {
namespace fs = std::filesystem;
namespace {

// A lab run's input checks, before anything is built: what it cannot do yet is refused.
void check_lab_run(const Experiment& e, const RunOptions& o, const lab::Lab& lab) {
  const SourcePos at{e.source_file, 0, 0};
  if (!o.network.empty()) throw InputError("--lab builds its own network: drop --network");
  if (changes_over_time(e) || !e.events.empty())
    throw InputError(at,
                     "topology changes and experiment events are not supported across a "
                     "lab yet: run them on one machine");
  if (e.link_check)
    throw InputError(at,
                     "link_check is not supported across a lab yet (xdc check runs on one "
                     "machine): drop it, `xdc up --lab` checks the tunnels");
  lab::assign_dcs(lab, e.topology);  // InputError for a DC the lab does not place
}

nlohmann::json waits_per_iteration(const RankFiles& f, size_t iterations) {
  nlohmann::json out = nlohmann::json::object();
  if (iterations == 0) return out;
  for (auto& rep : f.reports) {
    if (!rep.waits.is_object()) continue;
    for (auto& [cause, v] : rep.waits.items())
      if (v.is_number())
        out[cause] =
            out.value(cause, 0.0) +
            v.get<double>() / 1e9 /
                static_cast<double>(rep.iterations_done ? rep.iterations_done : iterations);
  }
  return out;
}

// CLOCK_MONOTONIC - CLOCK_REALTIME now: the events log is stamped on the latter, the ranks'
// traces on the former (rank 0's steady clock; one machine, one clock in every namespace).
int64_t monotonic_minus_realtime() {
  const auto real = std::chrono::system_clock::now().time_since_epoch();
  const auto mono = std::chrono::steady_clock::now().time_since_epoch();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(mono - real).count();
}

// The events of events.json (link_control.h's lines) as Chrome-trace markers, on the
// traces' clock (monotonic, undilated).
std::vector<trace::Marker> event_markers(const std::vector<nlohmann::json>& events,
                                         int64_t to_mono_ns, double k) {
  std::vector<trace::Marker> out;
  for (const auto& e : events) {
    const std::string what = e.contains("link") ? e.value("link", "") : e.value("dc", "");
    out.push_back(
        {static_cast<int64_t>(static_cast<double>(e.value("t_ns", int64_t{0}) + to_mono_ns) / k),
         e.value("kind", "change") + " " + what, e.value("source", "")});
  }
  return out;
}

ScheduleResult analyse(const Plan& plan, const SchedulePlan& p, const fs::path& dir,
                       const launch::Result& job, const std::vector<nlohmann::json>& events,
                       int64_t launched_ns, int64_t to_mono_ns, uint64_t seed) {
  const Experiment& e = plan.experiment;
  ScheduleResult r;
  r.schedule = p.choice.name;
  r.ok = job.ok();
  r.error = job.message();
  r.run_seeds = {seed};
  RankFiles files = read_rank_files(dir.string(), e.world_size(), p.choice.name, e.time_dilation);
  if (!files.missing.empty() && r.ok) {
    r.ok = false;
    r.error = fmt::format("{} rank(s) wrote no report (first: rank {})", files.missing.size(),
                          files.missing[0]);
  }
  write_text_file(
      (dir / "trace.json").string(),
      trace::to_chrome_json(files.trace, event_markers(events, to_mono_ns, e.time_dilation)));
  write_text_file((dir / "trace.csv").string(), trace::to_csv(files.trace));
  std::vector<std::string> rank_dcs;
  for (const std::string& h : e.rank_hosts()) rank_dcs.push_back(e.topology.find_host(h)->dc);
  const std::vector<trace::Trace> iterations = split_iterations(files);
  for (const auto& it : iterations) {
    if (it.events.empty()) continue;
    const trace::Summary s = trace::analyze(it);
    r.iteration_s.push_back(static_cast<double>(s.iteration_ns) / 1e9);
    r.bubbles.push_back(s.bubble);
    r.series.push_back(iteration_point(it, rank_dcs));
  }
  if (!r.series.empty()) {  // start_s from measured iteration 0's first event
    const double t0 = r.series.front().start_s;
    for (auto& pt : r.series) pt.start_s -= t0;
    for (const trace::Marker& m : event_markers(events, to_mono_ns, e.time_dilation))
      r.changes.push_back({static_cast<double>(m.t_ns) / 1e9 - t0, m.name, m.source});
  }
  for (auto& b : r.bubbles) {
    const double n = static_cast<double>(r.bubbles.size());
    r.bubble.megatron += b.megatron / n;
    r.bubble.zerobubble += b.zerobubble / n;
    r.bubble.crosspipe += b.crosspipe / n;
  }
  // Replica 0's last stage (its TP rank 0: every TP rank computes the same loss).
  const int last_rank = e.world_rank(0, p.schedule.stage_rank.back());
  for (auto& rep : files.reports)
    if (rep.world_rank == last_rank) r.loss = rep.loss;
  r.waits_s = waits_per_iteration(files, r.iteration_s.size());
  for (auto& rep : files.reports)
    if (rep.clock_residual_ns >= 0) {
      r.clock_offset_max_us =
          std::max(r.clock_offset_max_us, std::abs(static_cast<double>(rep.clock_offset_ns)) / 1e3);
      r.clock_residual_us =
          std::max(r.clock_residual_us, static_cast<double>(rep.clock_residual_ns) / 1e3);
    }
  r.transfers = transfers_json(files.trace, rank_dcs, files.reports);
  r.tp_stalls = tp_stalls_json(iterations);
  r.utilisation = utilisation(files, true);
  if (p.prefill) r.prefill = prefill_json(files);
  if (e.dp_sync.outer_loop()) r.dp_sync = dp_sync_json(e, p.costs.outer_bytes, files);
  for (auto& rep : files.reports)  // replica 0's evaluation (a rank holding every stage)
    if (rep.replica == 0 && rep.eval_loss >= 0 && !std::isfinite(r.eval_loss))
      r.eval_loss = rep.eval_loss;

  // The same schedule predicted (plan/predict.h, as `xdc simulate`): modeled costs as
  // slept; real compute as measured in this run, under the same CPU sharing.
  const sim::CostModel costs =
      run_prediction_costs(plan, p, files.trace, "this run, same CPU sharing", r.simulated_costs);
  try {
    // The run as it went: the topology's changes from the launch, aligned on the measured
    // first iteration (mpirun's start-up is not simulated), the events at the iterations
    // they name (plan/predict.h).
    int64_t first_ns = 0;
    for (auto& rep : files.reports)
      if (!rep.iteration_start_ns.empty() &&
          (first_ns == 0 || rep.iteration_start_ns[0] < first_ns))
        first_ns = rep.iteration_start_ns[0];
    const double k = e.time_dilation;
    PredictOptions o;
    o.launch_to_measured_ns =
        first_ns > 0 ? static_cast<int64_t>(static_cast<double>(first_ns) -
                                            static_cast<double>(launched_ns + to_mono_ns) / k)
                     : -1;
    const Prediction pred = predict(plan, p, costs, o);
    set_simulated(r, pred, plan, p);
    if (o.launch_to_measured_ns >= 0)
      r.simulated_launch_s = static_cast<double>(o.launch_to_measured_ns) / 1e9;
    r.simulated_transfers = transfers_json(pred.trace, rank_dcs);
    write_text_file((dir / "simulated.trace.json").string(), trace::to_chrome_json(pred.trace));
    write_text_file((dir / "simulated.trace.csv").string(), trace::to_csv(pred.trace));
  } catch (const std::exception& ex) {
    r.simulated_costs = std::string("simulation failed: ") + ex.what();
  }
  set_throughput(r, plan, p, r.mean());
  r.run_means_s = {r.iteration_s.empty() ? NAN : r.mean()};
  write_text_file((dir / "iterations.csv").string(),
                  iterations_csv_header() + iterations_csv_rows(r));
  write_text_file((dir / "summary.json").string(), summary_json(r).dump(2) + "\n");
  return r;
}

}  // namespace

bool RunOutcome::ok() const {
  for (auto& s : schedules)
    if (!s.ok) return false;
  return !schedules.empty();
}

namespace {

using Say = std::function<void(const std::string&)>;

int64_t realtime_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// What one schedule's job needs of the run around it.
struct RunContext {
  const Experiment& e;
  const RunOptions& opts;
  const Plan& plan;
  const net::NetworkState& state;
  const lab::Lab* lab;         // nullptr off a lab
  const lab::RunFiles* files;  // where a lab's ranks keep their files; nullptr off a lab
  std::string worker;          // the xdc-worker the ranks run
  fs::path root;               // the results directory
  Say say;
};

// The run's setup, said and recorded: the network, its TCP, time dilation and notes
// (environment.json), and the experiment's link check (link_check.json).
void record_setup(const RunContext& c, const RunNetwork& network,
                  const std::vector<std::string>& gpu_notes, double up_s) {
  const Experiment& e = c.e;
  const net::NetworkState& state = c.state;
  c.say(fmt::format("network {} {} ({} WAN directions, shaping {}) in {:.1f} s", state.name,
                    network.owned() ? "up" : "reused", state.links.size(), shaping_backend(state),
                    up_s));
  for (auto& g : net::tcp_groups(state))
    if (!g.tcp.congestion.empty())
      c.say(fmt::format("tcp of {} host(s) ({}...): {}", g.hosts.size(), g.hosts.front(),
                        net::describe(g.tcp)));
  if (e.time_dilation != 1)
    c.say(
        fmt::format("time dilation {:g}: links and modeled compute run {:g} x slower than "
                    "emulated; reported times are divided back",
                    e.time_dilation, e.time_dilation));
  for (auto& n : state.notes) c.say("note: " + n);
  for (auto& n : gpu_notes) c.say("gpu: " + n);
  nlohmann::json env = environment_json(e, state, !network.owned(), &c.plan.worker.host_memory);
  if (c.lab) {
    env["lab"] = lab::placement_json(*c.lab, state, e.rank_hosts());
    c.say("lab " + c.lab->name + ": " + env["lab"]["placement"].get<std::string>());
  }
  write_text_file((c.root / "environment.json").string(), env.dump(2) + "\n");
  if (e.link_check) {
    check::CheckOptions co;
    co.ping_count = 20;
    co.udp_packets = 2000;
    co.throughput = false;
    auto checks =
        check::check_network(state, co, [&](const std::string& m) { c.say("check: " + m); });
    write_text_file((c.root / "link_check.json").string(), check::to_json(checks).dump(2) + "\n");
    c.say("link check:\n" + check::to_table(checks));
  }
}

// The experiment's `events:` during one schedule's job: each fires when the first rank
// starts the iteration it names (the ranks' progress files, run_spec.h, read every 5 ms
// by a thread): a WAN change through `changes`, or a DC's ranks killed.
class EventFirer {
 public:
  EventFirer(const RunContext& c, const SchedulePlan& p, const worker::RunSpec& spec,
             launch::Job& job, linkctl::ChangeSchedule& changes, fs::path dir)
      : c_(c), p_(p), spec_(spec), job_(job), changes_(changes), dir_(std::move(dir)) {}
  ~EventFirer() { stop(); }
  EventFirer(const EventFirer&) = delete;
  EventFirer& operator=(const EventFirer&) = delete;
  void start() {
    if (!c_.e.events.empty()) thread_ = std::thread([this] { poll(); });
  }
  void stop() {
    done_ = true;
    if (thread_.joinable()) thread_.join();
  }
  // What a kill_ranks event did ("" when none fired), for the job's error.
  const std::string& killed() const { return killed_; }

 private:
  void poll() {
    std::vector<std::ifstream> files(spec_.rank_hosts.size());
    std::vector<std::string> partial(files.size());
    int latest = INT_MIN;
    while (!done_ && next_ < c_.e.events.size()) {
      for (size_t q = 0; q < files.size(); ++q) {
        if (!files[q].is_open()) files[q].open(dir_ / ("rank" + std::to_string(q) + ".progress"));
        if (!files[q].is_open()) continue;
        files[q].clear();
        partial[q].append(std::istreambuf_iterator<char>(files[q]), {});
        for (size_t nl; (nl = partial[q].find('\n')) != std::string::npos;) {
          latest = std::max(latest, std::atoi(partial[q].substr(0, nl).c_str()));
          partial[q].erase(0, nl + 1);
        }
      }
      if (latest != INT_MIN) fire(latest);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  void fire(int iteration) {
    const auto& events = c_.e.events;
    for (; next_ < events.size() && events[next_].at_iteration <= iteration; ++next_) {
      const ProgressEvent& ev = events[next_];
      try {
        if (ev.kill_ranks) {
          kill_dc(ev);
          continue;
        }
        changes_.apply_now(event_directions(linkctl::wan_of(c_.state), ev), ev.change,
                           ev.down_for_us, ev.source());
        c_.say(fmt::format("[{}] event at iteration {}: {} {}", p_.choice.name, iteration,
                           ev.dc.empty() ? "link " + ev.link_a + "-" + ev.link_b : "dc " + ev.dc,
                           ev.down_for_us ? "down for " + format_duration(*ev.down_for_us)
                                          : std::string("changed")));
      } catch (const std::exception& ex) {
        c_.say(fmt::format("[{}] event {}: {}", p_.choice.name, ev.source(), ex.what()));
      }
    }
  }
  void kill_dc(const ProgressEvent& ev) {
    std::vector<std::string> hosts;
    std::vector<int> ranks;
    for (size_t q = 0; q < spec_.rank_hosts.size(); ++q)
      if (c_.e.topology.find_host(spec_.rank_hosts[q])->dc == ev.dc) {
        hosts.push_back(spec_.rank_hosts[q]);
        ranks.push_back(static_cast<int>(q));
      }
    const int64_t t = realtime_now_ns();
    const int n = launch::kill_ranks_on(c_.state, job_, hosts);
    linkctl::append_event(c_.state.name, {{"t_ns", t},
                                          {"kind", "dc_kill_ranks"},
                                          {"dc", ev.dc},
                                          {"ranks", ranks},
                                          {"killed", n},
                                          {"source", ev.source()}});
    killed_ = fmt::format("DC {} failed: its rank(s) {} were killed by the event at {}", ev.dc,
                          fmt::join(ranks, ", "), ev.source());
    c_.say(fmt::format("[{}] event: {}", p_.choice.name, killed_));
  }

  const RunContext& c_;
  const SchedulePlan& p_;
  const worker::RunSpec& spec_;
  launch::Job& job_;
  linkctl::ChangeSchedule& changes_;
  const fs::path dir_;
  size_t next_ = 0;  // the next event to fire (the thread's alone)
  std::string killed_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// Why a failed job failed, as far as the run knows, added to its error: a DC's ranks
// killed, files not fetched from the lab, a lost lab machine, a WAN cut in force, the
// network removed under it.
void explain_failure(ScheduleResult& r, const RunContext& c, const launch::Result& res,
                     const std::string& killed, const std::string& unfetched,
                     lab::MachineWatch* watch, int64_t launched_ns, int64_t job_end_ns,
                     int64_t ended_ns) {
  if (r.ok) return;
  if (!killed.empty()) r.error = killed + "; " + r.error;
  if (!unfetched.empty()) r.error += (r.error.empty() ? "" : "; ") + unfetched;
  if (watch)
    if (const std::string lost = watch->lost(); !lost.empty()) {
      // The watch stopped the job (launch::Result's "interrupted"): say why instead.
      std::string rest = r.error.rfind("interrupted", 0) == 0 ? r.error.substr(11) : r.error;
      if (rest.rfind("; ", 0) == 0) rest.erase(0, 2);
      r.error =
          lost + (res.cancelled ? ": the job was stopped" : "") + (rest.empty() ? "" : "; " + rest);
    }
  // A WAN cut still in force when the job failed is the likely cause: name it.
  std::string cut = linkctl::down_links_note(
      linkctl::read_link_events(c.state.name, launched_ns, ended_ns), launched_ns, job_end_ns);
  if (!cut.empty()) r.error += "; " + cut;
  if (!fs::exists(net::state_dir(c.state.name) + "/state.json"))
    r.error += "; network " + c.state.name +
               " was removed during the run (xdc down or xdc clean from elsewhere)";
}

// Repeat k's seeds: the run's, the model's and the prefill's, each + k.
void seed_repeat(worker::RunSpec& spec, int k) {
  spec.seed += static_cast<uint64_t>(k);
  if (spec.model.is_object() && spec.model.contains("seed") &&
      spec.model["seed"].is_number_integer())
    spec.model["seed"] = spec.model["seed"].get<uint64_t>() + static_cast<uint64_t>(k);
  spec.prefill.seed += static_cast<uint64_t>(k);
}

// The job of one schedule (repeat k of the experiment's `repeat`): its spec written, the
// workers launched with the topology's `changes:` and the experiment's `events:` played
// against the WAN (undone after it: every schedule sees the same WAN timeline), its files
// analysed.
// Bytes each WAN direction's egress has sent ("from->to" -> bytes): as segments on a wire
// where the direction has a qdisc of ours (netem::ShapeCounters::sent_bytes), else the
// interface's count (a GSO aggregate's headers once); empty where they cannot be read here
// (a lab's gateways live on other machines).
std::map<std::string, uint64_t> wan_tx_bytes(const net::NetworkState& s) {
  std::map<std::string, uint64_t> out;
  try {
    for (const auto& l : s.links) {
      const uint64_t shaped =
          netem::shape_counters(netem::ShapeRecord::from_json(l.record)).sent_bytes;
      out[l.from + "->" + l.to] = shaped ? shaped : nl::interface_tx_bytes(l.netns, l.ifname);
    }
  } catch (const std::exception&) {
    out.clear();
  }
  return out;
}

// Each host's TCP counters (net::read_tcp_counters), host -> counters; empty where they
// cannot be read here (a lab's hosts live on other machines).
std::map<std::string, net::TcpCounters> host_tcp_counters(const net::NetworkState& s) {
  std::map<std::string, net::TcpCounters> out;
  try {
    for (const auto& h : s.hosts) out[h.name] = net::read_tcp_counters(h.ns);
  } catch (const std::exception&) {
    out.clear();
  }
  return out;
}

// What the hosts' TCP did during the job (summary_schema.h `tcp`): the totals and, per
// host that sent, its own; null where the counters could not be read.
nlohmann::json tcp_during(const std::map<std::string, net::TcpCounters>& before,
                          const std::map<std::string, net::TcpCounters>& after) {
  if (before.empty() || after.size() != before.size()) return nullptr;
  net::TcpCounters total;
  nlohmann::json hosts = nlohmann::json::object();
  for (const auto& [host, a] : after) {
    const net::TcpCounters d = a.since(before.at(host));
    total += d;
    if (d.sent_segments > 0) hosts[host] = d.to_json();
  }
  nlohmann::json j = total.to_json();
  j["hosts"] = hosts;
  return j;
}

ScheduleResult run_schedule(const RunContext& c, const SchedulePlan& p, int k) {
  const Experiment& e = c.e;
  const fs::path dir = c.root / run_subdir(p.choice.name, k, e.repeat);
  fs::create_directories(dir);
  for (auto& old : fs::directory_iterator(dir))  // a rerun into the same directory
    if (old.path().filename().string().rfind("rank", 0) == 0) fs::remove(old.path());
  sched::write_csv_file((dir / "schedule.csv").string(), p.schedule);
  // Where the ranks find their files: here, or on a lab's machines (lab::RunFiles).
  const std::string rank_dir = c.files ? c.files->dir(dir) : dir.string();
  worker::RunSpec spec = run_spec(c.plan, p, rank_dir, rank_dir + "/schedule.csv");
  seed_repeat(spec, k);
  spec.clock_check = c.lab != nullptr;
  worker::write_run_spec((dir / "spec.json").string(), spec);
  if (c.files) c.files->push(dir);

  launch::Job job;
  job.run_dir = dir.string();
  job.rank_hosts = spec.rank_hosts;
  job.program = {c.worker, "--spec", rank_dir + "/spec.json"};
  job.env = {{"OPENBLAS_NUM_THREADS", "1"}, {"OMP_NUM_THREADS", "1"}};
  job.tcp_links = e.tcp_links;
  job.mca = e.mca;
  // The workers' own timeout aborts a wait that lasts too long; this one catches a job
  // that never gets that far (a hung launch, a rank stuck outside MPI): every rank prints
  // a line per iteration, so only a job with no rank advancing for that long is stopped.
  job.stall_timeout = std::chrono::seconds(spec.timeout_s + 60);  // timeout_s x time dilation
  job.cancel = c.opts.cancel;
  std::optional<lab::MachineWatch> watch;
  if (c.lab) job.cancel = watch.emplace(*c.lab, c.state, c.opts.cancel).stop_flag();
  const int report_rank = p.schedule.stage_rank.back();
  const auto launched = std::chrono::steady_clock::now();
  int iterations_done = 0;
  job.on_line = [&](int rank, const std::string& text) {
    const bool iteration = rank == report_rank && text.find(" iteration ") != std::string::npos;
    if (iteration && c.opts.on_iteration) {
      IterationProgress it{
          p.choice.name,
          ++iterations_done,
          e.warmup + e.iterations,
          -1,
          std::chrono::duration<double>(std::chrono::steady_clock::now() - launched).count(),
          text};
      if (const size_t at = text.find(" loss "); at != std::string::npos)
        it.loss = std::atof(text.c_str() + at + 6);
      c.opts.on_iteration(it);
    } else if (iteration || (rank >= 0 && c.opts.rank_lines) ||
               (rank < 0 && text.find("xdc-worker") != std::string::npos)) {
      c.say(fmt::format("  [{}] {}", p.choice.name, text));
    }
  };
  linkctl::ChangeSchedule changes(c.state.name, e.topology, c.state.time_dilation);
  EventFirer events(c, p, spec, job, changes, dir);
  // One line per launch: the run (1-based; its files in repeat-K, 0-based), its seed.
  const std::string run =
      e.repeat > 1 ? fmt::format(" run {} of {} (seed {}):", k + 1, e.repeat, spec.seed) : "";
  c.say(fmt::format("[{}]{} launching {} ranks on {}", p.choice.name, run, spec.rank_hosts.size(),
                    fmt::join(spec.rank_hosts, ",")));
  const int64_t launched_ns = realtime_now_ns();
  if (!changes.empty())
    c.say(fmt::format("[{}] {} scheduled WAN changes", p.choice.name, changes.size()));
  if (!e.events.empty())
    c.say(fmt::format("[{}] {} event(s) at iterations", p.choice.name, e.events.size()));
  if (!changes.empty() || !e.events.empty()) changes.start();
  events.start();
  const auto wan_before = c.lab ? std::map<std::string, uint64_t>() : wan_tx_bytes(c.state);
  const auto tcp_before =
      c.lab ? std::map<std::string, net::TcpCounters>() : host_tcp_counters(c.state);
  const launch::Result res = launch::run_job(c.state, job);
  const auto wan_after = wan_before.empty() ? wan_before : wan_tx_bytes(c.state);
  const auto tcp_after = tcp_before.empty() ? tcp_before : host_tcp_counters(c.state);
  const std::string unfetched = c.files ? c.files->fetch(dir) : "";
  events.stop();
  const int64_t job_end_ns = realtime_now_ns();
  changes.stop();
  const int64_t ended_ns = realtime_now_ns();
  if (!changes.error().empty())
    c.say(fmt::format("[{}] WAN changes: {}", p.choice.name, changes.error()));
  std::vector<nlohmann::json> log;
  if (fs::exists(linkctl::events_path(c.state.name))) {
    log = linkctl::read_link_events(c.state.name, launched_ns, ended_ns);
    write_text_file((dir / "events.json").string(), nlohmann::json(log).dump(2) + "\n");
  }
  ScheduleResult r =
      analyse(c.plan, p, dir, res, log, launched_ns, monotonic_minus_realtime(), spec.seed);
  explain_failure(r, c, res, events.killed(), unfetched, watch ? &*watch : nullptr, launched_ns,
                  job_end_ns, ended_ns);
  if (!wan_after.empty() && wan_after.size() == wan_before.size()) {
    r.wan_wire_bytes = nlohmann::json::object();
    uint64_t total = 0;
    for (const auto& [dir, after] : wan_after) {
      const uint64_t sent = after - wan_before.at(dir);
      r.wan_wire_bytes[dir] = sent;
      total += sent;
    }
    r.wan_wire_bytes["total"] = total;
    if (r.dp_sync.is_object()) add_wan_bytes(r.dp_sync, e, total);
  }
  r.tcp = tcp_during(tcp_before, tcp_after);
  if (r.tcp.is_object() && r.tcp["timeouts"].get<int64_t>() > 0)
    c.say(
        fmt::format("[{}] the hosts' TCP: {} retransmission timeout(s), each a stall of at "
                    "least 200 ms; {} fast recoveries, {} tail loss probes, {:.2f}% of "
                    "segments sent again",
                    p.choice.name, r.tcp["timeouts"].get<int64_t>(),
                    r.tcp["fast_recoveries"].get<int64_t>(), r.tcp["loss_probes"].get<int64_t>(),
                    100 * r.tcp["retransmitted_segments"].get<double>() /
                        std::max(1.0, r.tcp["sent_segments"].get<double>())));
  if (r.tp_stalls.is_object() && r.tp_stalls["stalled"].get<int64_t>() > 0)
    c.say(fmt::format(
        "[{}] {} of {} tensor-parallel all-reduce records took 200 ms or more "
        "longer than their median ({:.2f} s in all), as long as a TCP timer's wait; "
        "the simulator does not model those",
        p.choice.name, r.tp_stalls["stalled"].get<int64_t>(), r.tp_stalls["records"].get<int64_t>(),
        r.tp_stalls["excess_ms"].get<double>() / 1e3));
  c.say(r.ok ? fmt::format("[{}] done in {:.1f} s: iteration {:.3f} s (simulated {:.3f} s)",
                           p.choice.name, res.seconds, r.mean(), r.simulated_iteration_s)
             : fmt::format("[{}] FAILED after {:.1f} s: {} (what was measured is kept in {})",
                           p.choice.name, res.seconds, r.error, dir.string()));
  return r;
}

void say_prefill(const std::vector<ScheduleResult>& rs, const Say& say) {
  for (const auto& r : rs)
    if (r.prefill.is_object())
      say(fmt::format(
          "[{}] prefill: {} served, {} rejected, {} unfinished; utilisation {:.1f}% "
          "(without prefill {:.1f}%), training {:+.2f}%, TTFT p50 {:.1f} ms p99 "
          "{:.1f} ms; {} wait(s) overran by {:.1f} ms in all",
          r.schedule, r.prefill.value("served", 0), r.prefill.value("rejected", 0),
          r.prefill.value("unfinished", 0), 100 * r.prefill.value("utilisation_with", 0.0),
          100 * r.prefill.value("utilisation_without", 0.0),
          r.prefill.value("training_slowdown_pct", 0.0), r.prefill.value("ttft_ms_p50", 0.0),
          r.prefill.value("ttft_ms_p99", 0.0), r.prefill.value("overruns", 0),
          r.prefill.value("overrun_ms", 0.0)));
}

// On a lab the workers run on the machines: their xdc-worker beside the lab's xdc.
std::string worker_program(const std::optional<lab::Lab>& lab) {
  const std::string worker = !lab ? proc::sibling_exe("xdc-worker")
                             : fs::path(lab->xdc).is_absolute()
                                 ? (fs::path(lab->xdc).parent_path() / "xdc-worker").string()
                                 : std::string("xdc-worker");
  if (!lab && !fs::exists(worker)) throw std::runtime_error("xdc-worker not found at " + worker);
  return worker;
}

// Every schedule's runs in run_order (each repeat of a schedule on the same network),
// until cancelled, each recorded in `ledger`, and summary.json rewritten from it as each
// starts and ends (resume.h); the runs it already has (--resume) are said and kept.
void run_all(const RunContext& c, const std::function<bool()>& cancelled, RunLedger& ledger) {
  const std::vector<SchedulePlan>& schedules = c.plan.schedules;
  const auto save = [&] {
    ledger.write(ledger.results(), shaping_backend(c.state), c.state.name, cancelled());
  };
  for (const RunSlot& slot : run_order(schedules.size(), c.e.repeat)) {
    const SchedulePlan& p = schedules[slot.schedule];
    if (ledger.kept(slot)) {
      c.say(ledger.kept_line(slot));
      continue;
    }
    if (cancelled()) break;
    ledger.start(slot);
    save();
    ScheduleResult r;
    if (!fs::exists(net::state_dir(c.state.name) + "/state.json")) {
      // Removed under the run (`xdc down`/`xdc clean` from elsewhere): say so.
      r.schedule = p.choice.name;
      r.error = "network " + c.state.name + " was removed during the run (xdc down or xdc clean)";
      r.run_seeds = {c.e.seed + static_cast<uint64_t>(slot.repeat)};
      r.run_means_s = {NAN};
      c.say(fmt::format("[{}] FAILED: {}", p.choice.name, r.error));
    } else {
      r = run_schedule(c, p, slot.repeat);
    }
    if (!r.ok && cancelled())
      ledger.stopped(slot);  // not a result: the run goes again on --resume
    else
      ledger.finish(slot, std::move(r));
    save();
  }
  if (cancelled()) ledger.cancel_rest();
  ledger.write_pooled();
}

}  // namespace

RunOutcome run_experiment(const Experiment& e, const RunOptions& opts) {
  const Say say = [&](const std::string& m) {
    if (opts.progress) opts.progress(m);
  };
  auto cancelled = [&] { return opts.cancel && opts.cancel->load(); };
  if (e.workload) return run_workload(e, opts);
  // Everything that can be wrong with the input is found before anything is built.
  Plan plan = make_plan(e);
  if (e.data_parallel > 1) plan.worker.host_memory = measure_host_memory();  // libnbc's work
  if (e.dp_sync.collective == DpSync::Collective::kGloo)
    throw InputError(e.dp_sync.collective_pos,
                     "dp_sync.collective: gloo describes a torch program's all-reduce for the "
                     "simulator (`xdc simulate`); xdc-worker all-reduces with OpenMPI: remove "
                     "it, or run the program itself with a `workload:` block");
  const std::vector<std::string> gpu_notes = check_gpus_here(e);
  std::optional<lab::Lab> lab;
  if (!opts.lab_file.empty()) {
    lab = lab::load_lab(opts.lab_file);
    check_lab_run(e, opts, *lab);
  }
  if (!opts.network.empty()) RunNetwork::reusable(e, opts);
  const std::string worker = worker_program(lab);

  RunOutcome out;
  out.out_dir = fs::absolute(opts.out_dir.empty() ? default_out_dir(e) : opts.out_dir).string();
  const fs::path root = out.out_dir;
  if (opts.resume) check_resumable(root.string(), e);
  write_experiment(root.string(), e);  // creates the directory
  say(fmt::format(
      "{}: {} schedule(s){}, {} rank(s) ({} stages x {} replicas{}), {} compute; results in {}",
      e.name, plan.schedules.size(),
      e.repeat > 1 ? fmt::format(" x {} repeats, interleaved", e.repeat) : "", e.world_size(),
      e.stages, e.data_parallel,
      e.tensor_parallel > 1 ? fmt::format(" x {} TP ranks", e.tensor_parallel) : "",
      e.compute.name(), out.out_dir));
  RunLedger ledger(plan, root.string());
  if (opts.resume) {
    const int kept = ledger.keep_finished();
    say(fmt::format("resuming {}: {} of {} run(s) finished ok there and are kept, {} to run",
                    out.out_dir, kept, ledger.slots(), ledger.slots() - kept));
  }
  const auto t_up = std::chrono::steady_clock::now();
  RunNetwork network(e, opts, lab ? &*lab : nullptr);
  const net::NetworkState& state = network.state();
  std::optional<lab::RunFiles> files;
  if (lab && files.emplace(*lab, state, root).shared())
    say("lab: every machine sees " + root.string() + ": the ranks write there");
  else if (lab)
    say("lab: the machines do not see " + root.string() +
        ": each schedule's files are fetched from them after its job");
  const RunContext c{e,      opts, plan, state, lab ? &*lab : nullptr, files ? &*files : nullptr,
                     worker, root, say};
  record_setup(c, network, gpu_notes,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t_up).count());
  run_all(c, cancelled, ledger);
  if (cancelled()) say("interrupted: stopping, tearing the network down");
  out.schedules = ledger.results();
  say_prefill(out.schedules, say);
  ledger.write(out.schedules, shaping_backend(state), state.name, cancelled());
  return out;  // ~RunNetwork tears down
}

}  // namespace xdc::run
