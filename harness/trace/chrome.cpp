#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <tuple>

#include "harness/trace/chrome.h"

namespace xdc::trace {

namespace {
bool is_send(Kind k) {
  return k == Kind::SEND_F || k == Kind::SEND_B;
}
bool is_recv(Kind k) {
  return k == Kind::RECV_F || k == Kind::RECV_B;
}

// Track of an event on its rank: 0 compute, 1 + 2*peer send, 2 + 2*peer recv.
int tid(const Event& e) {
  if (is_send(e.kind)) return 1 + 2 * e.peer;
  if (is_recv(e.kind)) return 2 + 2 * e.peer;
  return 0;
}

// The RECV a SEND feeds: SEND_F of stage s -> RECV_F of s+1, SEND_B of s -> RECV_B of s-1.
std::tuple<int, int, int, int, int> recv_key(const Event& send) {
  const bool fwd = send.kind == Kind::SEND_F;
  return {send.peer, send.rank, fwd ? 0 : 1, fwd ? send.stage + 1 : send.stage - 1,
          send.microbatch};
}
std::tuple<int, int, int, int, int> key_of_recv(const Event& r) {
  return {r.rank, r.peer, r.kind == Kind::RECV_F ? 0 : 1, r.stage, r.microbatch};
}
}  // namespace

std::string to_chrome_json(const Trace& t) {
  using nlohmann::json;
  json events = json::array();
  std::map<std::pair<int, int>, bool> tracks;
  for (int r = 0; r < t.ranks; ++r) {
    events.push_back({{"ph", "M"},
                      {"name", "process_name"},
                      {"pid", r},
                      {"tid", 0},
                      {"args", {{"name", "rank " + std::to_string(r)}}}});
    events.push_back({{"ph", "M"},
                      {"name", "thread_name"},
                      {"pid", r},
                      {"tid", 0},
                      {"args", {{"name", "compute"}}}});
  }
  std::map<std::tuple<int, int, int, int, int>, int> flow_ids;
  int next_flow = 1;
  for (const Event& e : t.events)
    if (is_send(e.kind)) flow_ids[recv_key(e)] = next_flow++;
  for (const Event& e : t.events) {
    const int track = tid(e);
    if (track != 0 && !tracks[{e.rank, track}]) {
      tracks[{e.rank, track}] = true;
      const std::string label =
          (is_send(e.kind) ? "send -> " : "recv <- ") + std::to_string(e.peer);
      events.push_back({{"ph", "M"},
                        {"name", "thread_name"},
                        {"pid", e.rank},
                        {"tid", track},
                        {"args", {{"name", label}}}});
    }
    std::string name = sched::to_string({e.kind, e.stage, e.microbatch, e.peer});
    json ev = {{"ph", "X"},
               {"name", name},
               {"cat", std::string(sched::kind_name(e.kind))},
               {"pid", e.rank},
               {"tid", track},
               {"ts", static_cast<double>(e.start_ns) / 1000.0},
               {"dur", static_cast<double>(e.end_ns - e.start_ns) / 1000.0},
               {"args", {{"stage", e.stage}, {"microbatch", e.microbatch}}}};
    if (sched::is_comm(e.kind)) {
      ev["args"]["bytes"] = e.bytes;
      ev["args"]["peer"] = e.peer;
      auto it = flow_ids.find(is_send(e.kind) ? recv_key(e) : key_of_recv(e));
      if (it != flow_ids.end()) {
        ev["bind_id"] = it->second;
        ev[is_send(e.kind) ? "flow_out" : "flow_in"] = true;
      }
    }
    events.push_back(std::move(ev));
  }
  json doc = {{"traceEvents", std::move(events)},
              {"displayTimeUnit", "ns"},
              {"otherData", {{"name", t.name}, {"microbatches", t.microbatches}}}};
  return doc.dump();
}

}  // namespace xdc::trace
