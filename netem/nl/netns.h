#pragma once
// Entering named network namespaces (/run/netns/NAME, as `ip netns` makes them).
// Netlink sockets, sysctl files under /proc/sys/net and sockets opened while the
// calling thread is inside a namespace stay bound to that namespace after it leaves.
#include <cstdint>
#include <map>
#include <string>

namespace xdc::nl {

// Path of a named network namespace: /run/netns/NAME.
std::string netns_path(const std::string& name);

// Moves the calling thread into netns `name` for its lifetime; the destructor moves
// it back. An empty name means "stay where you are" (the root namespace for xdc).
// Throws std::system_error when the namespace does not exist.
class NetnsGuard {
 public:
  explicit NetnsGuard(const std::string& name);
  ~NetnsGuard();
  NetnsGuard(const NetnsGuard&) = delete;
  NetnsGuard& operator=(const NetnsGuard&) = delete;

 private:
  int saved_fd_ = -1;  // the thread's namespace before entering; -1 when not moved
};

// Writes `value` to a sysctl under /proc/sys (e.g. "net/ipv4/ip_forward") inside
// netns `name` ("" = current). Throws std::system_error on failure.
void write_sysctl(const std::string& netns, const std::string& key, const std::string& value);
// Reads a sysctl under /proc/sys inside netns `name` ("" = current), without the trailing
// newline; tabs between fields stay as the kernel writes them. Throws std::system_error.
std::string read_sysctl(const std::string& netns, const std::string& key);
// The counters of one group of /proc/net/snmp ("Tcp", "Udp", ...) or /proc/net/netstat
// ("TcpExt", "IpExt", ...) inside netns `name` ("" = current): counter name -> value.
// `file` is "snmp" or "netstat". Throws std::system_error when the file cannot be read,
// std::runtime_error when it has no such group.
std::map<std::string, double> net_counters(const std::string& netns, const std::string& file,
                                           const std::string& group);

// Bytes interface `ifname` has transmitted inside netns `name` ("" = current): /proc/net/dev's
// transmit bytes, whole frames with their Ethernet, IP and TCP headers (a GSO aggregate
// counts one set of headers). Throws std::system_error when the file cannot be read,
// std::runtime_error when it has no such interface.
uint64_t interface_tx_bytes(const std::string& netns, const std::string& ifname);

}  // namespace xdc::nl
