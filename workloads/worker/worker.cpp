#include "workloads/worker/worker.h"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "common/input_error.h"
#include "workloads/schedule/csv.h"
#include "workloads/schedule/validate.h"
#include "workloads/worker/arbiter.h"
#include "workloads/worker/clock_sync.h"
#include "workloads/worker/comm.h"
#include "workloads/worker/compute.h"
#include "workloads/worker/executor.h"
#include "workloads/worker/run_spec.h"
#include "workloads/worker/stripes.h"
#include "workloads/worker/tracer.h"

namespace xdc::worker {

namespace {

std::string local_hostname() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

void write_report(const std::string& path, const RankReport& r) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << nlohmann::json(r).dump(1) << "\n";
    if (!out) throw std::runtime_error("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw std::runtime_error("cannot rename " + tmp + " to " + path);
}

// The peers this rank exchanges point-to-point messages with that the spec stripes
// (connections_wan / connections_dc > 0 for their class), and over how many connections.
// Symmetric: the schedule's messages are matched, and both ends read the same spec.
std::vector<Stripes::Peer> striped_peers(const RunSpec& spec, const sched::Schedule& schedule,
                                         const Layout& L) {
  std::set<int> peers;
  for (const sched::Action& a : schedule.actions[L.pipeline_rank])
    if (a.peer >= 0 && a.peer != L.pipeline_rank) peers.insert(L.world_of(a.peer));
  std::vector<Stripes::Peer> out;
  const auto dc = [&](int r) {
    return r < static_cast<int>(spec.rank_dcs.size()) ? spec.rank_dcs[r] : std::string();
  };
  for (int p : peers) {
    const int n = dc(p) == dc(L.world_rank) ? spec.connections_dc : spec.connections_wan;
    if (n <= 0) continue;
    int64_t ahead = 0;  // temporal WAN sharing: the receiver's early release (arbiter.h)
    if (!spec.wan_send_order_ns.empty() && dc(p) != dc(L.world_rank)) {
      const auto it = spec.wan_release_ahead_bytes.find(dc(p) + "->" + dc(L.world_rank));
      ahead = it != spec.wan_release_ahead_bytes.end() ? std::max<int64_t>(it->second, 1) : 1;
    }
    out.push_back({p, n, ahead});
  }
  return out;
}

[[noreturn]] void fail(int rank, const std::string& host, const std::string& what, int code = 1) {
  std::fprintf(stderr, "xdc-worker: rank %d (host %s): %s\n", rank, host.c_str(), what.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

// The run's schedule, checked against the spec and the MPI world (`size` ranks, the
// thread level MPI provides): a mismatch throws; on rank 0 one that does not validate warns.
sched::Schedule read_schedule(const RunSpec& spec, int rank, int size, int thread_level) {
  const int P = spec.pipeline_ranks, D = spec.data_parallel, T = spec.tensor_parallel;
  if (T < 1) throw std::runtime_error("run spec tensor_parallel: expected >= 1");
  if (size != spec.world_size())
    throw std::runtime_error("world size " + std::to_string(size) + " != pipeline_ranks " +
                             std::to_string(P) + " x data_parallel " + std::to_string(D) +
                             " x tensor_parallel " + std::to_string(T));
  if (thread_level < MPI_THREAD_SERIALIZED)
    throw std::runtime_error("MPI provides thread level " + std::to_string(thread_level) +
                             "; the comm thread needs MPI_THREAD_SERIALIZED or better");
  sched::Schedule schedule = sched::read_csv_file(spec.schedule_csv);
  if (schedule.ranks != P)
    throw std::runtime_error("schedule " + spec.schedule_csv + " has " +
                             std::to_string(schedule.ranks) + " ranks, run spec pipeline_ranks " +
                             std::to_string(P));
  if (schedule.microbatches != spec.microbatches)
    throw std::runtime_error(
        "schedule " + spec.schedule_csv + " has " + std::to_string(schedule.microbatches) +
        " microbatches, run spec microbatches " + std::to_string(spec.microbatches));
  if (rank == 0) {
    // Not fatal: probes and tests run partial schedules on purpose; a real mistake
    // shows as a timeout naming the stuck action.
    const sched::ValidationReport v = sched::validate(schedule);
    if (!v.ok())
      std::fprintf(stderr, "xdc-worker: warning: schedule %s does not validate:\n%s\n",
                   spec.schedule_csv.c_str(), v.message().c_str());
  }
  if (spec.progress != "thread" && spec.progress != "none")
    throw std::runtime_error("run spec progress: expected \"thread\" or \"none\", got \"" +
                             spec.progress + "\"");
  return schedule;
}

// This rank's place in the world and its communicators (collective: every rank; the
// caller frees replicas, pipeline and tensor).
Layout make_layout(const RunSpec& spec, int rank, int size, const std::string& host) {
  const int P = spec.pipeline_ranks, T = spec.tensor_parallel;
  Layout L;
  L.world_rank = rank;  // (replica * P + pipeline rank) * T + tp index (run_spec.h)
  L.replica = rank / (P * T);
  L.pipeline_rank = rank / T % P;
  L.tp_index = rank % T;
  L.pipeline_ranks = P;
  L.data_parallel = spec.data_parallel;
  L.tensor_parallel = T;
  L.world = MPI_COMM_WORLD;
  MPI_Comm_split(MPI_COMM_WORLD, L.pipeline_rank * T + L.tp_index, L.replica, &L.replicas);
  MPI_Comm_split(MPI_COMM_WORLD, L.replica, rank, &L.pipeline);
  MPI_Comm_split(MPI_COMM_WORLD, L.replica * P + L.pipeline_rank, L.tp_index, &L.tensor);
  L.hosts = spec.rank_hosts;
  L.hosts.resize(size);
  for (int r = 0; r < size; ++r)
    if (L.hosts[r].empty()) L.hosts[r] = r == rank ? host : "rank" + std::to_string(r);
  return L;
}

// One rank's run: what its steps share.
struct RankRun {
  const RunSpec& spec;
  int rank;
  std::string host;
  std::string prefix;  // run_dir/rank<r>: the rank's report, trace and progress files
  RankReport report;
  ClockSample c0;                               // the clock offset at the start
  std::vector<int64_t> start_local, end_local;  // per measured iteration, local clock
};

// Stripes over the peers the spec stripes, attached to `comm`; null when the spec stripes
// none. Collective: every rank.
std::unique_ptr<Stripes> attach_stripes(const RankRun& r, const sched::Schedule& schedule,
                                        const Layout& L, Comm& comm, Tracer& tracer) {
  if (r.spec.connections_wan <= 0 && r.spec.connections_dc <= 0) return nullptr;
  const auto peers = striped_peers(r.spec, schedule, L);
  auto stripes = std::make_unique<Stripes>(
      MPI_COMM_WORLD, r.spec.data_cidr, peers,
      [&comm](Comm::Request* q) { comm.complete_external(q); },
      "rank " + std::to_string(r.rank) + " (host " + r.host + ")",
      [&comm](int peer) { comm.release_wan_from(peer); });
  comm.attach_stripes(stripes.get(), MPI_COMM_WORLD);
  std::map<int, int> per_peer;
  for (auto& p : peers) per_peer[p.rank] = p.connections;
  tracer.set_connections(per_peer);
  return stripes;
}

// The WAN arbiter of temporal WAN sharing, attached to `comm`; null without it.
// Collective: every rank.
std::unique_ptr<WanArbiter> attach_arbiter(const RunSpec& spec, Progress progress, Comm& comm) {
  if (spec.wan_send_order_ns.empty()) return nullptr;
  if (progress != Progress::kThread)
    throw std::runtime_error(
        "temporal WAN sharing needs progress \"thread\" (the comm "
        "thread serves the arbiter)");
  if (static_cast<int>(spec.wan_send_order_ns.size()) != spec.pipeline_ranks)
    throw std::runtime_error("run spec wan_send_order_ns: expected one list per pipeline rank");
  auto arbiter = std::make_unique<WanArbiter>(MPI_COMM_WORLD, spec.rank_dcs);
  comm.attach_arbiter(arbiter.get(), MPI_COMM_WORLD);
  return arbiter;
}

// A measured iteration `it` (warmup included) is done: into the report, rewritten at once,
// and a line on stdout. debug_exit_after_iteration exits here.
void record_iteration(RankRun& r, int it, const Executor::Iteration& res, Executor& ex,
                      Tracer& tracer, StageCompute& compute) {
  const RunSpec& spec = r.spec;
  RankReport& report = r.report;
  r.start_local.push_back(res.start_ns);
  r.end_local.push_back(res.end_ns);
  report.iteration_start_ns.push_back(res.start_ns + r.c0.offset_ns);
  report.iteration_end_ns.push_back(res.end_ns + r.c0.offset_ns);
  if (!std::isnan(res.loss)) report.loss.push_back(res.loss);
  if (compute.real()) report.param_checksums.push_back(compute.param_checksum());
  tracer.flush_iteration(r.c0.offset_ns);
  report.iterations_done++;
  report.waits = ex.waits();
  report.peak_activation_bytes = compute.peak_activation_bytes();
  write_report(r.prefix + ".json", report);
  if (!std::isnan(res.loss))
    std::printf("rank %d iteration %d loss %.6f (this rank's span %.3f ms)\n", r.rank,
                it - spec.warmup, res.loss, (res.end_ns - res.start_ns) / 1e6 / spec.time_dilation);
  else
    std::printf("rank %d iteration %d (this rank's span %.3f ms)\n", r.rank, it - spec.warmup,
                (res.end_ns - res.start_ns) / 1e6 / spec.time_dilation);
  std::fflush(stdout);
  if (r.rank == spec.debug_exit_rank && report.iterations_done == spec.debug_exit_after_iteration) {
    ex.drain_sends();  // die between iterations: what this one sent has arrived
    std::fprintf(stderr,
                 "xdc-worker: rank %d (host %s): debug_exit_after_iteration %d reached, "
                 "exiting with code 3 (test)\n",
                 r.rank, r.host.c_str(), spec.debug_exit_after_iteration);
    std::fflush(stderr);
    std::_Exit(3);
  }
}

// The warmup and measured iterations, then the end of the communication: every send
// drained, the arbiters stopped together, the stripes' counts into the report.
void run_iterations(RankRun& r, Executor& ex, Tracer& tracer, StageCompute& compute, Comm& comm,
                    WanArbiter* arbiter, Stripes* stripes) {
  const RunSpec& spec = r.spec;
  const int total = spec.warmup + spec.iterations;
  for (int it = 0; it < total; ++it) {
    const bool measured = it >= spec.warmup;
    tracer.set_measuring(measured);
    const Executor::Iteration res = ex.run_iteration(it, it + 1 < total);
    if (measured) record_iteration(r, it, res, ex, tracer, compute);
  }
  ex.finish_outer();
  ex.drain_sends();
  if (arbiter) {  // every rank past its last ordered send: the arbiters may stop
    Comm::Request* q = comm.ibarrier(MPI_COMM_WORLD);
    if (!comm.wait(q, std::chrono::steady_clock::now() + std::chrono::seconds(spec.timeout_s)))
      throw std::runtime_error("temporal WAN sharing: the closing barrier timed out");
    comm.release(q);
    comm.detach_arbiter();
    r.report.wan_grants_served = arbiter->grants_served();
  }
  r.report.waits = ex.waits();
  if (!r.end_local.empty()) ex.finish_prefill(r.end_local.back());
  r.report.prefill = ex.prefill_report();
  if (stripes) {
    stripes->finish();
    for (const Stripes::ConnStats& c : stripes->stats())
      r.report.connections.push_back({c.peer, c.index, c.bytes_sent, c.bytes_received,
                                      c.kernel_bytes_acked, c.kernel_retransmits});
  }
}

// The clock offset measured again at the end: the iterations' times on the common clock
// interpolated between the two, the trace written, the report complete.
void finish_report(RankRun& r, Tracer& tracer, StageCompute& compute, int clock_rounds) {
  RankReport& report = r.report;
  const ClockSample c1 = measure_clock_offset(MPI_COMM_WORLD, clock_rounds);
  report.clock_offset_drift_ns = c1.offset_ns - r.c0.offset_ns;
  if (r.spec.clock_check) {
    const ClockSample again = measure_clock_offset(MPI_COMM_WORLD, clock_rounds);
    report.clock_residual_ns = std::llabs(again.offset_ns - c1.offset_ns);
  }
  for (size_t i = 0; i < r.start_local.size(); ++i) {
    report.iteration_start_ns[i] = r.start_local[i] + offset_at(r.c0, c1, r.start_local[i]);
    report.iteration_end_ns[i] = r.end_local[i] + offset_at(r.c0, c1, r.end_local[i]);
  }
  tracer.write_final(r.c0, c1);
  report.peak_activation_bytes = compute.peak_activation_bytes();
  report.complete = true;
  write_report(r.prefix + ".json", report);
}

// The validation loss of replica 0's parameters (StageCompute::eval_stage) over its
// pipeline, after the run (the comm thread joined): each batch runs the stages in order,
// each on the ranks holding it, the activations from TP rank t of one stage to TP rank t
// of the next over the replica's pipeline communicator (rank pipeline rank x TP + t), a
// TP group's all-reduces blocking on its communicator. The last stage's ranks return the
// mean loss, the others NaN; NaN too in other replicas and with modeled compute.
double pipeline_eval_loss(StageCompute& compute, const sched::Schedule& schedule, const Layout& L,
                          int batches) {
  const double none = std::numeric_limits<double>::quiet_NaN();
  if (!compute.evaluates() || L.replica != 0 || batches < 1) return none;
  if (L.tensor_parallel > 1)  // the executor's went with its comm thread
    compute.set_tp_allreduce([&L](std::span<float> x) {
      MPI_Allreduce(MPI_IN_PLACE, x.data(), static_cast<int>(x.size()), MPI_FLOAT, MPI_SUM,
                    L.tensor);
    });
  constexpr int kTag = 7301;
  const std::vector<int>& owner = schedule.stage_rank;  // stage -> pipeline rank
  const int stages = static_cast<int>(owner.size());
  const int me = L.pipeline_rank;
  auto peer = [&L](int pipeline_rank) { return pipeline_rank * L.tensor_parallel + L.tp_index; };
  double sum = 0;
  bool last = false;
  std::vector<float> acts;
  for (int i = 0; i < batches; ++i)
    for (int s = 0; s < stages; ++s) {
      if (owner[s] != me) continue;
      if (s > 0 && owner[s - 1] != me) {
        MPI_Status st;
        MPI_Probe(peer(owner[s - 1]), kTag, L.pipeline, &st);
        int count = 0;
        MPI_Get_count(&st, MPI_FLOAT, &count);
        acts.resize(static_cast<size_t>(count));
        MPI_Recv(acts.data(), count, MPI_FLOAT, peer(owner[s - 1]), kTag, L.pipeline,
                 MPI_STATUS_IGNORE);
      }
      double loss = none;
      acts = compute.eval_stage(s, i, batches, acts, &loss);
      if (s == stages - 1) {
        sum += loss;
        last = true;
      } else if (owner[s + 1] != me) {
        MPI_Send(acts.data(), static_cast<int>(acts.size()), MPI_FLOAT, peer(owner[s + 1]), kTag,
                 L.pipeline);
      }
    }
  return last ? sum / batches : none;
}

void run(const RunSpec& spec, int rank, int thread_level, const std::string& host) {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const sched::Schedule schedule = read_schedule(spec, rank, size, thread_level);
  Layout L = make_layout(spec, rank, size, host);
  std::vector<int> stages;
  for (int s = 0; s < schedule.stages; ++s)
    if (schedule.stage_rank[s] == L.pipeline_rank) stages.push_back(s);
  std::unique_ptr<StageCompute> compute =
      make_compute(spec, schedule.stages, stages, L.replica, rank, L.tp_index);

  RankRun r{spec, rank, host, spec.run_dir + "/rank" + std::to_string(rank), {}, {}, {}, {}};
  RankReport& report = r.report;
  report.world_rank = rank;
  report.replica = L.replica;
  report.pipeline_rank = L.pipeline_rank;
  report.tp_index = L.tp_index;
  report.host = host;
  report.stages = stages;
  report.compute = compute->description();
  report.mpi_thread_level = thread_level;
  const Progress progress = spec.progress == "none" ? Progress::kNone : Progress::kThread;
  report.progress = progress == Progress::kNone
                        ? "none"
                        : "thread (poll " + std::to_string(spec.progress_poll_us) + " us)";
  size_t per_iteration = schedule.actions[L.pipeline_rank].size();
  for (const sched::Action& a : schedule.actions[L.pipeline_rank])  // TP_ALLREDUCE records
    if (a.kind == sched::Kind::F || a.kind == sched::Kind::B || a.kind == sched::Kind::BW)
      per_iteration += static_cast<size_t>(compute->tp_allreduces(a.stage));
  Tracer tracer(rank, r.prefix + ".trace.csv", per_iteration * (spec.iterations + 1) + 64);

  // Across machines (clock_check) 24 round trips, not 8: a guest's scheduling noise on a
  // 100 ms path otherwise moves the offset by ~0.1 ms between measurements.
  const int clock_rounds = spec.clock_check ? 24 : 8;
  r.c0 = measure_clock_offset(MPI_COMM_WORLD, clock_rounds);
  report.clock_offset_ns = r.c0.offset_ns;
  MPI_Barrier(MPI_COMM_WORLD);
  {
    // Before the comm thread: it makes MPI datatypes and ops (outer_sync.h).
    std::unique_ptr<OuterSync> outer;
    if (spec.dp_sync.outer_loop())
      outer = std::make_unique<OuterSync>(spec.dp_sync, spec.data_parallel);
    Comm comm(progress, spec.progress_poll_us);
    std::unique_ptr<Stripes> stripes = attach_stripes(r, schedule, L, comm, tracer);
    std::unique_ptr<WanArbiter> arbiter = attach_arbiter(spec, progress, comm);
    Executor ex(spec, schedule, L, *compute, comm, tracer, outer.get());
    // Progress for the harness (experiment events anchored to iterations): one line per
    // iteration started, measured ones from 0, warmup ones below 0, written at once.
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> progress_file(
        std::fopen((r.prefix + ".progress").c_str(), "w"), &std::fclose);
    ex.on_start = [&](int it) {
      if (!progress_file) return;
      std::fprintf(progress_file.get(), "%d\n", it - spec.warmup);
      std::fflush(progress_file.get());
    };
    // Errors abort here, before unwinding: the comm thread may still be writing into the
    // executor's receive buffers.
    try {
      run_iterations(r, ex, tracer, *compute, comm, arbiter.get(), stripes.get());
    } catch (const std::exception& e) {
      fail(rank, host, e.what());
    }
  }
  const double eval = pipeline_eval_loss(*compute, schedule, L, kEvalBatches);
  if (!std::isnan(eval)) {
    report.eval_loss = eval;
    std::printf("rank %d eval loss %.6f (%d validation batches)\n", rank, eval, kEvalBatches);
    std::fflush(stdout);
  }
  finish_report(r, tracer, *compute, clock_rounds);
  MPI_Comm_free(&L.replicas);
  MPI_Comm_free(&L.pipeline);
  MPI_Comm_free(&L.tensor);
}

}  // namespace

void run_worker(const std::string& spec_path, int mpi_thread_level) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::string host = local_hostname();
  RunSpec spec;
  try {
    spec = read_run_spec(spec_path);
  } catch (const InputError& e) {
    fail(rank, host, e.what(), kExitBadInput);
  } catch (const std::exception& e) {
    fail(rank, host, e.what());
  }
  try {
    if (rank < static_cast<int>(spec.rank_hosts.size()) && !spec.rank_hosts[rank].empty())
      host = spec.rank_hosts[rank];
    run(spec, rank, mpi_thread_level, host);
  } catch (const std::exception& e) {
    fail(rank, host, e.what());
  }
}

}  // namespace xdc::worker
