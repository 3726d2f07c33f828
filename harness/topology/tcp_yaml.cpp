// `tcp:` block keys -> TcpSettings: congestion, rmem_max, wmem_max, slow_start_after_idle,
// ecn. Which congestion controls exist is the kernel's to say: the builder names the
// setting, the host and the kernel's reason when it refuses one (harness/network/tcp.h).
#include "harness/topology/parse.h"

namespace xdc::topo {

const std::vector<std::string> kTcpKeys = {"congestion", "rmem_max", "wmem_max",
                                           "slow_start_after_idle", "ecn"};

namespace {

const std::map<std::string, std::string> kTcpSynonyms = {
    {"cc", "congestion"},        {"congestion_control", "congestion"},
    {"algorithm", "congestion"}, {"rmem", "rmem_max"},
    {"wmem", "wmem_max"},        {"slow_start", "slow_start_after_idle"},
    {"tcp_ecn", "ecn"},          {"tcp_slow_start_after_idle", "slow_start_after_idle"}};

uint64_t buffer_bytes(const yaml::Value& v) {
  uint64_t b = v.size_bytes();
  if (b < kMinTcpBufferBytes || b > kMaxTcpBufferBytes) v.fail("a size from 4kib to 1gib");
  return b;
}

}  // namespace

std::string ecn_word(int ecn) {
  return ecn == 0 ? "off" : ecn == 1 ? "on" : ecn == 2 ? "server" : std::to_string(ecn);
}

void apply_tcp_block(const yaml::Value& v, TcpSettings* s) {
  yaml::Map m = v.map({}, "a map of TCP settings like {congestion: cubic, rmem_max: 6mib}");
  m.check_keys(kTcpKeys, kTcpSynonyms);
  if (auto c = m.get("congestion")) {
    std::string name = c->scalar("a congestion control name like cubic, reno or bbr");
    // The kernel's names (tcp_cong.c, TCP_CA_NAME_MAX 16): lowercase letters, digits, '_'.
    bool ok = !name.empty() && name.size() < 16;
    for (char ch : name)
      ok = ok && ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_');
    if (!ok) c->fail("a congestion control name like cubic, reno or bbr");
    s->congestion = name;
    s->congestion_pos = c->pos();
  }
  if (auto r = m.get("rmem_max")) s->rmem_max_bytes = buffer_bytes(*r);
  if (auto w = m.get("wmem_max")) s->wmem_max_bytes = buffer_bytes(*w);
  if (auto b = m.get("slow_start_after_idle")) s->slow_start_after_idle = b->boolean();
  if (auto e = m.get("ecn")) {
    std::string w = e->choice({"off", "on", "server"});
    s->ecn = w == "off" ? 0 : w == "on" ? 1 : 2;
  }
}

}  // namespace xdc::topo
