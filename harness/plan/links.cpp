// The links of an experiment as the simulator sees them (links.h): per ordered pair of
// hosts, the route's latency and rate, and the TCP path each connection takes.
#include "harness/plan/links.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <tuple>

#include "common/input_error.h"
#include "harness/common/units.h"
#include "harness/launch/launcher.h"
#include "harness/plan/plan.h"
#include "harness/plan/predict.h"
#include "harness/plan/prefill.h"
#include "harness/sim/link_timeline.h"
#include "harness/sim/setup.h"
#include "netem/shaper/dist_table.h"
#include "netem/shaper/kernel_netem.h"
#include "netem/shaper/loss_model.h"
#include "netem/shaper/queue_sizing.h"
#include "workloads/model/payload.h"
#include "workloads/model/stage.h"
#include "workloads/schedule/csv.h"
#include "workloads/schedule/generators.h"
#include "workloads/schedule/validate.h"

namespace xdc::run {
namespace {

// The shaped direction of lowest rate on the route from DC a to DC b (nullptr: none).
const netem::LinkParams* route_bottleneck(const topo::Topology& t, const topo::Routes& routes,
                                          const std::string& a, const std::string& b) {
  const netem::LinkParams* neck = nullptr;
  const auto path = routes.path(a, b);
  for (size_t i = 0; i + 1 < path.size(); ++i)
    if (const topo::WanLink* w = t.find_link(path[i], path[i + 1])) {
      const netem::LinkParams& p = w->egress(path[i]);
      if (p.rate_bps && (!neck || p.rate_bps < neck->rate_bps)) neck = &p;
    }
  return neck;
}

// The largest bursts, leaving a host at once, that the rate stages of a route (`path`, DC
// names, its bottleneck `neck`) pass, payload bytes. A burst leaves the host through its
// intra-DC tbf (its bucket at once, then the intra-DC rate) and reaches a hop at that rate
// or at an earlier hop's, if slower; a hop of rate r fed at rate a > r serves r / a of what
// arrives after the bucket while it arrives, so it passes a burst whose rest, (1 - r / a)
// of it, fits its tbf queue and bucket (queue_sizing.h); fed no faster than r it queues
// nothing. Ground truth: tests/network/routed_burst_test.cpp (RoutedBurst: a hop before the
// bottleneck; IdleBurst: the bottleneck).
struct BurstRoom {
  int64_t upstream = 0;  // TcpPath::upstream_bytes: the hops before the bottleneck (0: none)
  int64_t neck = 0;      // TcpPath::idle_burst_bytes: the bottleneck
};
BurstRoom burst_room(const topo::Topology& t, const std::vector<std::string>& path,
                     const netem::LinkParams* neck) {
  const double payload = netem::kTcpPayloadShare;
  const uint64_t host_rate = t.intra_dc.rate_bps ? t.intra_dc.rate_bps : netem::kUnlimitedRateBps;
  const double bucket = t.intra_dc.rate_bps ? netem::tbf_burst_bytes(host_rate) : 0.0;
  double arrival = static_cast<double>(host_rate);
  bool from_host = true;  // the burst still arrives as the host's tbf shapes it
  double most = 0;
  BurstRoom out;
  for (size_t i = 0; i + 1 < path.size(); ++i) {
    const topo::WanLink* w = t.find_link(path[i], path[i + 1]);
    if (!w) continue;
    const netem::LinkParams& p = w->egress(path[i]);
    if (!p.rate_bps) continue;
    const auto rate = static_cast<double>(p.rate_bps);
    if (rate >= arrival) {
      if (&p != neck) continue;
      out.neck = sim::kNoBurstLimit;
      break;
    }
    const double room =
        static_cast<double>(netem::rate_queue_bytes(p) + netem::tbf_burst_bytes(p.rate_bps));
    const double head = from_host ? std::min(bucket, room) : 0;
    const double passes = head + (room - head) / (1 - rate / arrival);
    if (&p == neck) {
      out.neck = std::llround(passes * payload);
      break;
    }
    most = most > 0 ? std::min(most, passes) : passes;
    arrival = rate;
    from_host = false;
  }
  out.upstream = std::llround(most * payload);
  return out;
}

// What a host's intra-DC tbf queues (the builder's shape_intra_dc), payload bytes (TcpPath::
// host_queue_bytes); 0 without an intra-DC rate.
int64_t host_queue_payload_bytes(const topo::Topology& t) {
  if (!t.intra_dc.rate_bps) return 0;
  return std::llround(static_cast<double>(netem::intra_dc_queue_bytes(t.intra_dc.rate_bps)) *
                      netem::kTcpPayloadShare);
}

// A Link's bandwidth is the payload rate TCP gets through the shaping (tcp_payload_bps:
// the tbfs count whole frames), since messages are counted in payload bytes.
static_assert(sim::kTcpMss == netem::kFrameBytes - netem::kTcpFrameHeaderBytes);

// WAN between two DCs along the route: delays add up, the slowest rate counts, and the
// receiving DC's fabric adds the intra-DC delay (builder.cpp's shape_fabric).
sim::Link wan_between(const topo::Topology& t, const topo::Routes& routes, const std::string& a,
                      const std::string& b) {
  sim::Link l;
  l.latency_ns = static_cast<int64_t>(t.intra_dc.delay_us) * 1000;
  const auto path = routes.path(a, b);
  for (size_t i = 0; i + 1 < path.size(); ++i)
    if (const topo::WanLink* w = t.find_link(path[i], path[i + 1]))
      l.latency_ns += static_cast<int64_t>(w->egress(path[i]).delay_us) * 1000;
  if (const netem::LinkParams* neck = route_bottleneck(t, routes, a, b))
    l.bandwidth_bps = netem::tcp_payload_bps(neck->rate_bps);
  return l;
}

// Between two hosts of one DC: the fabric's delay and the intra-DC rate.
sim::Link lan_link(const topo::Topology& t) {
  return {static_cast<int64_t>(t.intra_dc.delay_us) * 1000,
          netem::tcp_payload_bps(t.intra_dc.rate_bps)};
}

// One message between two hosts of the topology (as link_model describes).
sim::Link host_link(const Experiment& e, const topo::Routes& routes, const std::string& a,
                    const std::string& b) {
  if (a == b) return {};
  const std::string& da = e.topology.find_host(a)->dc;
  const std::string& db = e.topology.find_host(b)->dc;
  if (da != db) return wan_between(e.topology, routes, da, db);
  return lan_link(e.topology);
}

// OpenMPI's btl_tcp_eager_limit: the experiment's `mpi.mca` value, else the default.
int64_t eager_limit(const Experiment& e) {
  for (const auto& [k, v] : e.mca) {
    if (k != "btl_tcp_eager_limit") continue;
    try {
      size_t used = 0;
      const long long x = std::stoll(v, &used);
      if (used == v.size() && x >= 0) return x;
    } catch (const std::exception&) {
    }
    throw InputError(SourcePos{e.source_file, 0, 0},
                     "mpi.mca.btl_tcp_eager_limit: expected a number of bytes, got '" + v + "'");
  }
  return sim::kOpenMpiEagerLimit;
}

// One TCP connection per ordered pair of `hosts` (ranks), as the sending and the
// receiving host's TCP settings and the experiment's MPI settings shape it.
// `striped`: point-to-point messages, which mpi.connections stripes; false for the
// all-reduce, which stays on OpenMPI.
std::vector<sim::TcpPath> tcp_paths(const Experiment& e,
                                    const std::vector<const topo::Host*>& hosts, bool striped) {
  const int n = static_cast<int>(hosts.size());
  const int64_t eager = eager_limit(e);
  std::vector<sim::TcpPath> out(static_cast<size_t>(n) * n);
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) {
      const topo::TcpSettings& from = hosts[a]->tcp;
      const topo::TcpSettings& to = hosts[b]->tcp;
      sim::TcpPath& p = out[static_cast<size_t>(a) * n + b];
      p.eager_limit = eager;
      p.window_bytes = sim::tcp_window_bytes(from.wmem_max_bytes, to.rmem_max_bytes);
      p.burst_bytes = sim::tcp_burst_bytes(from.wmem_max_bytes, to.rmem_max_bytes);
      p.slow_start_after_idle = from.slow_start_after_idle;
      p.dilation = e.time_dilation;
      p.loss_based = from.congestion == "cubic" || from.congestion == "reno";
      // mpi.connections: the workers' stripes for this peer class (tcp_model.h).
      const bool wan = hosts[a]->dc != hosts[b]->dc;
      if (const int n = wan ? e.connections_wan : e.connections_dc; striped && n > 0) {
        p.connections = n;
        p.eager_limit = sim::kNoRendezvous;
        p.early_release = true;
      }
    }
  return out;
}

// Per jitter distribution, worked out once from the emulator's own table: the lag table
// (JitterLagTable) with its distribution for drawn lags; its lambda-0 column is the
// expected largest of 2^k draws that TcpPath::jitter_hold_ns sums.
std::shared_ptr<const sim::JitterLagTable> jitter_table(netem::JitterDist dist) {
  static std::mutex mutex;  // plans may be worked out on several threads
  static std::map<netem::JitterDist, std::shared_ptr<const sim::JitterLagTable>> cache;
  const std::lock_guard lock(mutex);
  auto& cached = cache[dist];
  if (!cached) {
    const auto table = netem::load_dist_table(dist);
    auto lag = std::make_shared<sim::JitterLagTable>();
    // lambda 0, then 2^-8 .. 2^3 by half powers of two: past 2^3 one draw leads.
    lag->lambdas.push_back(0);
    for (int h = -16; h <= 6; ++h) lag->lambdas.push_back(std::exp2(h / 2.0));
    for (double lambda : lag->lambdas) {
      std::array<double, sim::JitterLagTable::kSlots> column{};
      std::array<std::array<double, sim::JitterLagTable::kQuantiles>, sim::JitterLagTable::kSlots>
          spread{};
      for (size_t k = 0; k < column.size(); ++k) {
        column[k] = netem::expected_largest_spaced(table, int64_t{1} << k, lambda);
        const auto q = netem::largest_spaced_quantiles(table, int64_t{1} << k, lambda,
                                                       sim::JitterLagTable::kQuantiles);
        std::copy(q.begin(), q.end(), spread[k].begin());
      }
      lag->largest.push_back(column);
      lag->quantiles.push_back(spread);
    }
    cached = std::move(lag);
  }
  return cached;
}

// Adds one hop's expected largest extra delays (TcpPath::jitter_hold_ns) to `hold`, and
// the hop to `hops` (TcpPath::jitter_hops).
void add_jitter(std::array<int64_t, sim::TcpPath::kJitterHoldSlots>& hold,
                std::vector<sim::JitterHop>& hops, const netem::LinkParams& p) {
  if (p.jitter_us == 0) return;
  auto table = jitter_table(p.jitter_dist);
  const auto unit_ns = static_cast<int64_t>(p.jitter_us) * 1000;
  static_assert(sim::TcpPath::kJitterHoldSlots == sim::JitterLagTable::kSlots);
  for (size_t k = 0; k < hold.size(); ++k)
    hold[k] += std::llround(static_cast<double>(unit_ns) * table->largest[0][k]);
  hops.push_back({unit_ns, netem::acts_per_packet(p), std::move(table)});
}

// The paths between two hosts of a DC (of `m`'s rows, `path_host`, `path_dc`) whose
// bottleneck is their ports: with the bucket spent while a port is busy, its tbf holds its
// queue (`limit`); those whose socket buffers' window is less than that and the round trip
// hold never fill it and keep no bottleneck. Where one does, the hosts' ports
// (LinkModel::port) of the ranks on `host`, a rank's its host's, numbered in order of first
// rank. None without an intra-DC rate.
void set_ports(const topo::Topology& t, const std::vector<const topo::Host*>& host,
               const std::vector<const topo::Host*>& path_host, const std::vector<int>& path_dc,
               sim::LinkModel& m) {
  const int64_t queue = host_queue_payload_bytes(t);
  if (queue <= 0) return;
  const sim::Link lan = lan_link(t);
  // The round trip between two hosts of a DC at the fabric's payload rate.
  const int64_t bdp =
      std::llround(lan.bandwidth_bps / 8 * static_cast<double>(2 * lan.latency_ns) / 1e9);
  const int h = static_cast<int>(path_host.size());
  bool filled = false;
  // The pairs leaving one host's port share its rate and queue: one channel per sender
  // host, numbered after the model's own.
  const int first = m.channels();
  std::map<const topo::Host*, int> sender;
  for (int a = 0; a < h; ++a)
    for (int b = 0; b < h; ++b) {
      if (path_dc[a] != path_dc[b] || path_host[a] == path_host[b]) continue;
      const size_t i = static_cast<size_t>(a) * h + b;
      sim::TcpPath& p = m.tcp[i];
      if (p.window_bytes > 0 && p.window_bytes * std::max(p.connections, 1) <= bdp + queue)
        continue;
      p.bdp_bytes = bdp;
      p.queue_bytes = queue;
      p.port_bottleneck = filled = true;
      if (m.channel.size() == m.tcp.size())  // a model with channels: a row per path
        m.channel[i] =
            first + sender.emplace(path_host[a], static_cast<int>(sender.size())).first->second;
    }
  if (!filled) return;
  std::map<const topo::Host*, int> port_of;
  m.port.resize(host.size());
  for (size_t r = 0; r < host.size(); ++r)
    m.port[r] = port_of.emplace(host[r], static_cast<int>(port_of.size())).first->second;
}

// Links among ranks on `host` with a row per distinct host (LinkModel::host), in order of
// first rank (so tcp.front() stays rank pair (0, 0)'s); `row_host` and `row_dc` receive
// each row's host and DC. `lan` between every two rows, a channel per rank pair
// (links_between sets the pairs of one host and those across DCs, set_ports those that
// leave one host's port).
sim::LinkModel rows_by_host(const std::vector<const topo::Host*>& host,
                            const std::vector<int>& dc_of, const sim::Link& lan,
                            std::vector<const topo::Host*>& row_host, std::vector<int>& row_dc) {
  const int n = static_cast<int>(host.size());
  std::map<const topo::Host*, int> index;
  sim::LinkModel m;
  m.ranks = n;
  m.host.resize(n);
  row_host.clear();
  row_dc.clear();
  for (int r = 0; r < n; ++r) {
    const auto [it, fresh] = index.emplace(host[r], static_cast<int>(row_host.size()));
    if (fresh) {
      row_host.push_back(host[r]);
      row_dc.push_back(dc_of[r]);
    }
    m.host[r] = it->second;
  }
  const int h = static_cast<int>(row_host.size());
  m.hosts = h;
  m.links.assign(static_cast<size_t>(h) * h, lan);
  m.channel.assign(static_cast<size_t>(h) * h, -1);  // inside a DC: the pair's own
  return m;
}

}  // namespace

// The links among `hosts` (one rank each, in order), as link_model() describes. What
// depends on the DCs alone (the WAN link, the route's loss and bottleneck) is worked out
// once per ordered pair of DCs.
sim::LinkModel links_between(const Experiment& e, const std::vector<std::string>& hosts,
                             bool striped, bool per_host) {
  const int n = static_cast<int>(hosts.size());
  std::map<std::string, int> dc_index;
  std::vector<std::string> dc_name;
  std::vector<int> dc_of(n);
  std::vector<const topo::Host*> host(n);
  for (int r = 0; r < n; ++r) {
    host[r] = e.topology.find_host(hosts[r]);
    const auto [it, fresh] = dc_index.emplace(host[r]->dc, static_cast<int>(dc_index.size()));
    if (fresh) dc_name.push_back(host[r]->dc);
    dc_of[r] = it->second;
  }
  // The hosts whose pairs hold TCP paths (per_host: each distinct host once, the model's
  // rows), with their DCs.
  std::vector<const topo::Host*> path_host = host;
  std::vector<int> path_dc = dc_of;
  sim::LinkModel m = per_host ? rows_by_host(host, dc_of, lan_link(e.topology), path_host, path_dc)
                              : sim::LinkModel::dcs(dc_of, {}, lan_link(e.topology));
  m.tcp = tcp_paths(e, path_host, striped);
  const topo::Routes routes = topo::compute_routes(e.topology);
  // Per ordered pair of DCs: the link, the loss episodes along the route (random loss, or a
  // Gilbert-Elliott chain's lossy bad stays: loss_model.h; met per segment: tcp_model.h), and the
  // route's bottleneck (its lowest rate), which decides where congestion loss starts (tcp_model.h).
  struct Between {
    sim::Link link;
    double loss = 0;
    const netem::LinkParams* neck = nullptr;
    int64_t bdp = 0, queue = 0;  // of the bottleneck, payload bytes (0: no rate limit)
    BurstRoom burst;             // TcpPath::upstream_bytes and idle_burst_bytes
    std::array<int64_t, sim::TcpPath::kJitterHoldSlots> hold{};  // this direction's hops only
    std::vector<sim::JitterHop> hops;  // this direction's jittered delay lines
  };
  const size_t D = dc_name.size();
  std::vector<Between> between(D * D);
  for (size_t x = 0; x < D; ++x)
    for (size_t y = 0; y < D; ++y) {
      if (x == y) continue;
      Between& w = between[x * D + y];
      w.link = wan_between(e.topology, routes, dc_name[x], dc_name[y]);
      double kept = 1;
      const auto path = routes.path(dc_name[x], dc_name[y]);
      for (size_t i = 0; i + 1 < path.size(); ++i)
        if (const topo::WanLink* l = e.topology.find_link(path[i], path[i + 1])) {
          kept *= 1 - netem::loss_episodes_per_packet(l->egress(path[i]).loss);
          add_jitter(w.hold, w.hops, l->egress(path[i]));
        }
      w.loss = 1 - kept;
      w.neck = route_bottleneck(e.topology, routes, dc_name[x], dc_name[y]);
      w.burst = burst_room(e.topology, path, w.neck);
    }
  // The bottleneck's bandwidth-delay product at the route's round trip and what its tbf
  // holds (a bucket's worth passed at once, `limit` more queued: queue_sizing.h), payload
  // bytes: a frame of kFrameBytes carries kTcpMss.
  const double payload = netem::kTcpPayloadShare;
  for (size_t x = 0; x < D; ++x)
    for (size_t y = 0; y < D; ++y) {
      Between& w = between[x * D + y];
      if (x == y || !w.neck) continue;
      const double rtt_s =
          static_cast<double>(w.link.latency_ns + between[y * D + x].link.latency_ns) / 1e9;
      w.bdp = std::llround(static_cast<double>(w.neck->rate_bps) / 8 * rtt_s * payload);
      const uint64_t burst =
          netem::rate_queue_bytes(*w.neck) + netem::tbf_burst_bytes(w.neck->rate_bps);
      w.queue = std::llround(static_cast<double>(burst) * payload);
    }
  const double fabric_bps = lan_link(e.topology).bandwidth_bps;  // feeds a route's first hop
  const int64_t host_queue = host_queue_payload_bytes(e.topology);
  // The links and channels as below, a row per host.
  if (per_host) {
    const int h = m.hosts;
    for (int a = 0; a < h; ++a)
      for (int b = 0; b < h; ++b) {
        const size_t i = static_cast<size_t>(a) * h + b;
        if (a == b) {
          m.links[i] = {};  // two ranks of one host
        } else if (path_dc[a] != path_dc[b]) {
          m.links[i] = between[static_cast<size_t>(path_dc[a]) * D + path_dc[b]].link;
          // After the pair ids, as LinkModel::dcs numbers them.
          m.channel[i] = n * n + path_dc[a] * static_cast<int>(D) + path_dc[b];
        }
      }
  }
  for (int a = 0; a < n && !per_host; ++a)
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      if (host[a] == host[b]) {
        m.at(a, b) = {};  // two ranks of one host: no link between them (host_link)
        continue;
      }
      if (dc_of[a] == dc_of[b]) continue;  // the LAN link (LinkModel::dcs)
      m.at(a, b) = between[static_cast<size_t>(dc_of[a]) * D + dc_of[b]].link;
    }
  set_ports(e.topology, host, path_host, path_dc, m);
  // The paths across DCs (those inside one are set_ports').
  const int h = static_cast<int>(path_host.size());
  for (int a = 0; a < h; ++a)
    for (int b = 0; b < h; ++b) {
      if (path_dc[a] == path_dc[b]) continue;
      const Between& w = between[static_cast<size_t>(path_dc[a]) * D + path_dc[b]];
      sim::TcpPath& p = m.tcp[static_cast<size_t>(a) * h + b];
      p.bdp_bytes = w.bdp;
      p.queue_bytes = w.queue;
      p.upstream_bytes = w.burst.upstream;
      p.idle_burst_bytes = w.burst.neck;
      p.loss = w.loss;
      // Bunched forward and back (TcpPath::jitter_hold_ns); the lag forward only.
      const Between& back = between[static_cast<size_t>(path_dc[b]) * D + path_dc[a]];
      for (size_t k = 0; k < p.jitter_hold_ns.size(); ++k)
        p.jitter_hold_ns[k] = w.hold[k] + back.hold[k];
      p.jitter_hops = w.hops;
      p.feed_bps = fabric_bps;
      p.host_queue_bytes = host_queue;
    }
  return m;
}

sim::LinkModel link_model(const Experiment& e) {
  return links_between(e, e.placement[0], true);
}

sim::LinkModel world_link_model(const Experiment& e) {
  const std::vector<std::string> hosts = e.pipeline_hosts();
  const int n = static_cast<int>(hosts.size());
  const topo::Routes routes = topo::compute_routes(e.topology);
  // Replicas share hosts: a row per distinct host (LinkModel::host), each ordered pair of
  // them worked out once.
  std::map<std::string, int> index;
  std::vector<std::string> names;
  sim::LinkModel m;
  m.ranks = n;
  m.host.resize(n);
  for (int r = 0; r < n; ++r) {
    const auto [it, fresh] = index.emplace(hosts[r], static_cast<int>(names.size()));
    if (fresh) names.push_back(hosts[r]);
    m.host[r] = it->second;
  }
  const int H = static_cast<int>(names.size());
  m.hosts = H;
  m.links.assign(static_cast<size_t>(H) * H, {});  // two ranks of one host: no link
  for (int a = 0; a < H; ++a)
    for (int b = 0; b < H; ++b)
      if (a != b)
        m.links[static_cast<size_t>(a) * H + b] = host_link(e, routes, names[a], names[b]);
  return m;
}

void add_tp_allreduces(const Experiment& e, const std::vector<int>& stage_rank, sim::CostModel& c) {
  if (e.tensor_parallel <= 1) return;
  c.tp_port_wait_ns.assign(static_cast<size_t>(c.stages()), 0);
  c.tp_first_bytes.assign(static_cast<size_t>(c.stages()), 0);
  c.tp_hosts.assign(static_cast<size_t>(c.stages()), 0);
  c.tp_window_bytes.assign(static_cast<size_t>(c.stages()), 0);
  c.tp_bdp_bytes.assign(static_cast<size_t>(c.stages()), 0);
  for (int st = 0; st < c.stages(); ++st) {
    const int n = c.tp_allreduces[st];
    const std::vector<std::string>& group = e.tp_placement[0][stage_rank[st]];
    const sim::LinkModel g = links_between(e, group, false);
    const int64_t ns = sim::allreduce_ns(g, c.tp_allreduce_bytes[st], n > 0 ? c.f_ns[st] / n : 0);
    c.tp_allreduce_ns[st] = ns;
    if (!g.tcp.empty() && g.ranks > 1) {
      const sim::TcpPath& p = g.path(0, 1);
      const int64_t rtt = 2 * g.at(0, 1).latency_ns;
      c.tp_port_wait_ns[st] = sim::tcp_local_drop_wait_ns(p, rtt);
      // Its first aggregate: the connection keeps the window it ended its last all-reduce
      // with (idle for a slice, under its RTO), as much as the port's round trip and queue
      // hold; libnbc's exchange sends the whole buffer each way.
      sim::TcpConn conn;
      conn.cwnd = conn.ssthresh = std::max<int64_t>(p.bdp_bytes + p.queue_bytes, sim::kTcpMss);
      c.tp_first_bytes[st] =
          std::min(c.tp_allreduce_bytes[st], sim::tcp_tso_segments(conn, p, rtt) * sim::kTcpMss);
      c.tp_hosts[st] = static_cast<int>(std::set<std::string>(group.begin(), group.end()).size());
      if (p.port_bottleneck && p.queue_bytes > 0 && c.tp_allreduce_bytes[st] > conn.cwnd) {
        c.tp_window_bytes[st] = conn.cwnd;  // the sum outlasts the window: it fills the port
        c.tp_bdp_bytes[st] = p.bdp_bytes;
      }
    }
    c.f_ns[st] += n * ns;
    c.b_ns[st] += n * ns;
  }
}

}  // namespace xdc::run
