#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "workloads/trace/trace.h"

namespace xdc::trace {

std::string to_csv(const Trace& t) {
  std::ostringstream out;
  out << "rank,kind,stage,microbatch,start_ns,end_ns,bytes,peer,connections\n";
  for (const Event& e : t.events)
    out << e.rank << ',' << sched::kind_name(e.kind) << ',' << e.stage << ',' << e.microbatch << ','
        << e.start_ns << ',' << e.end_ns << ',' << e.bytes << ',' << e.peer << ',' << e.connections
        << '\n';
  return out.str();
}

Trace from_csv(const std::string& text) {
  static const std::map<std::string, Kind> kinds = {{"F", Kind::F},
                                                    {"B", Kind::B},
                                                    {"W", Kind::W},
                                                    {"BW", Kind::BW},
                                                    {"SEND_F", Kind::SEND_F},
                                                    {"RECV_F", Kind::RECV_F},
                                                    {"SEND_B", Kind::SEND_B},
                                                    {"RECV_B", Kind::RECV_B},
                                                    {"ALLREDUCE", Kind::ALLREDUCE},
                                                    {"OPT", Kind::OPT},
                                                    {"TP_ALLREDUCE", Kind::TP_ALLREDUCE},
                                                    {"PREFILL", Kind::PREFILL},
                                                    {"OUTER_SYNC", Kind::OUTER_SYNC}};
  Trace t;
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);  // header
  int line_no = 1;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) continue;
    std::istringstream ls(line);
    std::string f[9];
    for (auto& x : f) std::getline(ls, x, ',');
    auto k = kinds.find(f[1]);
    if (k == kinds.end())
      throw std::invalid_argument("trace CSV line " + std::to_string(line_no) +
                                  ": unknown kind \"" + f[1] + "\"");
    Event e{std::stoi(f[0]),
            k->second,
            std::stoi(f[2]),
            std::stoi(f[3]),
            std::stoll(f[4]),
            std::stoll(f[5]),
            std::stoll(f[6]),
            std::stoi(f[7]),
            f[8].empty() ? (std::stoi(f[7]) >= 0 ? 1 : 0) : std::stoi(f[8])};
    t.ranks = std::max(t.ranks, e.rank + 1);
    t.microbatches = std::max(t.microbatches, e.microbatch + 1);
    t.events.push_back(e);
  }
  return t;
}

std::map<std::pair<int, int64_t>, size_t> pair_partners(const Trace& t) {
  std::map<std::pair<int, int64_t>, size_t> out;
  for (size_t i = 0; i < t.events.size(); ++i) {
    const Event& e = t.events[i];
    if ((e.kind == Kind::B || e.kind == Kind::BW) && e.start_ns == e.end_ns)
      out[{e.rank, e.end_ns}] = i;
  }
  return out;
}

}  // namespace xdc::trace
