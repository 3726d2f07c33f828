// xdc-delayline: the userspace backend's delay stage for one egress interface.
//
//   xdc-delayline --netns=NS --if=IF --queue=N [--tag=T] [--stats=FILE] [--ctl=SOCKET]
//                 [--seed=S] [--rt-prio=P] [--ready-fd=FD] <LinkParams flags: link_params_args.h>
//
// Enters NS, binds NFQUEUE N, adds its iptables-legacy rule (nfqueue_rule.h), writes
// "ok\n" (or "error: ...\n") to FD, serves until SIGTERM/SIGINT/SIGHUP or until NS or IF
// disappears, then removes its rule, releases held packets and its stats file.
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>

#include "netem/delayline/delay_line.h"
#include "netem/nl/netns.h"
#include "netem/shaper/link_params_args.h"
#include "netem/shaper/nfqueue_rule.h"

namespace {

void answer(int fd, const std::string& msg) {
  if (fd < 0) return;
  std::string line = msg + "\n";
  ssize_t ignored = write(fd, line.data(), line.size());
  (void)ignored;
  close(fd);
}

uint64_t parse_u64(const std::string& arg, const std::string& v) {
  char* end = nullptr;
  unsigned long long x = std::strtoull(v.c_str(), &end, 10);
  if (v.empty() || *end) throw std::invalid_argument(arg + ": expected an unsigned integer");
  return x;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace xdc;
  delayline::Config cfg;
  int ready_fd = -1, rt_prio = 0;
  bool have_queue = false;
  try {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      auto eq = a.find('=');
      std::string key = a.substr(0, eq), v = eq == std::string::npos ? "" : a.substr(eq + 1);
      if (netem::apply_arg(a, cfg.params)) continue;
      if (key == "--netns")
        cfg.netns = v;
      else if (key == "--if")
        cfg.ifname = v;
      else if (key == "--tag")
        cfg.tag = v;
      else if (key == "--stats")
        cfg.stats_path = v;
      else if (key == "--ctl")
        cfg.ctl_path = v;
      else if (key == "--seed")
        cfg.seed = parse_u64(a, v);
      else if (key == "--rt-prio")
        rt_prio = static_cast<int>(parse_u64(a, v));
      else if (key == "--ready-fd")
        ready_fd = static_cast<int>(parse_u64(a, v));
      else if (key == "--queue") {
        uint64_t q = parse_u64(a, v);
        if (q > 65535) throw std::invalid_argument(a + ": expected 0..65535");
        cfg.queue_num = static_cast<uint16_t>(q);
        have_queue = true;
      } else {
        throw std::invalid_argument(a + ": unknown option");
      }
    }
    if (cfg.ifname.empty() || !have_queue)
      throw std::invalid_argument("--if and --queue are required");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "xdc-delayline: %s\n", e.what());
    answer(ready_fd, std::string("error: ") + e.what());
    return 2;
  }
  if (cfg.tag.empty()) cfg.tag = cfg.netns + "/" + cfg.ifname;
  if (cfg.seed == 0) cfg.seed = std::random_device{}();

  // Signals are read from a signalfd inside DelayLine::run(); block them from now on so
  // that a SIGTERM during setup is not lost but handled once serving starts.
  sigset_t sigs;
  sigemptyset(&sigs);
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGUSR1}) sigaddset(&sigs, s);
  sigprocmask(SIG_BLOCK, &sigs, nullptr);
  signal(SIGPIPE, SIG_IGN);
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  prctl(PR_SET_NAME, "xdc-delayline", 0, 0, 0);
  if (rt_prio > 0) {
    sched_param sp{};
    sp.sched_priority = rt_prio;
    if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0)
      std::fprintf(stderr, "xdc-delayline %s: SCHED_FIFO %d: %s (continuing)\n", cfg.tag.c_str(),
                   rt_prio, std::strerror(errno));
  }

  try {
    // The whole (single-threaded) process moves into the namespace.
    nl::NetnsGuard in(cfg.netns);
    delayline::DelayLine line(cfg);
    {
      netem::NfqueueRules rules("", cfg.ifname, cfg.queue_num);  // "": where we stand
      std::fprintf(stderr, "xdc-delayline %s: serving queue %u on %s\n", cfg.tag.c_str(),
                   cfg.queue_num, cfg.ifname.c_str());
      line.write_stats();  // exists once the caller hears "ok"
      answer(ready_fd, "ok");
      ready_fd = -1;
      line.run();
    }  // rules removed: no new packets arrive; held ones are released next
    line.release_all();
    if (!cfg.stats_path.empty()) unlink(cfg.stats_path.c_str());
    const auto& s = line.stats();
    std::fprintf(stderr,
                 "xdc-delayline %s: exit; packets %lu dropped %lu released %lu max_held %lu "
                 "late_max_us %.1f\n",
                 cfg.tag.c_str(), s.packets, s.dropped, s.released, s.max_held,
                 s.late_max_ns / 1e3);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "xdc-delayline %s: %s\n", cfg.tag.c_str(), e.what());
    answer(ready_fd, std::string("error: ") + e.what());
    return 1;
  }
  return 0;
}
