#include "harness/run/run_network.h"

#include <fmt/format.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>

#include "common/input_error.h"
#include "harness/lab/remote.h"
#include "harness/network/builder.h"
#include "harness/network/tcp.h"
#include "harness/network/teardown.h"

namespace xdc::run {
namespace fs = std::filesystem;

net::NetworkState RunNetwork::reusable(const Experiment& e, const RunOptions& o) {
  auto s = net::load_state(o.network);
  if (!s) throw InputError("--network " + o.network + ": no such network is up (xdc ls)");
  if (s->time_dilation != e.time_dilation)
    throw InputError(
        e.time_dilation_pos.file.empty() ? SourcePos{e.source_file, 0, 0} : e.time_dilation_pos,
        fmt::format("time_dilation {:g} needs a network built with it; --network "
                    "{} was built with time dilation {:g} (xdc up "
                    "--time-dilation {:g}, or drop --network)",
                    e.time_dilation, o.network, s->time_dilation, e.time_dilation));
  for (auto& h : e.rank_hosts())
    if (!s->find_host(h))
      throw InputError("--network " + o.network + ": has no host '" + h +
                       "' that the placement names");
  // The experiment's TCP (its topology's `tcp:` and its own) is the network's, or the
  // run would record settings it did not ask for.
  for (auto& h : e.rank_hosts()) {
    const net::HostTcp& has = s->find_host(h)->tcp;
    const net::HostTcp want = net::expected_tcp(e.topology.find_host(h)->tcp);
    if (!has.congestion.empty() && !(has == want))
      throw InputError("--network " + o.network + ": host " + h + " has TCP " + net::describe(has) +
                       ", the experiment asks for " + net::describe(want) +
                       " (drop --network to build a network with the experiment's TCP)");
  }
  return *s;
}
RunNetwork::RunNetwork(const Experiment& e, const RunOptions& o, const lab::Lab* lab) : lab_(lab) {
  if (!o.network.empty()) {
    state_ = reusable(e, o);
    return;
  }
  net::BuildOptions b;
  b.name = o.network_name.empty() ? fmt::format("r{}", getpid() % 10000000) : o.network_name;
  if (lab) {
    std::vector<std::string> extra;
    if (e.shaping) extra.insert(extra.end(), {"--shaping", netem::to_string(*e.shaping)});
    if (e.time_dilation != 1)
      extra.insert(extra.end(), {"--time-dilation", fmt::format("{}", e.time_dilation)});
    // Each machine builds the experiment's topology (its wan/tcp overrides applied) from
    // the experiment file, at the same path there.
    extra.push_back("--experiment-topology");
    extra.insert(extra.end(), {"--seed", std::to_string(e.seed)});
    name_ = b.name;
    std::string failed;
    for (const auto& m :
         lab::up_lab(*lab, e.topology, fs::absolute(e.source_file).string(), name_, extra))
      if (!m.ok) failed += (failed.empty() ? "" : "; ") + m.machine + ": " + m.message;
    if (!failed.empty()) throw std::runtime_error("xdc up --lab failed: " + failed);
    auto s = net::load_state(name_);
    if (!s) throw std::runtime_error("the lab network " + name_ + " left no record here");
    state_ = *s;
    owned_ = true;
    return;
  }
  b.shaping = e.shaping;
  b.time_dilation = e.time_dilation;
  b.seed = e.seed;
  name_ = b.name;  // set first: a half-built network is undone by the builder itself
  state_ = net::build_network(e.topology, b);
  owned_ = true;
}
RunNetwork::~RunNetwork() {
  if (owned_ && lab_) {
    for (const auto& m : lab::down_lab(*lab_, name_))
      if (!m.ok)
        fmt::print(stderr, "xdc: {}: taking network {} down: {} (xdc clean --lab {})\n", m.machine,
                   name_, m.message, lab_->source_file);
  } else if (owned_) {
    if (std::string left = net::teardown_or_error(name_); !left.empty())
      fmt::print(stderr, "xdc: tearing down network {}: {} (xdc down {})\n", name_, left, name_);
  }
}

std::string default_out_dir(const Experiment& e) {
  char date[32];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y%m%d-%H%M%S", std::gmtime(&now));
  return (fs::path("results") / (std::string(date) + "-" + e.name)).string();
}

}  // namespace xdc::run
