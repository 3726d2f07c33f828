#include "workloads/worker/executor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "workloads/model/optimizer.h"

namespace xdc::worker {

using sched::Action;
using sched::Kind;

std::string Layout::host(int w) const {
  return w >= 0 && w < static_cast<int>(hosts.size()) ? hosts[w] : std::string("?");
}

Executor::Executor(const RunSpec& spec, const sched::Schedule& schedule, Layout layout,
                   StageCompute& compute, Comm& comm, Tracer& tracer, OuterSync* outer)
    : spec_(spec),
      sched_(schedule),
      L_(std::move(layout)),
      compute_(compute),
      comm_(comm),
      tracer_(tracer),
      outer_(outer),
      actions_(schedule.actions.at(L_.pipeline_rank)),
      live_(spec.run_dir, L_.world_rank, spec.world_size()) {
  const int S = sched_.stages, M = sched_.microbatches;
  if (1 + 2 * S * M >= 30000)
    throw std::runtime_error("schedule " + sched_.name + ": " + std::to_string(S) + " stages x " +
                             std::to_string(M) + " microbatches exceed the MPI tag space");
  last_grad_action_.assign(S, -1);
  int first_opt = -1, last_compute = -1;
  size_t sink = 0;
  for (int i = 0; i < static_cast<int>(actions_.size()); ++i) {
    const Action& a = actions_[i];
    if (a.kind == Kind::W || a.kind == Kind::BW) last_grad_action_[a.stage] = i;
    if (sched::is_compute(a.kind)) last_compute = i;
    if (a.kind == Kind::OPT && first_opt < 0) first_opt = i;
    if (a.kind == Kind::RECV_F || a.kind == Kind::RECV_B) {
      sink = std::max(sink, static_cast<size_t>(message_bytes(a)));
      last_recv_ = i;
    }
  }
  if (compute_.real() && spec_.grad_clip > 0 && first_opt >= 0 && first_opt < last_compute)
    throw std::runtime_error("schedule " + sched_.name + ": rank " +
                             std::to_string(L_.pipeline_rank) +
                             " has compute after its first OPT; gradient clipping needs the "
                             "global norm first (set grad_clip 0 in the run spec)");
  if (!compute_.real()) sink_.assign(sink, std::byte{0});
  if (outer_) {  // checks the fragments' runs at once, also when the loop starts later
    outer_->begin(compute_, stages());
    outer_begun_ = outer_->sync_steps() == 0;
  }
  if (L_.tensor_parallel > 1)
    compute_.set_tp_allreduce([this](std::span<float> buf) { tp_allreduce(buf); });
  if (spec_.prefill.on) {
    std::function<void(const PrefillRequest&)> job = [](const PrefillRequest& r) {
      sleep_ns(r.duration_ns);
    };
    if (compute_.real()) job = [this](const PrefillRequest& r) { compute_.prefill(r.tokens); };
    prefill_ = std::make_unique<PrefillServer>(spec_.prefill, L_.world_rank, L_.pipeline_rank,
                                               spec_.world_size(), tracer_, std::move(job));
    next_compute_.assign(actions_.size(), -1);
    for (int i = static_cast<int>(actions_.size()) - 1, next = -1; i >= 0; --i) {
      next_compute_[i] = next;
      if (sched::is_compute(actions_[i].kind) || actions_[i].kind == Kind::OPT) next = i;
    }
  }
}

void Executor::finish_prefill(int64_t end_ns) {
  if (prefill_) prefill_->finish(end_ns);
}

nlohmann::json Executor::prefill_report() const {
  return prefill_ ? prefill_->report() : nlohmann::json();
}

void Executor::tp_allreduce(std::span<float> buf) {
  const int64_t t0 = now_ns();
  Comm::Request* r = comm_.iallreduce_sum(buf.data(), static_cast<int64_t>(buf.size()), L_.tensor);
  wait_for(r, running_, iteration_, "TP_ALLREDUCE",
           "the TP group of rank " + std::to_string(L_.world_rank) + " (world ranks " +
               std::to_string(L_.world_rank - L_.tp_index) + ".." +
               std::to_string(L_.world_rank - L_.tp_index + L_.tensor_parallel - 1) + ")");
  comm_.release(r);
  const int64_t t1 = now_ns();
  tracer_.record(Kind::TP_ALLREDUCE, running_.stage, running_.microbatch, t0, t1,
                 static_cast<int64_t>(buf.size_bytes()));
  add_wait("TP_ALLREDUCE", t1 - t0);
}

void Executor::run_pair(const Action& f, const Action& b) {
  if (b.kind != Kind::B && b.kind != Kind::BW)
    throw std::runtime_error("schedule " + sched_.name + ": rank " +
                             std::to_string(L_.pipeline_rank) + ": " + sched::to_string(f) +
                             " is paired but " + sched::to_string(b) + " is no B or BW");
  Buffer in, dout;
  if (f.stage > 0) in = take_input(0, f.stage, f.microbatch, f);
  if (b.stage + 1 < sched_.stages) dout = take_input(1, b.stage, b.microbatch, b);
  const int64_t t0 = now_ns();
  if (compute_.real()) {  // the halves in turn, the backward first: it frees what F fills
    running_ = b;
    const std::span<const std::byte> g = {dout.data, dout.size};
    handle_output(b, b.kind == Kind::B ? compute_.backward_input(b.stage, b.microbatch, g)
                                       : compute_.backward(b.stage, b.microbatch, g));
    const int64_t tm = now_ns();
    tracer_.record(b.kind, b.stage, b.microbatch, t0, tm);
    running_ = f;
    handle_output(f, compute_.forward(f.stage, f.microbatch, {in.data, in.size}));
    tracer_.record(f.kind, f.stage, f.microbatch, tm, now_ns());
  } else {
    const auto [out, grad] = compute_.coexecute(f.stage, b.stage, b.kind == Kind::BW);
    handle_output(b, grad);
    handle_output(f, out);
    // The pair's time on its F, its partner a zero-length record at the end (schedule.h).
    const int64_t t1 = now_ns();
    tracer_.record(f.kind, f.stage, f.microbatch, t0, t1);
    tracer_.record(b.kind, b.stage, b.microbatch, t1, t1);
  }
  give_back(std::move(in));
  give_back(std::move(dout));
}

Executor::~Executor() {
  for (auto& s : sends_)
    if (Comm::test(s.req)) comm_.release(s.req);
}

std::vector<int> Executor::stages() const {
  std::vector<int> out;
  for (int s = 0; s < sched_.stages; ++s)
    if (sched_.stage_rank[s] == L_.pipeline_rank) out.push_back(s);
  return out;
}

Executor::Buffer Executor::take_buffer(size_t bytes) {
  for (size_t i = 0; i < free_.size(); ++i) {
    if (free_[i]->size() == bytes) {
      Buffer b;
      b.owned = std::move(free_[i]);
      free_[i] = std::move(free_.back());
      free_.pop_back();
      b.data = b.owned->data();
      b.size = bytes;
      return b;
    }
  }
  Buffer b;
  b.owned = std::make_unique<std::vector<std::byte>>(bytes);
  b.data = b.owned->data();
  b.size = bytes;
  return b;
}

void Executor::give_back(Buffer b) {
  if (b.owned) free_.push_back(std::move(b.owned));
}

Executor::Buffer Executor::copy_out(std::span<const std::byte> data) {
  if (!compute_.real()) {  // modeled: the shared zero buffer, never written
    Buffer b;
    b.data = const_cast<std::byte*>(data.data());
    b.size = data.size();
    return b;
  }
  Buffer b = take_buffer(data.size());
  std::memcpy(b.data, data.data(), data.size());
  return b;
}

int Executor::tag(int direction, int consumer_stage, int mb) const {
  return 1 + (direction * sched_.stages + consumer_stage) * sched_.microbatches + mb;
}

int64_t Executor::message_bytes(const Action& a) const {
  switch (a.kind) {
    case Kind::RECV_F:
      return compute_.boundary_bytes(a.stage - 1);
    case Kind::RECV_B:
      return compute_.boundary_bytes(a.stage);
    case Kind::SEND_F:
      return compute_.boundary_bytes(a.stage);
    case Kind::SEND_B:
      return compute_.boundary_bytes(a.stage - 1);
    default:
      return 0;
  }
}

void Executor::add_wait(const char* cause, int64_t ns) {
  if (!tracer_.measuring()) return;
  waits_[cause] = waits_.value(cause, int64_t{0}) + ns;
}

void Executor::wait_for(Comm::Request* r, const Action& a, int iteration, const char* cause,
                        const std::string& what) {
  const std::string_view as = a.stage >= 0 ? sched::kind_name(a.kind) : std::string_view(cause);
  live_.beat(as, a.stage, a.microbatch, iteration);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(spec_.timeout_s);
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    if (comm_.wait(r, std::min(deadline, now + std::chrono::nanoseconds(Liveness::kBeatNs))))
      return;
    // Looked again after far more than a beat: this process did not run meanwhile.
    const int64_t gap = live_.since_beat();
    if (gap > Liveness::kSilentNs) deadline += std::chrono::nanoseconds(gap - Liveness::kBeatNs);
    live_.beat(as, a.stage, a.microbatch, iteration);
    if (std::chrono::steady_clock::now() >= deadline) break;
  }
  std::string at = cause;
  if (a.stage >= 0) {
    at = std::string(sched::kind_name(a.kind)) + " stage " + std::to_string(a.stage);
    if (a.microbatch >= 0) at += " microbatch " + std::to_string(a.microbatch);
  }
  std::string silent;
  for (const std::string& s : live_.silent(L_.hosts)) silent += "; " + s;
  // worker.cpp prefixes "xdc-worker: rank R (host H): ".
  throw WaitTimeout("waited " + std::to_string(spec_.timeout_s) + " s (timeout_s) at " + at +
                    " of iteration " + std::to_string(iteration) + " for " + what + silent);
}

std::function<bool(int64_t)> Executor::until(Comm::Request* r) {
  return [this, r](int64_t t_ns) {
    const auto tp = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(t_ns));
    live_.beat("PREFILL", -1, -1, iteration_);
    return comm_.wait(r, tp);
  };
}

void Executor::reap_sends() {
  size_t w = 0;
  for (size_t i = 0; i < sends_.size(); ++i) {
    PendingSend& s = sends_[i];
    if (Comm::test(s.req)) {
      if (s.measured)
        tracer_.record_send(s.action.kind, s.action.stage, s.action.microbatch, s.req->submit_ns,
                            s.req->complete_ns, s.bytes, L_.world_of(s.action.peer));
      give_back(std::move(s.buf));
      comm_.release(s.req);
      continue;
    }
    if (w != i) sends_[w] = std::move(s);
    ++w;
  }
  sends_.erase(sends_.begin() + static_cast<ptrdiff_t>(w), sends_.end());
}

void Executor::drain_sends() {
  for (auto& s : sends_) {
    const int64_t t0 = now_ns();
    const int peer = L_.world_of(s.action.peer);
    wait_for(s.req, s.action, -1, "SEND_DRAIN",
             "rank " + std::to_string(peer) + " (host " + L_.host(peer) + ") to take the message");
    add_wait("SEND_DRAIN", now_ns() - t0);
  }
  reap_sends();
  live_.beat(Liveness::kFinished, -1, -1, iteration_);
}

void Executor::handle_output(const Action& a, std::span<const std::byte> out) {
  const int s = a.stage;
  int dir, consumer;
  if (a.kind == Kind::F) {
    if (s + 1 >= sched_.stages) return;
    dir = 0, consumer = s + 1;
  } else {
    if (s == 0) return;
    dir = 1, consumer = s - 1;
  }
  const Key key{dir, consumer, a.microbatch};
  if (sched_.stage_rank[consumer] == L_.pipeline_rank)
    inbox_[key] = copy_out(out);  // next stage on this rank: no message
  else
    outbox_[key] = copy_out(out);
}

Executor::Buffer Executor::take_input(int direction, int stage, int mb, const Action& a) {
  return take_from(inbox_, Key{direction, stage, mb}, a,
                   "before its input arrived (no RECV or local producer before it)");
}

Executor::Buffer Executor::take_from(std::map<Key, Buffer>& box, const Key& key, const Action& a,
                                     const char* missing) {
  auto it = box.find(key);
  if (it == box.end())
    throw std::runtime_error("schedule " + sched_.name + ": rank " +
                             std::to_string(L_.pipeline_rank) + " runs " + sched::to_string(a) +
                             " " + missing);
  Buffer b = std::move(it->second);
  box.erase(it);
  return b;
}

void Executor::start_allreduce(int stage) {
  if (L_.data_parallel <= 1 || outer_on() || allreduce_.count(stage)) return;
  std::span<float> g = compute_.grads(stage);
  allreduce_[stage] = comm_.iallreduce_sum(g.data(), static_cast<int64_t>(g.size()), L_.replicas);
}

double Executor::grad_scale(int iteration) {
  if (scale_known_) return scale_;
  // DiLoCo's inner steps: each replica on its own gradients.
  const double D = outer_on() ? 1 : L_.data_parallel;
  scale_known_ = true;
  if (!compute_.real() || spec_.grad_clip <= 0) return scale_ = 1.0 / D;
  // Every held stage's gradient must be final and summed over replicas.
  double sq = 0;
  for (int s : stages()) {
    if (L_.data_parallel > 1 && !outer_on() && !reduced_.count(s)) {
      start_allreduce(s);
      const int64_t t0 = now_ns();
      wait_for(allreduce_[s], Action{Kind::ALLREDUCE, s, -1, -1}, iteration, "ALLREDUCE",
               "the replicas of stage " + std::to_string(s));
      add_wait("ALLREDUCE", now_ns() - t0);
      comm_.release(allreduce_[s]);
      allreduce_.erase(s);
      reduced_.insert(s);
    }
    sq += compute_.grad_sq_norm(s);
  }
  if (L_.pipeline_ranks * L_.tensor_parallel > 1) {
    norm_sq_ = sq;
    Comm::Request* r = comm_.iallreduce_sum(&norm_sq_, 1, L_.pipeline);
    const int64_t t0 = now_ns();
    wait_for(r, Action{Kind::OPT, -1, -1, -1}, iteration, "GRAD_NORM",
             "the pipeline ranks of replica " + std::to_string(L_.replica));
    add_wait("GRAD_NORM", now_ns() - t0);
    comm_.release(r);
    sq = norm_sq_;
  }
  // The allreduce summed the replicas' gradients: the mean's norm is 1/D of the sum's.
  return scale_ = model::clip_scale(sq / (D * D), spec_.grad_clip) / D;
}

void Executor::post_receives(Receives& rx) {
  const int n = static_cast<int>(actions_.size());
  rx.req.assign(n, nullptr);
  rx.buf.resize(n);
  for (int i = 0; i < n; ++i) {
    const Action& a = actions_[i];
    if (a.kind != Kind::RECV_F && a.kind != Kind::RECV_B) continue;
    const int64_t bytes = message_bytes(a);
    Buffer b;
    if (compute_.real()) {
      b = take_buffer(static_cast<size_t>(bytes));
    } else {
      b.data = sink_.data();
      b.size = static_cast<size_t>(bytes);
    }
    const int dir = a.kind == Kind::RECV_F ? 0 : 1;
    rx.req[i] =
        comm_.irecv(b.data, bytes, L_.world_of(a.peer), tag(dir, a.stage, a.microbatch), L_.world);
    rx.buf[i] = std::move(b);
  }
  rx.posted = true;
}

Executor::Iteration Executor::run_iteration(int iteration, bool another_follows) {
  compute_.begin_iteration(iteration);
  scale_known_ = false;
  reduced_.clear();
  const int n = static_cast<int>(actions_.size());
  // A rendezvous message can only progress once its receive exists.
  if (next_.posted) {
    std::swap(cur_, next_);
    next_.posted = false;
  } else {
    post_receives(cur_);
  }
  if (spec_.iteration_barrier) wait_iteration_barrier(iteration);
  Iteration res;
  iteration_ = iteration;
  // The outer loop starts after sync_steps synchronous iterations, from the parameters
  // they reached (the replicas' are equal: each applied the same averaged gradients).
  if (outer_ && outer_->sync_steps() > 0 && iteration == outer_->sync_steps()) {
    outer_->begin(compute_, stages());
    outer_begun_ = true;
  }
  res.start_ns = now_ns();
  iteration_start_ns_ = res.start_ns;
  if (prefill_) prefill_->begin_iteration(res.start_ns, tracer_.measuring());
  if (on_start) on_start(iteration);
  for (int i = 0; i < n; ++i) {
    running_ = actions_[i];
    live_.beat(sched::kind_name(running_.kind), running_.stage, running_.microbatch, iteration);
    i = run_action(i, iteration);
    // A stage's gradients are final after its last W/BW: reduce them while the rank
    // goes on with the other stages' work.
    const Action& done = actions_[i];  // the pair's partner when a pair ran
    if ((done.kind == Kind::W || done.kind == Kind::BW) && last_grad_action_[done.stage] == i)
      start_allreduce(done.stage);
    if (i == last_recv_ && another_follows) post_receives(next_);
    if (!sends_.empty()) reap_sends();
  }
  if (outer_) outer_sync(iteration);
  cur_.posted = false;
  res.end_ns = now_ns();
  res.loss = compute_.iteration_loss();
  return res;
}

void Executor::wait_iteration_barrier(int iteration) {
  // Not part of the iteration: its wait is reported, not traced.
  const int64_t t0 = now_ns();
  Comm::Request* r = comm_.ibarrier(L_.world);
  // Prefill in the wait (prefill.h) counts as waiting: the training waited as long.
  if (prefill_) prefill_->fill(prefill_->predicted_barrier(), until(r));
  wait_for(r, Action{Kind::OPT, -1, -1, -1}, iteration, "ITERATION_BARRIER",
           "every rank to finish the previous iteration");
  if (prefill_) prefill_->observe_barrier(r->complete_ns > 0 ? r->complete_ns : now_ns());
  comm_.release(r);
  add_wait("ITERATION_BARRIER", now_ns() - t0);
}

int Executor::run_action(int i, int iteration) {
  const Action& a = actions_[i];
  const int s = a.stage;
  switch (a.kind) {
    case Kind::RECV_F:
    case Kind::RECV_B:
      receive(i, iteration);
      break;
    case Kind::F:
      if (a.paired) {  // the pair: this F and the backward after it (schedule.h)
        if (i + 1 >= static_cast<int>(actions_.size()))
          throw std::runtime_error("schedule " + sched_.name + ": " + sched::to_string(a) +
                                   " is paired but ends the list");
        run_pair(a, actions_[i + 1]);
        return i + 1;
      }
      forward(a);
      break;
    case Kind::B:
    case Kind::BW:
      backward(a);
      break;
    case Kind::W: {
      const int64_t t0 = now_ns();
      compute_.backward_weight(s, a.microbatch);
      tracer_.record(a.kind, s, a.microbatch, t0, now_ns());
      break;
    }
    case Kind::SEND_F:
    case Kind::SEND_B:
      send(i, iteration);
      break;
    case Kind::ALLREDUCE:
      finish_allreduce(a, iteration);
      break;
    case Kind::OPT: {
      // The global-norm exchange is a wait (GRAD_NORM), not optimizer time: it shows
      // as idle before the OPT event.
      const double scale = grad_scale(iteration);
      const int64_t t0 = now_ns();
      compute_.optimizer_step(s, scale);
      tracer_.record(a.kind, s, -1, t0, now_ns());
      break;
    }
    case Kind::TP_ALLREDUCE:  // never in a schedule (the validator refuses it)
      throw std::runtime_error("schedule " + sched_.name + ": TP_ALLREDUCE is not an action");
    case Kind::PREFILL:  // a trace kind: validate() keeps it out of schedules
      throw std::runtime_error("schedule " + sched_.name + ": PREFILL is not an action");
    case Kind::OUTER_SYNC:
      throw std::runtime_error("schedule " + sched_.name + ": OUTER_SYNC is not an action");
  }
  return i;
}

void Executor::receive(int i, int iteration) {
  const Action& a = actions_[i];
  const int s = a.stage, mb = a.microbatch;
  const int peer = L_.world_of(a.peer);
  const int64_t t0 = now_ns();
  // Prefill while the data is on its way (prefill.h): within the RECV's wait, as the
  // training waited as long.
  if (prefill_) prefill_->fill(prefill_->predicted_ready(i, next_compute_[i]), until(cur_.req[i]));
  wait_for(cur_.req[i], a, iteration, sched::kind_name(a.kind).data(),
           "rank " + std::to_string(peer) + " (host " + L_.host(peer) + ")");
  const int64_t t1 = now_ns();
  if (prefill_)
    prefill_->observe(i, next_compute_[i],
                      cur_.req[i]->complete_ns > 0 ? cur_.req[i]->complete_ns : t1);
  tracer_.record(a.kind, s, mb, t0, t1, message_bytes(a), peer);
  add_wait(a.kind == Kind::RECV_F ? "RECV_F" : "RECV_B", t1 - t0);
  comm_.release(cur_.req[i]);
  inbox_[Key{a.kind == Kind::RECV_F ? 0 : 1, s, mb}] = std::move(cur_.buf[i]);
}

void Executor::forward(const Action& a) {
  const int s = a.stage, mb = a.microbatch;
  Buffer in;
  if (s > 0) in = take_input(0, s, mb, a);
  const int64_t t0 = now_ns();
  auto out = compute_.forward(s, mb, {in.data, in.size});
  tracer_.record(a.kind, s, mb, t0, now_ns());
  give_back(std::move(in));
  handle_output(a, out);
}

void Executor::backward(const Action& a) {
  const int s = a.stage, mb = a.microbatch;
  Buffer dout;
  if (s + 1 < sched_.stages) dout = take_input(1, s, mb, a);
  const int64_t t0 = now_ns();
  auto out = a.kind == Kind::B ? compute_.backward_input(s, mb, {dout.data, dout.size})
                               : compute_.backward(s, mb, {dout.data, dout.size});
  tracer_.record(a.kind, s, mb, t0, now_ns());
  give_back(std::move(dout));
  handle_output(a, out);
}

void Executor::send(int i, int iteration) {
  const Action& a = actions_[i];
  const int s = a.stage, mb = a.microbatch;
  const Key key = a.kind == Kind::SEND_F ? Key{0, s + 1, mb} : Key{1, s - 1, mb};
  Buffer b = take_from(outbox_, key, a, "before the compute producing it");
  const int64_t bytes = static_cast<int64_t>(b.size);
  SendOrder order;  // temporal WAN sharing: the arbiter's order (arbiter.h)
  if (!spec_.wan_send_order_ns.empty())
    order = {iteration, spec_.wan_send_order_ns.at(L_.pipeline_rank).at(i)};
  Comm::Request* r = comm_.isend(b.data, bytes, L_.world_of(a.peer),
                                 tag(std::get<0>(key), std::get<1>(key), mb), L_.world, order);
  sends_.push_back(PendingSend{r, std::move(b), a, bytes, tracer_.measuring()});
}

void Executor::finish_allreduce(const Action& a, int iteration) {
  const int s = a.stage;
  const int64_t t0 = now_ns();
  int64_t bytes = 0;
  if (L_.data_parallel > 1 && !outer_on() && !reduced_.count(s)) {
    start_allreduce(s);
    bytes = static_cast<int64_t>(compute_.grads(s).size_bytes());
    wait_for(allreduce_[s], a, iteration, "ALLREDUCE",
             "the replicas of stage " + std::to_string(s));
    comm_.release(allreduce_[s]);
    allreduce_.erase(s);
    reduced_.insert(s);
  }
  const int64_t t1 = now_ns();
  tracer_.record(a.kind, s, -1, t0, t1, bytes);
  add_wait("ALLREDUCE", t1 - t0);
}

void Executor::outer_sync(int iteration) {
  // Eager: a fragment's previous sync is waited for as its next starts (the buffers are
  // the unit's); the others are due overlap_steps after they start.
  if (outer_->eager()) apply_outer(iteration);
  for (int f : outer_->due(iteration))
    for (int s : stages())
      if (outer_->holds(s, f))
        pending_outer_.push_back(PendingOuter{s, f, iteration + outer_->apply_after_steps(),
                                              now_ns(),
                                              outer_->start(compute_, s, f, comm_, L_.replicas)});
  apply_outer(iteration);
}

// Every pending sync due by `iteration` (INT_MAX: all), in the order they started.
void Executor::apply_outer(int iteration) {
  while (!pending_outer_.empty() && pending_outer_.front().apply_after <= iteration) {
    const PendingOuter o = pending_outer_.front();
    pending_outer_.erase(pending_outer_.begin());
    const int64_t w0 = now_ns();
    wait_for(o.request, Action{Kind::OUTER_SYNC, o.stage, -1, -1}, iteration_, "OUTER_SYNC",
             "the replicas of stage " + std::to_string(o.stage) + " (fragment " +
                 std::to_string(o.fragment) + ")");
    comm_.release(o.request);
    add_wait("OUTER_SYNC", now_ns() - w0);
    outer_->finish(compute_, o.stage, o.fragment);
    // Inside this iteration: a sync started in an earlier one shows from this one's start.
    tracer_.record(Kind::OUTER_SYNC, o.stage, -1, std::max(o.start_ns, iteration_start_ns_),
                   now_ns(), outer_->wire_bytes(o.stage, o.fragment));
  }
}

void Executor::finish_outer() {
  if (!outer_ || !outer_begun_) return;  // a run that ended before its outer loop began
  // After the measured iterations: neither traced nor counted as a wait.
  const bool measuring = tracer_.measuring();
  tracer_.set_measuring(false);
  apply_outer(std::numeric_limits<int>::max());
  tracer_.set_measuring(measuring);
  outer_->adopt_outer(compute_);
}

}  // namespace xdc::worker
