#include "workloads/schedule/validate.h"

#include <cmath>
#include <string>

namespace xdc::sched {

namespace {
std::string where(int rank, size_t i, const Action& a) {
  return "rank " + std::to_string(rank) + ", action " + std::to_string(i) + " (" + to_string(a) +
         "): ";
}

// Per (stage, microbatch) flags of the dry run.
struct Grid {
  int m;
  std::vector<char> v;
  Grid(int stages, int mbs) : m(mbs), v(static_cast<size_t>(stages) * mbs, 0) {}
  char& at(int s, int mb) { return v[static_cast<size_t>(s) * m + mb]; }
};

class Checker {
 public:
  Checker(const Schedule& s, ValidationReport& rep) : s_(s), rep_(rep) {}

  bool structure() {
    if (s_.ranks < 1 || s_.stages < 1 || s_.microbatches < 1) {
      err("schedule needs ranks, stages and microbatches >= 1");
      return false;
    }
    if (static_cast<int>(s_.stage_rank.size()) != s_.stages) {
      err("placement lists " + std::to_string(s_.stage_rank.size()) + " stages, expected " +
          std::to_string(s_.stages));
      return false;
    }
    for (int st = 0; st < s_.stages; ++st)
      if (s_.stage_rank[st] < 0 || s_.stage_rank[st] >= s_.ranks) {
        err("stage " + std::to_string(st) + " is placed on rank " +
            std::to_string(s_.stage_rank[st]) + ", which does not exist");
        return false;
      }
    if (static_cast<int>(s_.actions.size()) != s_.ranks) {
      err("action lists for " + std::to_string(s_.actions.size()) + " ranks, expected " +
          std::to_string(s_.ranks));
      return false;
    }
    const size_t before = rep_.errors.size();
    Grid nf(s_.stages, s_.microbatches), nb(s_.stages, s_.microbatches),
        nw(s_.stages, s_.microbatches), nbw(s_.stages, s_.microbatches);
    std::vector<Grid> comm(4, Grid(s_.stages, s_.microbatches));  // SEND_F..RECV_B
    for (int r = 0; r < s_.ranks; ++r)
      for (size_t i = 0; i < s_.actions[r].size(); ++i) {
        const Action& a = s_.actions[r][i];
        if (a.stage < 0 || a.stage >= s_.stages) {
          err(where(r, i, a) + "stage out of range");
          continue;
        }
        const bool per_iter = a.kind == Kind::ALLREDUCE || a.kind == Kind::OPT;
        if (per_iter ? a.microbatch != -1 : (a.microbatch < 0 || a.microbatch >= s_.microbatches)) {
          err(where(r, i, a) + "microbatch out of range");
          continue;
        }
        if (s_.stage_rank[a.stage] != r) {
          err(where(r, i, a) + "stage " + std::to_string(a.stage) + " lives on rank " +
              std::to_string(s_.stage_rank[a.stage]));
          continue;
        }
        if (is_comm(a.kind)) {
          check_peer(r, i, a);
          const int k = static_cast<int>(a.kind) - static_cast<int>(Kind::SEND_F);
          if (++comm[k].at(a.stage, a.microbatch) > 1)
            err(where(r, i, a) + "duplicate: this message is already sent or received");
        }
        switch (a.kind) {
          case Kind::F:
            nf.at(a.stage, a.microbatch)++;
            break;
          case Kind::B:
            nb.at(a.stage, a.microbatch)++;
            break;
          case Kind::W:
            nw.at(a.stage, a.microbatch)++;
            break;
          case Kind::BW:
            nbw.at(a.stage, a.microbatch)++;
            break;
          default:
            break;
        }
      }
    for (int st = 0; st < s_.stages; ++st)
      for (int mb = 0; mb < s_.microbatches; ++mb) {
        const std::string id = "stage " + std::to_string(st) + " microbatch " + std::to_string(mb) +
                               " (rank " + std::to_string(s_.stage_rank[st]) + "): ";
        if (nf.at(st, mb) != 1)
          err(id + "has " + std::to_string(nf.at(st, mb)) + " F actions, expected 1");
        const bool full = nbw.at(st, mb) == 1 && nb.at(st, mb) == 0 && nw.at(st, mb) == 0;
        const bool split = nbw.at(st, mb) == 0 && nb.at(st, mb) == 1 && nw.at(st, mb) == 1;
        if (!full && !split) err(id + "expected one BW, or one B and one W");
      }
    return rep_.errors.size() == before;
  }

  // Unit-step dry run: sends deliver at once, receives wait, compute waits for its inputs.
  void dry_run() {
    const int S = s_.stages, m = s_.microbatches;
    Grid f(S, m), b(S, m), w(S, m), msg_f(S, m), msg_b(S, m), got_f(S, m), got_b(S, m);
    std::vector<int> bw_left(S, 0);
    for (int st = 0; st < S; ++st) bw_left[st] = m;
    std::vector<char> reduced(S, 0);
    std::vector<size_t> pc(s_.ranks, 0);
    std::vector<int> mem(s_.ranks, 0);
    rep_.peak_units.assign(s_.ranks, 0);
    const auto& sr = s_.stage_rank;
    auto cross = [&](int a, int c) { return sr[a] != sr[c]; };
    // Returns "" if `a` can run now, else what it waits for.
    auto blocked = [&](const Action& a) -> std::string {
      const int st = a.stage, mb = a.microbatch;
      switch (a.kind) {
        case Kind::F:
          if (st == 0) return "";
          if (cross(st - 1, st)) return got_f.at(st, mb) ? "" : "its RECV_F";
          return f.at(st - 1, mb) ? "" : "F of stage " + std::to_string(st - 1);
        case Kind::B:
        case Kind::BW:
          if (!f.at(st, mb)) return "its F";
          if (st == S - 1) return "";
          if (cross(st, st + 1)) return got_b.at(st, mb) ? "" : "its RECV_B";
          return b.at(st + 1, mb) ? "" : "the backward of stage " + std::to_string(st + 1);
        case Kind::W:
          return b.at(st, mb) ? "" : "its B";
        case Kind::SEND_F:
          return f.at(st, mb) ? "" : "its F (send before the data exists)";
        case Kind::SEND_B:
          return b.at(st, mb) ? "" : "its backward (send before the data)";
        case Kind::RECV_F:
          return msg_f.at(st, mb) ? "" : "SEND_F of stage " + std::to_string(st - 1);
        case Kind::RECV_B:
          return msg_b.at(st, mb) ? "" : "SEND_B of stage " + std::to_string(st + 1);
        case Kind::ALLREDUCE:
          return bw_left[st] == 0 ? "" : "the stage's last weight grad";
        case Kind::OPT:
          return bw_left[st] == 0 ? "" : "the stage's last weight grad";
      }
      return "";
    };
    auto run = [&](int r, const Action& a) {
      const int st = a.stage, mb = a.microbatch;
      switch (a.kind) {
        case Kind::F:
          f.at(st, mb) = 1;
          rep_.peak_units[r] = std::max(rep_.peak_units[r], ++mem[r]);
          break;
        case Kind::B:
          b.at(st, mb) = 1;
          break;
        case Kind::BW:
          b.at(st, mb) = 1;
          w.at(st, mb) = 1;
          --mem[r];
          --bw_left[st];
          break;
        case Kind::W:
          w.at(st, mb) = 1;
          --mem[r];
          --bw_left[st];
          break;
        case Kind::SEND_F:
          if (st + 1 < S) msg_f.at(st + 1, mb) = 1;
          break;
        case Kind::SEND_B:
          if (st > 0) msg_b.at(st - 1, mb) = 1;
          break;
        case Kind::RECV_F:
          got_f.at(st, mb) = 1;
          break;
        case Kind::RECV_B:
          got_b.at(st, mb) = 1;
          break;
        case Kind::ALLREDUCE:
          reduced[st] = 1;
          break;
        case Kind::OPT:
          break;
      }
    };
    for (bool progress = true; progress;) {
      progress = false;
      for (int r = 0; r < s_.ranks; ++r)
        while (pc[r] < s_.actions[r].size() && blocked(s_.actions[r][pc[r]]).empty()) {
          run(r, s_.actions[r][pc[r]++]);
          progress = true;
        }
    }
    bool stuck = false;
    for (int r = 0; r < s_.ranks; ++r)
      if (pc[r] < s_.actions[r].size()) {
        const Action& a = s_.actions[r][pc[r]];
        err(where(r, pc[r], a) + "deadlock: waits forever for " + blocked(a));
        stuck = true;
      }
    if (stuck) return;
    // Every cross-rank input must have been received exactly where it is consumed.
    for (int st = 0; st < S; ++st)
      for (int mb = 0; mb < m; ++mb) {
        if (st > 0 && cross(st - 1, st) && !msg_f.at(st, mb))
          err("rank " + std::to_string(sr[st - 1]) + ": no SEND_F of stage " +
              std::to_string(st - 1) + " microbatch " + std::to_string(mb));
      }
  }

 private:
  void check_peer(int r, size_t i, const Action& a) {
    const auto& sr = s_.stage_rank;
    int other = -1;
    if (a.kind == Kind::SEND_F) other = a.stage + 1;
    if (a.kind == Kind::RECV_F) other = a.stage - 1;
    if (a.kind == Kind::SEND_B) other = a.stage - 1;
    if (a.kind == Kind::RECV_B) other = a.stage + 1;
    if (other < 0 || other >= s_.stages) {
      err(where(r, i, a) + "has no neighbouring stage to talk to");
      return;
    }
    if (sr[other] == r)
      err(where(r, i, a) + "stage " + std::to_string(other) + " is on the same rank");
    if (a.peer != sr[other])
      err(where(r, i, a) + "peer is " + std::to_string(a.peer) + ", stage " +
          std::to_string(other) + " lives on rank " + std::to_string(sr[other]));
  }
  void err(std::string e) { rep_.errors.push_back(std::move(e)); }

  const Schedule& s_;
  ValidationReport& rep_;
};
}  // namespace

std::string ValidationReport::message() const {
  std::string out;
  for (const auto& e : errors) out += (out.empty() ? "" : "\n") + e;
  return out;
}

ValidationReport validate(const Schedule& s, double memory_cap) {
  ValidationReport rep;
  Checker c(s, rep);
  if (!c.structure()) return rep;
  c.dry_run();
  const int chunks = std::max(1, s.chunks());
  rep.peak_activations.resize(rep.peak_units.size());
  for (size_t r = 0; r < rep.peak_units.size(); ++r) {
    rep.peak_activations[r] = static_cast<double>(rep.peak_units[r]) / chunks;
    if (memory_cap > 0 && rep.peak_activations[r] > memory_cap + 1e-9)
      rep.errors.push_back("rank " + std::to_string(r) + ": peak activations " +
                           std::to_string(rep.peak_activations[r]) +
                           " microbatches exceed the cap " + std::to_string(memory_cap));
  }
  return rep;
}

}  // namespace xdc::sched
