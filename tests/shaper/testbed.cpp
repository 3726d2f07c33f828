#include "tests/shaper/testbed.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/errqueue.h>
#include <linux/net_tstamp.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <numeric>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "common/number_text.h"
#include "netem/nl/netns.h"
#include "netem/shaper/run.h"

extern char** environ;

namespace xdc::testbed {

namespace {

// A background program (iperf3 server) in a namespace; killed and reaped on destruction.
class Background {
 public:
  Background(const std::vector<std::string>& argv, const std::string& netns) {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    int rc;
    {
      nl::NetnsGuard in(netns);
      rc = posix_spawnp(&pid_, args[0], &fa, nullptr, args.data(), environ);
    }
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) throw std::runtime_error("spawn " + argv[0] + " failed");
  }
  ~Background() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
  }

 private:
  pid_t pid_ = -1;
};

bool pid_alive(long pid) {
  return pid > 0 && (kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
}

}  // namespace

void must_run(const std::vector<std::string>& argv, const std::string& netns) {
  netem::RunResult r = netem::run_argv(argv, netns);
  if (r.exit_code != 0) {
    std::string cmd;
    for (const auto& a : argv) cmd += a + " ";
    throw std::runtime_error(cmd + "(netns '" + netns + "') failed: " + r.output);
  }
}

std::vector<std::string> netns_with_prefix(const std::string& prefix) {
  std::vector<std::string> out;
  std::istringstream in(netem::run_argv({"ip", "netns", "list"}).output);
  std::string line;
  while (std::getline(in, line)) {
    std::string name = line.substr(0, line.find(' '));
    if (name.rfind(prefix, 0) == 0) out.push_back(name);
  }
  return out;
}

Line::Line(const std::string& label) {
  // Leftovers of earlier test processes that died without cleaning up.
  static const std::regex mine(R"(xdct-[a-z0-9]+-(\d+)-(a|gw|b))");
  for (const auto& ns : netns_with_prefix("xdct-")) {
    std::smatch m;
    if (std::regex_match(ns, m, mine) && !pid_alive(std::stol(m[1])))
      netem::run_argv({"ip", "netns", "del", ns});
  }
  std::string stem = "xdct-" + label + "-" + std::to_string(getpid()) + "-";
  a = stem + "a";
  gw = stem + "gw";
  b = stem + "b";
  try {
    for (const auto& ns : {a, gw, b}) {
      netem::run_argv({"ip", "netns", "del", ns});
      must_run({"ip", "netns", "add", ns});
      must_run({"ip", "link", "set", "lo", "up"}, ns);
    }
    must_run({"ip", "link", "add", "eth0", "type", "veth", "peer", "name", kGwToA, "netns", gw}, a);
    must_run({"ip", "link", "add", "eth0", "type", "veth", "peer", "name", kGwToB, "netns", gw}, b);
    must_run({"ip", "addr", "add", a_ip + "/24", "dev", "eth0"}, a);
    must_run({"ip", "addr", "add", b_ip + "/24", "dev", "eth0"}, b);
    must_run({"ip", "addr", "add", "10.201.1.1/24", "dev", kGwToA}, gw);
    must_run({"ip", "addr", "add", "10.201.2.1/24", "dev", kGwToB}, gw);
    for (const auto& [ns, dev] : {std::pair{a, "eth0"}, {b, "eth0"}, {gw, kGwToA}, {gw, kGwToB}})
      must_run({"ip", "link", "set", dev, "up"}, ns);
    must_run({"ip", "route", "add", "default", "via", "10.201.1.1"}, a);
    must_run({"ip", "route", "add", "default", "via", "10.201.2.1"}, b);
    nl::write_sysctl(gw, "net/ipv4/ip_forward", "1");
    // A veth's queue is attached by linkwatch when the carrier comes up, up to a second
    // after `ip link set up`; until then packets are dropped. Wait until B answers both
    // ways (and the neighbour entries exist).
    bool up = false;
    for (int i = 0; i < 30 && !up; ++i)
      up = netem::run_argv({"ping", "-n", "-c", "1", "-W", "1", b_ip}, a).exit_code == 0 &&
           netem::run_argv({"ping", "-n", "-c", "1", "-W", "1", a_ip}, b).exit_code == 0;
    if (!up) throw std::runtime_error("test line " + stem + "*: B unreachable from A");
  } catch (...) {
    for (const auto& ns : {a, gw, b}) netem::run_argv({"ip", "netns", "del", ns});
    throw;
  }
}

Line::~Line() {
  for (const auto& ns : {a, gw, b}) netem::run_argv({"ip", "netns", "del", ns});
}

void big_tcp_buffers(const std::string& netns) {
  nl::write_sysctl(netns, "net/ipv4/tcp_rmem", "4096 131072 67108864");
  nl::write_sysctl(netns, "net/ipv4/tcp_wmem", "4096 131072 67108864");
}

PingResult ping(const std::string& netns, const std::string& ip, int count, double interval_s,
                double deadline_s, int payload_bytes) {
  // Not -w: with a deadline ping keeps sending until `count` replies arrive. -W bounds
  // the wait for the last replies; `timeout` bounds the whole run.
  netem::RunResult r =
      netem::run_argv({"timeout", std::to_string(static_cast<int>(std::ceil(deadline_s))), "ping",
                       "-n", "-c", std::to_string(count), "-i", format_fixed(interval_s, 6), "-W",
                       "2", "-s", std::to_string(payload_bytes), ip},
                      netns);
  PingResult res;
  res.output = r.output;
  static const std::regex reply(R"(time=([0-9.]+) ms)");
  static const std::regex summary(R"((\d+) packets transmitted, (\d+) received)");
  std::istringstream in(r.output);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, reply)) res.rtt_ms.push_back(std::stod(m[1]));
    if (std::regex_search(line, m, summary)) {
      res.sent = std::stoi(m[1]);
      res.received = std::stoi(m[2]);
    }
  }
  if (res.sent == 0) throw std::runtime_error("ping " + ip + " from " + netns + ": " + r.output);
  return res;
}

namespace {

int64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// The probe's receiving threads run SCHED_FIFO (below the delay line's 10), so that
// other processes on the machine do not add their time slices to measured RTTs.
void realtime_thread() {
  sched_param sp{};
  sp.sched_priority = 5;
  pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
}

// A UDP socket opened inside `netns` (it stays bound to it).
int udp_socket_in(const std::string& netns) {
  nl::NetnsGuard in(netns);
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "udp socket");
  timeval tv{0, 100'000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  int big = 8 << 20;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big);
  return fd;
}

sockaddr_in addr_of(const std::string& ip, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, ip.c_str(), &a.sin_addr);
  return a;
}

}  // namespace

PingResult udp_probe(const std::string& client_ns, const std::string& server_ns,
                     const std::string& server_ip, int count, double interval_s, double linger_s,
                     int payload_bytes) {
  constexpr uint16_t kPort = 7007;
  int srv = udp_socket_in(server_ns);
  sockaddr_in any = addr_of("0.0.0.0", kPort);
  if (bind(srv, reinterpret_cast<sockaddr*>(&any), sizeof any) != 0) {
    close(srv);
    throw std::system_error(errno, std::generic_category(), "bind echo server");
  }
  std::atomic<bool> stop{false};
  std::thread echo([&] {
    realtime_thread();
    char buf[2048];
    while (!stop) {
      sockaddr_in from{};
      socklen_t len = sizeof from;
      ssize_t n = recvfrom(srv, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &len);
      if (n > 0)
        sendto(srv, buf, static_cast<size_t>(n), 0, reinterpret_cast<sockaddr*>(&from), len);
    }
  });

  int cli = udp_socket_in(client_ns);
  int on = 1;
  setsockopt(cli, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
  timespec real;
  clock_gettime(CLOCK_REALTIME, &real);
  const int64_t mono_minus_real = mono_ns() - (int64_t{real.tv_sec} * 1'000'000'000 + real.tv_nsec);
  sockaddr_in to = addr_of(server_ip, kPort);
  std::vector<int64_t> sent_at(static_cast<size_t>(count), 0),
      rtt_ns(static_cast<size_t>(count), -1);
  std::atomic<bool> sending_done{false};
  int duplicates = 0;  // written by the receiver thread only, read after join
  std::atomic<int64_t> last_send_ns{0};
  std::thread receiver([&] {
    realtime_thread();
    char buf[2048];
    alignas(cmsghdr) char ctrl[CMSG_SPACE(sizeof(timespec))];
    while (true) {
      iovec iov{buf, sizeof buf};
      msghdr msg{};
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      msg.msg_control = ctrl;
      msg.msg_controllen = sizeof ctrl;
      ssize_t n = recvmsg(cli, &msg, 0);
      int64_t now = mono_ns(), arrived = now;
      // The kernel's receive stamp: a late wake-up of this thread does not count.
      if (n > 0)
        for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
          if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
            timespec ts;
            std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
            int64_t stamped = int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec + mono_minus_real;
            if (stamped <= now && now - stamped < 1'000'000'000) arrived = stamped;
          }
      if (n >= static_cast<ssize_t>(sizeof(uint32_t))) {
        uint32_t seq;
        std::memcpy(&seq, buf, sizeof seq);
        if (seq < sent_at.size() && rtt_ns[seq] < 0)
          rtt_ns[seq] = arrived - sent_at[seq];
        else if (seq < sent_at.size())
          ++duplicates;
      }
      if (sending_done && now - last_send_ns > static_cast<int64_t>(linger_s * 1e9)) break;
    }
  });
  std::vector<char> pkt(static_cast<size_t>(std::max<int>(payload_bytes, 4)), 0);
  int64_t start = mono_ns(), step = static_cast<int64_t>(interval_s * 1e9);
  // The last 0.1-0.2 ms before each send are spun for accuracy, except on a kernel with
  // one CPU (a User-Mode Linux guest), where spinning would starve what is measured (the
  // shaper's changes, the forwarding): there the sender sleeps to the due time.
  const int64_t spin_ns = sysconf(_SC_NPROCESSORS_ONLN) > 1 ? 200'000 : 0;
  for (int i = 0; i < count; ++i) {
    int64_t due = start + i * step;
    while (mono_ns() < due) {
      int64_t left = due - mono_ns();
      if (left > spin_ns) std::this_thread::sleep_for(std::chrono::nanoseconds(left - spin_ns / 2));
    }
    uint32_t seq = static_cast<uint32_t>(i);
    std::memcpy(pkt.data(), &seq, sizeof seq);
    sent_at[static_cast<size_t>(i)] = mono_ns();
    sendto(cli, pkt.data(), pkt.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to);
    last_send_ns = sent_at[static_cast<size_t>(i)];
  }
  sending_done = true;
  receiver.join();
  stop = true;
  echo.join();
  close(cli);
  close(srv);

  PingResult res;
  res.sent = count;
  res.duplicates = duplicates;
  for (int64_t r : rtt_ns) res.replied.push_back(r >= 0);
  for (int64_t r : rtt_ns)
    if (r >= 0) {
      ++res.received;
      res.rtt_ms.push_back(r / 1e6);
    }
  return res;
}

int64_t realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

int OneWayResult::lost() const {
  int n = 0;
  for (const auto& p : packets) n += p.arrived_ns < 0;
  return n;
}

int OneWayResult::reorders() const {
  int n = 0;
  uint32_t highest = 0;
  bool any = false;
  for (uint32_t seq : arrival_order) {
    if (any && seq < highest) ++n;
    if (!any || seq > highest) highest = seq;
    any = true;
  }
  return n;
}

namespace {

// Each datagram's send time as the kernel's, taken as it enters the sending interface's
// queue (SCM_TSTAMP_SCHED, keyed by its index on the socket), like the receive stamp: a
// sender preempted between its clock reading and the system call (a busy machine, ms)
// would otherwise read as the link's delay. Where the kernel gives no stamp the
// user-space reading stays.
struct SendStamps {
  SendStamps(int fd, std::vector<OneWayPacket>& packets)
      : fd(fd), packets(packets), first(packets.size(), false) {
    const int flags = SOF_TIMESTAMPING_TX_SCHED | SOF_TIMESTAMPING_SOFTWARE |
                      SOF_TIMESTAMPING_OPT_ID | SOF_TIMESTAMPING_OPT_TSONLY;
    on = setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &flags, sizeof flags) == 0;
  }
  // Reads the stamps queued so far (the socket's error queue) into the packets.
  void take() {
    while (on) {
      struct Ctrl {
        alignas(cmsghdr) char b[512];
      } ctrl;
      msghdr m{};
      m.msg_control = ctrl.b;
      m.msg_controllen = sizeof ctrl.b;
      if (recvmsg(fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) return;
      const scm_timestamping* ts = nullptr;
      const sock_extended_err* err = nullptr;
      for (cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPING)
          ts = reinterpret_cast<const scm_timestamping*>(CMSG_DATA(c));
        else if (c->cmsg_level == SOL_IP && c->cmsg_type == IP_RECVERR)
          err = reinterpret_cast<const sock_extended_err*>(CMSG_DATA(c));
      }
      if (!ts || !err || err->ee_origin != SO_EE_ORIGIN_TIMESTAMPING ||
          err->ee_info != SCM_TSTAMP_SCHED || err->ee_data >= packets.size())
        continue;
      const int64_t at = int64_t{ts->ts[0].tv_sec} * 1'000'000'000 + ts->ts[0].tv_nsec;
      if (at > 0 && !first[err->ee_data]) {  // the first interface's, not a later one's
        first[err->ee_data] = true;
        packets[err->ee_data].sent_ns = at;
        ++stamped;
      }
    }
  }
  int fd;
  std::vector<OneWayPacket>& packets;
  std::vector<bool> first;
  bool on = false;
  int stamped = 0;
};

}  // namespace

OneWayResult one_way_stream(const std::string& client_ns, const std::string& server_ns,
                            const std::string& server_ip, int count, double interval_s,
                            int payload_bytes, double linger_s, double batch_s) {
  constexpr uint16_t kPort = 7008;
  constexpr int kBatch = 64;
  int srv = udp_socket_in(server_ns);
  sockaddr_in any = addr_of("0.0.0.0", kPort);
  if (bind(srv, reinterpret_cast<sockaddr*>(&any), sizeof any) != 0) {
    close(srv);
    throw std::system_error(errno, std::generic_category(), "bind one-way receiver");
  }
  int on = 1;
  setsockopt(srv, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
  OneWayResult res;
  res.packets.resize(static_cast<size_t>(count));
  std::atomic<bool> sending_done{false};
  std::atomic<int64_t> last_send_ns{0};
  std::thread receiver([&] {
    realtime_thread();
    // Up to kBatch datagrams per call (recvmmsg), each with the kernel's receive stamp:
    // the fewer system calls, the less a slow kernel (a UML guest) lags the stream.
    std::vector<std::vector<char>> bufs(kBatch, std::vector<char>(65536));
    struct Ctrl {
      alignas(cmsghdr) char b[CMSG_SPACE(sizeof(timespec))];
    };
    std::vector<Ctrl> ctrl(kBatch);
    std::vector<iovec> iov(kBatch);
    std::vector<mmsghdr> msgs(kBatch);
    while (true) {
      for (int k = 0; k < kBatch; ++k) {
        iov[k] = {bufs[k].data(), bufs[k].size()};
        msgs[k] = {};
        msgs[k].msg_hdr.msg_iov = &iov[k];
        msgs[k].msg_hdr.msg_iovlen = 1;
        msgs[k].msg_hdr.msg_control = ctrl[k].b;
        msgs[k].msg_hdr.msg_controllen = sizeof ctrl[k].b;
      }
      int n = recvmmsg(srv, msgs.data(), kBatch, MSG_WAITFORONE, nullptr);
      int64_t now = realtime_ns();
      for (int k = 0; k < n; ++k) {
        int64_t arrived = now;
        msghdr& msg = msgs[k].msg_hdr;
        for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
          if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
            timespec ts;
            std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
            arrived = int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
          }
        if (msgs[k].msg_len < sizeof(uint32_t)) continue;
        uint32_t seq;
        std::memcpy(&seq, bufs[k].data(), sizeof seq);
        if (seq < res.packets.size() && res.packets[seq].arrived_ns < 0) {
          res.packets[seq].arrived_ns = arrived;
          res.arrival_order.push_back(seq);
        }
      }
      if (sending_done && now - last_send_ns > static_cast<int64_t>(linger_s * 1e9)) break;
    }
  });
  int cli = udp_socket_in(client_ns);
  int big = 8 << 20;
  setsockopt(cli, SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof big);
  setsockopt(cli, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big);  // the stamps' queue
  SendStamps stamps(cli, res.packets);
  sockaddr_in to = addr_of(server_ip, kPort);
  const size_t size = static_cast<size_t>(std::max<int>(payload_bytes, 4));
  std::vector<std::vector<char>> pkts(kBatch, std::vector<char>(size, 0));
  std::vector<iovec> iov(kBatch);
  std::vector<mmsghdr> msgs(kBatch);
  // Per packet, the last 0.1-0.2 ms before its send are spun for accuracy, except on a
  // kernel with one CPU (a User-Mode Linux guest), where spinning would starve what is
  // measured (the shaper's changes, the forwarding): there the sender sleeps.
  const int64_t spin_ns = sysconf(_SC_NPROCESSORS_ONLN) > 1 ? 200'000 : 0;
  const int64_t start = mono_ns(), step = static_cast<int64_t>(interval_s * 1e9);
  const int64_t batch_ns = static_cast<int64_t>(batch_s * 1e9);
  for (int i = 0; i < count;) {
    // Wait for packet i; with batching, for the batch's end, then send what is due.
    int64_t due = start + i * step + batch_ns;
    while (mono_ns() < due) {
      int64_t left = due - mono_ns();
      if (left > spin_ns) std::this_thread::sleep_for(std::chrono::nanoseconds(left - spin_ns / 2));
    }
    const int64_t now = mono_ns(), sent = realtime_ns();
    int n = 0;
    for (; n < kBatch && i + n < count && start + (i + n) * step <= now; ++n) {
      uint32_t seq = static_cast<uint32_t>(i + n);
      std::memcpy(pkts[n].data(), &seq, sizeof seq);
      iov[n] = {pkts[n].data(), size};
      msgs[n] = {};
      msgs[n].msg_hdr.msg_name = &to;
      msgs[n].msg_hdr.msg_namelen = sizeof to;
      msgs[n].msg_hdr.msg_iov = &iov[n];
      msgs[n].msg_hdr.msg_iovlen = 1;
      auto& p = res.packets[static_cast<size_t>(i + n)];
      p.sent_ns = sent;
      p.bytes = static_cast<uint32_t>(size);
    }
    sendmmsg(cli, msgs.data(), static_cast<unsigned>(n), 0);
    last_send_ns = sent;
    i += n;
    stamps.take();
  }
  // The last stamps follow their datagrams at once; wait a little for any still queued.
  for (int k = 0; k < 100 && stamps.on && stamps.stamped < count; ++k) {
    stamps.take();
    if (stamps.stamped < count) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  res.kernel_send_stamps = stamps.stamped;
  sending_done = true;
  receiver.join();
  close(cli);
  close(srv);
  return res;
}

std::chrono::milliseconds stall_meter_period() {
  return std::chrono::milliseconds(std::getenv("XDC_UML_GUEST") ? 10 : 1);
}

IperfResult iperf_tcp(const std::string& client_ns, const std::string& server_ns,
                      const std::string& server_ip, double seconds, double omit_s) {
  Background server({"iperf3", "-s", "-1", "-p", "5201"}, server_ns);
  IperfResult res;
  netem::RunResult r;
  for (int attempt = 0; attempt < 20; ++attempt) {  // until the server listens
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    r = netem::run_argv(
        {"iperf3", "-c", server_ip, "-p", "5201", "-J", "-t",
         std::to_string(static_cast<int>(seconds)), "-O", std::to_string(static_cast<int>(omit_s))},
        client_ns);
    if (r.output.find("Connection refused") == std::string::npos) break;
  }
  try {
    auto j = nlohmann::json::parse(r.output);
    if (j.contains("error")) res.error = j["error"].get<std::string>();
    const auto& end = j.at("end");
    res.goodput_bps = end.at("sum_received").at("bits_per_second").get<double>();
    res.sent_bps = end.at("sum_sent").at("bits_per_second").get<double>();
    res.received_bytes = end.at("sum_received").at("bytes").get<double>();
    res.retransmits = end.at("sum_sent").value("retransmits", 0L);
  } catch (const std::exception& e) {
    if (res.error.empty()) res.error = std::string("iperf3 output: ") + e.what() + ": " + r.output;
  }
  return res;
}

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double mean(const std::vector<double>& v) {
  return v.empty() ? NAN : std::accumulate(v.begin(), v.end(), 0.0) / v.size();
}

double stdev(const std::vector<double>& v) {
  if (v.size() < 2) return NAN;
  double m = mean(v), s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / (v.size() - 1));
}

}  // namespace xdc::testbed
