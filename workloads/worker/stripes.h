#pragma once
// Several TCP connections per peer, owned by the worker: one logical point-to-point
// message striped over N sockets (experiment key mpi.connections, harness/experiment/experiment.h).
//
// Why not OpenMPI: `btl_tcp_links=N` does not stripe one message; one connection carries
// most of it (docs/history/connections.md has the measurements).
//
// Wire format: a message of B bytes goes as pieces of at most 256 KiB, each a 40-byte
// header {int32 tag, uint32 magic, int64 index, int64 B, int64 offset, int64 length} then
// its bytes (an empty message: one empty piece). Pieces are pulled, not dealt: a socket
// takes the next piece of the oldest unfinished message when it is writable, and with
// TCP_NOTSENT_LOWAT at 512 KiB it is writable only when its unsent data runs low, so a
// connection that drains faster (no loss, larger window) carries more; a message waits
// for the aggregate, not for its slowest connection (dealing B/N to each was measured
// slower: docs/history/connections.md).
// TCP_NOTSENT_LOWAT bounds only what waits unsent in the kernel; the window and
// congestion control are the host's (stock). Matching is MPI's for one communicator: the
// k-th receive posted for (peer, tag) takes the message with index k of that tag (the
// sender numbers its messages per tag), whatever order pieces arrive in. Data that
// arrives before its receive is posted is buffered (the sender never waits for the
// receiver: there is no rendezvous; the receiver's socket buffers and this buffer carry
// it), and copied when the receive comes.
//
// Completion: a send completes when its last byte has been handed to the kernel (its
// buffer is reusable, as an MPI_Isend's), a receive when its last piece has arrived.
// Sockets are stock (autotuned buffers, the host's congestion control) with TCP_NODELAY,
// as OpenMPI's btl/tcp sets it. One I/O thread per peer polls that peer's sockets.
//
// Setup is collective over `world` (every rank calls the constructor): each rank listens
// on its address inside `data_cidr` (the shaped data network), the addresses are
// all-gathered, the lower rank of each pair connects its N sockets to the higher one.
// Both sides must pass the same N for a pair (they compute it from the same run spec).
// A protocol error (a message whose size differs from the posted receive, a peer that
// closes mid-message) ends the process with "xdc-worker: rank R (host H): ..." on stderr.
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "workloads/worker/comm.h"

namespace xdc::worker {

class Stripes {
 public:
  struct Peer {
    int rank = -1;        // world rank
    int connections = 1;  // sockets to it
    // Temporal WAN sharing (arbiter.h): > 0: `nearly_arrived(rank)` is called once per
    // message from this peer, when at most this many of its bytes are still to arrive (the
    // direction's bytes in flight over one round trip, so the next transfer's first bytes
    // reach the link as this one's last leave it); 0: never.
    int64_t release_ahead_bytes = 0;
  };
  struct ConnStats {  // one socket
    int peer = -1, index = 0;
    int64_t bytes_sent = 0, bytes_received = 0;  // payload and headers, counted here
    int64_t kernel_bytes_acked = 0;              // TCP_INFO tcpi_bytes_acked (this side)
    int64_t kernel_retransmits = 0;              // TCP_INFO tcpi_total_retrans
  };

  // `done` is called from an I/O thread with each request that completed (complete_ns set).
  // `who` prefixes fatal errors ("rank 3 (host w1)").
  Stripes(MPI_Comm world, const std::string& data_cidr, const std::vector<Peer>& peers,
          std::function<void(Comm::Request*)> done, std::string who,
          std::function<void(int peer)> nearly_arrived = nullptr);
  ~Stripes();  // finish(), then closes the sockets (the kernel still delivers what it holds)
  Stripes(const Stripes&) = delete;
  Stripes& operator=(const Stripes&) = delete;

  int connections(int peer) const;  // 0: not striped here (the caller uses MPI)
  void send(Comm::Request* r);      // r: buf, count (bytes), peer, tag
  void recv(Comm::Request* r);
  // Waits until every queued send has been handed to the kernel and stops the I/O
  // threads; every receive must be complete. After it, no send/recv; stats() is read here.
  void finish();
  std::vector<ConnStats> stats() const;  // after finish()

  struct PeerLink;  // one peer's sockets and I/O thread (stripes.cpp)

 private:
  std::map<int, std::unique_ptr<PeerLink>> links_;
  bool finished_ = false;
};

// First IPv4 address of this host inside `cidr` ("10.0.0.0/8"); throws when none.
uint32_t local_address_in(const std::string& cidr);

}  // namespace xdc::worker
