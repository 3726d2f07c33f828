#include "netem/shaper/nfqueue_rule.h"

#include <stdexcept>
#include <vector>

#include "netem/shaper/run.h"

namespace xdc::netem {

namespace {

constexpr const char* kChains[] = {"FORWARD", "OUTPUT"};

// One rule's words after the table: OP CHAIN -o IF -j NFQUEUE --queue-num N.
std::vector<std::string> rule_spec(const char* op, const char* chain, const std::string& ifname,
                                   uint16_t queue) {
  return {op, chain, "-o", ifname, "-j", "NFQUEUE", "--queue-num", std::to_string(queue)};
}

// The command changing one rule.
std::vector<std::string> rule(const char* op, const char* chain, const std::string& ifname,
                              uint16_t queue) {
  std::vector<std::string> argv = {"iptables-legacy", "-w", "-t", "mangle"};
  for (auto& w : rule_spec(op, chain, ifname, queue)) argv.push_back(std::move(w));
  return argv;
}

// Both chains' rules added (op "-A") or deleted ("-D") in one iptables-legacy-restore
// transaction: all or nothing, and one program start instead of one per rule (a network's
// delay lines start and stop one after another under the xtables lock).
RunResult both_rules(const char* op, const std::string& ifname, uint16_t queue,
                     const std::string& netns) {
  std::string text = "*mangle\n";
  for (const char* chain : kChains) {
    for (const auto& w : rule_spec(op, chain, ifname, queue)) text += w + " ";
    text.back() = '\n';
  }
  text += "COMMIT\n";
  return run_argv({"iptables-legacy-restore", "-w", "--noflush"}, netns, text);
}

}  // namespace

NfqueueRules::NfqueueRules(std::string netns, std::string ifname, uint16_t queue)
    : netns_(std::move(netns)), ifname_(std::move(ifname)), queue_(queue) {
  RunResult r = both_rules("-A", ifname_, queue_, netns_);
  if (r.exit_code != 0)
    throw std::runtime_error("iptables-legacy-restore of -t mangle -A FORWARD/OUTPUT -o " +
                             ifname_ + " -j NFQUEUE --queue-num " + std::to_string(queue_) +
                             " in netns '" + netns_ + "' failed: " + r.output);
}

NfqueueRules::~NfqueueRules() {
  try {
    // One of them already gone (removed by hand): delete whatever is left, rule by rule.
    if (both_rules("-D", ifname_, queue_, netns_).exit_code != 0)
      remove_nfqueue_rules(netns_, ifname_, queue_);
  } catch (const std::exception&) {
    // namespace gone: its rules went with it
  }
}

int remove_nfqueue_rules(const std::string& netns, const std::string& ifname, uint16_t queue) {
  int removed = 0;
  try {
    for (const char* chain : kChains)
      for (int i = 0; i < 16 && run_argv(rule("-D", chain, ifname, queue), netns).exit_code == 0;
           ++i)
        ++removed;
  } catch (const std::exception&) {
    // namespace gone: its rules went with it
  }
  return removed;
}

}  // namespace xdc::netem
