// `trace:` of a WAN link or direction: a CSV of t_ms,delay_ms,rate_mbit,loss_pct rows ->
// topo::WanChange steps (format and checks: topology.h).
#include <charconv>
#include <cmath>
#include <fstream>

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
    char range[96];
    std::snprintf(range, sizeof range, "a number in %g..%g", min, max);
    throw InputError({path, line, col}, name + ": expected " + range + ", got \"" + s + "\"");
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
    throw InputError({path, line, 0}, std::string("expected rows of ") + kColumns + ", got none");
  return out;
}

std::vector<WanChange> read_trace(const yaml::Value& v) {
  std::string file;
  double compress = 1;
  if (v.is_map()) {
    yaml::Map m = v.map({"file", "compress"});
    file = m.require("file").file_path();
    if (auto c = m.get("compress")) compress = c->number(1, 10000);
  } else {
    file = v.file_path();
  }
  return load_trace_csv(file, compress);
}

}  // namespace xdc::topo
