#pragma once
// Temporal WAN sharing (experiment key mpi.wan_sharing: temporal; Atlas): every WAN
// direction (an ordered pair of DCs) carries one point-to-point transfer at a time, granted
// in the order the schedule needs them, instead of every transfer going at once with TCP
// sharing the link between their connections (fair, the default).
//
// One arbiter per DC, on the DC's lowest world rank (in its comm thread), serves the
// directions out of that DC. A rank's comm thread (comm.h) holds a send to a peer in
// another DC until the grant arrives: it sends REQUEST {direction, iteration, key, world
// rank, ticket} to its DC's arbiter, which queues it per direction and, while the direction
// is free, grants the smallest (iteration, key, world rank) waiting; the comm thread then
// issues the send (OpenMPI or the stripes), and the receiver's comm thread, when the
// message has arrived, sends RELEASE to that arbiter (back across the WAN), freeing the
// direction for the next. (Released at the sender's completion instead, a transfer would
// hold the direction only until its data sat in the socket buffers, and the next would
// share the link as under fair sharing: docs/history/wan-sharing.md.) `key` is the SEND's
// predicted start in the plan's simulation of one replica (RunSpec::wan_send_order_ns), so
// the transfers of identical replicas take turns: replica 0's first, then replica 1's, and
// a replica that fell behind goes before another's later transfer. Control messages go over
// MPI on two duplicates of the world communicator (requests and releases to the arbiter;
// grants back), inside the DC. A grant is held from the send's issue to the arrival plus
// the RELEASE's way back: the direction idles one one-way delay per transfer. Gradient
// all-reduces (MPI collectives) are not arbitrated.
#include <mpi.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace xdc::worker {

class WanArbiter {
 public:
  // Collective over `world` (every rank constructs one: it duplicates `world` twice).
  // rank_dcs: world rank -> DC name (RunSpec::rank_dcs).
  WanArbiter(MPI_Comm world, const std::vector<std::string>& rank_dcs);
  ~WanArbiter();  // frees the communicators (after shutdown(), outside the comm thread)
  WanArbiter(const WanArbiter&) = delete;
  WanArbiter& operator=(const WanArbiter&) = delete;

  bool crosses_wan(int peer) const { return dc_[peer] != dc_[rank_]; }
  int dc_of(int rank) const { return dc_[rank]; }

  // ---- comm thread only
  // Asks for the direction to `peer`'s DC for a transfer ordered by (iteration, key);
  // returns its ticket.
  int64_t request(int peer, int64_t iteration, int64_t key);
  // Tests the control messages (serving this DC's directions on the arbiter rank) and
  // returns the tickets whose grant arrived since the last call.
  std::vector<int64_t> poll();
  // A transfer from DC `src_dc` to this rank has arrived: the direction src_dc -> this
  // rank's DC goes to the next (a RELEASE to src_dc's arbiter, back over the WAN).
  void release(int src_dc);
  bool pending() const;  // something to poll for (always on the arbiter rank)
  void shutdown();       // cancels the arbiter's standing receive; nothing after it
  int64_t grants_served() const { return served_; }

 private:
  using Msg = std::array<int64_t, 5>;  // {dst dc, iteration, key, world rank, ticket}
  void post(int to, int tag, MPI_Comm comm, const Msg& m);
  void serve(const Msg& m, int tag);
  void grant_next(int dst_dc);

  int rank_ = 0;
  std::vector<int> dc_;       // world rank -> DC index
  std::vector<int> arbiter_;  // DC index -> its arbiter's world rank
  MPI_Comm to_arbiter_ = MPI_COMM_NULL, to_client_ = MPI_COMM_NULL;
  int64_t next_ticket_ = 0;
  // Outgoing control messages until MPI is done with their buffers.
  std::vector<std::pair<MPI_Request, std::unique_ptr<Msg>>> out_;
  // Client: grants awaited, by ticket.
  std::map<int64_t, std::pair<MPI_Request, std::unique_ptr<Msg>>> awaited_;
  // Arbiter (this rank is its DC's): the standing receive and, per destination DC, the
  // waiting requests in grant order and whether a transfer holds the direction.
  bool serving_ = false;
  MPI_Request standing_ = MPI_REQUEST_NULL;
  Msg in_{};
  std::map<int, std::set<std::tuple<int64_t, int64_t, int64_t, int64_t>>> waiting_;
  std::map<int, bool> busy_;
  int64_t served_ = 0, released_ = 0;
};

}  // namespace xdc::worker
