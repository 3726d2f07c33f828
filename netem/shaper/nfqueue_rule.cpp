#include "netem/shaper/nfqueue_rule.h"

#include <stdexcept>
#include <vector>

#include "netem/shaper/run.h"

namespace xdc::netem {

namespace {

std::vector<std::string> rule(const char* op, const std::string& ifname, uint16_t queue) {
  return {"iptables-legacy",
          "-w",
          "-t",
          "mangle",
          op,
          "POSTROUTING",
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
  RunResult r = run_argv(rule("-A", ifname_, queue_), netns_);
  if (r.exit_code != 0)
    throw std::runtime_error("iptables-legacy -t mangle -A POSTROUTING -o " + ifname_ +
                             " -j NFQUEUE --queue-num " + std::to_string(queue_) + " in netns '" +
                             netns_ + "' failed: " + r.output);
}

NfqueueRules::~NfqueueRules() {
  run_argv(rule("-D", ifname_, queue_), netns_);
}

int remove_nfqueue_rules(const std::string& netns, const std::string& ifname, uint16_t queue) {
  int removed = 0;
  try {
    while (removed < 16 && run_argv(rule("-D", ifname, queue), netns).exit_code == 0) ++removed;
  } catch (const std::exception&) {
    // namespace gone: its rules went with it
  }
  return removed;
}

}  // namespace xdc::netem
