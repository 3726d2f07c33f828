#include "harness/network/builder.h"

#include <fmt/format.h>
#include <linux/pkt_sched.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "common/input_error.h"
#include "common/private_dir.h"
#include "harness/network/links.h"
#include "harness/network/mininet.h"
#include "harness/network/names.h"
#include "harness/network/namespace.h"
#include "harness/network/shaping.h"
#include "harness/network/tcp.h"
#include "harness/network/teardown.h"
#include "netem/nl/netns.h"
#include "netem/shaper/kernel_netem.h"
#include "netem/shaper/qdisc.h"
#include "netem/shaper/queue_sizing.h"

namespace xdc::net {
namespace fs = std::filesystem;
namespace {

std::atomic<int> g_interrupted{0};
extern "C" void on_signal(int sig) {
  g_interrupted = sig;
}

// Turns SIGINT/SIGTERM into a flag for the build's lifetime, so an interrupted build
// unwinds and tears down instead of leaving half a network behind. A signal caught in
// the scope is raised again once the previous handlers are back, so that the caller
// (`xdc run`'s or `xdc sweep`'s cancel flag, or the default action) sees it too: a
// signal that came after the build's last check is not lost.
class InterruptScope {
 public:
  InterruptScope() {
    g_interrupted = 0;
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~InterruptScope() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
    if (int s = g_interrupted.exchange(0)) ::raise(s);
  }
  static void check() {
    if (int s = g_interrupted.load())
      throw std::runtime_error(fmt::format("interrupted by signal {}", s));
  }

 private:
  struct sigaction old_int_ {
  }, old_term_{};
};

// The first run of mgmt_slots(prefix) management slots, aligned to its size, that no
// other network's subnet overlaps.
int free_slot(int prefix) {
  std::set<int> used;
  for (auto& n : list_state_dirs())
    if (auto s = load_state(n))
      for (int k = 0; k < mgmt_slots(subnet_prefix(s->mgmt_subnet)); ++k) used.insert(s->slot + k);
  const int n = mgmt_slots(prefix);
  for (int s = 0; s + n <= kMaxSlots; s += n) {
    int k = 0;
    while (k < n && !used.count(s + k)) ++k;
    if (k == n) return s;
  }
  throw std::runtime_error(
      fmt::format("no free run of {} management subnet slots (/{}) is left (xdc ls)", n, prefix));
}

// Runs job(i) for every i < n on up to `threads` threads, this one among them. Once a job
// throws no other starts; those under way finish, then the first exception is thrown.
void run_at_once(size_t n, size_t threads, const std::function<void(size_t)>& job) {
  std::atomic<size_t> next{0};
  std::mutex mutex;
  std::exception_ptr failed;
  auto work = [&] {
    for (size_t i; (i = next++) < n;) {
      try {
        job(i);
      } catch (...) {
        const std::lock_guard lock(mutex);
        if (!failed) failed = std::current_exception();
        next = n;
      }
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < std::min(threads, n); ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (failed) std::rethrow_exception(failed);
}

// The test hook (builder.h): the step at which the build stops itself; 0 = none.
constexpr const char* kStopAtEnv = "XDC_TEST_STOP_UP_AT";
constexpr int kStopAtLast = -1;
int test_stop_at_step() {
  const char* v = std::getenv(kStopAtEnv);
  if (!v || !*v) return 0;
  if (std::string(v) == "last") return kStopAtLast;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end || n < 1 || n > 1000000)
    throw InputError(fmt::format("{}: expected a step number (1, 2, ...) or \"last\", got \"{}\"",
                                 kStopAtEnv, v));
  return static_cast<int>(n);
}

constexpr double kLinuxRtoMinMs = 200;  // TCP_RTO_MIN

// Bound over /etc/hosts in the namespace (enter.h), where every user resolves names with
// it: 0644 whatever the umask.
void write_hosts_file(const std::string& ns, const std::vector<HostState>& hosts) {
  const std::string path = "/etc/netns/" + ns + "/hosts";
  fs::create_directories("/etc/netns/" + ns);
  std::ofstream out(path);
  out << "# written by xdc up; removed by xdc down\n127.0.0.1\tlocalhost\n";
  for (auto& h : hosts) out << h.data_ip << "\t" << h.name << "\n";
  if (!out) throw std::runtime_error("cannot write " + path);
  out.close();
  fs::permissions(path, fs::perms(0644));
}

class Builder {
 public:
  Builder(const topo::Topology& t, const BuildOptions& o, std::string net)
      : topo_(t), opts_(o), net_(std::move(net)) {}

  NetworkState run() {
    state_.name = net_;
    state_.topology_file = topo_.source_file;
    state_.backend = topo::to_string(backend());
    state_.time_dilation = opts_.time_dilation;
    state_.intra_dc_rate_bps = topo_.intra_dc.rate_bps;
    if (opts_.lab && mininet())
      throw InputError("a lab's network is built by the native backend (not Mininet)");
    mgmt_prefix_ = mgmt_prefix(static_cast<int>(topo_.hosts().size()));
    if (opts_.lab && mgmt_prefix_ != 24)
      throw InputError(
          fmt::format("a lab's network has at most 253 hosts (its management "
                      "network is one /24 across the machines), this one {}",
                      topo_.hosts().size()));
    state_.slot = opts_.lab ? lab_slot(opts_.lab->slot) : free_slot(mgmt_prefix_);
    all_hosts_ = whole_network_hosts();
    state_.mgmt_subnet = mgmt_subnet(state_.slot, mgmt_prefix_);
    state_.mgmt_root_ip = mgmt_root_ip(state_.slot, mgmt_prefix_);
    if (opts_.lab)  // one management switch across the lab: a root address per machine
      state_.mgmt_root_ip = fmt::format("198.18.{}.{}", state_.slot, 254 - opts_.lab->machine);
    state_.created_unix =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    // The state directory exists from the start: `xdc ls` shows a build under way.
    make_private_dir(kStateRoot, true);
    make_shared_mount_dir(kStateRoot);  // UTS pins live below it
    make_private_dir(state_dir(net_), true);
    if (mininet()) {
      phase(fmt::format("Mininet: {} hosts, {} DCs, {} WAN links", topo_.hosts().size(),
                        topo_.dcs.size(), topo_.wan.size()));
      // Polled while the driver builds: the first poll is a step (the driver is running),
      // the later ones, as many as the build takes, only look for an interrupt.
      mininet_ = std::make_unique<MininetNetwork>(topo_, net_, [this, first = true]() mutable {
        if (first) step("Mininet driver building");
        first = false;
        InterruptScope::check();
      });
      state_.mininet_pid = mininet_->pid();
      state_.mininet_nodes = mininet_->nodes();
    } else {
      phase("namespaces and links");
      plumb_native();
    }
    phase("management network " + state_.mgmt_subnet);
    auto& root = sock("");
    // The root namespace's port: IPv4 alone, as every interface of the network (no_ipv6).
    nl::write_sysctl("", fmt::format("net/ipv6/conf/{}/disable_ipv6", root_link(net_)), "1");
    add_address(root, root_link(net_), fmt::format("{}/{}", state_.mgmt_root_ip, mgmt_prefix_));
    set_up(root, root_link(net_));
    phase(fmt::format("{} DCs", topo_.dcs.size()));
    for (size_t d = 0; d < topo_.dcs.size(); ++d) configure_dc(static_cast<int>(d));
    phase(fmt::format("{} WAN links", topo_.wan.size()));
    for (size_t j = 0; j < topo_.wan.size(); ++j) configure_wan(static_cast<int>(j));
    build_routes();
    for (auto& h : state_.hosts) write_hosts_file(h.ns, all_hosts_);
    phase("WAN shaping");
    shape_wan();
    shape_fabric();
    note_dilated_hystart();
    step("saving the state", true);  // the shaping took a while: an interrupt undoes the build
    state_.root_tcp = read_root_tcp();
    save_state(state_);
    for (auto& s : shapers_) s->detach();
    if (mininet_) mininet_->detach();
    return state_;
  }

 private:
  void phase(const std::string& what) {
    step(what);
    if (opts_.progress) opts_.progress(what);
  }

  // A point between two parts of the build: an interrupt received so far undoes the build
  // here, and the test hook (builder.h, XDC_TEST_STOP_UP_AT) may stop the process here.
  void step(const std::string& what, bool last = false) {
    InterruptScope::check();
    ++steps_;
    if (stop_at_step_ != steps_ && !(last && stop_at_step_ == kStopAtLast)) return;
    fmt::print(stderr, "xdc up: stopped at step {} ({}) by {}\n", steps_, what, kStopAtEnv);
    std::fflush(stderr);
    ::raise(SIGSTOP);
  }

  nl::NlSocket& sock(const std::string& ns) {
    auto it = socks_.find(ns);
    if (it == socks_.end()) it = socks_.emplace(ns, std::make_unique<nl::NlSocket>(ns)).first;
    return *it->second;
  }

  topo::NetworkBackend backend() const { return opts_.backend.value_or(topo_.backend); }
  // Built on this machine: every DC, or a lab part's.
  bool local(const std::string& dc) const { return !opts_.lab || opts_.lab->dcs.count(dc) > 0; }

  static int lab_slot(int slot) {
    for (auto& n : list_state_dirs())
      if (auto st = load_state(n); st && st->slot == slot)
        throw std::runtime_error(fmt::format(
            "management slot {} is taken on this machine by network {} (xdc down it)", slot, n));
    return slot;
  }

  // Every host of the topology with its addresses, wherever it is built (a lab's machines
  // agree on them): data by DC and index, management by ordinal in topology order.
  std::vector<HostState> whole_network_hosts() const {
    std::vector<HostState> out;
    for (size_t d = 0; d < topo_.dcs.size(); ++d)
      for (const topo::Host& h : topo_.dcs[d].hosts)
        out.push_back({h.name,
                       topo_.dcs[d].name,
                       host_ns(net_, h.name),
                       host_ip(static_cast<int>(d), h.index),
                       mgmt_ip(state_.slot, static_cast<int>(out.size())),
                       {},
                       ""});
    return out;
  }
  const HostState& whole(const std::string& host) const {
    for (auto& h : all_hosts_)
      if (h.name == host) return h;
    throw std::logic_error("unknown host " + host);
  }
  bool mininet() const { return backend() == topo::NetworkBackend::kMininet; }

  // The native layer 2 (names.h): namespaces, the management bridge and veths over netlink,
  // every port up. A DC has no bridge: each host's eth0 is a veth to a port of its
  // gateway, which routes between them (configure_dc). The Mininet backend makes its DCs
  // a switch each (mininet.h).
  void plumb_native() {
    const std::string mgmt = mgmt_ns(net_);
    create_namespaces();
    int mgmt_br = add_bridge(sock(mgmt), "br0");
    set_up(sock(mgmt), "br0");
    set_up(sock(mgmt), "lo");
    add_veth(sock(mgmt), "root", root_link(net_), "", mgmt_br);
    set_up(sock(mgmt), "root");
    if (opts_.lab && !opts_.lab->peers.empty()) join_lab_management(mgmt_br);
    mgmt_bridges_ = {mgmt_br};
    int ordinal = 0;  // the host's in topology order
    for (const topo::Dc& dc : topo_.dcs) {
      if (!local(dc.name)) {
        ordinal += static_cast<int>(dc.hosts.size());
        continue;
      }
      std::string gw = gateway_ns(net_, dc.name);
      auto& gsk = sock(gw);
      for (const topo::Host& h : dc.hosts) {
        step("namespace of " + h.name);
        std::string ns = host_ns(net_, h.name);
        add_veth(gsk, h.name, "eth0", ns);
        set_up(gsk, h.name);
        add_veth(sock(mgmt), h.name, "mgmt0", ns, mgmt_bridge(ordinal++));
        set_up(sock(mgmt), h.name);
      }
      socks_.erase(gw);
    }
    for (size_t j = 0; j < topo_.wan.size(); ++j) {
      const topo::WanLink& l = topo_.wan[j];
      if (local(l.a) && local(l.b))
        add_veth(sock(gateway_ns(net_, l.a)), wan_ifname(l.b), wan_ifname(l.a),
                 gateway_ns(net_, l.b));
      else if (local(l.a) || local(l.b))
        add_tunnel(static_cast<int>(j));
    }
  }

  // The namespaces of this machine's part (management, gateways, hosts with their UTS
  // namespaces), made on as many threads as there are cores: making one is mostly the
  // kernel's per-namespace set-up, which runs concurrently (the links, addresses and routes
  // go through the RTNL lock one at a time, so they stay on this thread). An interrupt or
  // a failure undoes whatever was made (teardown by name).
  void create_namespaces() {
    struct Ns {
      std::string name, hostname;
      bool gateway = false;
    };
    std::vector<Ns> todo{{mgmt_ns(net_), ""}};
    for (const topo::Dc& dc : topo_.dcs) {
      if (!local(dc.name)) continue;
      todo.push_back({gateway_ns(net_, dc.name), "", true});
      for (const topo::Host& h : dc.hosts) todo.push_back({host_ns(net_, h.name), h.name});
    }
    make_shared_mount_dir("/run/netns");  // once, before the threads (else each may bind it)
    run_at_once(todo.size(), std::max(1u, std::thread::hardware_concurrency()), [&](size_t i) {
      InterruptScope::check();
      const Ns& n = todo[i];
      create_netns(n.name, n.hostname, n.hostname.empty() ? "" : uts_path(net_, n.hostname));
      no_ipv6(n.name);
      if (n.gateway) gateway_sysctls(n.name);
    });
  }

  // The management switch's bridge for the host of topology order `ordinal`: br0 for the
  // first kMgmtBridgeHosts, then br_1, br_2, ... (a Linux bridge takes at most 1,024
  // ports), each joined to br0 by a veth pair (trunk_K on br0, up_K on br_K). '_' is in
  // no host name, so these never meet a host's port name.
  int mgmt_bridge(int ordinal) {
    constexpr int kMgmtBridgeHosts = 1000;
    const size_t i = static_cast<size_t>(ordinal / kMgmtBridgeHosts);
    const std::string mgmt = mgmt_ns(net_);
    while (mgmt_bridges_.size() <= i) {
      const std::string k = std::to_string(mgmt_bridges_.size());
      const int br = add_bridge(sock(mgmt), "br_" + k);
      set_up(sock(mgmt), "br_" + k);
      add_veth(sock(mgmt), "trunk_" + k, "up_" + k, mgmt, mgmt_bridges_.front());
      set_master(sock(mgmt), "up_" + k, br);
      set_up(sock(mgmt), "trunk_" + k);
      set_up(sock(mgmt), "up_" + k);
      mgmt_bridges_.push_back(br);
    }
    return mgmt_bridges_[i];
  }

  // The lab's machines share one management switch: a VXLAN port on this one (id from the
  // slot) flooding to every other machine, and room for its 50 bytes on every port.
  void join_lab_management(int mgmt_br) {
    const LabPart& lab = *opts_.lab;
    const std::string mgmt = mgmt_ns(net_);
    auto& root = sock("");
    add_vxlan(root, "lab0", lab_mgmt_vni(state_.slot), lab.local_address, "",
              root.ifindex(lab.data_interface), mgmt);
    for (const std::string& peer : lab.peers) add_vxlan_flood(sock(mgmt), "lab0", peer);
    set_master(sock(mgmt), "lab0", mgmt_br);
    set_up(sock(mgmt), "lab0");
    set_mtu(sock(mgmt), "root", static_cast<unsigned>(lab.mtu));
    set_mtu(root, root_link(net_), static_cast<unsigned>(lab.mtu));
  }

  // A WAN link whose other DC is on another machine of the lab: a VXLAN tunnel from this
  // machine's data address to that machine's, its end in the local gateway under the name
  // a veth would have (wan_ifname), so addresses, routes and shaping are as for a veth.
  void add_tunnel(int j) {
    const topo::WanLink& l = topo_.wan[j];
    const LabPart& lab = *opts_.lab;
    const std::string& here = local(l.a) ? l.a : l.b;
    const std::string& there = local(l.a) ? l.b : l.a;
    auto& root = sock("");
    add_vxlan(root, wan_ifname(there), lab_vni(state_.slot, j), lab.local_address,
              lab.dc_address.at(there), root.ifindex(lab.data_interface), gateway_ns(net_, here));
  }

  // The native gateway's fabric loop (configure_dc): what its DC's hosts receive leaves by
  // kFabricOut, where the intra-DC delay is; arrives again on kFabricIn, where table
  // kFabricTable routes it to the host's port. '_' is in no host name, so neither meets a port.
  static constexpr const char* kFabricOut = "fabric_out";
  static constexpr const char* kFabricIn = "fabric_in";
  static constexpr uint32_t kFabricTable = 100;
  static constexpr uint32_t kFabricRulePrio = 100;
  // Where every packet on its way to one of the DC's hosts passes, once: the intra-DC
  // delay's egress (shape_fabric).
  std::string fabric_egress() const { return mininet() ? kMininetGatewayLan : kFabricOut; }
  // The DC's end of host `h`'s data link: its gateway port (native), its switch port (Mininet).
  std::pair<std::string, std::string> host_port(int d, const topo::Host& h) const {
    if (mininet()) return {switch_ns(net_, topo_.dcs[d].name), mininet_switch_port(d, h.index)};
    return {gateway_ns(net_, topo_.dcs[d].name), h.name};
  }

  // Addresses, sysctls, TCP, intra-DC rate and routes of a DC, on either backend's layer 2.
  void configure_dc(int d) {
    const topo::Dc& dc = topo_.dcs[d];
    if (!local(dc.name)) return;
    std::string gw = gateway_ns(net_, dc.name);
    auto& gsk = sock(gw);
    const bool delay = topo_.intra_dc.delay_us > 0;
    // Native: the gateway holds its address on every host port and a /32 route to each
    // host through its port, in kFabricTable behind the fabric loop when there is an
    // intra-DC delay (main's route to the DC's subnet is then the loop). Mininet: the
    // gateway is one port of the DC's switch.
    uint32_t host_table = 0;
    if (mininet()) {
      no_ipv6(gw);  // the native backend's are so from their creation
      gateway_sysctls(gw);
      add_address(gsk, kMininetGatewayLan, gateway_ip(d) + "/24");
      set_up(gsk, kMininetGatewayLan);
    } else if (delay) {
      add_fabric_loop(gsk, kFabricOut, kFabricIn, kFabricTable, kFabricRulePrio, dc_subnet(d));
      host_table = kFabricTable;
    }
    set_up(gsk, "lo");
    for (const topo::Host& h : dc.hosts) {
      step("addresses of " + h.name);
      HostState hs = whole(h.name);
      if (mininet()) no_ipv6(hs.ns);
      hs.tcp = apply_host_tcp(hs.ns, h.name, h.tcp, SourcePos{topo_.source_file, 0, 0},
                              &state_.tcp_allowed_added);
      auto [port_ns, port] = host_port(d, h);
      if (opts_.lab) {  // room for the tunnels' 50 bytes on the way to other machines
        const auto mtu = static_cast<unsigned>(opts_.lab->mtu);
        set_mtu(sock(port_ns), port, mtu);
        set_mtu(sock(hs.ns), "eth0", mtu);
        set_mtu(sock(mgmt_ns(net_)), h.name, mtu);
        set_mtu(sock(hs.ns), "mgmt0", mtu);
      }
      shape_intra_dc(sock(port_ns), port);
      shape_intra_dc(sock(hs.ns), "eth0");
      if (!mininet()) {
        add_address(gsk, port, gateway_ip(d) + "/32");
        add_device_route(gsk, hs.data_ip + "/32", port, host_table);
      }
      auto& hsk = sock(hs.ns);
      set_up(hsk, "lo");
      // The DC's subnet is on-link only on a Mininet switch without intra-DC delay;
      // otherwise hosts of one DC reach each other through the gateway (whose fabric
      // egress delays them, shape_fabric).
      const bool via_gateway = !mininet() || delay;
      add_address(hsk, "eth0", hs.data_ip + "/24", !via_gateway);
      set_up(hsk, "eth0");
      add_address(hsk, "mgmt0", fmt::format("{}/{}", hs.mgmt_ip, mgmt_prefix_));
      set_up(hsk, "mgmt0");
      // All data traffic leaves through the DC gateway; nothing else is routed. Under time
      // dilation k the minimum RTO (200 ms) is stretched to k x 200 ms on that route: a
      // fixed 200 ms would be only 200 / k ms of emulated time, and queueing delay that
      // the real link absorbs would fire spurious timeouts.
      add_route(hsk, "10.0.0.0/8", gateway_ip(d), "eth0", via_gateway, dilated_rto_min_ms());
      state_.hosts.push_back(hs);
      socks_.erase(hs.ns);  // one socket per host would exhaust fds on large topologies
      if (port_ns != gw) socks_.erase(port_ns);  // the gateway's serves the whole DC
      socks_.erase("");
    }
    // After the ports' addresses: the route's source must be one of the gateway's.
    if (!mininet() && delay) add_device_route(gsk, dc_subnet(d), kFabricOut, 0, gateway_ip(d));
    socks_.erase(gw);
    state_.dcs.push_back(dc.name);
  }

  // The intra-DC rate of a host, on both ends of its veth, by tbf/htb (any kernel). The
  // intra-DC delay is the fabric's (shape_fabric).
  void shape_intra_dc(const nl::NlSocket& sk, const std::string& ifname) {
    const topo::IntraDc& in = topo_.intra_dc;
    if (!in.rate_bps) return;
    // The queue in packets of the undilated link (time dilation keeps it; the automatic
    // size has a 1 ms floor, a duration, that would otherwise shrink by k).
    netem::add_rate_qdisc(sk, sk.ifindex(ifname), TC_H_ROOT, netem::kRootHandle, in.rate_bps,
                          netem::intra_dc_queue_bytes(in.rate_bps, opts_.time_dilation),
                          netem::tbf_burst_bytes(in.rate_bps));
  }

  int dc_index(const std::string& name) const {
    for (size_t d = 0; d < topo_.dcs.size(); ++d)
      if (topo_.dcs[d].name == name) return static_cast<int>(d);
    throw std::logic_error("unknown DC " + name);
  }

  void configure_wan(int j) {
    const topo::WanLink& l = topo_.wan[j];
    if (local(l.a)) {
      auto& ska = sock(gateway_ns(net_, l.a));
      add_address(ska, wan_ifname(l.b), wan_ip(j, false) + "/30");
      set_up(ska, wan_ifname(l.b));
    }
    if (local(l.b)) {
      auto& skb = sock(gateway_ns(net_, l.b));
      add_address(skb, wan_ifname(l.a), wan_ip(j, true) + "/30");
      set_up(skb, wan_ifname(l.a));
    }
    peer_ip_[{l.a, l.b}] = wan_ip(j, true);
    peer_ip_[{l.b, l.a}] = wan_ip(j, false);
  }

  // CUBIC's HyStart ends slow start when a round's RTT exceeds the minimum by
  // clamp(min RTT / 8, 4 ms, 16 ms) of wall clock: the 16 ms cap does not stretch, so past a
  // wall-clock RTT of 128 ms a dilated link leaves slow start earlier than the link it
  // emulates (docs/emulation.md, "Time dilation").
  void note_dilated_hystart() {
    if (opts_.time_dilation == 1) return;
    bool cubic = false;
    for (auto& h : state_.hosts) cubic = cubic || h.tcp.congestion == "cubic";
    int64_t rtt_us = 0;
    for (auto& l : topo_.wan)
      rtt_us = std::max<int64_t>(rtt_us, l.a_to_b.delay_us + l.b_to_a.delay_us +
                                             2 * static_cast<int64_t>(topo_.intra_dc.delay_us));
    if (!cubic || rtt_us <= 128000) return;
    state_.notes.push_back(fmt::format(
        "time dilation {:g}: WAN round trips reach {:.0f} ms of wall clock, above the 128 ms "
        "where CUBIC's HyStart caps its delay threshold at 16 ms: slow start may end earlier "
        "than on the emulated link; k <= {:.1f} keeps that threshold proportional",
        opts_.time_dilation, static_cast<double>(rtt_us) / 1000,
        std::floor(10 * 128000 * opts_.time_dilation / static_cast<double>(rtt_us)) / 10));
  }

  uint32_t dilated_rto_min_ms() const {
    if (opts_.time_dilation == 1) return 0;
    return static_cast<uint32_t>(std::lround(kLinuxRtoMinMs * opts_.time_dilation));
  }

  void build_routes() {
    topo::Routes routes = topo::compute_routes(topo_);
    for (auto& from : topo_.dcs)
      for (auto& to : topo_.dcs) {
        if (from.name == to.name || !local(from.name)) continue;
        const std::string& next = routes.next_hop(from.name, to.name);
        add_route(sock(gateway_ns(net_, from.name)), dc_subnet(dc_index(to.name)),
                  peer_ip_.at({from.name, next}), wan_ifname(next));
      }
  }

  void shape_wan() {
    netem::Backend backend = opts_.shaping.value_or(topo_.shaping);
    state_.shaping = netem::to_string(backend);
    const size_t first = state_.links.size();
    std::vector<ShapedLink*> impaired;
    for (auto& l : topo_.wan)
      for (int dir = 0; dir < 2; ++dir) {
        const std::string& from = dir ? l.b : l.a;
        const std::string& to = dir ? l.a : l.b;
        if (!local(from)) continue;  // shaped on its own machine
        ShapedLink sl{
            from, to, gateway_ns(net_, from), wan_ifname(to), "none", dir ? l.b_to_a : l.a_to_b,
            {}};
        sl.seed = opts_.seed;
        state_.links.push_back(sl);
      }
    for (size_t i = first; i < state_.links.size(); ++i)
      if (state_.links[i].configured.impaired()) impaired.push_back(&state_.links[i]);
    shape_at_once(backend, impaired);
  }

  // Shapes `links` at once, up to kMostAtOnce at a time (run_at_once): a direction's
  // shaping waits for its delay line to say it is ready (a process start), so a network's
  // shaping takes about one such wait instead of one per direction. Every shaper made is
  // kept for undo when one fails; the first failure is then thrown.
  void shape_at_once(netem::Backend backend, const std::vector<ShapedLink*>& links) {
    constexpr size_t kMostAtOnce = 64;  // each mostly waits for its delay line's start
    std::vector<std::unique_ptr<ShapingHandle>> made(links.size());
    std::exception_ptr failed;
    try {
      run_at_once(links.size(), kMostAtOnce,
                  [&](size_t i) { made[i] = shape_link(backend, *links[i]); });
    } catch (...) {
      failed = std::current_exception();
    }
    for (auto& m : made)
      if (m) shapers_.push_back(std::move(m));
    if (failed) std::rethrow_exception(failed);
  }

  // Intra-DC delay: every packet on its way to a host leaves the gateway's fabric egress
  // (hosts route even their own DC through it), so one shaper per DC there delays each
  // host-to-host packet once, by the same backend as the WAN (a userspace delay line or
  // netem). Packets arriving from the WAN cross it too (the fabric on their way in), so
  // a WAN round trip includes the intra-DC delay once.
  void shape_fabric() {
    if (!topo_.intra_dc.delay_us) return;
    netem::LinkParams p;
    p.delay_us = topo_.intra_dc.delay_us;
    netem::Backend backend = opts_.shaping.value_or(topo_.shaping);
    const size_t first = state_.fabric.size();
    for (auto& dc : topo_.dcs) {
      if (!local(dc.name)) continue;
      std::string gw = gateway_ns(net_, dc.name);
      ShapedLink sl{dc.name, dc.name, gw, fabric_egress(), "none", p, {}};
      sl.seed = opts_.seed;
      state_.fabric.push_back(sl);
    }
    std::vector<ShapedLink*> made;
    for (size_t i = first; i < state_.fabric.size(); ++i) made.push_back(&state_.fabric[i]);
    shape_at_once(backend, made);
  }

  const topo::Topology& topo_;
  const BuildOptions& opts_;
  std::string net_;
  int mgmt_prefix_ = 24;           // the management subnet's (mgmt_prefix)
  std::vector<int> mgmt_bridges_;  // the management switch's bridges (mgmt_bridge)
  NetworkState state_;
  std::unique_ptr<MininetNetwork> mininet_;  // before shapers_: outlives them on failure
  std::map<std::string, std::unique_ptr<nl::NlSocket>> socks_;
  std::map<std::pair<std::string, std::string>, std::string> peer_ip_;
  std::vector<HostState> all_hosts_;  // the whole network's, wherever built
  std::vector<std::unique_ptr<ShapingHandle>> shapers_;
  int steps_ = 0;                                 // steps begun
  const int stop_at_step_ = test_stop_at_step();  // the test hook's step; 0 = none
};

}  // namespace

LabPart LabPart::from_json(const std::string& text) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    LabPart p;
    for (const auto& d : j.at("dcs")) p.dcs.insert(d.get<std::string>());
    p.dc_address = j.at("dc_address").get<std::map<std::string, std::string>>();
    p.local_address = j.at("local_address").get<std::string>();
    p.data_interface = j.at("data_interface").get<std::string>();
    p.slot = j.at("slot").get<int>();
    p.peers = j.value("peers", std::vector<std::string>{});
    p.machine = j.value("machine", 0);
    if (p.machine < 0 || p.machine > 100) throw std::out_of_range("machine");
    p.mtu = j.value("mtu", 1450);
    if (p.slot < 0 || p.slot >= kMaxSlots) throw std::out_of_range("slot");
    return p;
  } catch (const std::exception& e) {
    throw InputError(std::string("--lab-part: expected the JSON of a lab part (builder.h): ") +
                     e.what());
  }
}

std::string LabPart::to_json() const {
  return nlohmann::json{{"dcs", dcs},
                        {"dc_address", dc_address},
                        {"local_address", local_address},
                        {"data_interface", data_interface},
                        {"slot", slot},
                        {"peers", peers},
                        {"machine", machine},
                        {"mtu", mtu}}
      .dump();
}

std::string check_network_name(const std::string& name) {
  if (name.empty()) return "network name is empty";
  if (name.size() > topo::kMaxNetworkName)
    return fmt::format(
        "network name \"{}\" is longer than {} characters (it becomes part of "
        "interface names, which Linux limits to 15)",
        name, topo::kMaxNetworkName);
  if (!(name[0] >= 'a' && name[0] <= 'z'))
    return fmt::format("network name \"{}\" must start with a lowercase letter", name);
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
      return fmt::format("network name \"{}\" may only contain a-z, 0-9 and '-'", name);
  return "";
}

NetworkState build_network(const topo::Topology& topo, const BuildOptions& opts) {
  std::string net = opts.name.empty() ? topo.name : opts.name;
  if (auto why = check_network_name(net); !why.empty()) throw InputError(why);
  if (!(opts.time_dilation >= 1 && opts.time_dilation <= topo::kMaxTimeDilation))
    throw InputError(fmt::format("time dilation {}: expected a number in 1..{}", opts.time_dilation,
                                 topo::kMaxTimeDilation));
  StateLock lock;
  for (auto& n : networks_present())
    if (n == net)
      throw std::runtime_error("network '" + net + "' already exists (xdc down " + net + ")");
  InterruptScope interrupts;
  try {
    return Builder(topo::time_dilated(topo, opts.time_dilation), opts, net).run();
  } catch (...) {
    // Undone (this build holds the lock); the build's own error is the one thrown.
    if (std::string left = teardown_or_error(net, false); !left.empty())
      fmt::print(stderr, "xdc: undoing the half-built network: {} (xdc clean)\n", left);
    throw;
  }
}

}  // namespace xdc::net
