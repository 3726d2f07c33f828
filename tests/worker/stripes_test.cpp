// Several connections per transfer (workloads/worker/stripes.h), on loopback: real
// training whose activations and gradients go striped over the workers' own sockets must
// match the single-process reference exactly as the OpenMPI path does, and every socket
// must have carried its share of the bytes.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>

#include "tests/worker/mpirun.h"
#include "workloads/model/data.h"
#include "workloads/model/local_model.h"
#include "workloads/schedule/generators.h"
#include "workloads/worker/stripe_pieces.h"

namespace xdc::worker::test {
namespace {

RunSpec striped_spec(const std::string& name, int P, int m, int iterations, int connections) {
  RunSpec s;
  s.run_dir = temp_run_dir(name);
  s.pipeline_ranks = P;
  s.microbatches = m;
  s.iterations = iterations;
  s.seed = 7;
  s.compute = "real";
  // Activations of 4 x 128 x 192 floats (384 KiB): each message is 1.5 of the stripes'
  // 256 KiB pieces, so messages are cut and reassembled across connections.
  s.model = {{"preset", "tiny"}, {"layers", 4}, {"dim", 192}, {"heads", 4},
             {"kv_heads", 2},    {"ffn", 512},  {"seq", 128}};
  s.microbatch_size = 4;
  s.timeout_s = 60;
  // Loopback: every rank in one "DC", striped as `dc`.
  s.rank_dcs.assign(P, "dc");
  s.connections_dc = connections;
  s.data_cidr = "127.0.0.0/8";
  return s;
}

// 1F1B on 4 ranks (each pair one way per direction) and ZB-V on 2 ranks x 2 chunks (both
// ranks send to each other in both directions, several messages in flight per pair, so
// data often arrives before its receive is posted), 3 connections per peer.
TEST(WorkerStripes, StripedTrainingMatchesSingleProcess) {
  for (const auto& [name, P, chunks] :
       {std::tuple<std::string, int, int>{"1f1b", 4, 1}, {"zbv", 2, 2}}) {
    const int m = 4, iters = 3, N = 3;
    RunSpec spec = striped_spec("stripes-" + name, P, m, iters, N);
    sched::Params p;
    p.ranks = P;
    p.microbatches = m;
    p.chunks = chunks;
    const sched::Schedule s = sched::generate(name, p);
    const MpiRun run = run_worker(spec, s);
    ASSERT_EQ(run.exit_code, 0) << name << ": " << run.err;
    const int last_rank = s.stage_rank.back();
    const RankReport last = read_report(spec.run_dir, last_rank);
    ASSERT_EQ(last.loss.size(), size_t(iters)) << name;
    const std::vector<double> ref = reference_losses(spec, spec.microbatches, iters);
    for (int i = 0; i < iters; ++i) {
      EXPECT_NEAR(last.loss[i], ref[i], 1e-5) << name << " iteration " << i;
      std::printf("%s striped over %d connections, iteration %d: loss %.6f reference %.6f\n",
                  name.c_str(), N, i, last.loss[i], ref[i]);
    }
    for (int r = 0; r < P; ++r) {
      const RankReport rep = read_report(spec.run_dir, r);
      ASSERT_FALSE(rep.connections.empty()) << name << " rank " << r;
      EXPECT_EQ(rep.connections.size() % N, 0u);
      // Pieces go to whichever connection pulls them (stripes.h): every byte sent to a
      // peer went over one of its N connections, headers of 40 bytes per piece on top.
      std::map<int, int64_t> sent;  // peer -> bytes over all its connections
      for (const auto& c : rep.connections) {
        sent[c.peer] += c.bytes_sent;
        EXPECT_GT(c.bytes_sent, 0) << name << " rank " << r << " connection " << c.index;
        std::printf("  %s rank %d -> rank %d connection %d: sent %lld B, received %lld B\n",
                    name.c_str(), r, c.peer, c.index, static_cast<long long>(c.bytes_sent),
                    static_cast<long long>(c.bytes_received));
      }
      int64_t payload = 0;  // what the trace says this rank sent to its peers
      for (const trace::Event& e : read_trace(spec.run_dir, r).events)
        if (e.kind == sched::Kind::SEND_F || e.kind == sched::Kind::SEND_B) payload += e.bytes;
      int64_t total = 0;
      for (const auto& [peer, b] : sent) total += b;
      // The trace holds the measured iterations only; warm-up sent as much again at most.
      EXPECT_GE(total, payload) << name << " rank " << r;
      for (const trace::Event& e : read_trace(spec.run_dir, r).events)
        if (e.peer >= 0) {
          EXPECT_EQ(e.connections, N) << name;
        }
    }
  }
}

// The simulator sends striped messages as the worker cuts them (stripe_pieces.h,
// harness/sim/link_model.h): one piece per connection in turn, so a message of fewer pieces
// than connections rides on as many connections as it has pieces. One activation and one
// gradient of 384 KiB (1.5 pieces) over 5 connections: each went over exactly 2 sockets,
// one with a whole piece and one with the rest, 40 bytes of header each.
TEST(WorkerStripes, AMessageRidesOnOneConnectionPerPiece) {
  const int N = 5;
  RunSpec spec = striped_spec("stripes-pieces", 2, 1, 1, N);
  sched::Params p;
  p.ranks = 2;
  p.microbatches = 1;
  const MpiRun run = run_worker(spec, sched::generate("1f1b", p));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  for (int r = 0; r < 2; ++r) {
    const RankReport rep = read_report(spec.run_dir, r);
    ASSERT_EQ(rep.connections.size(), size_t(N)) << "rank " << r;
    std::vector<int64_t> used;
    for (const auto& c : rep.connections)
      if (c.bytes_sent > 0) used.push_back(c.bytes_sent);
    std::sort(used.begin(), used.end());
    ASSERT_EQ(used.size(), 2u) << "rank " << r << ": the message went over " << used.size()
                               << " of " << N << " connections";
    EXPECT_EQ(used[1], kStripePieceBytes + kStripeHeaderBytes) << "rank " << r;
    EXPECT_EQ(used[0], 384 * 1024 - kStripePieceBytes + kStripeHeaderBytes) << "rank " << r;
  }
}

}  // namespace
}  // namespace xdc::worker::test
