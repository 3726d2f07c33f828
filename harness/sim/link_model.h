#pragma once
// Link model between ranks, per direction: latency and rate per ordered rank pair, and
// messages share their channel (FIFO without TCP; interleaved with it, LinkState). By default every
// ordered rank pair is its own channel; pairs that cross one physical link (all traffic from DC A
// to DC B goes through one WAN direction, or leaves one host's port inside its DC: the plan's
// set_ports) share a channel id and so queue behind each other.
// Without `tcp` a message takes latency + bytes / bandwidth. With it (one TcpPath per
// ordered pair, as plan.cpp's link_model() fills it from the experiment) each pair is one
// TCP connection carrying OpenMPI's protocol: rendezvous, slow start after idle and the
// socket-buffer window (tcp_model.h).
// A plain record: the topology loader (or a CLI flag) fills it; no YAML here. LinkState
// holds what the links remember while a run is simulated.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

#include "harness/sim/tcp_model.h"

namespace xdc::sim {

struct Link {
  int64_t latency_ns = 0;    // one-way
  double bandwidth_bps = 0;  // bits per second; 0 = infinite
  int64_t transfer_ns(int64_t bytes) const;
};

struct LinkModel {
  int ranks = 0;
  std::vector<Link> links;   // [cell(from, to)]
  std::vector<int> channel;  // [cell(from, to)]: shared by equal ids; empty = per pair
  std::vector<TcpPath> tcp;  // [cell(from, to)]; empty = latency + bytes / bandwidth
  // [cell(from, to)]: how many identical messages one send on the pair stands for, each
  // on its own connection (the data-parallel replicas, simulated as one, whose own pairs
  // share this pair's channel and send in lockstep); empty = 1. LinkState sends
  // copies x the bytes over copies x the connections, so k replicas crossing one WAN
  // direction share its rate and each keeps its window.
  std::vector<int> copies;
  // [cell(from, to)]: how many connections of their own the pair's copies take, each with
  // copies / lanes of them: a stage's tensor-parallel ranks, each receiving its own copy
  // from its peer over its own connection across the WAN, so each meets its own losses and
  // the stage goes on (its all-reduce) only at the latest. A message arrives when the last
  // lane's copy does. Empty = 1: the copies move as one aggregate connection.
  std::vector<int> lanes;
  // [rank]: the host whose ports its messages cross (the host's own tbf as they leave, the
  // gateway's towards it as they arrive); ranks of one host share them. A LAN connection
  // that overflows a port's queue (TcpPath::port_bottleneck) makes the WAN connections
  // crossing that port meet the full queue too (tcp_port_loss). Empty: ports not modelled.
  std::vector<int> port;
  // [channel id] (channels()): 1 = the channel carries one message at a time, granted in
  // priority order (LinkState::post's priority; the workers' WAN arbiter under
  // mpi.wan_sharing: temporal, workloads/worker/arbiter.h); empty or 0 = shared (above).
  // Only with TCP paths: without them every channel is a FIFO already.
  std::vector<char> exclusive;
  // A world of many ranks (a pair's link and path depend on its hosts alone; ranks^2 of
  // them would not fit): the tables above hold a row per host, host[r] being rank r's,
  // `hosts` rows, and a channel id -1 there is the pair's own (from * ranks + to). Empty:
  // a row per rank, cell(from, to) = from * ranks + to.
  std::vector<int> host;
  int hosts = 0;

  size_t cell(int from, int to) const {
    return host.empty() ? static_cast<size_t>(from) * ranks + to
                        : static_cast<size_t>(host[from]) * hosts + host[to];
  }
  bool exclusive_channel(int c) const {
    return !exclusive.empty() && exclusive[static_cast<size_t>(c)] != 0;
  }
  const Link& at(int from, int to) const { return links[cell(from, to)]; }
  Link& at(int from, int to) { return links[cell(from, to)]; }
  int channel_of(int from, int to) const {
    const int own = from * ranks + to;
    if (channel.empty()) return own;
    const int c = channel[cell(from, to)];
    return c < 0 ? own : c;
  }
  int copies_of(int from, int to) const { return copies.empty() ? 1 : copies[cell(from, to)]; }
  // The pair's lanes where its copies can take them: 1 on an exclusive channel (one
  // connection at a time) or where the lanes do not divide the copies.
  int lanes_of(int from, int to) const;
  const TcpPath& path(int from, int to) const { return tcp[cell(from, to)]; }
  int channels() const;  // 1 + the largest channel id

  // The TCP connections (with `tcp`): one per ordered pair of ranks, connection
  // from * ranks + to; or, after set_pairs, one per pair it lists (both directions of a
  // pair that sends a rendezvous message: its answer goes back on the other), numbered
  // in the order of from * ranks + to. A world's collectives use few of its pairs.
  void set_pairs(std::vector<std::pair<int, int>> pairs);
  size_t connections() const {
    return pairs_.empty() ? static_cast<size_t>(ranks) * ranks : pairs_.size();
  }
  static constexpr size_t kNoConnection = std::numeric_limits<size_t>::max();
  size_t connection(int from, int to) const;  // kNoConnection: the pair has none
  std::pair<int, int> pair_of(size_t connection) const {
    if (pairs_.empty())
      return {static_cast<int>(connection / ranks), static_cast<int>(connection % ranks)};
    return pairs_[connection];
  }
  const TcpPath& path_of(size_t connection) const {
    if (pairs_.empty() && host.empty()) return tcp[connection];
    const auto [a, b] = pair_of(connection);
    return path(a, b);
  }
  // The same links with a row per rank (host empty): links that change under a run
  // (link_timeline.h) are set per rank pair.
  LinkModel by_rank() const;

  static LinkModel uniform(int ranks, Link l);
  // dc_of[r] = DC of rank r: `wan` between DCs, one shared channel per (DC, DC)
  // direction; `lan` inside a DC, one channel per rank pair.
  static LinkModel dcs(const std::vector<int>& dc_of, Link wan, Link lan = {});
  // Ranks [0, split) in DC A, the rest in DC B.
  static LinkModel two_dc(int ranks, int split, Link wan, Link lan = {});

 private:
  std::vector<std::pair<int, int>> pairs_;  // set_pairs'; sorted
};

// One message on the wire: its first byte starts serialising at start_ns, its last byte
// (a put's FIN, which can follow later puts' data) at end_ns, and the receiver has all of it
// at arrival_ns. ticket >= 0: a later send may still delay it (LinkState::current).
struct Transfer {
  int64_t start_ns = 0, end_ns = 0, arrival_ns = 0;
  int64_t ticket = -1;
};

// A TP all-reduce root's sum queued at its host's port from `at` (LinkState::
// note_port_backlog): behind a window that overflows the port at `window` bytes in flight,
// `bdp` of them on the wire, queued `skb` at a time.
struct PortBacklog {
  int64_t at = 0, window = 0, bdp = 0, skb = 0;
};

// The links during one simulated run: when each channel is free again and, with a TCP
// model, each connection's congestion window and last send. Sends must come in
// nondecreasing ready time per channel (the simulator advances ranks in time order).
// The run is one iteration of many: every connection starts warm, its window at the
// socket-buffer limit, having last sent `idle_before_ns` before time 0 (0: the previous
// iteration ended then; a connection used once per iteration passes its idle time).
//
// Without TCP paths a channel is a FIFO: a message holds it latency + bytes / bandwidth.
// With them each connection direction is a byte stream, as OpenMPI's btl/tcp and TCP make
// it: ob1 queues fragments on the endpoint in order and TCP keeps the socket's bytes in
// order, so a message's phases leave in the order they were queued (FIFO by the time each
// became ready, then by post). A message's phases (tcp_model.h): eager, the whole message
// at its post; rendezvous, the request with its first fragment at the post and the rest
// once the answer is back; put (from btl_tcp_min_rdma_pipeline_size), a request with no
// data, then the whole message as one put once the answer is back, and the receiver
// completes only at the FIN the sender queues when the put's last byte is in the socket
// (what is queued up to it fits the socket buffer), behind every fragment queued by then.
// So puts issued while one is sending complete at the receiver together, the earlier ones
// with the later (measured, GeoPipe 20 ms `overlap`: rank 1's 10 MiB activations 1-4 left
// its socket 170 ms apart, and rank 2 completed activation 1 only at 954 ms, after all four;
// two-dc-modeled `overlap`: activation 1 at 3801 ms, after activations 2-4).
// The channel runs in rounds of one round trip: each connection with data ready sends what
// tcp_round allows, to its phases in stream order; connections crossing one channel share
// its rate round robin (a phase's last byte leaves once every connection has sent as many
// bytes of the round as its own has up to it). A phase that becomes ready in the middle of
// a round (an answer back, a new Isend) joins at the next round. A rendezvous answer goes
// on the receiver's connection back to the sender (one TCP connection per peer pair, both
// directions on it), behind every byte queued there before it: the requests posted before
// it and the data whose answers arrived before it (measured, GeoPipe 20 ms `overlap`, `ss`
// on both ends: an activation's request reached the next stage while that stage was
// sending three gradients back; its answer left ~400 ms later, after them). The answer
// counts as a send of its connection at that time (slow start after idle), in time order
// with the connection's own rounds. It reads the other direction's queue as far as that
// has been worked out (a message whose phases were not yet run counts from its post time,
// and a speculative run's timings stand until a later run rewrites them), so the order of
// current() queries can change an answer's time: which of a request and an answer crossing
// at once goes first, or whether a message queued the other way is seen at all
// (tests/sim/tcp_model_test.cpp). Because a new send slows
// the messages it shares the channel with (or, through the answers, the other
// direction's), send() answers with a provisional Transfer and a ticket; current(ticket)
// gives the timing as known after every send so far, final once the simulation has passed
// the message's arrival (the engine waits for that).
// An exclusive channel (LinkModel::exclusive) grants itself to one message at a time: the
// holder keeps it from its first byte through a rendezvous round trip to its arrival and
// the receiver's release back (one more one-way latency, as the workers' arbiter frees
// it; over the stripes, TcpPath::early_release, the receiver releases when a round trip
// of bytes is left, so the next may start as the holder's last byte leaves, or a round
// trip after its first byte when it is shorter than that); then the
// ready message of the smallest priority (then the earliest post) takes it at the next
// round. The holder's connection sends what its own window allows.
// A pair whose TcpPath has n > 1 connections is the workers' stripes: n connections of
// their own (each with the pair's copies), and a message is cut into pieces as the worker
// cuts it (workloads/worker/stripe_pieces.h); it arrives when its last piece does. The
// connections pull the pieces as the worker hands them out: before each round, from the
// stripe after the one that took the pair's last piece, each connection in turn takes the
// next ready piece (oldest message first) while what it holds unsent is below
// kStripeNotSentLowat plus its window (what the round sends, while the worker refills it).
// So a message of fewer pieces than connections rides on as many idle connections as it
// has pieces (the kernel's tcp_probe tracepoint: 378 KiB messages over 5 stripes moved on
// 2 connections each, in rotation), and a connection whose window a loss cut takes fewer
// pieces of a long message (six stripes under 0.01% random loss carried 38-87 MB each one
// way in one kernel run). On an exclusive channel only the holder's pieces are pulled.
// The pair's own connection stays OpenMPI's (barriers, collectives).
// A pair with lanes (LinkModel::lanes) has as many OpenMPI connections, the pair's own
// first: a message is one job per lane, each with its share of the copies and its own
// rendezvous (answered on the same lane the other way), window and losses (its own
// stream); it arrives when the last lane's job does. Striped, each lane has its own
// stripes (a stripe group), which pull that lane's pieces.
// Moves connection states onto a clock whose 0 is `origin_ns` of theirs.
void shift_history(std::vector<TcpConn>& h, int64_t origin_ns);

class LinkState {
 public:
  // Keeps a reference to `m`, which must outlive it. Its connections are warm, long in use
  // and idle for idle_before_ns: the socket buffers' window, and over a lossy route
  // Mathis's window, ssthresh there (tcp_loss_window_bytes); HyStart done.
  explicit LinkState(const LinkModel& m, int64_t idle_before_ns = 0);
  LinkState(LinkModel&&, int64_t = 0) = delete;
  // Connections as an earlier run left them (history(), by connection; empty: as
  // above, warm and just used): a connection idle since the previous iteration restarts
  // its window as Linux does.
  LinkState(const LinkModel& m, const std::vector<TcpConn>& history);
  // Every message sent to completion, each connection's state (on this run's clock;
  // shift_history moves it onto the next's): the model's connections
  // (LinkModel::connection), then the stripes' pair by pair; empty without TCP paths.
  std::vector<TcpConn> history();
  // The connections at a run's launch: new, as OpenMPI opens them at a pair's first
  // message: the initial window (10 segments per connection), slow start until HyStart
  // or the first loss ends it (no ssthresh), no loss met yet (TcpConn::carried 0), never sent
  // (no idle restart). As history() takes them; the kernel's tcp_probe tracepoint shows
  // a run's WAN connections so in its first iteration.
  // `loss_seed` != 0: each connection draws where its random losses fall, and how late
  // for jitter each phase's last packets arrive, from its own streams of that seed
  // (TcpConn::loss_draws, jitter_draws); 0: losses evenly spaced, expected lags.
  static std::vector<TcpConn> launch(const LinkModel& m, uint64_t loss_seed = 0);
  // A message of `bytes` from rank `from` to `to`, ready to go at ready_ns: its timing as
  // far as the sends so far decide it (post() + current()).
  // `priority` orders messages on an exclusive channel (smaller first; < 0: ready_ns).
  // `requested_ns`: as post()'s.
  Transfer send(int from, int to, int64_t bytes, int64_t ready_ns, int64_t priority = -1,
                int64_t requested_ns = std::numeric_limits<int64_t>::max());
  // The same message, answered with a lower bound of its timing (ready, and an arrival no
  // later than the true one) and its ticket: the engine asks current() when it needs the
  // arrival, so a channel is worked out once per query, not once per send.
  // `requested_ns` < ready_ns: a rendezvous message whose request (with its first fragment)
  // left then, its receiver posting the receive only at ready_ns (libnbc's rounds): where
  // the request has arrived by then, the receiver answers at once and the rest follows the
  // answer; the request counts as a send on its connection then (restart after idle).
  Transfer post(int from, int to, int64_t bytes, int64_t ready_ns, int64_t priority = -1,
                int64_t requested_ns = std::numeric_limits<int64_t>::max());
  // The message's timing after every send so far (final once it is complete before the
  // last send's ready time).
  Transfer current(int64_t ticket);
  // The TCP path of the pair's connection from now on (a changed link: its loss window,
  // its bottleneck), with the pair's copies as at construction; none: nothing changes.
  void set_path(int from, int to, const TcpPath& p);
  // The chance that a TSO aggregate of `bytes` (payload) that rank `rank`'s host queues at
  // `at_ns` finds no room in its port's tbf, which takes an aggregate whole or drops it
  // (bfifo under tbf: NET_XMIT_DROP), as far as the sends so far decide (tcp_port_drop_chance
  // of the LAN rounds leaving the port then). 0 without ports.
  double port_drop_chance(int rank, int64_t at_ns, int64_t bytes);
  // The host of lane `lane` of rank `rank` (LinkModel::lanes; 0: the pair's own connection's)
  // holds a TP all-reduce's sum at its port (PortBacklog) from b.at until that window has
  // drained at the port's rate: a round its WAN connections send then is dropped in part
  // with tcp_sawtooth_drop_chance, each connection's share of it by its bytes (port_losses).
  void note_port_backlog(int rank, int lane, const PortBacklog& b);
  // When rank `rank`'s process acts on what reaches its host at `at_ns` (its worker's comm
  // thread's next poll: TimedLinks::bind): a rendezvous request, answered then; the answer,
  // which its sender follows with the data then; a message's last byte (or its FIN), which
  // a rank that computes meanwhile takes when it next waits (no later than `at_ns` then).
  // Unset: at once.
  enum class Arrival { kRequest, kAnswer, kLastByte };
  using Acts = std::function<int64_t(int rank, int64_t at_ns, Arrival what)>;
  void set_acts(Acts acts) { acts_ = std::move(acts); }

 private:
  int64_t acts(int rank, int64_t at_ns, Arrival what) const {
    return acts_ ? acts_(rank, at_ns, what) : at_ns;
  }
  Acts acts_;
  struct Job {  // one message (or one piece of a striped one) on a TCP channel
    int from = 0, to = 0;
    int channel = 0;
    size_t conn = 0;       // its connection: the pair's, or one of its stripes
    int64_t msg = 0;       // the message it carries (of post()'s tickets)
    int64_t left = 0;      // bytes of its current phase still to send
    int64_t rest = 0;      // rendezvous: the bytes that follow the answer
    int64_t ready = 0;     // its current phase may send from then on
    int64_t start = -1;    // first byte
    int64_t bytes = 0;     // the whole message
    int64_t priority = 0;  // exclusive channels: grant order
    bool granted = false;  // exclusive channels: holds the channel until done
    bool done = false;
    bool pull = false;       // a stripe piece no connection has taken (conn: the first stripe)
    bool put = false;        // ob1's put protocol (tcp_model.h): a FIN follows the data
    int64_t fin_ready = -1;  // the data's last byte entered the socket then: the FIN queues
    // The data is out; the receiver completes at the FIN.
    bool fin() const { return put && rest == 0 && left == 0; }
    // A put's last byte is in the socket once what is queued on its connection up to it
    // (`queued`) fits the socket's `room` (0: no limit): its FIN queues then.
    bool fin_queues(int64_t queued, int64_t room) const {
      return put && rest == 0 && fin_ready < 0 && (room <= 0 || queued <= room);
    }
  };
  struct Channel {
    int64_t t = 0;              // the next round may start then (rounds before it are final)
    std::vector<int64_t> jobs;  // its jobs not yet complete
    int64_t version = 0;        // sends posted on it so far
    int64_t settled = -1;       // the version whose run to completion `end` holds
    int64_t free_at = 0;        // exclusive: no new grant before then (the last release)
    // With ports (LinkModel::port): a LAN channel whose connections fill their hosts' ports
    // (TcpPath::port_bottleneck), and the ports a WAN channel's connections cross.
    bool fills_ports = false;
    std::vector<int> crosses;
  };
  // A channel's state once every message posted on it is complete (a run without commit
  // that got there): a later commit past end.t takes it instead of running the rounds again.
  struct End {
    int64_t t = 0, free_at = 0;
    std::vector<std::pair<size_t, TcpConn>> conns;
    std::vector<size_t> applied;  // per entry of conns: pending answers its rounds took
    std::vector<std::pair<size_t, int64_t>> answers;
    std::vector<std::pair<size_t, int>> next_stripe;  // per stripe group (next_stripe_)
  };
  // Runs `ch`'s rounds that start before `until` (final: they cannot change; commit), or,
  // without commit, on copies until job `target` is complete, filling result_ (and
  // known_) for every message complete by then.
  void run_channel(Channel& ch, int64_t until, bool commit, int64_t target = -1);
  // Commits channel `c` and the other direction's, `back`, up to `until` (run_channel), in
  // steps of the smaller one-way latency `step` while both carry messages: a round's
  // rendezvous requests draw answers on the other direction's connections no earlier than
  // a one-way latency later, which count as those connections' sends (slow start after
  // idle), so each step's rounds are settled knowing every answer before them.
  void commit_both(int c, int back, int64_t until, int64_t step);
  // One run_channel call: what its steps share besides the scratch vectors (which hold its
  // messages, jobs_scratch_, and their connections, conns_).
  struct Run {
    Channel& ch;
    int id;  // ch's
    bool commit, exclusive;
    int64_t target;
    int64_t free_at;                                  // exclusive: the last holder's release
    std::vector<std::pair<size_t, int64_t>> answers;  // (back connection, when it answered)
    bool target_done = false;
  };
  // What a round sent: the longest round trip, the bytes, the channel's link (null: none).
  struct Round {
    int64_t rtt = 0, total = 0;
    const Link* link = nullptr;
  };
  // run_channel's steps. take_end: a commit past the channel's worked-out end (End) takes
  // it; false when `until` is before that end. load_channel: ch's messages and connections
  // into the scratch. ready_at: ready_ = the messages with a phase ready at t; returns the
  // next time one becomes ready. grant (exclusive channels): narrows ready_ to the holder,
  // granting the channel when free; false when the grant waits for later posts.
  bool take_end(Channel& ch, int id, int64_t until);
  void load_channel(const Channel& ch);
  int64_t ready_at(int64_t t, bool exclusive);
  // The stripes' pull (link_stripes.cpp): load_channel's part for job a, a stripe piece
  // not taken yet (every stripe of its pair among conns_, the pair's rotation); before a
  // round at t, the pieces its connections take; after the run, the rotations kept.
  void load_stripes(size_t a);
  void pull_pieces(int64_t t, bool exclusive);
  void keep_rotations(std::vector<std::pair<size_t, int>>* end);
  bool grant(Run& r, int64_t t, int64_t until, int64_t& next);
  // One round from t of the ready messages; returns where the next starts. Its steps:
  // queue_ready orders ready_ by stream (order_) and queues the FINs that fit; send_round
  // sends each connection's window (sent_, given_); end_phases ends the phases sent out
  // and send_fins the FINs whose queue has left, each true when some wait for more rounds.
  int64_t run_round(Run& r, int64_t t);
  void queue_ready(int64_t t);
  Round send_round(int64_t t);
  bool end_phases(Run& r, int64_t t, const Round& s);
  bool send_fins(Run& r);
  // Message a is at the receiver: its last byte left at `finish` and arrives `lag` after
  // the link's one-way delay.
  void complete(Run& r, size_t a, int64_t finish, int64_t lag);
  // After the rounds: commit_run makes them final; keep_end, without commit, keeps the
  // channel's end (End) once every message is complete.
  void commit_run(Run& r, int64_t t);
  void keep_end(Run& r, int64_t t);
  // run_channel's rounds while a channel carries one message, not on an exclusive channel,
  // that leave some of its current phase to send (the same rounds, without the bookkeeping
  // of several messages): from `t`, before `until`; returns where the next round starts.
  int64_t lone_rounds(Job& j, std::pair<size_t, TcpConn>& conn, size_t* applied, int64_t t,
                      int64_t until);
  // A rendezvous answer sent on connection `back` at `when`: kept in pending_ until a round
  // of `back` at or after `when` (or history()) takes it, so that a connection's sends count
  // in time order however far each channel has been worked out.
  void note_answer(size_t back, int64_t when);
  // When an answer to be sent on connection i at `when` leaves: after every phase queued on
  // i before then, the requests posted and the data whose answers came back (OpenMPI queues
  // fragments on the connection in order, the answer behind them; TCP keeps the byte
  // order). A phase queued at exactly `when` goes after the answer. `lag`, when given,
  // receives how late for jitter the answer arrives: no earlier than those phases' last
  // packets (the delay lines keep the order), as they are late (tcp_jitter_lag_ns).
  int64_t queued_until(size_t i, int64_t when, int64_t* lag = nullptr);
  // Connection states a run of a channel left (`applied`: pending answers each one took).
  void adopt(const std::vector<std::pair<size_t, TcpConn>>& conns,
             const std::vector<size_t>& applied);
  int64_t round_trip(size_t i) const;  // of connection i: both directions' latency
  // The pair's connection (LinkModel::connection); std::logic_error when it has none.
  size_t connection(int from, int to) const;
  // The host lane `lane` of rank `rank` sends from (its port, or the rank, with the lane),
  // and the one connection `conn` leaves from.
  uint64_t host_key(int rank, int lane) const;
  uint64_t host_of(size_t conn) const;
  int lane_of(size_t conn) const;  // 0: the pair's own connection or stripes, or no lanes
  // note_port_backlog's, by host_key, in time order.
  std::unordered_map<uint64_t, std::vector<PortBacklog>> backlogs_;
  // The chance that the round connection i's host sends at `t` (`burst` bytes) finds no
  // room behind a backlog there (0: none).
  double backlog_chance(size_t i, int64_t t, int64_t burst) const;
  std::unordered_map<uint64_t, int64_t> burst_;  // send_round's: a round's bytes per host_of
  // Where the receiver answers a rendezvous on connection `conn` from `from` to `to`: the
  // pair's connection the other way, or, between lanes, the same lane the other way.
  size_t back_of(size_t conn, int from, int to) const;
  // Connection i's stream of random losses (launch): its pair's from * ranks + to, or
  // ranks^2 on for the stripes, as if every pair had a connection.
  uint64_t stream_of(size_t i) const;
  // One job of message `msg` on connection `conn` (post()); its index.
  size_t add_job(size_t conn, int from, int to, int channel, int64_t bytes, int64_t ready_ns,
                 int64_t priority, int64_t msg,
                 int64_t requested_ns = std::numeric_limits<int64_t>::max());
  // Job k's request went at `requested_ns` (post()): where it has arrived by ready_ns, its
  // receiver answers then, and the job's first phase is what follows the answer.
  void answer_early(size_t k, int64_t requested_ns, int64_t ready_ns);
  // Takes into `c` (of connection i) the pending answers up to `now` from the `*applied`-th.
  void take_answers(size_t i, TcpConn& c, int64_t now, size_t* applied) const;

  // Ports (LinkModel::port). Per port, the LAN channels leaving it and reaching it (their
  // connections fill its queue) and the WAN channels crossing it (their rounds meet that:
  // port_losses).
  struct Port {
    std::vector<int> lan_out, lan_in, wan;
  };
  std::unordered_map<int, Port> ports_;
  // A LAN connection's round as its hosts' ports see it: its bytes pass them over [start,
  // end), and its window's overflow of their queue dropped `dropped` segments of it. `to`:
  // the receiver's port (a channel is its sender's port: its pairs go to several). Its
  // bytes, the port's bandwidth-delay product and queue limit (payload), the sender's TSO
  // aggregate (tcp_tso_segments), and what the port's queue holds of it: its bytes beyond
  // the bandwidth-delay product, at most what TCP small queues let its connections keep
  // there (tcp_small_queue_bytes at the round trip the standing queue makes).
  struct PortRound {
    int64_t start = 0, end = 0, dropped = 0;
    int to = -1;
    int64_t bytes = 0, bdp = 0, limit = 0, skb = 0;
    int64_t held = 0;
  };
  // What the LAN rounds leaving a port at a moment hold in its queue (their `held`, at
  // most its limit), the largest of their aggregates and limits, and whether one of them
  // overflows it.
  struct PortQueue {
    int64_t held = 0, skb = 0, limit = 0;
    bool overflowed = false;
  };
  PortQueue port_queue(int port, int64_t at_ns) const;
  // Per LAN channel, its rounds in time order: those made final (`final`), and those of its
  // latest run to completion past them (`ahead`, while `ahead_valid`); the longest one.
  struct LanRounds {
    std::vector<PortRound> final, ahead;
    bool ahead_valid = false;
    int64_t longest = 0;
  };
  std::unordered_map<int, LanRounds> lan_rounds_;
  std::vector<PortRound> run_rounds_;  // run_channel's: the LAN rounds it ran
  // run_channel's end for a LAN channel `ch` (id `id`) whose rounds fill ports: those it ran
  // are final (commit) or its run ahead to completion.
  void keep_lan_rounds(const Channel& ch, int id, bool commit);
  // Records a round of connection i on path `p` at `t` (given bytes over wire_ns, `overflow`
  // bytes of it dropped; `c` after the round, its round trip `rtt_ns`: its TSO aggregates)
  // when `p` is a LAN path whose ports are its bottleneck.
  void note_lan_round(size_t i, const TcpPath& p, int64_t t, int64_t given, int64_t wire_ns,
                      int64_t overflow, const TcpConn& c, int64_t rtt_ns);
  // add_job's: registers channel `channel` of a job from `from` to `to` on path `p` with
  // its ports; a LAN job makes the WAN channels crossing them work their rounds out again.
  void note_ports(int channel, int from, int to, const TcpPath& p);
  // Brings the rounds of the LAN channels at the ports WAN channel `ch` crosses up to date
  // (run_channel, before it loads its own).
  void refresh_ports(const Channel& ch);
  // The same for LAN channels `lans`: each not up to date runs to completion (`ahead`).
  void refresh_lans(const std::vector<int>& lans);
  // Calls f(round) for each round of the LAN channels leaving (`out`) or reaching `port` that
  // overlaps [a, b).
  template <typename F>
  void lan_rounds_at(int port, bool out, int64_t a, int64_t b, const F& f) const;
  // Connection i's round at `t` of `given` bytes, leaving its sender's port and, a one-way
  // delay later, reaching its receiver's, meets their queues full (tcp_port_loss): at the
  // sender's, its share of the drops of a LAN connection overflowing it, and each of its
  // TSO aggregates dropped whole where what the LAN rounds hold there leaves it no room
  // (port_queue, tcp_port_drop_chance); at the receiver's, arriving beside a LAN
  // connection long enough to overflow its share of the queue.
  // And at the sender's, its share of what its host's round (`burst`) loses behind a
  // backlog there (backlog_chance).
  // Returns the bytes it lost at the receiver's port, which go again in the next round.
  int64_t port_losses(size_t i, TcpConn& c, int64_t t, int64_t given, int64_t burst);
  // Where lone_rounds may skip rounds of connection i from `t`: the first time before
  // `until` a LAN round is at one of its ports (int64_t's max when none).
  int64_t next_port_event(size_t i, int64_t t, int64_t until) const;

  const LinkModel& m_;
  // Per connection (the model's pairs', then the stripes'), its TCP path with
  // the pair's copies as TcpPath::connections: the model's own (path_ -1) or paths_[path_],
  // where the copies differ, the pair has stripes (which share it) or set_path changed it.
  // A world's ranks^2 paths are not copied.
  const TcpPath& tcp(size_t conn) const {
    const int k = path_[conn];
    return k < 0 ? m_.path_of(conn) : paths_[static_cast<size_t>(k)];
  }
  std::vector<TcpPath> paths_;
  std::vector<int> path_;
  std::vector<size_t> pair_of_;  // [connection]: its pair
  // Stripe groups: a pair's (lane 0's), then lanes 1, 2, ...'s of striped pairs with lanes.
  std::vector<size_t> group_of_;  // [connection]: its stripe group (else its pair)
  std::vector<size_t> stripe0_;   // [group]: its first stripe's connection (stripes_ > 1)
  std::vector<int> stripes_;      // [group]: its stripes (1: none, OpenMPI's connection)
  std::vector<int> next_stripe_;  // [group]: the stripe that takes its next piece
  std::vector<int> lanes_;        // [pair]: its lanes (LinkModel::lanes_of)
  // [pair]: lane 1's connection (without stripes) or stripe group; lanes 2, ... follow.
  std::vector<size_t> lane1_;
  std::vector<std::pair<size_t, size_t>> msgs_;  // by ticket: its first job and job count
  // Without TCP paths: when each channel met so far is free again (0 before its first
  // message). Channels and their state exist once used: a world's ranks^2 pairs would not fit.
  std::unordered_map<int, int64_t> channel_free_;
  std::vector<TcpConn> conn_;                  // [connection]
  std::vector<std::vector<int64_t>> pending_;  // [connection]: answers, in time order
  std::vector<std::vector<int64_t>> tickets_;  // [connection]: its jobs
  // Where a message's phases are in its connection's queue (queued_until reads them).
  struct Queued {
    int64_t post = 0;        // its first phase queued (never while an exclusive channel holds it)
    int64_t data_ready = 0;  // its data may go from then on (never until the answer is known)
    int64_t first_end = 0;   // its request's last byte left
    int64_t data_end = 0;    // its data's last byte left
    // How late for jitter (tcp_jitter_lag_ns) the request's and the data's last bytes arrive.
    int64_t first_lag = 0, data_lag = 0;
  };
  std::vector<Queued> queued_;  // by job
  // Per connection: its first `count` messages are complete and final; the latest time
  // one of their phases was queued, and the latest a phase of theirs left.
  struct Settled {
    size_t count = 0;
    int64_t latest_queued = std::numeric_limits<int64_t>::min();
    int64_t latest_end = std::numeric_limits<int64_t>::min();
    int64_t latest_lagged = std::numeric_limits<int64_t>::min();  // max of end + jitter lag
  };
  std::vector<Settled> settled_;       // [connection]
  std::map<int, Channel> channels_;    // by id, those used so far (history() runs them in order)
  std::vector<Job> jobs_;              // by job
  std::vector<Transfer> result_;       // by job
  std::vector<int64_t> known_;         // by job: the channel version result_ holds; -1 final
  std::unordered_map<int, End> ends_;  // by channel (Channel::settled)
  // Scratch of run_channel.
  std::vector<Job> jobs_scratch_;
  std::vector<size_t> conn_of_, ready_, order_;
  std::vector<std::pair<size_t, TcpConn>> conns_;
  std::vector<size_t> applied_;  // per entry of conns_: its pending answers taken so far
  // Per stripe group whose pieces the run pulls: the stripe the next piece goes to, and
  // each stripe's entry in conns_.
  struct Rotation {
    size_t group = 0;
    int next = 0;
    std::vector<size_t> slots;
  };
  std::vector<Rotation> rotation_;
  std::vector<int64_t> unsent_;  // pull_pieces': per entry of conns_, bytes taken not yet sent
  std::vector<int64_t> sent_, offered_, given_, done_t_, done_ready_, done_lag_;
};

}  // namespace xdc::sim
