#pragma once
// A libnl NETLINK_ROUTE socket bound to one network namespace, and error checking.
// libnl cannot target another namespace by itself: the socket is opened while the
// thread sits inside the namespace, and stays bound to it afterwards.
#include <netlink/netlink.h>

#include <stdexcept>
#include <string>

namespace xdc::nl {

struct NlError : std::runtime_error {
  NlError(int err, const std::string& what);
  int err;  // libnl error code (positive NLE_*)
};

// Throws NlError("<what>: <libnl message>") when rc < 0; returns rc otherwise.
int check(int rc, const std::string& what);

class NlSocket {
 public:
  explicit NlSocket(const std::string& netns = "");
  ~NlSocket();
  NlSocket(const NlSocket&) = delete;
  NlSocket& operator=(const NlSocket&) = delete;

  nl_sock* get() const { return sock_; }
  const std::string& netns() const { return netns_; }
  // Interface index of `ifname` in this namespace; throws NlError when absent.
  int ifindex(const std::string& ifname) const;

 private:
  nl_sock* sock_ = nullptr;
  std::string netns_;
};

}  // namespace xdc::nl
