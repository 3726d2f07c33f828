#include "workloads/schedule/schedule.h"

#include <stdexcept>

namespace xdc::sched {

bool is_compute(Kind k) {
  return k == Kind::F || k == Kind::B || k == Kind::W || k == Kind::BW;
}

bool is_comm(Kind k) {
  return is_send(k) || is_recv(k);
}

bool is_send(Kind k) {
  return k == Kind::SEND_F || k == Kind::SEND_B;
}

bool is_recv(Kind k) {
  return k == Kind::RECV_F || k == Kind::RECV_B;
}

std::string_view kind_name(Kind k) {
  switch (k) {
    case Kind::F:
      return "F";
    case Kind::B:
      return "B";
    case Kind::W:
      return "W";
    case Kind::BW:
      return "BW";
    case Kind::SEND_F:
      return "SEND_F";
    case Kind::RECV_F:
      return "RECV_F";
    case Kind::SEND_B:
      return "SEND_B";
    case Kind::RECV_B:
      return "RECV_B";
    case Kind::ALLREDUCE:
      return "ALLREDUCE";
    case Kind::OPT:
      return "OPT";
    case Kind::TP_ALLREDUCE:
      return "TP_ALLREDUCE";
    case Kind::PREFILL:
      return "PREFILL";
    case Kind::OUTER_SYNC:
      return "OUTER_SYNC";
  }
  return "?";
}

std::string to_string(const Action& a) {
  std::string s = std::to_string(a.stage) + std::string(kind_name(a.kind));
  if (a.microbatch >= 0) s += std::to_string(a.microbatch);
  if (a.paired) s += '+';
  return s;
}

std::vector<int> plain_placement(int ranks) {
  return looped_placement(ranks, 1);
}

std::vector<int> looped_placement(int ranks, int chunks) {
  std::vector<int> p(ranks * chunks);
  for (int s = 0; s < ranks * chunks; ++s) p[s] = s % ranks;
  return p;
}

std::vector<int> v_placement(int ranks) {
  std::vector<int> p(2 * ranks);
  for (int r = 0; r < ranks; ++r) p[r] = p[2 * ranks - 1 - r] = r;
  return p;
}

std::vector<std::vector<Action>> compute_order(const Schedule& s) {
  std::vector<std::vector<Action>> order(s.actions.size());
  for (size_t r = 0; r < s.actions.size(); ++r)
    for (const Action& a : s.actions[r])
      if (is_compute(a.kind)) order[r].push_back({a.kind, a.stage, a.microbatch, -1, a.paired});
  return order;
}

void lower_action(const std::vector<int>& sr, int r, const Action& a, std::vector<Action>& out) {
  const int st = a.stage, mb = a.microbatch, stages = static_cast<int>(sr.size());
  const bool has_prev = st > 0 && sr[st - 1] != r;
  const bool has_next = st + 1 < stages && sr[st + 1] != r;
  if (a.kind == Kind::F && has_prev) out.push_back({Kind::RECV_F, st, mb, sr[st - 1]});
  if ((a.kind == Kind::B || a.kind == Kind::BW) && has_next)
    out.push_back({Kind::RECV_B, st, mb, sr[st + 1]});
  out.push_back({a.kind, st, mb, -1, a.paired});
  if (a.kind == Kind::F && has_next) out.push_back({Kind::SEND_F, st, mb, sr[st + 1]});
  if ((a.kind == Kind::B || a.kind == Kind::BW) && has_prev)
    out.push_back({Kind::SEND_B, st, mb, sr[st - 1]});
}

void lower_pair(const std::vector<int>& sr, int r, const Action& f, const Action& b,
                std::vector<Action>& out) {
  std::vector<Action> hf, hb;  // each half lowered alone, then regrouped
  Action fp = f;
  fp.paired = true;
  lower_action(sr, r, fp, hf);
  lower_action(sr, r, b, hb);
  for (bool (*part)(Kind) : {is_recv, is_compute, is_send})
    for (const auto* half : {&hf, &hb})
      for (const Action& x : *half)
        if (part(x.kind)) out.push_back(x);
}

Schedule lower(std::string name, int ranks, int microbatches, std::vector<int> stage_rank,
               const std::vector<std::vector<Action>>& compute_order, bool optimizer) {
  Schedule s;
  s.name = std::move(name);
  s.ranks = ranks;
  s.stages = static_cast<int>(stage_rank.size());
  s.microbatches = microbatches;
  s.stage_rank = std::move(stage_rank);
  s.actions.assign(ranks, {});
  if (static_cast<int>(compute_order.size()) != ranks)
    throw std::invalid_argument("lower: compute order has wrong number of ranks");
  const auto& sr = s.stage_rank;
  for (int r = 0; r < ranks; ++r) {
    auto& out = s.actions[r];
    const auto& order = compute_order[r];
    for (size_t i = 0; i < order.size(); ++i) {
      if (!order[i].paired) {
        lower_action(sr, r, order[i], out);
        continue;
      }
      const bool partner =
          i + 1 < order.size() && (order[i + 1].kind == Kind::B || order[i + 1].kind == Kind::BW);
      if (order[i].kind != Kind::F || !partner)
        throw std::invalid_argument("lower: rank " + std::to_string(r) + ": " +
                                    to_string(order[i]) +
                                    " is paired but not an F followed by a B or BW");
      lower_pair(sr, r, order[i], order[i + 1], out);
      ++i;
    }
    if (!optimizer) continue;
    for (int st = s.stages - 1; st >= 0; --st)
      if (sr[st] == r) out.push_back({Kind::ALLREDUCE, st, -1, -1});
    for (int st = s.stages - 1; st >= 0; --st)
      if (sr[st] == r) out.push_back({Kind::OPT, st, -1, -1});
  }
  return s;
}

}  // namespace xdc::sched

namespace xdc::sched {

Schedule replicated(const Schedule& s, int replicas) {
  if (replicas < 1) throw std::invalid_argument("replicated: replicas must be >= 1");
  if (s.replicas != 1)
    throw std::invalid_argument("replicated: " + s.name + " is replicated already");
  Schedule out = s;
  out.replicas = replicas;
  out.ranks = s.ranks * replicas;
  out.stages = s.stages * replicas;
  out.stage_rank.clear();
  out.actions.clear();
  for (int q = 0; q < replicas; ++q) {
    for (int r : s.stage_rank) out.stage_rank.push_back(q * s.ranks + r);
    for (const auto& row : s.actions) {
      std::vector<Action> copy = row;
      for (Action& a : copy) {
        a.stage += q * s.stages;
        if (a.peer >= 0) a.peer += q * s.ranks;
      }
      out.actions.push_back(std::move(copy));
    }
  }
  return out;
}

}  // namespace xdc::sched
