#include "workloads/worker/arbiter.h"

#include <chrono>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <thread>

namespace xdc::worker {

namespace {
constexpr int kRequest = 1, kRelease = 2;
// Grants are tagged by ticket, modulo this (within MPI's guaranteed tag range): a rank never
// has that many transfers waiting at once.
constexpr int64_t kTagRange = 30000;
}  // namespace

WanArbiter::WanArbiter(MPI_Comm world, const std::vector<std::string>& rank_dcs) {
  MPI_Comm_rank(world, &rank_);
  int size = 0;
  MPI_Comm_size(world, &size);
  if (static_cast<int>(rank_dcs.size()) != size)
    throw std::runtime_error("wan_sharing temporal: the run spec names the DC of " +
                             std::to_string(rank_dcs.size()) + " ranks, the world has " +
                             std::to_string(size));
  std::map<std::string, int> index;
  for (int r = 0; r < size; ++r) {
    const auto [it, fresh] = index.emplace(rank_dcs[r], static_cast<int>(index.size()));
    dc_.push_back(it->second);
    if (fresh) arbiter_.push_back(r);  // the lowest world rank of each DC
  }
  MPI_Comm_dup(world, &to_arbiter_);
  MPI_Comm_dup(world, &to_client_);
  serving_ = arbiter_[dc_[rank_]] == rank_;
  if (serving_)
    MPI_Irecv(in_.data(), 5, MPI_INT64_T, MPI_ANY_SOURCE, MPI_ANY_TAG, to_arbiter_, &standing_);
}

WanArbiter::~WanArbiter() {
  if (to_arbiter_ != MPI_COMM_NULL) MPI_Comm_free(&to_arbiter_);
  if (to_client_ != MPI_COMM_NULL) MPI_Comm_free(&to_client_);
}

void WanArbiter::post(int to, int tag, MPI_Comm comm, const Msg& m) {
  auto buf = std::make_unique<Msg>(m);
  MPI_Request q = MPI_REQUEST_NULL;
  MPI_Isend(buf->data(), 5, MPI_INT64_T, to, tag, comm, &q);
  out_.emplace_back(q, std::move(buf));
}

int64_t WanArbiter::request(int peer, int64_t iteration, int64_t key) {
  const int64_t ticket = next_ticket_++;
  auto grant = std::make_unique<Msg>();
  MPI_Request q = MPI_REQUEST_NULL;
  const int arbiter = arbiter_[dc_[rank_]];
  MPI_Irecv(grant->data(), 5, MPI_INT64_T, arbiter, static_cast<int>(ticket % kTagRange),
            to_client_, &q);
  awaited_.emplace(ticket, std::make_pair(q, std::move(grant)));
  post(arbiter, kRequest, to_arbiter_, {dc_[peer], iteration, key, rank_, ticket});
  return ticket;
}

void WanArbiter::release(int src_dc) {
  post(arbiter_[src_dc], kRelease, to_arbiter_, {dc_[rank_], -1, -1, rank_, -1});
}

void WanArbiter::grant_next(int dst_dc) {
  auto& q = waiting_[dst_dc];
  if (busy_[dst_dc] || q.empty()) return;
  const auto [iteration, key, rank, ticket] = *q.begin();
  q.erase(q.begin());
  busy_[dst_dc] = true;
  ++served_;
  post(static_cast<int>(rank), static_cast<int>(ticket % kTagRange), to_client_,
       {dst_dc, iteration, key, rank, ticket});
}

void WanArbiter::serve(const Msg& m, int tag) {
  const int dst = static_cast<int>(m[0]);
  if (tag == kRequest) {
    waiting_[dst].insert({m[1], m[2], m[3], m[4]});
  } else {
    busy_[dst] = false;
    ++released_;
  }
  grant_next(dst);
}

std::vector<int64_t> WanArbiter::poll() {
  std::vector<int64_t> granted;
  int flag = 0;
  while (serving_ && standing_ != MPI_REQUEST_NULL) {  // every control message waiting
    MPI_Status st;
    MPI_Test(&standing_, &flag, &st);
    if (!flag) break;
    const Msg m = in_;
    MPI_Irecv(in_.data(), 5, MPI_INT64_T, MPI_ANY_SOURCE, MPI_ANY_TAG, to_arbiter_, &standing_);
    serve(m, st.MPI_TAG);
  }
  for (auto it = awaited_.begin(); it != awaited_.end();) {
    MPI_Test(&it->second.first, &flag, MPI_STATUS_IGNORE);
    if (!flag) {
      ++it;
      continue;
    }
    granted.push_back(it->first);
    it = awaited_.erase(it);
  }
  size_t w = 0;
  for (auto& o : out_) {
    MPI_Test(&o.first, &flag, MPI_STATUS_IGNORE);
    if (!flag) out_[w++] = std::move(o);
  }
  out_.resize(w);
  return granted;
}

bool WanArbiter::pending() const {
  return (serving_ && standing_ != MPI_REQUEST_NULL) || !awaited_.empty() || !out_.empty();
}

void WanArbiter::shutdown() {
  for (auto& o : out_) MPI_Wait(&o.first, MPI_STATUS_IGNORE);
  out_.clear();
  // Every grant's release is on its way (each receiver sent it before the closing barrier,
  // on another communicator, so it may still be in flight): take them all before the
  // standing receive goes, so that none is left unmatched.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (serving_ && released_ < served_ && std::chrono::steady_clock::now() < give_up) {
    poll();
    if (released_ < served_) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  if (released_ < served_)
    std::fprintf(stderr, "xdc-worker: WAN arbiter: %lld of %lld releases never arrived\n",
                 static_cast<long long>(served_ - released_), static_cast<long long>(served_));
  if (standing_ != MPI_REQUEST_NULL) {
    MPI_Cancel(&standing_);
    MPI_Wait(&standing_, MPI_STATUS_IGNORE);
  }
  serving_ = false;
}

}  // namespace xdc::worker
