#include "workloads/schedule/engine.h"

#include <algorithm>
#include <stdexcept>

namespace xdc::sched {

namespace {
bool is_grad(Kind k) {
  return k == Kind::SEND_B || k == Kind::RECV_B;
}
std::string where(int rank, size_t i, const Action& a) {
  return "rank " + std::to_string(rank) + ", action " + std::to_string(i) + " (" + to_string(a) +
         "): ";
}
}  // namespace

FifoChannels::FifoChannels(int ranks, std::vector<int> channel)
    : ranks_(ranks), channel_(std::move(channel)) {
  const size_t pairs = static_cast<size_t>(std::max(0, ranks)) * std::max(0, ranks);
  if (!channel_.empty() && channel_.size() != pairs)
    throw std::invalid_argument("channels: expected a ranks x ranks map, got " +
                                std::to_string(channel_.size()) + " entries");
  int n = static_cast<int>(pairs);
  if (!channel_.empty()) n = 1 + *std::max_element(channel_.begin(), channel_.end());
  free_.assign(static_cast<size_t>(std::max(0, n)), 0);
}

Transfer FifoChannels::send(int from, int to, double ready, double transfer, double latency) {
  const size_t pair = static_cast<size_t>(from) * ranks_ + to;
  double& free = free_.at(channel_.empty() ? pair : static_cast<size_t>(channel_.at(pair)));
  Transfer x;
  x.start = std::max(ready, free);
  x.end = free = x.start + transfer;
  x.arrival = x.end + latency;
  return x;
}

std::string Stall::message() const {
  return where(rank, index, action) + "deadlock: waits forever for " + waits_for;
}

std::string Execution::deadlock_message() const {
  std::string out;
  for (const auto& s : stalls) out += (out.empty() ? "" : "\n") + s.message();
  return out;
}

Engine::Engine(int ranks, std::vector<int> stage_rank, int microbatches, Costs costs,
               MessageTiming& timing, int replicas)
    : ranks_(ranks),
      stages_(static_cast<int>(stage_rank.size())),
      m_(microbatches),
      replicas_(replicas),
      local_(replicas > 0 ? stages_ / replicas : 0),
      cells_(static_cast<size_t>(stages_) * std::max(0, microbatches)),
      stage_rank_(std::move(stage_rank)),
      costs_(std::move(costs)),
      timing_(timing),
      actions_(std::max(0, ranks)),
      records_(std::max(0, ranks)),
      now_(std::max(0, ranks), 0),
      start_(std::max(0, ranks), 0),
      queued_(std::max(0, ranks), 0),
      waiting_(std::max(0, ranks), -1),
      f_(cells_, 0),
      b_(cells_, 0),
      got_f_(cells_, 0),
      got_b_(cells_, 0),
      posted_(2 * cells_, 0),
      arrival_(2 * cells_, kNever),
      ticket_(2 * cells_, -1),
      reached_(std::max(0, ranks), -1),
      weights_left_(stages_, microbatches),
      ar_enter_(stages_, -1),
      ar_released_(stages_, 0),
      ar_reached_(std::max(local_, 0), 0) {
  if (ranks < 1 || microbatches < 1 || stages_ < 1)
    throw std::invalid_argument("engine: needs ranks, stages and microbatches >= 1");
  if (replicas < 1 || stages_ % replicas != 0)
    throw std::invalid_argument("engine: " + std::to_string(stages_) +
                                " stages do not split into " + std::to_string(replicas) +
                                " replicas");
  for (int st = 0; st < stages_; ++st)
    if (stage_rank_[st] < 0 || stage_rank_[st] >= ranks)
      throw std::invalid_argument("engine: stage " + std::to_string(st) + " is placed on rank " +
                                  std::to_string(stage_rank_[st]) + ", which does not exist");
  timing_.bind(this);
}

Engine::~Engine() {
  timing_.bind(nullptr);
}

Engine::Activity Engine::activity(int rank, double t) const {
  Activity out;
  const auto& row = actions_[rank];
  const auto& rec = records_[rank];
  auto computes = [](Kind k) { return is_compute(k) || k == Kind::OPT; };
  double clock = start_[rank];                             // when the rank reached action i
  for (size_t i = 0; i < rec.size() && clock <= t; ++i) {  // later records start after t
    const Kind k = row[i].kind;
    if (is_send(k)) {
      if (t < rec[i].end) out.sending = true;
      if (rec[i].end <= t) out.last_send_end = std::max(out.last_send_end, rec[i].end);
      continue;  // a SEND does not move the rank's clock
    }
    if (computes(k) && rec[i].start <= t && t < rec[i].end) {
      out.computing = true;
      out.since = rec[i].start;
    }
    clock = std::max(clock, rec[i].end);
  }
  const size_t next = rec.size();
  if (!out.computing && next < row.size() && t >= now_[rank] && computes(row[next].kind) &&
      unmet_at(rank, next) == Unmet::kNone) {
    out.computing = true;
    out.since = now_[rank];
  }
  return out;
}

void Engine::append(int rank, const Action& a) {
  if (rank < 0 || rank >= ranks_)
    throw std::invalid_argument("engine: rank " + std::to_string(rank) + " does not exist");
  auto& row = actions_[rank];
  auto bad = [&](const std::string& why) {
    throw std::invalid_argument(where(rank, row.size(), a) + why);
  };
  if (a.stage < 0 || a.stage >= stages_) bad("stage out of range");
  const bool per_iter = a.kind == Kind::ALLREDUCE || a.kind == Kind::OPT;
  if (per_iter ? a.microbatch != -1 : (a.microbatch < 0 || a.microbatch >= m_))
    bad("microbatch out of range");
  if (stage_rank_[a.stage] != rank)
    bad("stage " + std::to_string(a.stage) + " lives on rank " +
        std::to_string(stage_rank_[a.stage]));
  const bool up = a.kind == Kind::SEND_F || a.kind == Kind::RECV_B;  // talks to stage + 1
  if (is_comm(a.kind)) {
    const int other = up ? a.stage + 1 : a.stage - 1;
    if (up ? last_stage(a.stage) : first_stage(a.stage))
      bad("has no neighbouring stage to talk to");
    if (stage_rank_[other] == rank) bad("stage " + std::to_string(other) + " is on the same rank");
  }
  if (is_send(a.kind))
    posted_[message(a.kind == Kind::SEND_B, a.kind == Kind::SEND_B ? a.stage - 1 : a.stage + 1,
                    a.microbatch)] = 1;
  row.push_back(a);
  // An idle rank (every earlier action ran, or all but the paired F this one completes)
  // becomes runnable at its clock.
  const size_t done = records_[rank].size();
  const bool completes = row.size() >= 2 && done + 2 == row.size() && row[done].paired;
  if (!queued_[rank] && waiting_[rank] < 0 && (done + 1 == row.size() || completes))
    push(rank, now_[rank]);
}

void Engine::push(int rank, double t) {
  queued_[rank] = 1;
  heap_.push_back({t, rank});
  std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
}

void Engine::run(double horizon) {
  while (!heap_.empty() && heap_.front().first <= horizon) {
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
    const int r = heap_.back().second;
    pop_time_ = heap_.back().first;
    heap_.pop_back();
    queued_[r] = 0;
    // A rank that would be popped next anyway goes on without the heap.
    while (step(r)) {
      const std::pair<double, int> next{now_[r], r};
      if (next.first > horizon || (!heap_.empty() && heap_.front() < next)) {
        push(r, now_[r]);
        break;
      }
    }
  }
}

Engine::Unmet Engine::first_unmet(int rank, const Action& a) const {
  const int st = a.stage, mb = a.microbatch;
  auto same = [&](int other) { return stage_rank_[other] == rank; };
  switch (a.kind) {
    case Kind::F:
      if (first_stage(st)) return Unmet::kNone;
      if (!same(st - 1)) return got_f_[cell(st, mb)] ? Unmet::kNone : Unmet::kRecvF;
      return f_[cell(st - 1, mb)] ? Unmet::kNone : Unmet::kPrevF;
    case Kind::B:
    case Kind::BW:
      if (!f_[cell(st, mb)]) return Unmet::kOwnF;
      if (last_stage(st)) return Unmet::kNone;
      if (!same(st + 1)) return got_b_[cell(st, mb)] ? Unmet::kNone : Unmet::kRecvB;
      return b_[cell(st + 1, mb)] ? Unmet::kNone : Unmet::kNextB;
    case Kind::W:
      return b_[cell(st, mb)] ? Unmet::kNone : Unmet::kOwnB;
    case Kind::SEND_F:
      return f_[cell(st, mb)] ? Unmet::kNone : Unmet::kProducer;
    case Kind::SEND_B:
      return b_[cell(st, mb)] ? Unmet::kNone : Unmet::kProducer;
    case Kind::RECV_F:
    case Kind::RECV_B:
      return arrival_[message(is_grad(a.kind), st, mb)] < kNever ? Unmet::kNone : Unmet::kSend;
    case Kind::ALLREDUCE:
    case Kind::OPT:
      return weights_left_[st] == 0 ? Unmet::kNone : Unmet::kWeights;
    case Kind::TP_ALLREDUCE:  // the validator refuses it in a schedule (schedule.h)
      throw std::logic_error("schedule engine: TP_ALLREDUCE is a trace record, not an action");
    case Kind::PREFILL:  // a trace kind; the validator refuses it in a schedule
      throw std::logic_error("schedule engine: PREFILL is a trace record, not an action");
    case Kind::OUTER_SYNC:  // a trace kind; the validator refuses it in a schedule
      throw std::logic_error("schedule engine: OUTER_SYNC is a trace record, not an action");
  }
  return Unmet::kNone;
}

Engine::Unmet Engine::unmet_at(int rank, size_t index) const {
  const auto& row = actions_[rank];
  const Unmet u = first_unmet(rank, row[index]);
  if (u != Unmet::kNone || !row[index].paired || index + 1 >= row.size()) return u;
  // The partner, as if the F had run: it must not need the F's own result.
  const Action& f = row[index];
  const Action& p = row[index + 1];
  if ((p.kind == Kind::B || p.kind == Kind::BW) && p.microbatch == f.microbatch)
    return Unmet::kOwnF;
  return first_unmet(rank, p);
}

std::string Engine::waits_for(int rank, size_t index) const {
  const auto& row = actions_[rank];
  const Action& a = row[index];
  const Unmet u = unmet_at(rank, index);
  if (!a.paired || index + 1 >= row.size() || first_unmet(rank, a) != Unmet::kNone)
    return describe(u, a);
  return "its partner " + to_string(row[index + 1]) +
         "'s dependency: " + describe(u, row[index + 1]);
}

bool Engine::is_partner(int rank, size_t index) const {
  const auto& row = actions_[rank];
  return index > 0 && row[index - 1].paired && row[index - 1].kind == Kind::F &&
         (row[index].kind == Kind::B || row[index].kind == Kind::BW);
}

std::string Engine::describe(Unmet u, const Action& a) {
  const int st = a.stage;
  switch (u) {
    case Unmet::kNone:
      return "nothing (not run yet)";
    case Unmet::kRecvF:
      return "its RECV_F";
    case Unmet::kPrevF:
      return "F of stage " + std::to_string(st - 1);
    case Unmet::kOwnF:
      return "its F";
    case Unmet::kRecvB:
      return "its RECV_B";
    case Unmet::kNextB:
      return "the backward of stage " + std::to_string(st + 1);
    case Unmet::kOwnB:
      return "its B";
    case Unmet::kProducer:
      return a.kind == Kind::SEND_F ? "its F (send before the data exists)"
                                    : "its backward (send before the data)";
    case Unmet::kSend:
      return a.kind == Kind::RECV_F ? "SEND_F of stage " + std::to_string(st - 1)
                                    : "SEND_B of stage " + std::to_string(st + 1);
    case Unmet::kWeights:
      return "the stage's last weight grad";
  }
  return "?";
}

bool Engine::step(int r) {
  const auto& row = actions_[r];
  const size_t i = records_[r].size();
  if (i >= row.size()) return false;  // idle until append()
  const Action& a = row[i];
  const int st = a.stage, mb = a.microbatch;
  if (a.paired && i + 1 >= row.size()) return false;  // its partner is not appended yet
  const Unmet u = unmet_at(r, i);
  if (u == Unmet::kSend) {
    waiting_[r] = static_cast<long>(message(is_grad(a.kind), st, mb));  // the SEND wakes it
    return false;
  }
  if (u != Unmet::kNone) return false;  // stuck: only this rank's own later actions could help
  if (a.kind == Kind::OPT && gate_ && gate_enter_[r] < 0) {
    // The iteration's collective: wait here until every rank has entered it.
    gate_enter_[r] = now_[r];
    if (++gate_entered_ == ranks_) {
      const std::vector<double> done = gate_(gate_enter_);
      if (static_cast<int>(done.size()) != ranks_)
        throw std::invalid_argument("engine: the gate gave " + std::to_string(done.size()) +
                                    " completion times for " + std::to_string(ranks_) + " ranks");
      for (int q = 0; q < ranks_; ++q) push(q, now_[q] = std::max(now_[q], done[q]));
    }
    return false;  // this rank goes on when the gate releases it (pushed above)
  }
  if (a.kind == Kind::ALLREDUCE && replicas_ > 1 && !ar_released_[st]) {
    // The replicas' collective: wait until the same stage of every replica has reached it.
    ar_enter_[st] = now_[r];
    const int local = st % local_;
    if (++ar_reached_[local] == replicas_) {
      double start = 0;
      for (int q = 0; q < replicas_; ++q) start = std::max(start, ar_enter_[q * local_ + local]);
      for (int q = 0; q < replicas_; ++q) {
        const int g = q * local_ + local, owner = stage_rank_[g];
        ar_released_[g] = 1;
        push(owner, now_[owner] = std::max(now_[owner], start));
      }
    }
    return false;  // this rank goes on when the last replica arrives (pushed above)
  }
  Record rec{now_[r], now_[r]};
  if (a.kind == Kind::ALLREDUCE && replicas_ > 1) rec.start = ar_enter_[st];
  if (is_recv(a.kind)) {
    const size_t k = message(is_grad(a.kind), st, mb);
    if (ticket_[k] >= 0) {  // may still be delayed by sends issued before it arrives
      arrival_[k] = timing_.current(ticket_[k]).arrival;
      if (arrival_[k] > std::max(now_[r], pop_time_)) {
        if (reached_[r] < 0) reached_[r] = now_[r];
        push(r, arrival_[k]);
        return false;
      }
      if (reached_[r] >= 0) rec.start = reached_[r];
      reached_[r] = -1;
    }
    rec.end = now_[r] = std::max(now_[r], arrival_[k]);
    (a.kind == Kind::RECV_F ? got_f_ : got_b_)[cell(st, mb)] = 1;
  } else if (is_send(a.kind)) {
    const bool grad = a.kind == Kind::SEND_B;
    const int to_stage = grad ? st - 1 : st + 1, to = stage_rank_[to_stage];
    const int64_t bytes = costs_.bytes ? costs_.bytes(a) : 0;
    const Transfer x = timing_.send(r, to, bytes, now_[r], a);
    rec = {x.start, x.end};
    const size_t k = message(grad, to_stage, mb);
    arrival_[k] = x.arrival;
    ticket_[k] = x.ticket;
    if (x.ticket >= 0) revisable_.push_back({order_.size(), x.ticket});
    ++sends_;
    if (waiting_[to] == static_cast<long>(k)) {
      waiting_[to] = -1;
      push(to, std::max(now_[to], x.arrival));
    }
  } else {
    double d = 0;
    auto dur = [&](const Action& x) { return costs_.duration ? costs_.duration(r, x) : 0.0; };
    if (a.paired && a.kind == Kind::F)
      d = costs_.pair ? costs_.pair(r, a, row[i + 1]) : dur(a) + dur(row[i + 1]);
    else if (!is_partner(r, i))
      d = dur(a);
    rec.end = now_[r] = costs_.end ? costs_.end(r, a, now_[r], d) : now_[r] + d;
    switch (a.kind) {
      case Kind::F:
        f_[cell(st, mb)] = 1;
        break;
      case Kind::B:
        b_[cell(st, mb)] = 1;
        break;
      case Kind::BW:
        b_[cell(st, mb)] = 1;
        --weights_left_[st];
        break;
      case Kind::W:
        --weights_left_[st];
        break;
      default:
        break;
    }
  }
  records_[r].push_back(rec);
  order_.push_back({r, i});
  makespan_ = std::max(makespan_, rec.end);
  return i + 1 < row.size();
}

void Engine::settle() {
  if (revisable_.empty()) return;
  for (const auto& [at, ticket] : revisable_) {
    const auto [r, i] = order_[at];
    const Transfer x = timing_.current(ticket);
    records_[r][i] = {x.start, x.end};
  }
  makespan_ = 0;
  for (const auto& row : records_)
    for (const Record& rec : row) makespan_ = std::max(makespan_, rec.end);
}

Transfer MessageTiming::current(int64_t ticket) {
  throw std::logic_error("MessageTiming::current(" + std::to_string(ticket) +
                         "): this timing gives no tickets");
}

Engine::Ready Engine::input_ready(int rank, const Action& a) const {
  switch (first_unmet(rank, a)) {
    case Unmet::kNone:
      return {0, true};
    case Unmet::kRecvF:
    case Unmet::kRecvB: {
      const size_t k = message(a.kind != Kind::F, a.stage, a.microbatch);
      if (arrival_[k] < kNever) return {arrival_[k], true};
      if (posted_[k]) return {next_time(), false};
      return {kNever, true};
    }
    default:
      return {kNever, true};
  }
}

void Engine::reserve(int rank, size_t actions) {
  actions_.at(rank).reserve(actions);
  records_.at(rank).reserve(actions);
}

bool Engine::finished() const {
  for (int r = 0; r < ranks_; ++r)
    if (records_[r].size() < actions_[r].size()) return false;
  return true;
}

std::vector<Stall> Engine::stalls() const {
  std::vector<Stall> out;
  for (int r = 0; r < ranks_; ++r) {
    const size_t i = records_[r].size();
    if (i >= actions_[r].size()) continue;
    const Action& a = actions_[r][i];
    const bool at_gate = a.kind == Kind::OPT && gate_ && gate_enter_[r] >= 0;
    const bool at_ar = a.kind == Kind::ALLREDUCE && replicas_ > 1 && ar_enter_[a.stage] >= 0 &&
                       !ar_released_[a.stage];
    out.push_back(
        {r, i, a,
         at_gate ? "the other ranks' first OPT (the iteration's collective)"
         : at_ar ? "the other replicas' ALLREDUCE of stage " + std::to_string(a.stage % local_)
                 : waits_for(r, i)});
  }
  return out;
}

void Engine::set_iteration(const Iteration& it) {
  for (int r = 0; r < ranks_; ++r)
    if (!actions_[r].empty())
      throw std::invalid_argument("engine: set_iteration after actions were appended");
  if (!it.start.empty()) {
    if (static_cast<int>(it.start.size()) != ranks_)
      throw std::invalid_argument("engine: start times for " + std::to_string(it.start.size()) +
                                  " ranks, expected " + std::to_string(ranks_));
    now_ = it.start;
    start_ = it.start;
  }
  gate_ = it.gate;
  gate_enter_.assign(ranks_, -1);
  gate_entered_ = 0;
}

Execution execute(const Schedule& s, const Costs& costs, MessageTiming& timing,
                  const Iteration& it) {
  if (static_cast<int>(s.actions.size()) != s.ranks)
    throw std::invalid_argument("engine: action lists for " + std::to_string(s.actions.size()) +
                                " ranks, expected " + std::to_string(s.ranks));
  Engine e(s.ranks, s.stage_rank, s.microbatches, costs, timing, s.replicas);
  Iteration iteration = it;
  // A gate that some rank never reaches would hold the others forever: none then.
  for (const auto& row : s.actions)
    if (std::none_of(row.begin(), row.end(), [](const Action& a) { return a.kind == Kind::OPT; }))
      iteration.gate = nullptr;
  e.set_iteration(iteration);
  size_t total = 0;
  for (int r = 0; r < s.ranks; ++r) {
    e.reserve(r, s.actions[r].size());
    total += s.actions[r].size();
    for (const Action& a : s.actions[r]) e.append(r, a);
  }
  e.order_.reserve(total);
  e.run();
  e.settle();
  Execution x;
  x.stalls = e.stalls();
  x.records = std::move(e.records_);
  x.order = std::move(e.order_);
  x.makespan = e.makespan_;
  return x;
}

}  // namespace xdc::sched
