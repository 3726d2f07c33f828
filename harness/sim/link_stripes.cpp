// LinkState's stripes: the pieces of a striped message pulled by the pair's connections as
// the worker hands them out, per stripe group (link_model.h, workloads/worker/stripe_pieces.h).
#include <algorithm>

#include "harness/sim/link_model.h"
#include "workloads/worker/stripe_pieces.h"

namespace xdc::sim {

void LinkState::load_stripes(size_t a) {
  const size_t group = group_of_[jobs_scratch_[a].conn];
  auto r = std::find_if(rotation_.begin(), rotation_.end(),
                        [&](const Rotation& x) { return x.group == group; });
  if (r == rotation_.end()) {
    Rotation x;
    x.group = group;
    x.next = next_stripe_[group];
    for (int s = 0; s < stripes_[group]; ++s) {
      const size_t i = stripe0_[group] + static_cast<size_t>(s);
      size_t c = 0;
      while (c < conns_.size() && conns_[c].first != i) ++c;
      if (c == conns_.size()) conns_.push_back({i, conn_[i]});
      x.slots.push_back(c);
    }
    rotation_.push_back(std::move(x));
    r = rotation_.end() - 1;
  }
  conn_of_[a] = r->slots[0];  // until a stripe takes it
}

void LinkState::pull_pieces(int64_t t, bool exclusive) {
  if (rotation_.empty()) return;
  std::vector<Job>& jobs = jobs_scratch_;
  unsent_.assign(conns_.size(), 0);
  for (size_t a = 0; a < jobs.size(); ++a)
    if (!jobs[a].pull && !jobs[a].done) unsent_[conn_of_[a]] += jobs[a].left + jobs[a].rest;
  for (Rotation& r : rotation_) {
    // The pair's next piece to hand out: the oldest ready one (an exclusive channel's
    // holder's only); size() when none.
    size_t a = 0;
    auto next_piece = [&] {
      for (; a < jobs.size(); ++a) {
        const Job& j = jobs[a];
        if (j.pull && group_of_[j.conn] == r.group && j.ready <= t && (!exclusive || j.granted))
          return;
      }
    };
    next_piece();
    const int n = static_cast<int>(r.slots.size());
    // Served in turn until a whole turn finds every stripe holding enough unsent.
    for (int s = r.next, full = 0; a < jobs.size() && full < n; s = (s + 1) % n) {
      const size_t c = r.slots[static_cast<size_t>(s)];
      const TcpConn& conn = conns_[c].second;
      const TcpPath& p = tcp(conns_[c].first);
      int64_t window = conn.cwnd;
      if (p.window_bytes > 0)
        window = std::min(window, p.window_bytes * std::max(p.connections, 1));
      if (unsent_[c] >= worker::kStripeNotSentLowat + window) {
        ++full;
        continue;
      }
      full = 0;
      Job& j = jobs[a];
      j.pull = false;
      j.conn = conns_[c].first;
      conn_of_[a] = c;
      unsent_[c] += j.left + j.rest;
      r.next = (s + 1) % n;
      ++a;
      next_piece();
    }
  }
}

void LinkState::keep_rotations(std::vector<std::pair<size_t, int>>* end) {
  for (const Rotation& r : rotation_) {
    if (end) {
      end->emplace_back(r.group, r.next);
    } else {
      next_stripe_[r.group] = r.next;
    }
  }
}

}  // namespace xdc::sim
