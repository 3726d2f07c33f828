#include "netem/shaper/nfqueue_rule.h"

#include <cctype>
#include <stdexcept>
#include <vector>

#include "netem/shaper/run.h"

namespace xdc::netem {

namespace {

std::vector<std::string> rule(const char* op, const char* chain, const std::string& ifname,
                              uint16_t queue) {
  return {"iptables-legacy",    "-w", op, chain, "-o", ifname, "-j", "NFQUEUE", "--queue-num",
          std::to_string(queue)};
}

// Both rules in one iptables-legacy-restore (one exec, one table commit, atomic).
std::string restore_script(const char* op, const std::string& ifname, uint16_t queue) {
  std::string s = "*filter\n";
  for (const char* chain : {"FORWARD", "OUTPUT"})
    s += std::string(op) + " " + chain + " -o " + ifname + " -j NFQUEUE --queue-num " +
         std::to_string(queue) + "\n";
  return s + "COMMIT\n";
}

const std::vector<std::string> kRestore = {"iptables-legacy-restore", "-w", "--noflush"};

void check_ifname(const std::string& ifname) {
  // The name goes into restore's text: only what interface names are made of.
  bool ok = !ifname.empty() && ifname.size() < 16;
  for (char c : ifname)
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
                c == '@');
  if (!ok) throw std::invalid_argument("bad interface name '" + ifname + "'");
}

}  // namespace

NfqueueRules::NfqueueRules(std::string netns, std::string ifname, uint16_t queue)
    : netns_(std::move(netns)), ifname_(std::move(ifname)), queue_(queue) {
  check_ifname(ifname_);
  RunResult r = run_argv(kRestore, netns_, restore_script("-A", ifname_, queue_));
  if (r.exit_code != 0)
    throw std::runtime_error("iptables-legacy-restore: -A FORWARD/OUTPUT -o " + ifname_ +
                             " -j NFQUEUE --queue-num " + std::to_string(queue_) + " in netns '" +
                             netns_ + "' failed: " + r.output);
}

NfqueueRules::~NfqueueRules() {
  // The usual case in one exec; rule by rule when someone removed one already.
  if (run_argv(kRestore, netns_, restore_script("-D", ifname_, queue_)).exit_code != 0)
    remove_nfqueue_rules(netns_, ifname_, queue_);
}

int remove_nfqueue_rules(const std::string& netns, const std::string& ifname, uint16_t queue) {
  int removed = 0;
  try {
    for (const char* chain : {"FORWARD", "OUTPUT"})
      for (int i = 0; i < 16 && run_argv(rule("-D", chain, ifname, queue), netns).exit_code == 0;
           ++i)
        ++removed;
  } catch (const std::exception&) {
    // namespace gone: its rules went with it
  }
  return removed;
}

}  // namespace xdc::netem
