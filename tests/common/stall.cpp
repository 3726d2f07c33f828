// xdc-stall: takes a share of every CPU at random moments, as another tenant or a
// hypervisor's steal does to a test, so that a timing test can be checked on a busy
// machine (scripts/busy.sh runs a command under it).
//
//   xdc-stall CPU BUSY_MS PERIOD_MS [PRIORITY]
//
// Pinned to CPU, it spins for 0.5-1.5 x BUSY_MS, then sleeps until 0.6-1.4 x PERIOD_MS
// after the spin began, over and over, under SCHED_FIFO PRIORITY (default 50: above the
// delay lines' 10, so that they stall too, as every process does when the CPU is taken
// from the machine; 0: normal priority). The period is drawn too, so that the stalls do
// not phase-lock with a test's periodic probes. Linux's RT throttling (95% of each
// second) bounds what it can take.
#include <sched.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>

int main(int argc, char** argv) {
  if (argc < 4 || argc > 5) {
    std::fprintf(stderr, "usage: xdc-stall CPU BUSY_MS PERIOD_MS [PRIORITY]\n");
    return 2;
  }
  const int cpu = std::atoi(argv[1]);
  const double busy_ms = std::atof(argv[2]), period_ms = std::atof(argv[3]);
  const int priority = argc == 5 ? std::atoi(argv[4]) : 50;
  if (cpu < 0 || busy_ms <= 0 || period_ms <= busy_ms || priority < 0 || priority > 99) {
    std::fprintf(stderr, "xdc-stall: want CPU >= 0, 0 < BUSY_MS < PERIOD_MS, PRIORITY 0-99\n");
    return 2;
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    std::perror("xdc-stall: sched_setaffinity");
    return 1;
  }
  if (priority > 0) {
    sched_param p{};
    p.sched_priority = priority;
    if (sched_setscheduler(0, SCHED_FIFO, &p) != 0) {
      std::perror("xdc-stall: SCHED_FIFO");
      return 1;
    }
  }
  using Clock = std::chrono::steady_clock;
  using Ms = std::chrono::duration<double, std::milli>;
  std::mt19937 rng(static_cast<unsigned>(cpu) * 7919u + 1u);
  std::uniform_real_distribution<double> spin(0.5, 1.5), gap(0.6, 1.4);
  for (;;) {
    const auto t0 = Clock::now();
    const auto spin_end = t0 + std::chrono::duration_cast<Clock::duration>(Ms(busy_ms * spin(rng)));
    while (Clock::now() < spin_end) {
    }
    std::this_thread::sleep_until(
        t0 + std::chrono::duration_cast<Clock::duration>(Ms(period_ms * gap(rng))));
  }
}
