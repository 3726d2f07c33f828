#pragma once
// The dependency engine: the one place that owns the schedule IR's execution rules
// (schedule.h). The validator's dry run, the list scheduler (greedy.h) and the simulator
// (harness/sim) all run schedules through it, so they agree by construction.
//
// Rules, per rank, over its action list (full lists with SEND/RECV, as lower() makes):
//  - a rank runs its actions in order; an action starts when the rank reaches it and its
//    dependencies are met;
//  - compute (F, B, W, BW) and ALLREDUCE / OPT last Costs::duration;
//  - SEND_F / SEND_B are non-blocking: the rank does not wait; the message's timing comes
//    from the MessageTiming hook (serialisation start/end, arrival at the receiver); the
//    receiver is the rank of the neighbouring stage;
//  - RECV_F / RECV_B block until the matching message has arrived;
//  - data dependencies on the rank's own earlier actions: F needs its RECV_F (or the
//    previous stage's F when that stage is on the same rank); B / BW need their F and their
//    RECV_B (or the next stage's backward on the same rank); W needs its B; a SEND needs
//    the compute that produced its data; ALLREDUCE / OPT need every W / BW of their stage.
//    One not met when the rank reaches the action can never be met (it is a later action
//    of the same rank, or missing): the rank is stuck (a deadlock).
//  - a paired F (schedule.h) and its partner B / BW, the next action, run as one: the pair
//    starts when the dependencies of both are met (a partner that needs the F itself is a
//    deadlock), lasts Costs::pair, and is recorded on the F (the partner: zero length at
//    the pair's end). A paired F with no partner yet waits for one to be appended.
//  - data-parallel replicas simulated together (Schedule::replicas = D > 1, replicated()):
//    each replica's stages form their own pipeline (first and last stage, neighbours,
//    inside the replica), and a stage's ALLREDUCE is a collective: it starts when the
//    same stage of every replica has reached its ALLREDUCE (the latest arrival), lasts its
//    duration from then, and its record starts when this rank reached it (the worker's
//    ALLREDUCE record is its wait for the collective too).
// Ranks advance in global time order (ties: lower rank first), so the hook sees the SENDs
// in the order they are issued and may keep channel state (FifoChannels). A caller that
// appends while it runs (the list scheduler) gets the timing a run of the finished lists
// gives as long as it runs only up to the start of what it commits next (greedy.cpp).
// Times are doubles in the caller's unit: the simulator passes integer nanoseconds (exact
// below 2^53 ns), the planner milliseconds or units of T_F.
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "workloads/schedule/schedule.h"

namespace xdc::sched {

constexpr double kNever = std::numeric_limits<double>::infinity();

// One message's timing: the channel carries it in [start, end) (the SEND's record; for an
// OpenMPI put, `end` is when its FIN leaves, which can follow later puts' data); it is
// complete at the receiver at `arrival`. ready <= start <= end <= arrival.
// ticket >= 0: the timing may still revise it (MessageTiming::current).
struct Transfer {
  double start = 0;
  double end = 0;
  double arrival = 0;
  int64_t ticket = -1;
};

class Engine;

class MessageTiming {
 public:
  virtual ~MessageTiming() = default;
  // The engine that runs the sends, from its construction until its destruction (then
  // nullptr): a timing that follows what the ranks do (Engine::activity) keeps it.
  virtual void bind(const Engine*) {}
  // One SEND of `bytes` from rank `from` to rank `to`, issued at `ready` (when the sending
  // rank reaches it). Called once per SEND in non-decreasing `ready` order.
  virtual Transfer send(int from, int to, int64_t bytes, double ready, const Action& send) = 0;
  // A rendezvous message of a collective whose request (with its first fragment) left its
  // sender at `requested`, the receiver posting the matching receive only at `ready` (>=
  // requested; libnbc's rounds): the data follows the receiver's answer. Default: a SEND at
  // `ready`.
  virtual Transfer send_requested(int from, int to, int64_t bytes, double /*requested*/,
                                  double ready) {
    return send(from, to, bytes, ready, Action{});
  }
  // A timing whose later sends can delay messages already sent (messages that share a
  // connection's bandwidth, harness/sim/link_model.h) gives those Transfers a ticket and
  // answers current(ticket) with the message's timing as far as it knows now. A revision
  // only moves a message later, and only while it is still on its way, so the engine lets
  // a RECV of such a message complete only once the global time has reached its current
  // arrival, and takes the SENDs' records from current() when the run ends.
  virtual Transfer current(int64_t ticket);
  // The chance that a TSO aggregate of `bytes` that rank `rank`'s host sends at `at` finds
  // no room at its host's port (Costs::end's question; the simulator's links know their
  // ports). Default: none.
  virtual double port_drop_chance(int /*rank*/, double /*at*/, int64_t /*bytes*/) { return 0; }
  // From `at` the root of rank `rank`'s TP all-reduce (its first TP rank, which sends the
  // sum last) has that data queued at its host's port behind a window that overflows the
  // port at `window` bytes in flight (`bdp` of them on the wire), queued `skb` at a time
  // (Costs::end's note; the simulator's links drop what of the root's next WAN sends finds
  // no room). Default: ignored.
  virtual void note_port_backlog(int /*rank*/, double /*at*/, int64_t /*window*/, int64_t /*bdp*/,
                                 int64_t /*skb*/) {}
};

// Every message arrives the moment it is sent (the validator's dry run: whether a
// schedule deadlocks does not depend on the timing).
class InstantMessages : public MessageTiming {
 public:
  Transfer send(int, int, int64_t, double ready, const Action&) override {
    return {ready, ready, ready};
  }
};

// FIFO channels between `ranks` ranks, the state of the planner's and the simulator's
// hooks: a message takes its channel when the sender is ready and the channel is free,
// holds it `transfer`, and arrives `latency` after it leaves. channel[from * ranks + to]
// names each ordered pair's channel (pairs crossing one WAN direction share one); empty =
// one channel per ordered pair.
class FifoChannels {
 public:
  FifoChannels(int ranks, std::vector<int> channel);
  Transfer send(int from, int to, double ready, double transfer, double latency);

 private:
  int ranks_;
  std::vector<int> channel_;
  std::vector<double> free_;  // per channel: when its last message leaves
};

// What a worker does in an iteration besides its actions (the simulator fills it from the
// worker model; the validator and the planner leave it empty): `start`, when each rank
// begins (empty: all at 0); `gate`, a collective every rank enters at its first OPT: each
// rank's first OPT waits until every rank has entered, and then until gate(entry times)
// says the collective completed on it (the worker's gradient-norm all-reduce). Unset, or
// when some rank has no OPT, there is none.
struct Iteration {
  std::vector<double> start;
  std::function<std::vector<double>(const std::vector<double>& enter)> gate;
};

struct Costs {
  std::function<double(int rank, const Action&)> duration;  // compute, ALLREDUCE, OPT; empty: 0
  std::function<int64_t(const Action&)> bytes;              // SEND_F / SEND_B; empty: 0
  // A co-executed pair (schedule.h): a paired F and its partner B / BW together; empty:
  // the sum of their durations.
  std::function<double(int rank, const Action& f, const Action& partner)> pair;
  // When a compute action (or pair) that starts at `start` and lasts `duration` ends: later
  // than start + duration where what it does besides computing waits on the network (the
  // simulator's tensor-parallel all-reduces). Empty: start + duration.
  std::function<double(int rank, const Action&, double start, double duration)> end;
};

// What a rank did at one action. Compute: [start, end) runs. SEND: the Transfer's
// serialisation. RECV: start = when the rank reached it, end = when it had the data.
struct Record {
  double start = 0;
  double end = 0;
};

// A rank that can go no further: its next action and what that waits for.
struct Stall {
  int rank = 0;
  size_t index = 0;
  Action action;
  std::string waits_for;  // "SEND_F of stage 1", "its B", ...
  // "rank 0, action 1 (0RECV_B0): deadlock: waits forever for SEND_B of stage 1"
  std::string message() const;
};

struct Execution;

class Engine {
 public:
  // Throws std::invalid_argument on an inconsistent placement.
  // replicas: Schedule::replicas (the stages are that many pipelines of stages / replicas).
  Engine(int ranks, std::vector<int> stage_rank, int microbatches, Costs costs,
         MessageTiming& timing, int replicas = 1);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Adds `a` at the end of `rank`'s list. Throws std::invalid_argument (naming the rank,
  // the index and the action) for an action the rules cannot place: stage or microbatch
  // out of range, a stage of another rank, a message with no neighbouring stage.
  void append(int rank, const Action& a);
  // Before any append: the iteration's start times and gate (Iteration above).
  void set_iteration(const Iteration& it);
  // Executes, in global time order, every action that can start at or before `horizon`.
  void run(double horizon = kNever);

  // --- For a list scheduler that appends as it decides (greedy.h) ---
  // When `rank` can start its next action (the end of its last one).
  double clock(int rank) const { return now_[rank]; }
  // Earliest pending event; kNever when nothing is runnable.
  double next_time() const { return heap_.empty() ? kNever : heap_.front().first; }
  // When the inputs of compute action `a` are on `rank`, were it appended now (with the
  // RECV lower() puts before it): a time <= clock(rank) when they already are, kNever
  // while a producer has not been appended. exact = false when the producing SEND is
  // appended but not yet executed: `time` is then a lower bound (next_time()).
  struct Ready {
    double time = 0;
    bool exact = true;
  };
  Ready input_ready(int rank, const Action& a) const;
  size_t sends_done() const { return sends_; }

  // What `rank` does at time t as far as the run has gone (for a timing that follows the
  // ranks' progress: a worker's comm thread polls slower while its rank computes): a
  // compute action (F, B, W, BW, OPT) covers t, from `since` (also when it is the rank's
  // next action, its inputs there, and t is past the rank's clock), or the rank waits; and
  // whether one of its SENDs is on its way at t (reached, its record not yet ended) and the
  // latest end of one before t (a completion), -1 if none.
  struct Activity {
    bool computing = false;
    double since = 0;
    bool sending = false;
    double last_send_end = -1;
  };
  Activity activity(int rank, double t) const;

  // --- Results ---
  const std::vector<Action>& actions(int rank) const { return actions_[rank]; }
  const std::vector<Record>& records(int rank) const { return records_[rank]; }  // run prefix
  bool finished() const;  // every appended action ran
  double makespan() const { return makespan_; }
  std::vector<Stall> stalls() const;       // ranks with actions left (after run())
  void reserve(int rank, size_t actions);  // capacity for a rank's list and its records

 private:
  size_t cell(int stage, int mb) const { return static_cast<size_t>(stage) * m_ + mb; }
  size_t message(bool grad, int to_stage, int mb) const {
    return (grad ? cells_ : 0) + cell(to_stage, mb);
  }
  // The rule table: the first dependency of `a` on `rank` not met yet.
  enum class Unmet {
    kNone,
    kRecvF,
    kPrevF,
    kOwnF,
    kRecvB,
    kNextB,
    kOwnB,
    kProducer,
    kSend,
    kWeights
  };
  Unmet first_unmet(int rank, const Action& a) const;
  // first_unmet of the action at `index`, and for a paired F of its partner too.
  Unmet unmet_at(int rank, size_t index) const;
  bool is_partner(int rank, size_t index) const;        // the B / BW of a pair
  std::string waits_for(int rank, size_t index) const;  // Stall::waits_for of that action
  static std::string describe(Unmet u, const Action& a);
  bool step(int rank);  // runs the rank's next action if it can; true: it has another
  void settle();        // SEND records and makespan from MessageTiming::current
  void push(int rank, double t);

  bool first_stage(int st) const { return st % local_ == 0; }
  bool last_stage(int st) const { return st % local_ == local_ - 1; }

  int ranks_, stages_, m_;
  int replicas_, local_;  // replicas, stages per replica
  size_t cells_;
  std::vector<int> stage_rank_;
  Costs costs_;
  MessageTiming& timing_;
  std::vector<std::vector<Action>> actions_;
  std::vector<std::vector<Record>> records_;
  std::vector<std::pair<int, size_t>> order_;
  std::vector<double> now_;
  std::vector<double> start_;                 // per rank: when it began the iteration
  std::vector<char> queued_;                  // rank has an entry in heap_
  std::vector<long> waiting_;                 // message index the rank's RECV waits for; -1 = none
  std::vector<std::pair<double, int>> heap_;  // (time, rank), min-heap
  // Per (stage, microbatch): what has run. Messages: [grad][to_stage][mb].
  std::vector<char> f_, b_, got_f_, got_b_, posted_;
  std::vector<double> arrival_;  // kNever = not sent
  std::vector<int64_t> ticket_;  // per message: MessageTiming's ticket; -1 = final
  std::vector<double> reached_;  // per rank: when it reached the RECV it waits at; -1 = none
  std::vector<std::pair<size_t, int64_t>> revisable_;  // (order_ index, ticket) of SENDs
  double pop_time_ = 0;                                // the global time of the rank being stepped
  std::vector<int> weights_left_;                      // per stage: W / BW still to run
  size_t sends_ = 0;
  double makespan_ = 0;
  // The gate before each rank's first OPT (Iteration::gate); enter < 0: not reached yet.
  std::function<std::vector<double>(const std::vector<double>&)> gate_;
  std::vector<double> gate_enter_;
  int gate_entered_ = 0;
  // Replicas' ALLREDUCE collectives: per stage, when its rank reached it (-1: not yet) and
  // whether it may run; per stage of one replica, how many replicas have reached it.
  std::vector<double> ar_enter_;
  std::vector<char> ar_released_;
  std::vector<int> ar_reached_;

  friend Execution execute(const Schedule&, const Costs&, MessageTiming&, const Iteration&);
};

struct Execution {
  std::vector<std::vector<Record>> records;   // per rank, the executed prefix
  std::vector<std::pair<int, size_t>> order;  // execution order
  std::vector<Stall> stalls;                  // empty = ran to the end
  double makespan = 0;
  bool ok() const { return stalls.empty(); }
  std::string deadlock_message() const;  // the stalls' messages, one per line
};

// Runs a whole schedule. Throws std::invalid_argument like Engine::append.
Execution execute(const Schedule& s, const Costs& costs, MessageTiming& timing,
                  const Iteration& it = {});

}  // namespace xdc::sched
