#include "harness/trace/chrome.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <tuple>
#include <vector>

namespace xdc::trace {

namespace {
using sched::is_recv;
using sched::is_send;

// Track of an event on its rank: 0 compute, 1 + 2*peer send, 2 + 2*peer recv, and the
// tensor-parallel all-reduces (inside F and B) on their own lane, kTpTrack.
constexpr int kTpTrack = 1 << 20;
int tid(const Event& e) {
  if (is_send(e.kind)) return 1 + 2 * e.peer;
  if (is_recv(e.kind)) return 2 + 2 * e.peer;
  if (e.kind == Kind::TP_ALLREDUCE) return kTpTrack;
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

std::string to_chrome_json(const Trace& t, const std::vector<Marker>& markers) {
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
  // A trace of several iterations holds each message once per iteration: the n-th SEND of
  // a message (in time order) feeds the n-th RECV of it, so flow ids are per occurrence.
  std::vector<size_t> order(t.events.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return t.events[a].start_ns < t.events[b].start_ns; });
  std::map<std::tuple<int, int, int, int, int>, std::vector<int>> sends_of;
  std::vector<int> flow_of(t.events.size(), 0);
  int next_flow = 1;
  for (size_t i : order)
    if (is_send(t.events[i].kind)) {
      flow_of[i] = next_flow++;
      sends_of[recv_key(t.events[i])].push_back(flow_of[i]);
    }
  std::map<std::tuple<int, int, int, int, int>, size_t> recvs_seen;
  for (size_t i : order)
    if (is_recv(t.events[i].kind)) {
      const auto key = key_of_recv(t.events[i]);
      const size_t n = recvs_seen[key]++;
      auto it = sends_of.find(key);
      if (it != sends_of.end() && n < it->second.size()) flow_of[i] = it->second[n];
    }
  for (size_t i = 0; i < t.events.size(); ++i) {
    const Event& e = t.events[i];
    const int track = tid(e);
    if (track != 0 && !tracks[{e.rank, track}]) {
      tracks[{e.rank, track}] = true;
      const std::string label =
          track == kTpTrack ? std::string("tensor-parallel all-reduce")
                            : (is_send(e.kind) ? "send -> " : "recv <- ") + std::to_string(e.peer);
      events.push_back({{"ph", "M"},
                        {"name", "thread_name"},
                        {"pid", e.rank},
                        {"tid", track},
                        {"args", {{"name", label}}}});
    }
    std::string name = e.kind == Kind::PREFILL  // bytes: the prompt's tokens
                           ? "PREFILL " + std::to_string(e.bytes) + " tokens"
                           : sched::to_string({e.kind, e.stage, e.microbatch, e.peer});
    json ev = {{"ph", "X"},
               {"name", name},
               {"cat", std::string(sched::kind_name(e.kind))},
               {"pid", e.rank},
               {"tid", track},
               {"ts", static_cast<double>(e.start_ns) / 1000.0},
               {"dur", static_cast<double>(e.end_ns - e.start_ns) / 1000.0},
               {"args", {{"stage", e.stage}, {"microbatch", e.microbatch}}}};
    if (e.kind == Kind::TP_ALLREDUCE) ev["args"]["bytes"] = e.bytes;
    if (sched::is_comm(e.kind)) {
      ev["args"]["bytes"] = e.bytes;
      ev["args"]["peer"] = e.peer;
      if (e.connections > 0) {  // trace.h: striped over that many, bytes / N each
        ev["args"]["connections"] = e.connections;
        ev["args"]["bytes_per_connection"] = e.bytes / e.connections;
      }
      if (flow_of[i]) {
        ev["bind_id"] = flow_of[i];
        ev[is_send(e.kind) ? "flow_out" : "flow_in"] = true;
      }
    }
    events.push_back(std::move(ev));
  }
  for (const Marker& m : markers)
    events.push_back({{"ph", "i"},
                      {"s", "g"},
                      {"name", m.name},
                      {"cat", "wan"},
                      {"pid", 0},
                      {"tid", 0},
                      {"ts", static_cast<double>(m.t_ns) / 1000.0},
                      {"args", {{"source", m.source}}}});
  json doc = {{"traceEvents", std::move(events)},
              {"displayTimeUnit", "ns"},
              {"otherData", {{"name", t.name}, {"microbatches", t.microbatches}}}};
  return doc.dump();
}

}  // namespace xdc::trace
