#include "netem/shaper/shaper.h"

#include <dirent.h>
#include <linux/pkt_sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <stdexcept>

#include "common/private_dir.h"
#include "netem/nl/socket.h"
#include "netem/shaper/dist_table.h"
#include "netem/shaper/nfqueue_rule.h"
#include "netem/shaper/qdisc.h"
#include "netem/shaper/queue_sizing.h"

namespace xdc::netem {

namespace {

std::string link_name(const ShapeTarget& t) {
  return (t.tag.empty() ? "" : t.tag + " ") + "(" + t.ifname + " in netns '" + t.netns + "')";
}

// Delay-stage work the delay line has to do (the rate is tbf's).
bool needs_delay_stage(const LinkParams& p) {
  return p.delay_us || p.jitter_us || p.loss.kind != LossModel::Kind::kNone || p.reorder_pct > 0 ||
         p.duplicate_pct > 0 || p.corrupt_pct > 0;
}

std::string file_stem(const ShapeTarget& t, const ShapeOptions& o) {
  return o.state_dir + "/" + (t.netns.empty() ? "root" : t.netns) + "." + t.ifname;
}

// A direction that drops every packet (a link that is down): no per-packet fidelity needed.
bool drops_everything(const LinkParams& p) {
  return p.loss.kind == LossModel::Kind::kRandom && p.loss.p_pct >= 100;
}

void shape_kernel(const ShapeTarget& t, const LinkParams& p, ShapeRecord& r) {
  nl::NlSocket sock(t.netns);
  int ifindex = sock.ifindex(t.ifname);
  std::vector<int16_t> table =
      p.jitter_us ? load_dist_table(p.jitter_dist) : std::vector<int16_t>{};
  if (acts_per_packet(p) && !drops_everything(p)) r.feeders = segment_feeders(sock, ifindex);
  r.root_handle = kRootHandle;  // set first: a half-made netem root is removed by undo
  add_netem_root(sock, ifindex, p, table);
  if (p.rate_bps) r.rate_qdisc = p.rate_bps / 8 > INT32_MAX ? "htb" : "tbf";
}

void start_delay_stage(const ShapeTarget& t, int ifindex, const LinkParams& p,
                       const ShapeOptions& o, ShapeRecord& r) {
  DelaylineSpec spec;
  spec.netns = t.netns;
  spec.ifname = t.ifname;
  spec.tag = t.tag;
  // Queue numbers are per namespace; the ifindex is unique there.
  spec.queue_num = static_cast<uint16_t>(ifindex & 0xffff);
  spec.params = p;
  spec.stats_path = file_stem(t, o) + ".stats.json";
  spec.log_path = file_stem(t, o) + ".log";
  spec.ctl_path = file_stem(t, o) + ".ctl";
  spec.rt_prio = o.rt_prio;
  spec.seed = o.seed;
  r.queue_num = spec.queue_num;
  r.stats_path = spec.stats_path;
  r.log_path = spec.log_path;
  r.ctl_path = spec.ctl_path;
  make_private_dir(o.state_dir, true);  // the control socket: root's alone
  r.delayline_pid = start_delayline(spec);
}

void shape_userspace(const ShapeTarget& t, const LinkParams& p, const ShapeOptions& o,
                     ShapeRecord& r) {
  nl::NlSocket sock(t.netns);
  int ifindex = sock.ifindex(t.ifname);
  if (p.rate_bps) {
    r.root_handle = kRootHandle;
    r.rate_qdisc = add_rate_qdisc(sock, ifindex, TC_H_ROOT, kRootHandle, p.rate_bps,
                                  rate_queue_bytes(p), tbf_burst_bytes(p.rate_bps));
  }
  if (needs_delay_stage(p)) start_delay_stage(t, ifindex, p, o, r);
}

int64_t realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// The rate stage's queue after a change from `was` to `p` (queue_sizing.h): p's, but not
// smaller than was's while the rate stays.
uint64_t changed_rate_queue_bytes(const LinkParams& was, const LinkParams& p) {
  uint64_t bytes = rate_queue_bytes(p);
  return was.rate_bps == p.rate_bps ? std::max(bytes, rate_queue_bytes(was)) : bytes;
}

// Adds, changes or removes the rate stage as qdisc `handle` under `parent`.
void reshape_rate(const nl::NlSocket& sock, int ifindex, uint32_t parent, uint32_t handle,
                  const LinkParams& was, const LinkParams& p, ShapeRecord& r) {
  if (!p.rate_bps) {
    if (was.rate_bps) {
      remove_rate_qdisc(sock, ifindex, parent, handle, r.rate_qdisc, rate_queue_bytes(was));
      r.rate_qdisc.clear();
      if (parent == TC_H_ROOT) r.root_handle = 0;
    }
    return;
  }
  uint64_t limit = changed_rate_queue_bytes(was, p);
  if (!was.rate_bps)
    r.rate_qdisc = add_rate_qdisc(sock, ifindex, parent, handle, p.rate_bps, limit,
                                  tbf_burst_bytes(p.rate_bps));
  else
    change_rate_qdisc(sock, ifindex, parent, handle, r.rate_qdisc, p.rate_bps, limit,
                      tbf_burst_bytes(p.rate_bps));
}

// The direction's socket and index: `ready`'s, found once.
ReshapeHandle& opened(const ShapeRecord& r, ReshapeHandle& ready) {
  if (!ready.sock) {
    ready.sock = std::make_unique<nl::NlSocket>(r.netns);
    ready.ifindex = ready.sock->ifindex(r.ifname);
  }
  return ready;
}

void reshape_kernel(ShapeRecord& r, const LinkParams& was, const LinkParams& p,
                    ReshapeHandle& ready) {
  // netem keeps its distribution table when a change sends none, and uniform jitter has none.
  if (p.jitter_us && p.jitter_dist == JitterDist::kUniform && was.jitter_us &&
      was.jitter_dist != JitterDist::kUniform)
    throw std::runtime_error(std::string("the kernel's netem cannot change ") +
                             to_string(was.jitter_dist) +
                             " jitter to uniform in place (it keeps its distribution table)");
  const nl::NlSocket& sock = *opened(r, ready).sock;
  const int ifindex = ready.ifindex;
  if (acts_per_packet(p) && !drops_everything(p) && r.feeders.empty())
    r.feeders = segment_feeders(sock, ifindex);
  std::vector<int16_t> table =
      p.jitter_us ? load_dist_table(p.jitter_dist) : std::vector<int16_t>{};
  // netem's limit counts its delay stage (never shrunk) and the rate stage's packets.
  uint32_t rate_pkts = !p.rate_bps ? 0
                       : was.rate_bps == p.rate_bps
                           ? std::max(rate_queue_pkts(p), rate_queue_pkts(was))
                           : rate_queue_pkts(p);
  uint32_t limit = std::max(delay_queue_pkts(p), delay_queue_pkts(was)) + rate_pkts;
  change_netem_root(sock, ifindex, p, table, limit);
  reshape_rate(sock, ifindex, kNetemClass, kChildHandle, was, p, r);
}

void reshape_userspace(ShapeRecord& r, const LinkParams& was, const LinkParams& p,
                       const ShapeOptions& o, ReshapeHandle& ready) {
  if (r.delayline_pid > 0) {
    if (r.ctl_path.empty())
      throw std::runtime_error("its delay line has no control socket (built by an older xdc)");
    change_delayline(r.ctl_path, p);
  }
  // The rate stage's limit follows the delay too (queue_sizing.h).
  bool rate_stage = p.rate_bps ? p.rate_bps != was.rate_bps ||
                                     changed_rate_queue_bytes(was, p) != rate_queue_bytes(was)
                               : was.rate_bps != 0;
  bool start = r.delayline_pid <= 0 && needs_delay_stage(p);
  if (!rate_stage && !start) return;  // the delay line alone: no netlink round trips
  const nl::NlSocket& sock = *opened(r, ready).sock;
  const int ifindex = ready.ifindex;
  if (start) start_delay_stage({r.netns, r.ifname, r.tag}, ifindex, p, o, r);
  if (p.rate_bps && !was.rate_bps) r.root_handle = kRootHandle;
  if (rate_stage) reshape_rate(sock, ifindex, TC_H_ROOT, kRootHandle, was, p, r);
}

}  // namespace

nlohmann::json ShapeRecord::to_json() const {
  nlohmann::json feeders_json = nlohmann::json::array();
  for (const WireFeeder& f : feeders)
    feeders_json.push_back(
        {{"netns", f.netns}, {"ifindex", f.ifindex}, {"gso_max_segs", f.gso_max_segs}});
  return {{"backend", active ? to_string(backend) : "none"},
          {"netns", netns},
          {"ifname", ifname},
          {"tag", tag},
          {"root_handle", root_handle},
          {"rate_qdisc", rate_qdisc},
          {"delayline_pid", delayline_pid},
          {"queue_num", queue_num},
          {"stats_path", stats_path},
          {"log_path", log_path},
          {"ctl_path", ctl_path},
          {"feeders", feeders_json}};
}

ShapeRecord ShapeRecord::from_json(const nlohmann::json& j) {
  ShapeRecord r;
  std::string b = j.at("backend").get<std::string>();
  r.active = b != "none";
  r.backend = b == "kernel" ? Backend::kKernel : Backend::kUserspace;
  r.netns = j.at("netns").get<std::string>();
  r.ifname = j.at("ifname").get<std::string>();
  r.tag = j.value("tag", "");
  r.root_handle = j.value("root_handle", 0u);
  r.rate_qdisc = j.value("rate_qdisc", "");
  r.delayline_pid = j.value("delayline_pid", 0);
  r.queue_num = j.value("queue_num", uint16_t{0});
  r.stats_path = j.value("stats_path", "");
  r.log_path = j.value("log_path", "");
  r.ctl_path = j.value("ctl_path", "");
  for (const auto& f : j.value("feeders", nlohmann::json::array()))
    r.feeders.push_back({f.at("netns").get<std::string>(), f.at("ifindex").get<int>(),
                         f.at("gso_max_segs").get<uint32_t>()});
  return r;
}

LinkShaper::~LinkShaper() {
  if (!detached_) undo_shape(record_);
}

Backend resolve_backend(Backend requested) {
  if (requested == Backend::kUserspace) return requested;
  std::string why;
  bool has = kernel_has_netem(&why);
  if (requested == Backend::kAuto) return has ? Backend::kKernel : Backend::kUserspace;
  if (!has)
    throw std::runtime_error(
        "shaping backend 'kernel' requested but this kernel has no sch_netem (" + why +
        "); use 'userspace' or 'auto'");
  return requested;
}

std::unique_ptr<LinkShaper> shape_egress(Backend backend, const ShapeTarget& t, const LinkParams& p,
                                         const ShapeOptions& o) {
  ShapeRecord r;
  r.netns = t.netns;
  r.ifname = t.ifname;
  r.tag = t.tag;
  r.backend = backend == Backend::kAuto ? Backend::kUserspace : backend;
  if (!p.impaired()) return std::make_unique<LinkShaper>(r);
  r.backend = resolve_backend(backend);
  r.active = true;
  // Whatever was installed before a failure is undone by this shaper's destructor.
  auto shaper = std::make_unique<LinkShaper>(r);
  try {
    if (r.backend == Backend::kKernel)
      shape_kernel(t, p, shaper->record_);
    else
      shape_userspace(t, p, o, shaper->record_);
  } catch (const std::exception& e) {
    throw std::runtime_error("shaping " + link_name(t) + " with the " + to_string(r.backend) +
                             " backend: " + e.what());
  }
  return shaper;
}

void prepare_reshape(const ShapeRecord& r, ReshapeHandle& ready) {
  if (r.active) opened(r, ready);
}

int64_t reshape_egress(ShapeRecord& r, const LinkParams& was, const LinkParams& p, Backend backend,
                       const ShapeOptions& o, ReshapeHandle* ready) {
  ShapeTarget t{r.netns, r.ifname, r.tag};
  ReshapeHandle own;
  ReshapeHandle& handle = ready ? *ready : own;
  try {
    if (!r.active) {
      if (p.impaired()) {
        auto shaper = shape_egress(backend, t, p, o);
        shaper->detach();
        r = shaper->record();
      }
      return realtime_ns();
    }
    if (r.backend == Backend::kKernel)
      reshape_kernel(r, was, p, handle);
    else
      reshape_userspace(r, was, p, o, handle);
  } catch (const std::exception& e) {
    handle = ReshapeHandle{};
    throw std::runtime_error("changing " + link_name(t) + " in place: " + e.what());
  }
  return realtime_ns();
}

ShapeCounters shape_counters(const ShapeRecord& r) {
  ShapeCounters c;
  if (!r.active) return c;
  if (r.backend == Backend::kKernel) {
    QdiscCounters root = qdisc_counters(r.netns, r.ifname, kRootHandle);
    QdiscCounters rate =
        r.rate_qdisc.empty() ? QdiscCounters{} : qdisc_counters(r.netns, r.ifname, kChildHandle);
    c.sent = root.packets;
    c.sent_bytes = root.bytes;
    c.rate_queue_drops = rate.drops;
    c.loss_drops = root.drops > rate.drops ? root.drops - rate.drops : 0;
    c.queued = root.qlen;
    return c;
  }
  QdiscCounters rate =
      r.root_handle ? qdisc_counters(r.netns, r.ifname, r.root_handle) : QdiscCounters{};
  nlohmann::json dl = delayline_stats(r);
  auto u = [&](const char* key) { return dl.value(key, uint64_t{0}); };
  c.sent = rate.found ? rate.packets : u("released") + u("reordered");
  c.sent_bytes = rate.found ? rate.bytes : 0;
  c.loss_drops = u("dropped");
  c.rate_queue_drops = rate.drops;
  c.delay_queue_drops = u("kernel_queue_dropped") + u("kernel_user_dropped");
  c.queued = rate.qlen + u("held");
  return c;
}

void undo_shape(const ShapeRecord& r) noexcept {
  undo_shapes({r});
}

void undo_shapes(const std::vector<ShapeRecord>& records) noexcept {
  try {
    std::vector<pid_t> pids;
    // Only a delay line serving the recorded namespace: a recycled pid may be anything.
    for (const auto& r : records)
      pids.push_back(r.active && r.delayline_pid > 0 &&
                             (waitpid(r.delayline_pid, nullptr, WNOHANG) == r.delayline_pid ||
                              is_delayline(r.delayline_pid, r.netns))
                         ? r.delayline_pid
                         : 0);
    std::vector<StopResult> stopped = stop_delaylines(pids);
    for (size_t i = 0; i < records.size(); ++i) {
      const ShapeRecord& r = records[i];
      if (!r.active) continue;
      try {
        if (stopped[i] == StopResult::kKilled && r.queue_num)
          remove_nfqueue_rules(r.netns, r.ifname, r.queue_num);
        if (!r.stats_path.empty()) unlink(r.stats_path.c_str());
        if (!r.log_path.empty()) unlink(r.log_path.c_str());
        if (!r.ctl_path.empty()) unlink(r.ctl_path.c_str());
        if (r.root_handle) remove_root_qdisc(r.netns, r.ifname, r.root_handle);
        restore_feeders(r.feeders);
      } catch (...) {
        // best effort by contract; deleting the namespace removes the rest
      }
    }
  } catch (...) {
  }
}

int clean_delaylines(const std::string& netns_prefix, const std::string& state_dir) {
  std::vector<pid_t> pids = find_delaylines(netns_prefix);
  int stopped = 0;
  for (StopResult s : stop_delaylines(pids)) stopped += s != StopResult::kNotRunning;
  if (DIR* d = opendir(state_dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (!netns_prefix.empty() && name.rfind(netns_prefix, 0) == 0)
        unlinkat(dirfd(d), name.c_str(), 0);
    }
    closedir(d);
  }
  return stopped;
}

nlohmann::json delayline_stats(const ShapeRecord& r) {
  if (r.delayline_pid <= 0 || r.stats_path.empty() || !is_delayline(r.delayline_pid, r.netns))
    return nlohmann::json::object();
  auto mtime = [&] {
    struct stat st {};
    return stat(r.stats_path.c_str(), &st) == 0
               ? st.st_mtim.tv_sec * 1'000'000'000L + st.st_mtim.tv_nsec
               : 0L;
  };
  long before = mtime();
  kill(r.delayline_pid, SIGUSR1);
  // Polled finely: the delay line answers within a millisecond, and a caller sampling
  // every few milliseconds (a run's WAN timeline) must not wait a whole poll period.
  for (int i = 0; i < 2500 && mtime() == before; ++i) usleep(200);
  std::ifstream in(r.stats_path);
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? nlohmann::json::object() : j;
}

std::string describe_backends() {
  std::string why;
  if (kernel_has_netem(&why)) return "kernel (sch_netem) and userspace";
  return "userspace only: kernel backend unavailable (" + why + ")";
}

}  // namespace xdc::netem
