#include "netem/delayline/delay_line.h"

#include <arpa/inet.h>
#include <endian.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink_queue.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <unistd.h>

extern "C" {
#include <libnetfilter_queue/libnetfilter_queue.h>
}

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "netem/delayline/packet_edit.h"
#include "netem/shaper/dist_table.h"
#include "netem/shaper/kernel_netem.h"
#include "netem/shaper/link_params_args.h"
#include "netem/shaper/queue_sizing.h"

namespace xdc::delayline {

namespace {

constexpr uint32_t kCopyRange = 128;  // enough for IP + TCP/UDP headers
constexpr int kRcvBufBytes = 64 << 20;
constexpr size_t kMsgBuf = 4096;              // one queued packet's message fits easily
constexpr size_t kFullMsgBuf = 65536 + 4096;  // full-copy mode: a whole packet and more
constexpr uint32_t kCopyMark = 0x78646331;    // "xdc1": skb mark of our own duplicates
constexpr unsigned kBatch = 64;               // messages per recvmmsg
constexpr int64_t kMaxAdvanceNs = 200'000;    // never wake more than this early

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

std::runtime_error sys_error(const std::string& what) {
  return std::runtime_error(what + ": " + std::strerror(errno));
}

uint64_t inode_of(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

int64_t realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// Packets held at once: the delay stage's BDP, x4 for packets smaller than a frame.
uint32_t queue_maxlen(const netem::LinkParams& p) {
  return std::max<uint32_t>(4 * netem::delay_queue_pkts(p), 16384);
}

int listen_unix(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path)
    throw std::runtime_error("control socket path too long: " + path);
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) throw sys_error("control socket");
  unlink(path.c_str());  // a stale one of a killed predecessor
  // bind creates the socket file with the umask's mode: 0600 (root's alone) from the start,
  // not after a window in which another user could connect.
  const mode_t umask_was = umask(0177);
  const int bound = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  int e = errno;
  umask(umask_was);
  if (bound != 0 || listen(fd, 8) != 0) {
    if (bound == 0) e = errno;
    close(fd);
    errno = e;
    throw sys_error("control socket " + path);
  }
  return fd;
}

}  // namespace

DelayLine::DelayLine(Config cfg)
    : cfg_(std::move(cfg)),
      impairment_(cfg_.params,
                  cfg_.params.jitter_us ? netem::load_dist_table(cfg_.params.jitter_dist)
                                        : std::vector<int16_t>{},
                  cfg_.seed) {
  ifindex_ = static_cast<int>(if_nametoindex(cfg_.ifname.c_str()));
  if (!ifindex_) throw sys_error("interface " + cfg_.ifname);
  netns_ino_ = inode_of("/proc/self/ns/net");

  full_copy_ = cfg_.params.duplicate_pct > 0 || cfg_.params.corrupt_pct > 0;
  per_wire_ = netem::acts_per_packet(cfg_.params);
  msg_buf_ = full_copy_ ? kFullMsgBuf : kMsgBuf;
  edit_rng_.seed(static_cast<std::mt19937::result_type>(cfg_.seed * 2654435761u + 1));
  if (cfg_.params.duplicate_pct > 0) {
    // Duplicates go out through a raw socket, marked so that they are not duplicated
    // again when the rule brings them back to this queue for their own delay.
    raw_fd_ = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
    if (raw_fd_ < 0) throw sys_error("raw socket for duplicates");
    uint32_t mark = kCopyMark;
    if (setsockopt(raw_fd_, SOL_SOCKET, SO_MARK, &mark, sizeof mark) != 0)
      throw sys_error("SO_MARK on the duplicates' socket");
  }

  nl_ = mnl_socket_open2(NETLINK_NETFILTER, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (!nl_) throw sys_error("netlink netfilter socket");
  if (mnl_socket_bind(nl_, 0, MNL_SOCKET_AUTOPID) < 0) throw sys_error("netlink bind");
  portid_ = mnl_socket_get_portid(nl_);
  int fd = mnl_socket_get_fd(nl_);
  int size = kRcvBufBytes, one = 1;
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size) != 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
  // A full socket drops the packet in the kernel (counted there); do not fail recv.
  setsockopt(fd, SOL_NETLINK, NETLINK_NO_ENOBUFS, &one, sizeof one);

  configure(queue_maxlen(cfg_.params), /*bind=*/true);
  if (!cfg_.ctl_path.empty()) ctl_fd_ = listen_unix(cfg_.ctl_path);

  timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (timer_fd_ < 0) throw sys_error("timerfd");

  // While any socket asks for receive timestamps, the kernel stamps packets as they
  // arrive and NFQUEUE passes the stamp on (NFQA_TIMESTAMP): the delay then counts from
  // the packet's arrival, not from when this process got round to reading it.
  stamp_fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  int on = 1;
  if (stamp_fd_ >= 0) setsockopt(stamp_fd_, SOL_SOCKET, SO_TIMESTAMP, &on, sizeof on);
}

DelayLine::~DelayLine() {
  if (nl_) {
    release_all();
    try {
      std::vector<char> buf(kMsgBuf);
      nlmsghdr* nlh = nfq_nlmsg_put(buf.data(), NFQNL_MSG_CONFIG, cfg_.queue_num);
      nfq_nlmsg_cfg_put_cmd(nlh, AF_INET, NFQNL_CFG_CMD_UNBIND);
      mnl_socket_sendto(nl_, nlh, nlh->nlmsg_len);
    } catch (...) {
    }
    mnl_socket_close(nl_);
  }
  if (timer_fd_ >= 0) close(timer_fd_);
  if (stamp_fd_ >= 0) close(stamp_fd_);
  if (raw_fd_ >= 0) close(raw_fd_);
  if (ctl_fd_ >= 0) {
    close(ctl_fd_);
    unlink(cfg_.ctl_path.c_str());
  }
}

void DelayLine::configure(uint32_t maxlen, bool bind) {
  maxlen_ = maxlen;
  auto fill_params = [&](nlmsghdr* nlh) {
    nfq_nlmsg_cfg_put_params(nlh, NFQNL_COPY_PACKET, full_copy_ ? 0xffff : kCopyRange);
    nfq_nlmsg_cfg_put_qmaxlen(nlh, maxlen);
    // Per-packet decisions need wire packets: without NFQA_CFG_F_GSO the kernel segments
    // GSO aggregates before queueing them (full-copy mode needs that too).
    mnl_attr_put_u32(nlh, NFQA_CFG_FLAGS, htonl(per_wire_ ? 0 : NFQA_CFG_F_GSO));
    mnl_attr_put_u32(nlh, NFQA_CFG_MASK, htonl(NFQA_CFG_F_GSO));
  };
  if (!bind) {
    // Serving: the socket carries packets too, so the answer (an error, if any) is read
    // by on_message like any other message.
    std::vector<char> buf(kMsgBuf);
    nlmsghdr* nlh = nfq_nlmsg_put(buf.data(), NFQNL_MSG_CONFIG, cfg_.queue_num);
    fill_params(nlh);
    if (mnl_socket_sendto(nl_, nlh, nlh->nlmsg_len) < 0) throw sys_error("reconfigure NFQUEUE");
    return;
  }
  // Each command is acknowledged, so a queue already bound elsewhere fails here.
  auto request = [&](const std::string& what, auto fill) {
    std::vector<char> buf(kMsgBuf);
    nlmsghdr* nlh = nfq_nlmsg_put(buf.data(), NFQNL_MSG_CONFIG, cfg_.queue_num);
    fill(nlh);
    nlh->nlmsg_flags |= NLM_F_ACK;
    uint32_t seq = nlh->nlmsg_seq = static_cast<uint32_t>(now_ns());
    if (mnl_socket_sendto(nl_, nlh, nlh->nlmsg_len) < 0) throw sys_error(what);
    for (int tries = 0; tries < 100; ++tries) {
      ssize_t n = mnl_socket_recvfrom(nl_, buf.data(), buf.size());
      if (n < 0 && errno == EAGAIN) {
        pollfd pfd{mnl_socket_get_fd(nl_), POLLIN, 0};
        poll(&pfd, 1, 50);
        continue;
      }
      if (n < 0) throw sys_error(what);
      int rc = mnl_cb_run(buf.data(), static_cast<size_t>(n), seq, portid_, nullptr, nullptr);
      if (rc < 0) throw sys_error(what);
      if (rc == MNL_CB_STOP) return;
    }
    throw std::runtime_error(what + ": no acknowledgement from the kernel");
  };
  request("bind NFQUEUE " + std::to_string(cfg_.queue_num),
          [](nlmsghdr* nlh) { nfq_nlmsg_cfg_put_cmd(nlh, AF_INET, NFQNL_CFG_CMD_BIND); });
  request("configure NFQUEUE " + std::to_string(cfg_.queue_num), fill_params);
}

void DelayLine::set_params(const netem::LinkParams& p) {
  if (p.duplicate_pct != cfg_.params.duplicate_pct || p.corrupt_pct != cfg_.params.corrupt_pct)
    throw std::invalid_argument("duplicate and corrupt cannot change on a running delay line");
  std::vector<int16_t> table =
      p.jitter_us ? netem::load_dist_table(p.jitter_dist) : std::vector<int16_t>{};
  impairment_.change(p, std::move(table));
  cfg_.params = p;
  bool per_wire = netem::acts_per_packet(p);
  uint32_t maxlen = std::max(maxlen_, queue_maxlen(p));
  if (per_wire != per_wire_ || maxlen != maxlen_) {
    per_wire_ = per_wire;
    configure(maxlen, /*bind=*/false);
  }
  ++stats_.changes;
}

void DelayLine::serve_control(int listen_fd) {
  for (;;) {
    int c = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) return;  // EAGAIN: nobody else waiting
    std::string reply;
    char buf[4096];
    pollfd pfd{c, POLLIN, 0};
    ssize_t n = poll(&pfd, 1, 200) == 1 ? recv(c, buf, sizeof buf - 1, 0) : -1;
    if (n <= 0) {
      reply = "error: no request within 200 ms";
    } else {
      try {
        netem::LinkParams p;
        std::string msg(buf, static_cast<size_t>(n));
        size_t at = 0;
        while (at < msg.size()) {
          size_t nl = msg.find('\n', at);
          std::string arg = msg.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
          at = nl == std::string::npos ? msg.size() : nl + 1;
          if (arg.empty()) continue;
          if (!netem::apply_arg(arg, p)) throw std::invalid_argument(arg + ": unknown parameter");
        }
        set_params(p);
        reply = "ok " + std::to_string(realtime_ns());
      } catch (const std::exception& e) {
        reply = std::string("error: ") + e.what();
      }
    }
    send(c, reply.data(), reply.size(), MSG_NOSIGNAL);
    close(c);
  }
}

void DelayLine::send_verdict(int type, uint32_t id) {
  char buf[256];
  nlmsghdr* nlh = nfq_nlmsg_put(buf, type, cfg_.queue_num);
  nfq_nlmsg_verdict_put(nlh, static_cast<int>(id), NF_ACCEPT);
  if (mnl_socket_sendto(nl_, nlh, nlh->nlmsg_len) < 0) ++stats_.nl_errors;
}

void DelayLine::send_edited(uint32_t id, const std::vector<uint8_t>& pkt) {
  std::vector<char> buf(pkt.size() + 512);
  nlmsghdr* nlh = nfq_nlmsg_put(buf.data(), NFQNL_MSG_VERDICT, cfg_.queue_num);
  nfq_nlmsg_verdict_put(nlh, static_cast<int>(id), NF_ACCEPT);
  nfq_nlmsg_verdict_put_pkt(nlh, pkt.data(), static_cast<uint32_t>(pkt.size()));
  if (mnl_socket_sendto(nl_, nlh, nlh->nlmsg_len) < 0) ++stats_.nl_errors;
}

void DelayLine::send_copy(const std::vector<uint8_t>& pkt) {
  if (raw_fd_ < 0 || pkt.size() < 20) return;
  sockaddr_in to{};
  to.sin_family = AF_INET;
  std::memcpy(&to.sin_addr, pkt.data() + 16, 4);  // the packet's destination
  if (sendto(raw_fd_, pkt.data(), pkt.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to) < 0)
    ++stats_.copy_errors;
  else
    ++stats_.duplicated;
}

void DelayLine::on_message(const void* buf, size_t len, int64_t now) {
  const nlmsghdr* nlh = static_cast<const nlmsghdr*>(buf);
  int remaining = static_cast<int>(len);
  for (; mnl_nlmsg_ok(nlh, remaining); nlh = mnl_nlmsg_next(nlh, &remaining)) {
    if (nlh->nlmsg_type == NLMSG_ERROR) {
      auto* err = static_cast<const nlmsgerr*>(mnl_nlmsg_get_payload(nlh));
      if (err->error != 0) {
        if (stats_.nl_errors++ < 10)
          std::fprintf(stderr, "xdc-delayline %s: netlink error %s\n", cfg_.tag.c_str(),
                       std::strerror(-err->error));
      }
      continue;
    }
    if ((nlh->nlmsg_type & 0xff) != NFQNL_MSG_PACKET) continue;
    nlattr* attr[NFQA_MAX + 1] = {};
    if (nfq_nlmsg_parse(nlh, attr) < 0 || !attr[NFQA_PACKET_HDR]) continue;
    auto* ph = static_cast<nfqnl_msg_packet_hdr*>(mnl_attr_get_payload(attr[NFQA_PACKET_HDR]));
    uint32_t id = ntohl(ph->packet_id);
    uint32_t bytes = attr[NFQA_CAP_LEN]   ? ntohl(mnl_attr_get_u32(attr[NFQA_CAP_LEN]))
                     : attr[NFQA_PAYLOAD] ? mnl_attr_get_payload_len(attr[NFQA_PAYLOAD])
                                          : 0;
    ++stats_.packets;
    stats_.bytes += bytes;
    int64_t arrival = now;
    if (attr[NFQA_TIMESTAMP]) {
      auto* ts =
          static_cast<nfqnl_msg_packet_timestamp*>(mnl_attr_get_payload(attr[NFQA_TIMESTAMP]));
      int64_t real_ns = static_cast<int64_t>(be64toh(ts->sec)) * 1'000'000'000 +
                        static_cast<int64_t>(be64toh(ts->usec)) * 1000;
      int64_t stamped = real_ns + mono_minus_real_ns_;
      // A stamp from the future or older than a second (clock step): ignore it.
      if (stamped <= now && now - stamped < 1'000'000'000) {
        arrival = stamped;
        ++stats_.stamped;
        stats_.read_latency_sum_ns += now - stamped;
      }
    }
    bool is_copy = attr[NFQA_MARK] && ntohl(mnl_attr_get_u32(attr[NFQA_MARK])) == kCopyMark;
    Impairment::Decision d = impairment_.on_packet(arrival, is_copy);
    std::vector<uint8_t> edited;  // a corrupted packet's new bytes
    if (d.verdict != Impairment::Verdict::kDrop && (d.duplicate || d.corrupt) &&
        attr[NFQA_PAYLOAD]) {
      auto* data = static_cast<const uint8_t*>(mnl_attr_get_payload(attr[NFQA_PAYLOAD]));
      std::vector<uint8_t> pkt(data, data + mnl_attr_get_payload_len(attr[NFQA_PAYLOAD]));
      // A checksum left to the NIC is not in the bytes yet: write it, or the copy
      // arrives broken and the corruption is undetectable.
      uint32_t info = attr[NFQA_SKB_INFO] ? ntohl(mnl_attr_get_u32(attr[NFQA_SKB_INFO])) : 0;
      if (info & NFQA_SKB_CSUMNOTREADY) complete_l4_checksum(pkt.data(), pkt.size());
      if (d.duplicate) send_copy(pkt);
      if (d.corrupt) {
        edited = std::move(pkt);
        flip_random_bit(edited.data(), edited.size(), edit_rng_);
        ++stats_.corrupted;
      }
    }
    switch (d.verdict) {
      case Impairment::Verdict::kDrop: {
        char vbuf[256];
        nlmsghdr* v = nfq_nlmsg_put(vbuf, NFQNL_MSG_VERDICT, cfg_.queue_num);
        nfq_nlmsg_verdict_put(v, static_cast<int>(id), NF_DROP);
        if (mnl_socket_sendto(nl_, v, v->nlmsg_len) < 0) ++stats_.nl_errors;
        ++stats_.dropped;
        break;
      }
      case Impairment::Verdict::kSendNow:
        if (edited.empty())
          send_verdict(NFQNL_MSG_VERDICT, id);
        else
          send_edited(id, edited);
        ++stats_.reordered;
        break;
      case Impairment::Verdict::kHold:
        held_.push_back({id, d.send_ns, std::move(edited)});
        stats_.max_held = std::max<uint64_t>(stats_.max_held, held_.size());
        break;
    }
  }
}

void DelayLine::release_due(int64_t now, int64_t slack_ns) {
  uint32_t last_id = 0;
  bool any = false;
  while (!held_.empty() && held_.front().send_ns <= now + slack_ns) {
    int64_t late = now - held_.front().send_ns;  // < 0: released early by the wake advance
    stats_.late_max_ns = std::max(stats_.late_max_ns, late);
    stats_.late_sum_ns += late;
    stats_.late_sumsq_us2 += (late / 1e3) * (late / 1e3);
    if (!held_.front().edited.empty()) {
      // Its own verdict carrying the new bytes, after those queued before it.
      if (any) send_verdict(NFQNL_MSG_VERDICT_BATCH, last_id);
      send_edited(held_.front().id, held_.front().edited);
      any = false;
    } else {
      last_id = held_.front().id;
      any = true;
    }
    held_.pop_front();
    ++stats_.released;
  }
  if (any) {
    // FIFO: every packet still queued in the kernel with an id <= last_id is due
    // (dropped and reordered ones already had their verdict).
    send_verdict(NFQNL_MSG_VERDICT_BATCH, last_id);
    ++stats_.batches;
  }
  stats_.held = held_.size();
}

void DelayLine::release_all() {
  // Packets the kernel queued but we have not read yet would be dropped when the queue
  // is unbound: read them first (the caller removed the rules, so this ends).
  std::vector<char> buf(msg_buf_);
  for (int i = 0; i < 1'000'000; ++i) {
    ssize_t n = recv(mnl_socket_get_fd(nl_), buf.data(), buf.size(), MSG_DONTWAIT);
    if (n <= 0) break;
    on_message(buf.data(), static_cast<size_t>(n), now_ns());
  }
  if (held_.empty()) return;
  send_verdict(NFQNL_MSG_VERDICT_BATCH, held_.back().id);
  stats_.released += held_.size();
  held_.clear();
  stats_.held = 0;
}

void DelayLine::arm_timer() {
  int64_t want = held_.empty() ? 0 : std::max<int64_t>(held_.front().send_ns - advance_ns_, 1);
  if (want == armed_ns_) return;
  itimerspec its{};
  its.it_value.tv_sec = want / 1'000'000'000;
  its.it_value.tv_nsec = want % 1'000'000'000;
  // 0 disarms; an absolute time in the past fires at once.
  timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &its, nullptr);
  armed_ns_ = want;
}

bool DelayLine::still_there() const {
  if (!cfg_.netns.empty() && inode_of("/run/netns/" + cfg_.netns) != netns_ino_) return false;
  return static_cast<int>(if_nametoindex(cfg_.ifname.c_str())) == ifindex_;
}

void DelayLine::run() {
  sigset_t sigs;
  sigemptyset(&sigs);
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGUSR1}) sigaddset(&sigs, s);
  int sig_fd = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);
  int tick_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  int ep = epoll_create1(EPOLL_CLOEXEC);
  if (sig_fd < 0 || tick_fd < 0 || ep < 0) throw sys_error("signalfd/timerfd/epoll");
  itimerspec tick{{1, 0}, {1, 0}};
  timerfd_settime(tick_fd, 0, &tick, nullptr);
  const int nl_fd = mnl_socket_get_fd(nl_);
  for (int fd : {nl_fd, timer_fd_, sig_fd, tick_fd, ctl_fd_}) {
    if (fd < 0) continue;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
  }

  std::vector<char> bufs(size_t{kBatch} * msg_buf_);
  std::vector<mmsghdr> msgs(kBatch);
  std::vector<iovec> iovs(kBatch);
  bool stop = false;
  write_stats();
  while (!stop) {
    epoll_event evs[5];
    int n = epoll_wait(ep, evs, 5, -1);
    if (n < 0 && errno != EINTR) throw sys_error("epoll_wait");
    for (int i = 0; i < n; ++i) {
      int fd = evs[i].data.fd;
      if (fd == nl_fd) {
        // Drain in batches, releasing what fell due between batches.
        for (int round = 0; round < 64; ++round) {
          for (unsigned k = 0; k < kBatch; ++k) {
            iovs[k] = {bufs.data() + k * msg_buf_, msg_buf_};
            msgs[k] = {};
            msgs[k].msg_hdr.msg_iov = &iovs[k];
            msgs[k].msg_hdr.msg_iovlen = 1;
          }
          int got = recvmmsg(nl_fd, msgs.data(), kBatch, MSG_DONTWAIT, nullptr);
          if (got <= 0) break;
          int64_t now = now_ns();
          timespec real;
          clock_gettime(CLOCK_REALTIME, &real);
          mono_minus_real_ns_ = now - (int64_t{real.tv_sec} * 1'000'000'000 + real.tv_nsec);
          for (int k = 0; k < got; ++k) on_message(iovs[k].iov_base, msgs[k].msg_len, now);
          release_due(now_ns());
          if (static_cast<unsigned>(got) < kBatch) break;
        }
      } else if (fd == timer_fd_) {
        uint64_t expirations;
        while (read(timer_fd_, &expirations, sizeof expirations) > 0) {
        }
        // Wake-up latency (timer, scheduling) is learnt and the timer armed that much
        // early; on a timer wake, what falls due within the advance goes now, so that
        // packets leave on time on average instead of late by the wake-up latency.
        int64_t now = now_ns();
        if (armed_ns_ > 0) {
          int64_t wake_late = std::clamp<int64_t>(now - armed_ns_, 0, kMaxAdvanceNs);
          advance_ns_ += (wake_late - advance_ns_) / 16;
        }
        armed_ns_ = -1;  // a fired one-shot timer is disarmed
        release_due(now, advance_ns_);
      } else if (fd == ctl_fd_) {
        serve_control(ctl_fd_);
      } else if (fd == tick_fd) {
        uint64_t ticks;
        while (read(tick_fd, &ticks, sizeof ticks) > 0) {
        }
        read_kernel_counters();
        write_stats();
        if (!still_there()) {
          std::fprintf(stderr, "xdc-delayline %s: namespace or interface gone, exiting\n",
                       cfg_.tag.c_str());
          stop = true;
        }
      } else if (fd == sig_fd) {
        signalfd_siginfo si;
        while (read(sig_fd, &si, sizeof si) == sizeof si) {
          if (si.ssi_signo == SIGUSR1) {
            read_kernel_counters();
            write_stats();
          } else {
            stop = true;
          }
        }
      }
    }
    release_due(now_ns());
    arm_timer();
  }
  close(ep);
  close(tick_fd);
  close(sig_fd);
}

}  // namespace xdc::delayline
