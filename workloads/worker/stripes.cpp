#include "workloads/worker/stripes.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <linux/tcp.h>  // tcp_info with tcpi_bytes_acked (glibc's lacks it)
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>

#include "workloads/worker/stripe_pieces.h"

namespace xdc::worker {

namespace {

constexpr uint32_t kMagic = 0x78646373;        // "xdcs"
constexpr int64_t kPiece = kStripePieceBytes;  // stripe_pieces.h: the unit a connection pulls

struct Header {
  int32_t tag;
  uint32_t magic;
  int64_t index;          // this message is the index-th sent to this peer with this tag
  int64_t message_bytes;  // the whole message
  int64_t offset;         // of this piece in it
  int64_t length;         // of this piece
};
static_assert(sizeof(Header) == kStripeHeaderBytes);

struct Fd {  // closes a descriptor nothing else owns yet
  int fd = -1;
  explicit Fd(int f = -1) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  int release() { return std::exchange(fd, -1); }
};

std::runtime_error sys_error(const std::string& what) {
  return std::runtime_error(what + ": " + std::strerror(errno));
}

void write_all(int fd, const void* p, size_t n) {
  auto* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t w = ::send(fd, c, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw sys_error("stripes: send during setup");
    c += w;
    n -= static_cast<size_t>(w);
  }
}

void read_all(int fd, void* p, size_t n) {
  auto* c = static_cast<char*>(p);
  while (n > 0) {
    const ssize_t r = ::recv(fd, c, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) throw sys_error("stripes: recv during setup");
    c += r;
    n -= static_cast<size_t>(r);
  }
}

}  // namespace

uint32_t local_address_in(const std::string& cidr) {
  const auto slash = cidr.find('/');
  in_addr net{};
  if (slash == std::string::npos || inet_pton(AF_INET, cidr.substr(0, slash).c_str(), &net) != 1)
    throw std::runtime_error("stripes: data_cidr \"" + cidr + "\" is not A.B.C.D/LEN");
  const int len = std::stoi(cidr.substr(slash + 1));
  const uint32_t mask = len <= 0 ? 0 : len >= 32 ? ~0u : ~0u << (32 - len);
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) throw sys_error("stripes: getifaddrs");
  uint32_t found = 0;
  for (ifaddrs* a = list; a && !found; a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET) continue;
    const uint32_t ip = ntohl(reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr.s_addr);
    if ((ip & mask) == (ntohl(net.s_addr) & mask)) found = ip;
  }
  freeifaddrs(list);
  if (!found) throw std::runtime_error("stripes: no IPv4 address of this host is in " + cidr);
  return found;
}

// One peer: N sockets, one I/O thread. Submissions go through `inbox` (mutex) and wake the
// thread through an eventfd; everything else is the thread's own.
struct Stripes::PeerLink {
  struct OutMsg {
    Comm::Request* req;  // null once complete
    int64_t bytes = 0;
    int64_t index = 0;     // per tag (Header::index)
    int64_t assigned = 0;  // bytes handed to some connection as pieces
    int64_t written = 0;   // of those, written to the kernel
    bool started = false;  // a piece (possibly empty) has been handed out
  };
  struct Piece {  // being written on one socket
    OutMsg* msg = nullptr;
    Header hdr{};
    size_t hdr_done = 0;
    int64_t done = 0;
  };
  struct InMsg {
    Comm::Request* req = nullptr;  // null until its receive is posted
    int64_t bytes = 0;
    std::vector<char> early;  // the data, while no receive is posted when it arrives
    char* dst = nullptr;
    int64_t left = 0;     // bytes not yet arrived
    bool seen = false;    // a piece arrived (an empty message has one empty piece)
    bool nearly = false;  // nearly_arrived called for it
  };
  struct Socket {
    int fd = -1;
    bool open = true;
    Piece out;     // out.msg == nullptr: idle
    Header hdr{};  // being read
    size_t hdr_got = 0;
    InMsg* in = nullptr;  // message whose piece is being read (after its header)
    char* in_dst = nullptr;
    int64_t in_left = 0;
    int64_t sent = 0, received = 0;
  };
  using Key = std::pair<int, int64_t>;  // tag, index

  int peer;
  std::string who;
  std::function<void(Comm::Request*)> done;
  std::function<void(int)> nearly_arrived;  // set with release_ahead > 0
  int64_t release_ahead = 0;
  std::vector<Socket> sockets;
  int wake_fd = -1;
  std::mutex mu;
  std::vector<std::pair<bool, Comm::Request*>> inbox;  // {is_send, request}
  bool stop = false;
  std::deque<std::unique_ptr<OutMsg>> out_msgs;  // submit order; front: oldest unfinished
  std::map<int, int64_t> sent_per_tag, posted_per_tag;
  std::map<Key, InMsg> in_msgs;
  size_t rotate = 0;  // the socket served first in this wake-up
  std::thread thread;

  ~PeerLink() {  // the thread, if started, was joined (Stripes::finish)
    for (auto& s : sockets)
      if (s.fd >= 0) ::close(s.fd);
    if (wake_fd >= 0) ::close(wake_fd);
  }

  [[noreturn]] void fatal(const std::string& what) const {
    std::fprintf(stderr, "xdc-worker: %s: stripes to rank %d: %s\n", who.c_str(), peer,
                 what.c_str());
    std::fflush(stderr);
    std::_Exit(1);
  }

  void complete(Comm::Request* r) {
    r->complete_ns = now_ns();
    done(r);
  }

  void take_send(Comm::Request* r) {
    auto m = std::make_unique<OutMsg>();
    m->req = r;
    m->bytes = r->count;
    m->index = sent_per_tag[r->tag]++;
    out_msgs.push_back(std::move(m));
  }

  // The next piece of the oldest message with bytes not yet handed out, or null.
  bool next_piece(Piece& p) {
    for (auto& m : out_msgs) {
      const int64_t bytes = m->bytes;
      if (m->started && m->assigned == bytes) continue;  // complete ones included
      const int64_t len = std::min(kPiece, bytes - m->assigned);
      p.msg = m.get();
      p.hdr = Header{m->req->tag, kMagic, m->index, bytes, m->assigned, len};
      p.hdr_done = 0;
      p.done = 0;
      m->assigned += len;
      m->started = true;
      return true;
    }
    return false;
  }

  bool pieces_left() const {
    for (auto& m : out_msgs)
      if (!m->started || m->assigned < m->bytes) return true;
    return false;
  }

  void try_finish(std::map<Key, InMsg>::iterator it) {
    InMsg& m = it->second;
    if (!m.seen || m.left > 0 || m.req == nullptr) return;
    if (m.dst != static_cast<char*>(m.req->buf) && m.bytes > 0)
      std::memcpy(m.req->buf, m.early.data(), static_cast<size_t>(m.bytes));
    Comm::Request* r = m.req;
    in_msgs.erase(it);
    complete(r);
  }

  void take_recv(Comm::Request* r) {
    const Key key{r->tag, posted_per_tag[r->tag]++};
    auto [it, fresh] = in_msgs.try_emplace(key);
    InMsg& m = it->second;
    if (fresh) {
      m.bytes = m.left = r->count;
      m.dst = static_cast<char*>(r->buf);
    } else if (m.bytes != r->count) {
      fatal("message with tag " + std::to_string(r->tag) + " has " + std::to_string(m.bytes) +
            " bytes, the receive posted for it " + std::to_string(r->count));
    }
    m.req = r;
    try_finish(it);
  }

  // A piece's header arrived on socket i: its message by (tag, index), or an early one.
  void header_arrived(int i) {
    Socket& s = sockets[i];
    const Header& h = s.hdr;
    if (h.magic != kMagic) fatal("bad header on connection " + std::to_string(i));
    auto [it, fresh] = in_msgs.try_emplace(Key{h.tag, h.index});
    InMsg& m = it->second;
    if (fresh) {
      m.bytes = m.left = h.message_bytes;
      m.early.resize(static_cast<size_t>(h.message_bytes));
      m.dst = m.early.data();
    }
    if (m.bytes != h.message_bytes)
      fatal("message with tag " + std::to_string(h.tag) + " has " +
            std::to_string(h.message_bytes) + " bytes, the receive posted for it " +
            std::to_string(m.bytes));
    if (h.offset < 0 || h.length < 0 || h.offset + h.length > m.bytes)
      fatal("piece outside its message on connection " + std::to_string(i));
    m.seen = true;
    s.in = &m;
    s.in_dst = m.dst + h.offset;
    s.in_left = h.length;
    if (s.in_left == 0) piece_arrived(i);
  }

  void piece_arrived(int i) {
    Socket& s = sockets[i];
    s.in->left -= s.hdr.length;
    if (release_ahead > 0 && !s.in->nearly && s.in->left <= release_ahead) {
      s.in->nearly = true;
      nearly_arrived(peer);
    }
    s.in = nullptr;
    s.hdr_got = 0;
    try_finish(in_msgs.find(Key{s.hdr.tag, s.hdr.index}));
  }

  void do_read(int i) {
    Socket& s = sockets[i];
    // A bounded amount per wake-up, so that one busy socket does not starve the others.
    int64_t budget = 4 << 20;
    while (budget > 0) {
      char* p;
      size_t want;
      if (s.in) {
        p = s.in_dst;
        want = static_cast<size_t>(std::min<int64_t>(s.in_left, budget));
      } else {
        p = reinterpret_cast<char*>(&s.hdr) + s.hdr_got;
        want = sizeof(Header) - s.hdr_got;
      }
      const ssize_t r = ::recv(s.fd, p, want, MSG_DONTWAIT);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (r < 0) fatal(std::string("recv: ") + std::strerror(errno));
      if (r == 0) {
        if (s.in || s.hdr_got) fatal("connection " + std::to_string(i) + " closed mid-message");
        s.open = false;
        return;
      }
      s.received += r;
      budget -= r;
      if (s.in) {
        s.in_dst += r;
        s.in_left -= r;
        if (s.in_left == 0) piece_arrived(i);
      } else {
        s.hdr_got += static_cast<size_t>(r);
        if (s.hdr_got == sizeof(Header)) header_arrived(i);
      }
    }
  }

  // Socket i is writable (its unsent data is below TCP_NOTSENT_LOWAT): finish its piece,
  // then take one more (one per wake-up, the sockets served in turn from a rotating
  // start): a connection that drains faster is writable more often and pulls more pieces.
  void do_write(int i) {
    Socket& s = sockets[i];
    for (int pieces = 0; pieces < 1 || s.out.msg;) {
      Piece& p = s.out;
      if (!p.msg) {
        if (!next_piece(p)) return;
        ++pieces;
      }
      const char* src;
      size_t want;
      if (p.hdr_done < sizeof(Header)) {
        src = reinterpret_cast<const char*>(&p.hdr) + p.hdr_done;
        want = sizeof(Header) - p.hdr_done;
      } else {
        src = static_cast<const char*>(p.msg->req->buf) + p.hdr.offset + p.done;
        want = static_cast<size_t>(p.hdr.length - p.done);
      }
      if (want > 0) {
        const ssize_t w = ::send(s.fd, src, want, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        if (w < 0) fatal(std::string("send: ") + std::strerror(errno));
        s.sent += w;
        if (p.hdr_done < sizeof(Header))
          p.hdr_done += static_cast<size_t>(w);
        else
          p.done += w;
      }
      if (p.hdr_done == sizeof(Header) && p.done == p.hdr.length) {
        OutMsg* m = p.msg;
        p.msg = nullptr;
        m->written += p.hdr.length;
        if (m->assigned == m->bytes && m->written == m->bytes) {
          complete(m->req);
          m->req = nullptr;
        }
        while (!out_msgs.empty() && out_msgs.front()->req == nullptr) out_msgs.pop_front();
      }
    }
  }

  bool sends_queued() const {
    if (pieces_left()) return true;
    for (auto& s : sockets)
      if (s.out.msg) return true;
    return false;
  }

  void run() {
    std::vector<pollfd> fds(sockets.size() + 1);
    std::vector<std::pair<bool, Comm::Request*>> batch;
    bool stopping = false;
    for (;;) {
      {
        std::lock_guard lk(mu);
        batch.swap(inbox);
        stopping = stop;
      }
      for (auto& [is_send, r] : batch) is_send ? take_send(r) : take_recv(r);
      batch.clear();
      if (stopping && !sends_queued()) return;
      const bool more = pieces_left();
      fds[0] = pollfd{wake_fd, POLLIN, 0};
      for (size_t i = 0; i < sockets.size(); ++i) {
        const Socket& s = sockets[i];
        short ev = s.open ? POLLIN : 0;
        if (s.out.msg || more) ev |= POLLOUT;
        fds[i + 1] = pollfd{ev ? s.fd : -1, ev, 0};  // a closed, idle socket: not polled
      }
      if (::poll(fds.data(), fds.size(), -1) < 0) {
        if (errno == EINTR) continue;
        fatal(std::string("poll: ") + std::strerror(errno));
      }
      if (fds[0].revents & POLLIN) {
        uint64_t v;
        if (::read(wake_fd, &v, sizeof v) < 0 && errno != EAGAIN) fatal("eventfd read");
      }
      const size_t n = sockets.size();
      rotate = (rotate + 1) % n;
      for (size_t j = 0; j < n; ++j) {
        const size_t i = (rotate + j) % n;
        const short re = fds[i + 1].revents;
        if (re & (POLLIN | POLLHUP | POLLERR)) do_read(static_cast<int>(i));
        if (re & (POLLOUT | POLLERR)) do_write(static_cast<int>(i));
      }
    }
  }

  void submit(bool is_send, Comm::Request* r) {
    {
      std::lock_guard lk(mu);
      inbox.emplace_back(is_send, r);
    }
    const uint64_t one = 1;
    if (::write(wake_fd, &one, sizeof one) < 0) fatal("eventfd write");
  }
};

Stripes::Stripes(MPI_Comm world, const std::string& data_cidr, const std::vector<Peer>& peers,
                 std::function<void(Comm::Request*)> done, std::string who,
                 std::function<void(int peer)> nearly_arrived) {
  int me = 0, size = 0;
  MPI_Comm_rank(world, &me);
  MPI_Comm_size(world, &size);
  // Every rank takes part in the exchange of addresses, striped peers or not.
  Fd listen_fd;
  uint32_t addr[2] = {0, 0};  // ip (host order), port
  if (!peers.empty()) {
    const uint32_t ip = local_address_in(data_cidr);
    listen_fd.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listen_fd.fd < 0) throw sys_error("stripes: socket");
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(ip);
    sa.sin_port = 0;
    if (::bind(listen_fd.fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0)
      throw sys_error("stripes: bind");
    if (::listen(listen_fd.fd, SOMAXCONN) != 0) throw sys_error("stripes: listen");
    socklen_t len = sizeof sa;
    ::getsockname(listen_fd.fd, reinterpret_cast<sockaddr*>(&sa), &len);
    addr[0] = ip;
    addr[1] = ntohs(sa.sin_port);
  }
  std::vector<uint32_t> all(2 * static_cast<size_t>(size));
  MPI_Allgather(addr, 2, MPI_UINT32_T, all.data(), 2, MPI_UINT32_T, world);

  for (const Peer& p : peers) {
    if (p.rank == me || p.rank < 0 || p.rank >= size || p.connections < 1)
      throw std::runtime_error("stripes: bad peer " + std::to_string(p.rank));
    auto link = std::make_unique<PeerLink>();
    link->peer = p.rank;
    link->who = who;
    link->done = done;
    if (nearly_arrived && p.release_ahead_bytes > 0) {
      link->nearly_arrived = nearly_arrived;
      link->release_ahead = p.release_ahead_bytes;
    }
    link->sockets.resize(static_cast<size_t>(p.connections));
    links_[p.rank] = std::move(link);
  }
  auto tune = [](int fd) {
    const int one = 1, lowat = kStripeNotSentLowat;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ::setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &lowat, sizeof lowat);
  };
  // Lower rank connects; hello = {rank, index}.
  for (auto& [rank, link] : links_) {
    if (rank < me) continue;
    for (size_t i = 0; i < link->sockets.size(); ++i) {
      const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd < 0) throw sys_error("stripes: socket");
      link->sockets[i].fd = fd;  // closed by the PeerLink, whatever happens next
      sockaddr_in sa{};
      sa.sin_family = AF_INET;
      sa.sin_addr.s_addr = htonl(all[2 * rank]);
      sa.sin_port = htons(static_cast<uint16_t>(all[2 * rank + 1]));
      if (all[2 * rank] == 0)
        throw std::runtime_error("stripes: rank " + std::to_string(rank) +
                                 " opened no connections to this rank");
      if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0)
        throw sys_error("stripes: connect to rank " + std::to_string(rank));
      const int32_t hello[2] = {me, static_cast<int32_t>(i)};
      write_all(fd, hello, sizeof hello);
      tune(fd);
    }
  }
  int expected = 0;
  for (auto& [rank, link] : links_)
    if (rank < me) expected += static_cast<int>(link->sockets.size());
  for (int k = 0; k < expected; ++k) {
    const int fd = ::accept4(listen_fd.fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) throw sys_error("stripes: accept");
    Fd accepted{fd};  // until a PeerLink owns it
    int32_t hello[2];
    read_all(fd, hello, sizeof hello);
    auto it = links_.find(hello[0]);
    if (it == links_.end() || hello[0] > me || hello[1] < 0 ||
        hello[1] >= static_cast<int>(it->second->sockets.size()) ||
        it->second->sockets[hello[1]].fd >= 0)
      throw std::runtime_error("stripes: unexpected connection from rank " +
                               std::to_string(hello[0]) + " index " + std::to_string(hello[1]));
    tune(fd);
    it->second->sockets[hello[1]].fd = accepted.release();
  }
  for (auto& [rank, link] : links_) {
    for (auto& s : link->sockets) ::fcntl(s.fd, F_SETFL, ::fcntl(s.fd, F_GETFL) | O_NONBLOCK);
    link->wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (link->wake_fd < 0) throw sys_error("stripes: eventfd");
    PeerLink* l = link.get();
    link->thread = std::thread([l] { l->run(); });
  }
  MPI_Barrier(world);
}

Stripes::~Stripes() {
  finish();  // then each PeerLink closes its descriptors
}

void Stripes::finish() {
  if (finished_) return;
  finished_ = true;
  for (auto& [rank, link] : links_) {
    {
      std::lock_guard lk(link->mu);
      link->stop = true;
    }
    const uint64_t one = 1;
    if (::write(link->wake_fd, &one, sizeof one) < 0) {
      // The thread then stops at its next wake-up; nothing else to do.
    }
  }
  for (auto& [rank, link] : links_) link->thread.join();
}

int Stripes::connections(int peer) const {
  auto it = links_.find(peer);
  return it == links_.end() ? 0 : static_cast<int>(it->second->sockets.size());
}

void Stripes::send(Comm::Request* r) {
  links_.at(r->peer)->submit(true, r);
}

void Stripes::recv(Comm::Request* r) {
  links_.at(r->peer)->submit(false, r);
}

std::vector<Stripes::ConnStats> Stripes::stats() const {
  std::vector<ConnStats> out;
  for (auto& [rank, link] : links_)
    for (size_t i = 0; i < link->sockets.size(); ++i) {
      const auto& s = link->sockets[i];
      ConnStats c;
      c.peer = rank;
      c.index = static_cast<int>(i);
      c.bytes_sent = s.sent;
      c.bytes_received = s.received;
      tcp_info ti{};
      socklen_t len = sizeof ti;
      if (::getsockopt(s.fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0) {
        c.kernel_bytes_acked = static_cast<int64_t>(ti.tcpi_bytes_acked);
        c.kernel_retransmits = ti.tcpi_total_retrans;
      }
      out.push_back(c);
    }
  return out;
}

}  // namespace xdc::worker
