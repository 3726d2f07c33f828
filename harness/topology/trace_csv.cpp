// `trace:` of a WAN link or direction: a CSV of t_ms,delay_ms,rate_mbit,loss_pct rows ->
// topo::WanChange steps (format and checks: topology.h).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>

#include "common/number_text.h"
#include "harness/common/units.h"
#include "harness/topology/parse.h"

namespace xdc::topo {

namespace {

constexpr const char* kColumns = "t_ms,delay_ms,rate_mbit,loss_pct";

// One field of a row as a number, or an InputError at its column.
double field(const std::string& path, int line, int col, const std::string& text,
             const std::string& name, double min, double max) {
  size_t a = text.find_first_not_of(" \t"), b = text.find_last_not_of(" \t\r");
  std::string s = a == std::string::npos ? "" : text.substr(a, b - a + 1);
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v) ||
      v < min || v > max) {
    throw InputError({path, line, col}, name + ": expected a number in " + format_general(min) +
                                            ".." + format_general(max) + ", got \"" + s + "\"");
  }
  return v;
}

}  // namespace

std::vector<WanChange> load_trace_csv(const std::string& path, double compress) {
  std::ifstream in(path);
  if (!in) throw InputError({path, 0, 0}, "cannot read the trace file");
  std::vector<WanChange> out;
  std::string text;
  int line = 0;
  double last_t = -1;
  while (std::getline(in, text)) {
    ++line;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (text.find_first_not_of(" \t") == std::string::npos || text[0] == '#') continue;
    if (out.empty() && last_t < 0 && text.rfind("t_ms", 0) == 0) {
      if (text != kColumns)
        throw InputError({path, line, 1}, std::string("expected the header \"") + kColumns +
                                              "\", got \"" + text + "\"");
      continue;
    }
    std::vector<std::pair<int, std::string>> cells;  // column (1-based), text
    size_t at = 0;
    while (true) {
      size_t comma = text.find(',', at);
      cells.push_back({static_cast<int>(at) + 1, text.substr(at, comma - at)});
      if (comma == std::string::npos) break;
      at = comma + 1;
    }
    if (cells.size() != 4)
      throw InputError({path, line, 1}, std::string("expected 4 columns ") + kColumns + ", got " +
                                            std::to_string(cells.size()));
    double t = field(path, line, cells[0].first, cells[0].second, "t_ms", 0, 1e9);
    if (t <= last_t)
      throw InputError({path, line, cells[0].first}, "t_ms: expected rows in time order, after " +
                                                         std::to_string(last_t) + ", got " +
                                                         cells[0].second);
    last_t = t;
    WanChange c;
    c.at_us = static_cast<uint64_t>(std::llround(t * 1000 / compress));
    c.delay_us = static_cast<uint64_t>(std::llround(
        field(path, line, cells[1].first, cells[1].second, "delay_ms", 0, kMaxDurationUs / 1e3) *
        1000));
    c.rate_bps = static_cast<uint64_t>(std::llround(
        field(path, line, cells[2].first, cells[2].second, "rate_mbit", 0.001, kMaxRateBps / 1e6) *
        1e6));
    c.loss_pct = field(path, line, cells[3].first, cells[3].second, "loss_pct", 0, 100);
    c.pos = {path, line, 1};
    out.push_back(c);
  }
  if (out.empty())
    throw InputError({path, std::max(line, 1), 1},  // its last line: where a row is missing
                     std::string("expected rows of ") + kColumns + ", got none");
  return out;
}

std::vector<WanChange> load_mahimahi_trace(const std::string& path, uint64_t window_us,
                                           double compress) {
  std::ifstream in(path);
  if (!in) throw InputError({path, 0, 0}, "cannot read the trace file");
  // Delivery opportunities per window, the windows that have any: a trace may span days of
  // 1 ms windows, too many to hold each.
  std::map<uint64_t, uint64_t> per_window;
  std::string text;
  int line = 0;
  double last_ms = 0;
  while (std::getline(in, text)) {
    ++line;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (text.find_first_not_of(" \t") == std::string::npos || text[0] == '#') continue;
    const double ms = field(path, line, 1, text, "delivery time (ms)", 0, 1e9);
    if (ms != std::floor(ms))
      throw InputError(
          {path, line, 1},
          "delivery time (ms): expected whole milliseconds (Mahimahi's format), got \"" + text +
              "\"");
    if (ms < last_ms)
      throw InputError({path, line, 1}, "delivery time (ms): expected nondecreasing times, after " +
                                            std::to_string(static_cast<int64_t>(last_ms)) +
                                            ", got " + text);
    last_ms = ms;
    ++per_window[static_cast<uint64_t>(ms * 1000 / static_cast<double>(window_us))];
  }
  if (per_window.empty())
    throw InputError({path, std::max(line, 1), 1},
                     "expected one delivery time (ms) per line, got none");
  std::vector<WanChange> out;
  // Window w at its rate: MTU-sized packets per window; an empty window (a blackout) keeps
  // one packet's worth. A change only where the rate changes.
  auto add = [&](uint64_t w, uint64_t packets) {
    const double bps = static_cast<double>(std::max<uint64_t>(packets, 1)) * kMahimahiPacketBytes *
                       8 * 1e6 / static_cast<double>(window_us);
    const auto rate = static_cast<uint64_t>(std::llround(bps));
    if (!out.empty() && out.back().rate_bps == rate) return;
    WanChange c;
    c.at_us = static_cast<uint64_t>(std::llround(static_cast<double>(w * window_us) / compress));
    c.rate_bps = rate;
    c.pos = {path, 1, 1};
    out.push_back(c);
  };
  uint64_t next = 0;  // the first window not yet added
  for (const auto& [w, packets] : per_window) {
    if (w > next) add(next, 0);  // the empty windows before w
    add(w, packets);
    next = w + 1;
  }
  return out;
}

std::vector<WanChange> loop_changes(std::vector<WanChange> one, uint64_t period_us) {
  if (one.empty() || period_us == 0) return one;
  std::vector<WanChange> out;
  for (uint64_t base = 0; base < kLoopHorizonUs && out.size() < kLoopMaxSteps; base += period_us)
    for (const WanChange& c : one) {
      if (c.at_us >= period_us) break;
      WanChange x = c;
      x.at_us += base;
      out.push_back(x);
    }
  return out;
}

std::vector<WanChange> read_trace(const yaml::Value& v) {
  std::string file, format = "csv";
  double compress = 1;
  bool loop = false;
  uint64_t window_us = 100'000;
  // A file that can't be read is an error at the key that names it.
  auto readable = [](const yaml::Value& at, const std::string& path) {
    if (!std::ifstream(path)) at.error("cannot read the trace file " + path);
    return path;
  };
  if (v.is_map()) {
    yaml::Map m = v.map({"file", "compress", "loop", "format", "window"});
    const yaml::Value f = m.require("file");
    file = readable(f, f.file_path());
    if (auto c = m.get("compress")) compress = c->number(1, 10000);
    if (auto l = m.get("loop")) loop = l->boolean();
    if (auto f = m.get("format")) format = f->choice({"csv", "mahimahi"});
    if (auto w = m.get("window")) {
      if (format != "mahimahi") w->error("window: goes with format: mahimahi");
      window_us = w->duration_us();
      if (window_us < 1000) w->fail("a window of at least 1ms");
    }
  } else {
    file = readable(v, v.file_path());
  }
  std::vector<WanChange> out = format == "mahimahi" ? load_mahimahi_trace(file, window_us, compress)
                                                    : load_trace_csv(file, compress);
  if (!loop) return out;
  // One period: Mahimahi's trace ends at its last window; a CSV's last row lasts as long
  // as the row before it (a one-row trace does not change: nothing to repeat).
  uint64_t period = 0;
  if (format == "mahimahi") {
    std::ifstream in(file);
    double last = 0;
    for (std::string t; std::getline(in, t);)
      if (!t.empty() && t[0] != '#' && t.find_first_not_of(" \t\r") != std::string::npos)
        last = std::stod(t);
    period =
        static_cast<uint64_t>(std::llround(std::ceil(last * 1000 / static_cast<double>(window_us)) *
                                           static_cast<double>(window_us) / compress));
  } else if (out.size() > 1) {
    period = out.back().at_us + (out.back().at_us - out[out.size() - 2].at_us);
  }
  return loop_changes(std::move(out), period);
}

}  // namespace xdc::topo
