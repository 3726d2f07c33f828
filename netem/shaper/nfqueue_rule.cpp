#include "netem/shaper/nfqueue_rule.h"

#include <stdexcept>
#include <vector>

#include "netem/shaper/run.h"

namespace xdc::netem {

namespace {

constexpr const char* kChains[] = {"FORWARD", "OUTPUT"};

std::vector<std::string> rule(const char* op, const char* chain, const std::string& ifname,
                              uint16_t queue) {
  return {"iptables-legacy",
          "-w",
          "-t",
          "mangle",
          op,
          chain,
          "-o",
          ifname,
          "-j",
          "NFQUEUE",
          "--queue-num",
          std::to_string(queue)};
}

}  // namespace

NfqueueRules::NfqueueRules(std::string netns, std::string ifname, uint16_t queue)
    : netns_(std::move(netns)), ifname_(std::move(ifname)), queue_(queue) {
  for (const char* chain : kChains) {
    RunResult r = run_argv(rule("-A", chain, ifname_, queue_), netns_);
    if (r.exit_code != 0) {
      remove_nfqueue_rules(netns_, ifname_, queue_);
      throw std::runtime_error("iptables-legacy -t mangle -A " + std::string(chain) + " -o " +
                               ifname_ + " -j NFQUEUE --queue-num " + std::to_string(queue_) +
                               " in netns '" + netns_ + "' failed: " + r.output);
    }
  }
}

NfqueueRules::~NfqueueRules() {
  for (const char* chain : kChains) run_argv(rule("-D", chain, ifname_, queue_), netns_);
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
