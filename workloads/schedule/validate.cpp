#include "workloads/schedule/validate.h"

#include <algorithm>
#include <string>

#include "workloads/schedule/engine.h"

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
          err(r, where(r, i, a) + "stage out of range");
          continue;
        }
        if (a.kind == Kind::TP_ALLREDUCE || a.kind == Kind::OUTER_SYNC) {
          err(r, where(r, i, a) + std::string(kind_name(a.kind)) +
                     " is a trace record, not a schedule action");
          continue;
        }
        const bool per_iter = a.kind == Kind::ALLREDUCE || a.kind == Kind::OPT;
        if (per_iter ? a.microbatch != -1 : (a.microbatch < 0 || a.microbatch >= s_.microbatches)) {
          err(r, where(r, i, a) + "microbatch out of range");
          continue;
        }
        if (s_.stage_rank[a.stage] != r) {
          err(r, where(r, i, a) + "stage " + std::to_string(a.stage) + " lives on rank " +
                     std::to_string(s_.stage_rank[a.stage]));
          continue;
        }
        if (a.kind == Kind::PREFILL) {
          err(r, where(r, i, a) + "PREFILL is a trace kind (prefill in bubbles), not an action");
          continue;
        }
        if (a.paired) {
          const auto& row = s_.actions[r];
          const bool partner = a.kind == Kind::F && i + 1 < row.size() &&
                               (row[i + 1].kind == Kind::B || row[i + 1].kind == Kind::BW);
          if (!partner)
            err(r, where(r, i, a) +
                       "paired (co-executed) but not an F right before a B or BW (its partner)");
          else if (row[i + 1].microbatch == a.microbatch)
            err(r, where(r, i, a) + "paired with a backward of its own microbatch");
        }
        if (is_comm(a.kind)) {
          check_peer(r, i, a);
          const int k = static_cast<int>(a.kind) - static_cast<int>(Kind::SEND_F);
          if (++comm[k].at(a.stage, a.microbatch) > 1)
            err(r, where(r, i, a) + "duplicate: this message is already sent or received");
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
          err(s_.stage_rank[st],
              id + "has " + std::to_string(nf.at(st, mb)) + " F actions, expected 1");
        const bool full = nbw.at(st, mb) == 1 && nb.at(st, mb) == 0 && nw.at(st, mb) == 0;
        const bool split = nbw.at(st, mb) == 0 && nb.at(st, mb) == 1 && nw.at(st, mb) == 1;
        if (!full && !split) err(s_.stage_rank[st], id + "expected one BW, or one B and one W");
      }
    return rep_.errors.size() == before;
  }

  // Deadlock freedom: the engine (engine.h) runs the lists with zero durations and
  // instant messages; whether a schedule deadlocks does not depend on the timing.
  void dry_run() {
    InstantMessages instant;
    for (const Stall& st : execute(s_, Costs{}, instant).stalls) err(st.rank, st.message());
  }

  // Peak activations per rank: F holds one stage unit until its W or BW; a pair of an F
  // and a BW holds as many units as before it (the BW frees layer by layer what the F
  // fills, coexec.h).
  void peak_memory() {
    rep_.peak_units.assign(s_.ranks, 0);
    for (int r = 0; r < s_.ranks; ++r) {
      int units = 0;
      const auto& row = s_.actions[r];
      for (size_t i = 0; i < row.size(); ++i) {
        const Action& a = row[i];
        if (a.paired && i + 1 < row.size() && row[i + 1].kind == Kind::BW) {
          ++i;  // the pair's BW frees a unit as its F fills one (coexec.h): no new peak
          continue;
        }
        if (a.kind == Kind::F) rep_.peak_units[r] = std::max(rep_.peak_units[r], ++units);
        if (a.kind == Kind::W || a.kind == Kind::BW) --units;
      }
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
      err(r, where(r, i, a) + "has no neighbouring stage to talk to");
      return;
    }
    if (sr[other] == r)
      err(r, where(r, i, a) + "stage " + std::to_string(other) + " is on the same rank");
    if (a.peer != sr[other])
      err(r, where(r, i, a) + "peer is " + std::to_string(a.peer) + ", stage " +
                 std::to_string(other) + " lives on rank " + std::to_string(sr[other]));
  }
  void err(std::string e) { err(-1, std::move(e)); }
  void err(int rank, std::string e) {
    rep_.errors.push_back(std::move(e));
    rep_.rank_of.push_back(rank);
  }

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
  c.peak_memory();
  const int chunks = std::max(1, s.chunks());
  rep.peak_activations.resize(rep.peak_units.size());
  for (size_t r = 0; r < rep.peak_units.size(); ++r) {
    rep.peak_activations[r] = static_cast<double>(rep.peak_units[r]) / chunks;
    if (memory_cap > 0 && rep.peak_activations[r] > memory_cap + 1e-9) {
      rep.errors.push_back("rank " + std::to_string(r) + ": peak activations " +
                           std::to_string(rep.peak_activations[r]) +
                           " microbatches exceed the cap " + std::to_string(memory_cap));
      rep.rank_of.push_back(static_cast<int>(r));
    }
  }
  return rep;
}

}  // namespace xdc::sched
