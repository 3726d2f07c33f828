#pragma once
// Link control: a live network's WAN directions changed in place (`xdc link set|down|up`,
// `xdc dc isolate|join`) and their live counters (`xdc link show`).
//
// A change names only what it changes; the direction's other parameters stay. Values are
// the topology's (undilated): on a network built with time dilation k (state.json) delays
// and jitter are applied x k and rates / k, as `xdc up` does. The backend that shapes the
// direction applies it in place (netem/shaper/shaper.h, reshape_egress): no teardown, no
// packet dropped or reordered by the change, FIFO order kept, queue limits from the new
// bandwidth-delay product. A direction that was unimpaired at `xdc up` is shaped from then
// on by the network's backend.
//
// Down: the direction drops every packet handed to it from then on (loss 100% in netem
// or in the delay line); packets already inside it are still delivered, its parameters
// are kept, and up restores them. A change while down applies on up.
//
// Every applied change is appended to the network's events log, events_path(net), one
// JSON object per line:
//   {"t_ns": CLOCK_REALTIME ns at which it was in force (the ranks' traces run on rank 0's
//            CLOCK_MONOTONIC: xdc run adds the difference, runner.cpp),
//    "kind": "link_set" | "link_down" | "link_up" | "link_restore" (ChangeSchedule)
//            | "dc_kill_ranks" (a run's event killed a DC's ranks: "dc", "ranks", no link),
//    "link": "east->west", "from", "to",
//    "changed": {the keys given, undilated: "delay_us", "jitter_us", "loss_pct", "rate_bps"},
//    "params": {the direction's parameters after it, undilated (state.h's LinkParams JSON)},
//    "down": bool, "apply_ms": request -> in force, "backend",
//    "source": "xdc link" | where a scheduled change was written, "FILE:LINE (at 4s)"}
// A run reads the lines whose t_ns falls within its span (read_link_events) into its
// events.json. The log lives in the state directory, so `xdc down`/`xdc clean` remove it.
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "harness/network/state.h"
#include "harness/topology/topology.h"
#include "netem/shaper/shaper.h"

namespace xdc::linkctl {

struct Direction {
  std::string from, to;  // DC names
  std::string name() const { return from + "->" + to; }
};

// The WAN of a network that is up, or of a topology (the simulator's): its name, DCs and
// every WAN direction. The directions a change hits are chosen over it, one way for the
// emulator and the simulator.
struct Wan {
  std::string name;
  std::vector<std::string> dcs;
  std::vector<Direction> directions;
};
Wan wan_of(const net::NetworkState& s);
Wan wan_of(const topo::Topology& t);
// The WAN directions between DCs `a` and `b`: both, or the one `only` names ("a->b" or
// "b->a"). Throws InputError naming the DC or link when there is none.
std::vector<Direction> link_directions(const Wan& w, const std::string& a, const std::string& b,
                                       const std::string& only = "");
// Every WAN direction that leaves or enters `dc`. Throws InputError for an unknown DC.
std::vector<Direction> dc_directions(const Wan& w, const std::string& dc);

// The network's state; throws InputError when no network `net` is up.
net::NetworkState load_network(const std::string& net);

struct AppliedChange {
  Direction dir;
  std::string kind;          // "link_set" | "link_down" | "link_up" | "link_restore"
  int64_t t_ns = 0;          // CLOCK_REALTIME at which it was in force
  double apply_ms = 0;       // from the request to t_ns
  netem::LinkParams params;  // after the change, undilated
  bool down = false;
  std::string source;
  nlohmann::json to_json(const topo::WanChange& c) const;  // one events-log line
};

// Applies `c` to each direction of `net` in turn (holding the StateLock), saving the
// state and appending to the events log after each. Throws InputError for an empty
// change, std::runtime_error when a backend fails (the directions changed before stay
// changed, and recorded). `ready`: the caller's handles by direction name (filled on first
// use), so that repeated changes skip finding the interface (shaper.h, ReshapeHandle).
std::vector<AppliedChange> change_links(
    const std::string& net, const std::vector<Direction>& dirs, const topo::WanChange& c,
    std::map<std::string, netem::ReshapeHandle>* ready = nullptr);

// The parameters a direction runs now (down: loss 100%), as built (dilated).
netem::LinkParams running_params(const net::ShapedLink& l);

// Fills `ready` for each direction of `net` that has something installed, ahead of its
// first change_links (a direction that cannot be prepared is left for change_links,
// which reports it).
void prepare_links(const std::string& net, const std::vector<Direction>& dirs,
                   std::map<std::string, netem::ReshapeHandle>& ready);

struct LinkStatus {
  const net::ShapedLink* link;    // into the state it was read from
  netem::LinkParams params;       // undilated
  netem::ShapeCounters counters;  // loss_drops: the loss model's alone, not the cuts'
  uint64_t down_drops = 0;        // packets dropped while the direction was cut
};
std::vector<LinkStatus> link_status(const net::NetworkState& s);

std::string events_path(const std::string& net);
// Appends one line to the events log (change_links does for each change; a run adds its
// other events, e.g. {"t_ns", "kind": "dc_kill_ranks", "dc", "source"}).
void append_event(const std::string& net, const nlohmann::json& line);
// For a run that failed: the WAN directions that were down at `at_ns` by the events in
// `events` (read_link_events), each with when and by what it was cut, in words ("" if none):
// "WAN link east->west was down from 4.0 s into the run until it failed 9.0 s later, cut
// by FILE:LINE (at 4s)".
std::string down_links_note(const std::vector<nlohmann::json>& events, int64_t start_ns,
                            int64_t at_ns);

// The events log's lines with from_ns <= t_ns <= to_ns (all by default), in order.
std::vector<nlohmann::json> read_link_events(const std::string& net, int64_t from_ns = 0,
                                             int64_t to_ns = INT64_MAX);

}  // namespace xdc::linkctl
