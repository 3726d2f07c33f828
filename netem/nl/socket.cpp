#include "netem/nl/socket.h"

#include <net/if.h>
#include <netlink/route/link.h>

#include "netem/nl/netns.h"

namespace xdc::nl {

NlError::NlError(int e, const std::string& what)
    : std::runtime_error(what + ": " + nl_geterror(e)), err(e) {}

int check(int rc, const std::string& what) {
  if (rc < 0) throw NlError(-rc, what);
  return rc;
}

NlSocket::NlSocket(const std::string& netns) : netns_(netns) {
  NetnsGuard in(netns);
  sock_ = nl_socket_alloc();
  if (!sock_) throw std::runtime_error("nl_socket_alloc failed");
  int rc = nl_connect(sock_, NETLINK_ROUTE);
  if (rc < 0) {
    nl_socket_free(sock_);
    throw NlError(-rc, "netlink connect in netns '" + netns + "'");
  }
}

NlSocket::~NlSocket() {
  if (sock_) nl_socket_free(sock_);
}

int NlSocket::ifindex(const std::string& ifname) const {
  rtnl_link* link = nullptr;
  check(rtnl_link_get_kernel(sock_, 0, ifname.c_str(), &link),
        "find link " + ifname + " in netns '" + netns_ + "'");
  int idx = rtnl_link_get_ifindex(link);
  rtnl_link_put(link);
  return idx;
}

}  // namespace xdc::nl
