// The delay line's counters: the kernel's own (per-namespace /proc file) and the JSON
// stats file that `xdc check` and the tests read (delayline_stats() in shaper.h).
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "netem/delayline/delay_line.h"

namespace xdc::delayline {

void DelayLine::read_kernel_counters() {
  // /proc/net/netfilter/nfnetlink_queue (per namespace): queue portid total copy_mode
  // copy_range queue_dropped user_dropped id_sequence 1
  std::ifstream in("/proc/net/netfilter/nfnetlink_queue");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ss(line);
    uint64_t q, port, total, mode, range, qdrop, udrop;
    if (ss >> q >> port >> total >> mode >> range >> qdrop >> udrop && q == cfg_.queue_num) {
      stats_.kernel_queue_dropped = qdrop;
      stats_.kernel_user_dropped = udrop;
    }
  }
}

void DelayLine::write_stats() const {
  if (cfg_.stats_path.empty()) return;
  std::string tmp = cfg_.stats_path + ".tmp";
  // Root's alone (0600), as the state directory it sits in.
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return;
  FILE* f = fdopen(fd, "w");
  if (!f) {
    close(fd);
    return;
  }
  const Stats& s = stats_;
  std::fprintf(
      f,
      "{\"tag\": \"%s\", \"netns\": \"%s\", \"ifname\": \"%s\", \"queue\": %u, "
      "\"pid\": %d, \"packets\": %lu, \"bytes\": %lu, \"dropped\": %lu, "
      "\"reordered\": %lu, \"released\": %lu, \"batches\": %lu, \"held\": %lu, "
      "\"max_held\": %lu, \"late_max_us\": %.1f, \"late_mean_us\": %.2f, "
      "\"late_sum_us\": %.3f, \"late_sumsq_us2\": %.3f, "
      "\"wake_advance_us\": %.1f, \"stamped\": %lu, \"read_latency_mean_us\": %.2f, "
      "\"duplicated\": %lu, \"corrupted\": %lu, \"copy_errors\": %lu, "
      "\"nl_errors\": %lu, \"kernel_queue_dropped\": %lu, "
      "\"kernel_user_dropped\": %lu, \"changes\": %lu}\n",
      cfg_.tag.c_str(), cfg_.netns.c_str(), cfg_.ifname.c_str(), cfg_.queue_num,
      static_cast<int>(getpid()), s.packets, s.bytes, s.dropped, s.reordered, s.released, s.batches,
      s.held, s.max_held, s.late_max_ns / 1e3, s.released ? s.late_sum_ns / 1e3 / s.released : 0.0,
      s.late_sum_ns / 1e3, s.late_sumsq_us2, advance_ns_ / 1e3, s.stamped,
      s.stamped ? s.read_latency_sum_ns / 1e3 / s.stamped : 0.0, s.duplicated, s.corrupted,
      s.copy_errors, s.nl_errors, s.kernel_queue_dropped, s.kernel_user_dropped, s.changes);
  std::fclose(f);
  std::rename(tmp.c_str(), cfg_.stats_path.c_str());
}

}  // namespace xdc::delayline
