#include "harness/run/runner.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
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
#include "harness/check/link_check.h"
#include "harness/common/units.h"
#include "harness/lab/remote.h"
#include "harness/launch/launcher.h"
#include "harness/linkctl/change_schedule.h"
#include "harness/network/builder.h"
#include "harness/network/names.h"
#include "harness/network/tcp.h"
#include "harness/network/teardown.h"
#include "harness/process/process.h"
#include "harness/run/environment.h"
#include "harness/run/plan.h"
#include "harness/run/predict.h"
#include "harness/run/prefill.h"
#include "harness/sim/simulator.h"
#include "harness/trace/chrome.h"
#include "workloads/schedule/csv.h"

namespace xdc::run {
namespace fs = std::filesystem;
namespace {

void write(const fs::path& p, const std::string& text) {
  std::ofstream out(p);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + p.string());
}

// The network of this run: built here (and torn down on every way out) or borrowed.
class RunNetwork {
 public:
  // The network `o.network` if it can serve `e`; InputError otherwise.
  static net::NetworkState reusable(const Experiment& e, const RunOptions& o) {
    auto s = net::load_state(o.network);
    if (!s) throw InputError("--network " + o.network + ": no such network is up (xdc ls)");
    if (s->time_dilation != e.time_dilation)
      throw InputError(
          e.time_dilation_pos.file.empty() ? SourcePos{e.source_file, 0, 0} : e.time_dilation_pos,
          fmt::format("time_dilation {:g} needs a network built with it; --network "
                      "{} was built with time dilation {:g} (xdc up "
                      "--time-dilation {:g}, or drop --network)",
                      e.time_dilation, o.network, s->time_dilation, e.time_dilation));
    for (auto& h : e.rank_hosts())
      if (!s->find_host(h))
        throw InputError("--network " + o.network + ": has no host '" + h +
                         "' that the placement names");
    // The experiment's TCP (its topology's `tcp:` and its own) is the network's, or the
    // run would record settings it did not ask for.
    for (auto& h : e.rank_hosts()) {
      const net::HostTcp& has = s->find_host(h)->tcp;
      const net::HostTcp want = net::expected_tcp(e.topology.find_host(h)->tcp);
      if (!has.congestion.empty() && !(has == want))
        throw InputError("--network " + o.network + ": host " + h + " has TCP " +
                         net::describe(has) + ", the experiment asks for " + net::describe(want) +
                         " (drop --network to build a network with the experiment's TCP)");
    }
    return *s;
  }
  RunNetwork(const Experiment& e, const RunOptions& o, const lab::Lab* lab) : lab_(lab) {
    if (!o.network.empty()) {
      state_ = reusable(e, o);
      return;
    }
    net::BuildOptions b;
    b.name = o.network_name.empty() ? fmt::format("r{}", getpid() % 10000000) : o.network_name;
    if (lab) {
      std::vector<std::string> extra;
      if (e.shaping) extra.insert(extra.end(), {"--shaping", netem::to_string(*e.shaping)});
      if (e.time_dilation != 1)
        extra.insert(extra.end(), {"--time-dilation", fmt::format("{}", e.time_dilation)});
      // Each machine builds the experiment's topology (its wan/tcp overrides applied) from
      // the experiment file, at the same path there.
      extra.push_back("--experiment-topology");
      name_ = b.name;
      std::string failed;
      for (const auto& m :
           lab::up_lab(*lab, e.topology, fs::absolute(e.source_file).string(), name_, extra))
        if (!m.ok) failed += (failed.empty() ? "" : "; ") + m.machine + ": " + m.message;
      if (!failed.empty()) throw std::runtime_error("xdc up --lab failed: " + failed);
      auto s = net::load_state(name_);
      if (!s) throw std::runtime_error("the lab network " + name_ + " left no record here");
      state_ = *s;
      owned_ = true;
      return;
    }
    b.shaping = e.shaping;
    b.time_dilation = e.time_dilation;
    name_ = b.name;  // set first: a half-built network is undone by the builder itself
    state_ = net::build_network(e.topology, b);
    owned_ = true;
  }
  ~RunNetwork() {
    if (owned_ && lab_) {
      for (const auto& m : lab::down_lab(*lab_, name_))
        if (!m.ok)
          fmt::print(stderr, "xdc: {}: taking network {} down: {} (xdc clean --lab {})\n",
                     m.machine, name_, m.message, lab_->source_file);
    } else if (owned_) {
      if (std::string left = net::teardown_or_error(name_); !left.empty())
        fmt::print(stderr, "xdc: tearing down network {}: {} (xdc down {})\n", name_, left, name_);
    }
  }
  RunNetwork(const RunNetwork&) = delete;
  RunNetwork& operator=(const RunNetwork&) = delete;
  const net::NetworkState& state() const { return state_; }
  bool owned() const { return owned_; }

 private:
  net::NetworkState state_;
  std::string name_;
  bool owned_ = false;
  const lab::Lab* lab_ = nullptr;
};

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

// The lab's machines that hold hosts of `state` (a lab network's merged record).
std::vector<const lab::Machine*> machines_holding_hosts(const lab::Lab& lab,
                                                        const net::NetworkState& state) {
  std::set<std::string> names;
  for (const auto& h : state.hosts) names.insert(h.machine);
  std::vector<const lab::Machine*> out;
  for (const std::string& n : names)
    if (const lab::Machine* m = lab.find(n)) out.push_back(m);
  return out;
}

// Where a lab run's ranks read their spec and write their files. When every machine holding
// hosts sees the results directory (a shared filesystem: a marker file written here is
// looked for over ssh), the directory itself. Otherwise (Vagrant's rsync'ed /vagrant) a
// directory per schedule under the network's state on each machine (so `xdc down`/`clean`
// there remove it): the spec and schedule pushed before the job, every file fetched back
// (tar over ssh) after it, the remote copy removed.
class LabFiles {
 public:
  LabFiles(const lab::Lab& lab, const net::NetworkState& state, const fs::path& root)
      : net_(state.name), machines_(machines_holding_hosts(lab, state)) {
    const fs::path marker = root / fmt::format(".lab-{}", getpid());
    write(marker, "xdc run --lab\n");
    for (const lab::Machine* m : machines_)
      if (lab::run_on(*m, {"test", "-e", marker.string()}, std::chrono::seconds(60)).exit_code != 0)
        shared_ = false;
    fs::remove(marker);
  }
  bool shared() const { return shared_; }
  // The machines' directory for the schedule whose results go to `local`.
  std::string dir(const fs::path& local) const {
    return shared_ ? local.string() : net::state_dir(net_) + "/run/" + local.filename().string();
  }
  // Before the job: the spec and schedule to every machine.
  void push(const fs::path& local) const {
    if (shared_) return;
    for (const lab::Machine* m : machines_) {
      const proc::Result r = through_ssh(
          "tar -C " + lab::shell_quote(local.string()) + " -cf - spec.json schedule.csv", *m,
          {"sh", "-c", R"(rm -rf "$1" && mkdir -p "$1" && tar -xf - -C "$1")", "sh", dir(local)},
          "");
      if (r.exit_code != 0)
        throw std::runtime_error(m->name + ": cannot write the schedule's files: " + r.err);
    }
  }
  // After the job: every machine's files into `local`, the machine's copy removed; "" or
  // which machines' files could not be fetched.
  std::string fetch(const fs::path& local) const {
    if (shared_) return "";
    std::string missed;
    for (const lab::Machine* m : machines_) {
      const proc::Result r = through_ssh("", *m, {"tar", "-C", dir(local), "-cf", "-", "."},
                                         "tar -xf - -C " + lab::shell_quote(local.string()));
      if (r.exit_code == 0)
        lab::run_on(*m, {"rm", "-rf", dir(local)}, std::chrono::minutes(1));
      else
        missed += (missed.empty() ? "" : ", ") + m->name;
    }
    return missed.empty() ? "" : "the files of machine(s) " + missed + " could not be fetched";
  }

 private:
  // `before | ssh m remote | after` through the local shell (either side may be ""): a
  // schedule's files may be larger than one command-line argument may be.
  static proc::Result through_ssh(const std::string& before, const lab::Machine& m,
                                  const std::vector<std::string>& remote,
                                  const std::string& after) {
    std::string ssh;
    for (const std::string& w : lab::ssh_argv(m, remote)) ssh += lab::shell_quote(w) + " ";
    return proc::run(
        {"sh", "-c",
         (before.empty() ? "" : before + " | ") + ssh + (after.empty() ? "" : "| " + after)},
        std::chrono::minutes(5));
  }
  std::string net_;
  std::vector<const lab::Machine*> machines_;
  bool shared_ = true;
};

// While a lab job runs, every machine that holds hosts is pinged (its ssh address) once a
// second; one that misses 5 in a row and then does not answer over ssh is lost, and the job
// is stopped at once: a machine that vanished sends no FIN, so mpirun would wait for TCP to
// give up on its daemon, the workers for their timeout_s. After a failed job, lost() also
// asks every machine over ssh (one may have gone between two pings).
class LabWatch {
 public:
  LabWatch(const lab::Lab& lab, const net::NetworkState& state, const std::atomic<bool>* cancel)
      : machines_(machines_holding_hosts(lab, state)), cancel_(cancel) {
    thread_ = std::thread([this] { watch(); });
  }
  ~LabWatch() {
    done_ = true;
    if (thread_.joinable()) thread_.join();
  }
  LabWatch(const LabWatch&) = delete;
  LabWatch& operator=(const LabWatch&) = delete;
  // What the job polls: set on SIGINT (the run's cancel) or when a machine is lost.
  const std::atomic<bool>* stop_flag() const { return &stop_; }
  // "" or "lab machine(s) NAME lost (...)"; call once the job is over.
  std::string lost() {
    done_ = true;
    if (thread_.joinable()) thread_.join();
    if (lost_.empty())
      for (const lab::Machine* m : machines_)
        if (!answers_ssh(*m)) lost_ += (lost_.empty() ? "" : ", ") + m->name;
    return lost_.empty() ? "" : "lab machine(s) " + lost_ + " lost (no answer to ping or ssh)";
  }

 private:
  // Both probes without pipes (proc::run_quiet): mpirun, started meanwhile, would inherit them.
  static bool answers_ssh(const lab::Machine& m) {
    return proc::run_quiet(lab::ssh_argv(m, {"true"}), std::chrono::seconds(20)) == 0;
  }
  void watch() {
    std::map<const lab::Machine*, int> missed;
    while (!done_) {
      if (cancel_ && cancel_->load()) stop_ = true;
      for (const lab::Machine* m : machines_) {
        if (done_) return;
        const bool up = proc::run_quiet({"ping", "-n", "-q", "-c", "1", "-W", "1", m->ssh},
                                        std::chrono::seconds(3)) == 0;
        missed[m] = up ? 0 : missed[m] + 1;
        if (missed[m] < 5) continue;
        if (!answers_ssh(*m)) {
          lost_ = m->name;
          stop_ = true;
          return;
        }
        missed[m] = 0;  // it answers ssh, not ping (ICMP filtered): ask again in 5 s
      }
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
  }
  std::vector<const lab::Machine*> machines_;
  const std::atomic<bool>* cancel_;
  std::atomic<bool> stop_{false}, done_{false};
  std::string lost_;  // written by the thread before it ends, read after the join
  std::thread thread_;
};

// environment.json's "lab": per machine its DCs, hosts and ranks; and one line for the
// report.
nlohmann::json lab_json(const lab::Lab& lab, const net::NetworkState& state,
                        const std::vector<std::string>& rank_hosts) {
  nlohmann::json machines = nlohmann::json::object();
  for (const auto& h : state.hosts) {
    auto& m = machines[h.machine];
    m["ssh"] = lab.find(h.machine) ? lab.find(h.machine)->ssh : "";
    auto& dcs = m["dcs"];
    if (!dcs.is_array()) dcs = nlohmann::json::array();
    if (std::find(dcs.begin(), dcs.end(), h.dc) == dcs.end()) dcs.push_back(h.dc);
    m["hosts"].push_back(h.name);
  }
  std::string line;
  for (size_t r = 0; r < rank_hosts.size(); ++r)
    if (const net::HostState* h = state.find_host(rank_hosts[r]))
      machines[h->machine]["ranks"].push_back(r);
  for (auto& [name, m] : machines.items())
    line += fmt::format("{}{} ({}: ranks {})", line.empty() ? "" : ", ", name,
                        fmt::join(m["dcs"].get<std::vector<std::string>>(), "+"),
                        m.contains("ranks") ? m["ranks"].dump() : "none");
  return {
      {"file", state.lab_file}, {"name", lab.name}, {"machines", machines}, {"placement", line}};
}

std::string default_out_dir(const Experiment& e) {
  char date[32];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y%m%d-%H%M%S", std::gmtime(&now));
  return (fs::path("results") / (std::string(date) + "-" + e.name)).string();
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
                       int64_t launched_ns, int64_t to_mono_ns) {
  const Experiment& e = plan.experiment;
  ScheduleResult r;
  r.schedule = p.choice.name;
  r.ok = job.ok();
  r.error = job.message();
  RankFiles files = read_rank_files(dir.string(), e.world_size(), p.choice.name, e.time_dilation);
  if (!files.missing.empty() && r.ok) {
    r.ok = false;
    r.error = fmt::format("{} rank(s) wrote no report (first: rank {})", files.missing.size(),
                          files.missing[0]);
  }
  trace::write_file(
      (dir / "trace.json").string(),
      trace::to_chrome_json(files.trace, event_markers(events, to_mono_ns, e.time_dilation)));
  trace::write_file((dir / "trace.csv").string(), trace::to_csv(files.trace));
  std::vector<std::string> rank_dcs;
  for (const std::string& h : e.rank_hosts()) rank_dcs.push_back(e.topology.find_host(h)->dc);
  for (const auto& it : split_iterations(files)) {
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
  r.utilisation = utilisation(files, true);
  if (p.prefill) r.prefill = prefill_json(files);

  // The same schedule predicted (predict.h, as `xdc simulate`): modeled costs as
  // slept; real compute as measured in this run, under the same CPU sharing.
  sim::CostModel costs = p.costs;
  r.simulated_costs = simulated_costs_label(plan);
  if (e.compute.mode == Compute::Mode::kReal && !files.trace.events.empty()) {
    costs = measured_costs(files.trace, p.costs);
    r.simulated_costs = "measured compute durations (this run, same CPU sharing)";
  }
  try {
    // The run as it went: the topology's changes from the launch, aligned on the measured
    // first iteration (mpirun's start-up is not simulated), the events at the iterations
    // they name (predict.h).
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
    r.simulated_transfers = transfers_json(pred.trace, rank_dcs);
    trace::write_file((dir / "simulated.trace.json").string(), trace::to_chrome_json(pred.trace));
    trace::write_file((dir / "simulated.trace.csv").string(), trace::to_csv(pred.trace));
  } catch (const std::exception& ex) {
    r.simulated_costs = std::string("simulation failed: ") + ex.what();
  }
  set_throughput(r, plan, p, r.mean());
  write(dir / "iterations.csv", iterations_csv_header() + iterations_csv_rows(r));
  write(dir / "summary.json", summary_json(r).dump(2) + "\n");
  return r;
}

}  // namespace

bool RunOutcome::ok() const {
  for (auto& s : schedules)
    if (!s.ok) return false;
  return !schedules.empty();
}

RunOutcome run_experiment(const Experiment& e, const RunOptions& opts) {
  auto say = [&](const std::string& m) {
    if (opts.progress) opts.progress(m);
  };
  auto cancelled = [&] { return opts.cancel && opts.cancel->load(); };
  // Everything that can be wrong with the input is found before anything is built.
  const Plan plan = make_plan(e);
  const std::vector<SchedulePlan>& plans = plan.schedules;
  const std::vector<std::string> gpu_notes = check_gpus_here(e);
  std::optional<lab::Lab> lab;
  if (!opts.lab_file.empty()) {
    lab = lab::load_lab(opts.lab_file);
    check_lab_run(e, opts, *lab);
  }
  if (!opts.network.empty()) RunNetwork::reusable(e, opts);
  // On a lab the workers run on the machines: their xdc-worker beside the lab's xdc.
  const std::string worker = !lab ? proc::sibling_exe("xdc-worker")
                             : fs::path(lab->xdc).is_absolute()
                                 ? (fs::path(lab->xdc).parent_path() / "xdc-worker").string()
                                 : std::string("xdc-worker");
  if (!lab && !fs::exists(worker)) throw std::runtime_error("xdc-worker not found at " + worker);

  RunOutcome out;
  out.out_dir = fs::absolute(opts.out_dir.empty() ? default_out_dir(e) : opts.out_dir).string();
  const fs::path root = out.out_dir;
  write_experiment(root.string(), e);  // creates the directory

  say(
      fmt::format("{}: {} schedule(s), {} rank(s) ({} stages x {} replicas{}), {} compute; results "
                  "in {}",
                  e.name, plans.size(), e.world_size(), e.stages, e.data_parallel,
                  e.tensor_parallel > 1 ? fmt::format(" x {} TP ranks", e.tensor_parallel) : "",
                  e.compute.name(), out.out_dir));
  const auto t_up = std::chrono::steady_clock::now();
  RunNetwork network(e, opts, lab ? &*lab : nullptr);
  const net::NetworkState& state = network.state();
  std::optional<LabFiles> lab_files;
  if (lab && lab_files.emplace(*lab, state, root).shared())
    say("lab: every machine sees " + root.string() + ": the ranks write there");
  else if (lab)
    say("lab: the machines do not see " + root.string() +
        ": each schedule's files are fetched from them after its job");
  say(fmt::format("network {} {} ({} WAN directions, shaping {}) in {:.1f} s", state.name,
                  network.owned() ? "up" : "reused", state.links.size(), shaping_backend(state),
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - t_up).count()));
  for (auto& g : net::tcp_groups(state))
    if (!g.tcp.congestion.empty())
      say(fmt::format("tcp of {} host(s) ({}...): {}", g.hosts.size(), g.hosts.front(),
                      net::describe(g.tcp)));
  if (e.time_dilation != 1)
    say(
        fmt::format("time dilation {:g}: links and modeled compute run {:g} x slower than "
                    "emulated; reported times are divided back",
                    e.time_dilation, e.time_dilation));
  for (auto& n : state.notes) say("note: " + n);
  for (auto& n : gpu_notes) say("gpu: " + n);
  nlohmann::json env = environment_json(e, state, !network.owned());
  if (lab) {
    env["lab"] = lab_json(*lab, state, e.rank_hosts());
    say("lab " + lab->name + ": " + env["lab"]["placement"].get<std::string>());
  }
  write(root / "environment.json", env.dump(2) + "\n");
  if (e.link_check) {
    check::CheckOptions co;
    co.ping_count = 20;
    co.udp_packets = 2000;
    co.throughput = false;
    auto checks =
        check::check_network(state, co, [&](const std::string& m) { say("check: " + m); });
    write(root / "link_check.json", check::to_json(checks).dump(2) + "\n");
    say("link check:\n" + check::to_table(checks));
  }

  for (const auto& p : plans) {
    if (cancelled()) break;
    if (!fs::exists(net::state_dir(state.name) + "/state.json")) {
      // Removed under the run (`xdc down`/`xdc clean` from elsewhere): say so once.
      ScheduleResult gone;
      gone.schedule = p.choice.name;
      gone.error = "network " + state.name + " was removed during the run (xdc down or xdc clean)";
      say(fmt::format("[{}] FAILED: {}", p.choice.name, gone.error));
      out.schedules.push_back(std::move(gone));
      continue;
    }
    const fs::path dir = root / p.choice.name;
    fs::create_directories(dir);
    for (auto& old : fs::directory_iterator(dir))  // a rerun into the same directory
      if (old.path().filename().string().rfind("rank", 0) == 0) fs::remove(old.path());
    sched::write_csv_file((dir / "schedule.csv").string(), p.schedule);
    // Where the ranks find their files: here, or on a lab's machines (LabFiles).
    const std::string rank_dir = lab_files ? lab_files->dir(dir) : dir.string();
    worker::RunSpec spec = run_spec(plan, p, rank_dir, rank_dir + "/schedule.csv");
    spec.clock_check = lab.has_value();
    worker::write_run_spec((dir / "spec.json").string(), spec);
    if (lab_files) lab_files->push(dir);

    launch::Job job;
    job.run_dir = dir.string();
    job.rank_hosts = spec.rank_hosts;
    job.program = {worker, "--spec", rank_dir + "/spec.json"};
    job.env = {{"OPENBLAS_NUM_THREADS", "1"}, {"OMP_NUM_THREADS", "1"}};
    job.tcp_links = e.tcp_links;
    job.mca = e.mca;
    // The workers' own timeout aborts a wait that lasts too long; this one catches a
    // job that never gets that far (a hung launch, a rank stuck outside MPI).
    job.timeout = std::chrono::seconds(spec.timeout_s + 60);  // timeout_s x time dilation
    job.cancel = opts.cancel;
    std::optional<LabWatch> watch;
    if (lab) job.cancel = watch.emplace(*lab, state, opts.cancel).stop_flag();
    const int report_rank = p.schedule.stage_rank.back();
    // The topology's `changes:` run against the WAN during each schedule, from its launch,
    // and are undone after it: every schedule sees the same WAN timeline. The experiment's
    // `events:` fire when the first rank starts the iteration they name. What was applied
    // (and any `xdc link` change made meanwhile) goes to events.json.
    linkctl::ChangeSchedule changes(state.name, e.topology, state.time_dilation);
    size_t next_event = 0;
    std::string killed;  // what a kill_ranks event did, for the error
    auto fire_events = [&](int iteration) {
      for (; next_event < e.events.size() && e.events[next_event].at_iteration <= iteration;
           ++next_event) {
        const ProgressEvent& ev = e.events[next_event];
        try {
          if (ev.kill_ranks) {
            std::vector<std::string> hosts;
            std::vector<int> ranks;
            for (size_t q = 0; q < spec.rank_hosts.size(); ++q)
              if (e.topology.find_host(spec.rank_hosts[q])->dc == ev.dc) {
                hosts.push_back(spec.rank_hosts[q]);
                ranks.push_back(static_cast<int>(q));
              }
            const int64_t t = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count();
            const int n = launch::kill_ranks_on(state, job, hosts);
            linkctl::append_event(state.name, {{"t_ns", t},
                                               {"kind", "dc_kill_ranks"},
                                               {"dc", ev.dc},
                                               {"ranks", ranks},
                                               {"killed", n},
                                               {"source", ev.source()}});
            killed = fmt::format("DC {} failed: its rank(s) {} were killed by the event at {}",
                                 ev.dc, fmt::join(ranks, ", "), ev.source());
            say(fmt::format("[{}] event: {}", p.choice.name, killed));
            continue;
          }
          changes.apply_now(event_directions(linkctl::wan_of(state), ev), ev.change, ev.down_for_us,
                            ev.source());
          say(fmt::format("[{}] event at iteration {}: {} {}", p.choice.name, iteration,
                          ev.dc.empty() ? "link " + ev.link_a + "-" + ev.link_b : "dc " + ev.dc,
                          ev.down_for_us ? "down for " + format_duration(*ev.down_for_us)
                                         : std::string("changed")));
        } catch (const std::exception& ex) {
          say(fmt::format("[{}] event {}: {}", p.choice.name, ev.source(), ex.what()));
        }
      }
    };
    job.on_line = [&](int rank, const std::string& text) {
      if (rank == report_rank && text.find("iteration") != std::string::npos)
        say(fmt::format("  [{}] {}", p.choice.name, text));
      else if (rank < 0 && text.find("xdc-worker") != std::string::npos)
        say(fmt::format("  [{}] {}", p.choice.name, text));
    };
    say(fmt::format("[{}] launching {} ranks on {}", p.choice.name, spec.rank_hosts.size(),
                    fmt::join(spec.rank_hosts, ",")));
    const int64_t launched_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                    std::chrono::system_clock::now().time_since_epoch())
                                    .count();
    if (!changes.empty())
      say(fmt::format("[{}] {} scheduled WAN changes", p.choice.name, changes.size()));
    if (!e.events.empty())
      say(fmt::format("[{}] {} event(s) at iterations", p.choice.name, e.events.size()));
    if (!changes.empty() || !e.events.empty()) changes.start();
    // The ranks' progress files (run_spec.h), read every 5 ms while events wait: the first
    // rank to start an iteration fires the events at it.
    std::atomic<bool> job_done{false};
    std::thread progress;
    if (!e.events.empty())
      progress = std::thread([&] {
        std::vector<std::ifstream> files(spec.rank_hosts.size());
        std::vector<std::string> partial(files.size());
        int latest = INT_MIN;
        while (!job_done && next_event < e.events.size()) {
          for (size_t q = 0; q < files.size(); ++q) {
            if (!files[q].is_open())
              files[q].open(dir / ("rank" + std::to_string(q) + ".progress"));
            if (!files[q].is_open()) continue;
            files[q].clear();
            partial[q].append(std::istreambuf_iterator<char>(files[q]), {});
            for (size_t nl; (nl = partial[q].find('\n')) != std::string::npos;) {
              latest = std::max(latest, std::atoi(partial[q].substr(0, nl).c_str()));
              partial[q].erase(0, nl + 1);
            }
          }
          if (latest != INT_MIN) fire_events(latest);
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
      });
    struct JoinOnExit {  // a throw below (the launch, the lab's fetch) must not leave it joinable
      std::atomic<bool>& done;
      std::thread& t;
      ~JoinOnExit() {
        done = true;
        if (t.joinable()) t.join();
      }
    } join_progress{job_done, progress};
    const launch::Result res = launch::run_job(state, job);
    job_done = true;
    const std::string unfetched = lab_files ? lab_files->fetch(dir) : "";
    if (progress.joinable()) progress.join();
    const int64_t job_end_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count();
    changes.stop();
    const int64_t ended_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();
    if (!changes.error().empty())
      say(fmt::format("[{}] WAN changes: {}", p.choice.name, changes.error()));
    std::vector<nlohmann::json> events;
    if (fs::exists(linkctl::events_path(state.name))) {
      events = linkctl::read_link_events(state.name, launched_ns, ended_ns);
      write(dir / "events.json", nlohmann::json(events).dump(2) + "\n");
    }
    ScheduleResult r = analyse(plan, p, dir, res, events, launched_ns, monotonic_minus_realtime());
    if (!r.ok && !killed.empty()) r.error = killed + "; " + r.error;
    if (!r.ok && !unfetched.empty()) r.error += (r.error.empty() ? "" : "; ") + unfetched;
    if (!r.ok && watch)
      if (const std::string lost = watch->lost(); !lost.empty()) {
        // The watch stopped the job (launch::Result's "interrupted"): say why instead.
        std::string rest = r.error.rfind("interrupted", 0) == 0 ? r.error.substr(11) : r.error;
        if (rest.rfind("; ", 0) == 0) rest.erase(0, 2);
        r.error = lost + (res.cancelled ? ": the job was stopped" : "") +
                  (rest.empty() ? "" : "; " + rest);
      }
    if (!r.ok) {  // a WAN cut still in force when the job failed is the likely cause: name it
      std::string cut = linkctl::down_links_note(
          linkctl::read_link_events(state.name, launched_ns, ended_ns), launched_ns, job_end_ns);
      if (!cut.empty()) r.error += "; " + cut;
    }
    if (!r.ok && !fs::exists(net::state_dir(state.name) + "/state.json"))
      r.error += "; network " + state.name +
                 " was removed during the run (xdc down or xdc clean from elsewhere)";
    say(r.ok ? fmt::format("[{}] done in {:.1f} s: iteration {:.3f} s (simulated {:.3f} s)",
                           p.choice.name, res.seconds, r.mean(), r.simulated_iteration_s)
             : fmt::format("[{}] FAILED after {:.1f} s: {} (what was measured is kept in {})",
                           p.choice.name, res.seconds, r.error, dir.string()));
    out.schedules.push_back(std::move(r));
  }
  if (cancelled()) say("interrupted: stopping, tearing the network down");
  compare_with_baselines(out.schedules);
  for (const auto& r : out.schedules)
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

  const nlohmann::json summary =
      run_summary_json(plan, out.schedules, shaping_backend(state), state.name, cancelled());
  std::string rows;
  for (auto& r : out.schedules) rows += iterations_csv_rows(r);
  write(root / "summary.json", summary.dump(2) + "\n");
  write(root / "iterations.csv", iterations_csv_header() + rows);
  return out;  // ~RunNetwork tears down
}

}  // namespace xdc::run
