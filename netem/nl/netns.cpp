#include "netem/nl/netns.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>

namespace xdc::nl {

std::string netns_path(const std::string& name) {
  return "/run/netns/" + name;
}

NetnsGuard::NetnsGuard(const std::string& name) {
  if (name.empty()) return;
  saved_fd_ = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (saved_fd_ < 0) throw std::system_error(errno, std::generic_category(), "open own netns");
  int fd = open(netns_path(name).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    close(saved_fd_);
    throw std::system_error(err, std::generic_category(), "open netns " + name);
  }
  int rc = setns(fd, CLONE_NEWNET);
  int err = errno;
  close(fd);
  if (rc != 0) {
    close(saved_fd_);
    throw std::system_error(err, std::generic_category(), "setns " + name);
  }
}

NetnsGuard::~NetnsGuard() {
  if (saved_fd_ < 0) return;
  // Failing to return would leave this thread in the wrong namespace: nothing
  // sensible can continue, so make it loud.
  if (setns(saved_fd_, CLONE_NEWNET) != 0) std::terminate();
  close(saved_fd_);
}

void write_sysctl(const std::string& netns, const std::string& key, const std::string& value) {
  NetnsGuard in(netns);
  std::string path = "/proc/sys/" + key;
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "open " + path);
  ssize_t n = write(fd, value.data(), value.size());
  int err = errno;
  close(fd);
  if (n != static_cast<ssize_t>(value.size()))
    throw std::system_error(err, std::generic_category(), "write " + path + " = " + value);
}

namespace {
// The whole of a /proc file, read by the calling thread.
std::string read_proc(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "open " + path);
  std::string out;
  char buf[512];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  int err = errno;
  close(fd);
  if (n < 0) throw std::system_error(err, std::generic_category(), "read " + path);
  return out;
}
}  // namespace

std::string read_sysctl(const std::string& netns, const std::string& key) {
  NetnsGuard in(netns);
  std::string out = read_proc("/proc/sys/" + key);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::map<std::string, double> net_counters(const std::string& netns, const std::string& file,
                                           const std::string& group) {
  if (file != "snmp" && file != "netstat")
    throw std::invalid_argument("net_counters: no /proc/net/" + file + " (snmp or netstat)");
  std::string text;
  {
    NetnsGuard in(netns);
    text = read_proc("/proc/thread-self/net/" + file);  // /proc/net: the process's namespace
  }
  // Pairs of lines: "Tcp: RtoAlgorithm RtoMin ..." then "Tcp: 1 200 ..." (netstat alike).
  const std::string prefix = group + ":";
  std::istringstream in(text);
  for (std::string names, values; std::getline(in, names) && std::getline(in, values);) {
    if (names.rfind(prefix, 0) != 0) continue;
    std::istringstream n(names.substr(prefix.size())), v(values.substr(prefix.size()));
    std::map<std::string, double> out;
    std::string name;
    double value;
    while (n >> name && v >> value) out[name] = value;
    return out;
  }
  throw std::runtime_error("no " + group + " counters in /proc/net/" + file + " of netns '" +
                           netns + "'");
}

uint64_t interface_tx_bytes(const std::string& netns, const std::string& ifname) {
  std::string text;
  {
    NetnsGuard in(netns);
    text = read_proc("/proc/thread-self/net/dev");
  }
  // "  name: rx_bytes rx_packets ... (8 receive fields) tx_bytes ...", after two header lines.
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const size_t first = line.find_first_not_of(' ');
    if (line.compare(first, colon - first, ifname) != 0 || colon - first != ifname.size()) continue;
    std::istringstream fields(line.substr(colon + 1));
    uint64_t v = 0;
    for (int i = 0; i < 9 && fields >> v; ++i) {
    }
    if (!fields) break;
    return v;
  }
  throw std::runtime_error("no interface '" + ifname + "' in /proc/net/dev of netns '" + netns +
                           "'");
}

}  // namespace xdc::nl
