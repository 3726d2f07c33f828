#include "harness/report/topology_svg.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "harness/common/units.h"
#include "harness/report/svg.h"

namespace xdc::report {

namespace {

constexpr double kChar = 6.6;    // px per character of an 11-12 px label (over-estimated)
constexpr double kLine = 15;     // px per label line
constexpr double kHostRow = 22;  // px per host inside a DC box
constexpr size_t kMaxHostRows = 8;
constexpr double kPad = 8;
constexpr const char* kWanColour = "#4e79a7";

double text_px(const std::string& s) {
  size_t chars = 0;  // UTF-8: continuation bytes take no column
  for (char c : s) chars += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return kChar * static_cast<double>(chars);
}

struct Box {
  const topo::Dc* dc = nullptr;
  std::vector<std::pair<std::string, std::string>> rows;  // host, its ranks in words
  std::string lan;
  double x = 0, w = 0, h = 0;
};

// A link's words: what each direction was set to (above its line), and what the link
// check measured (below).
struct Label {
  std::vector<std::string> above, below;
  double width() const {
    double w = 0;
    for (const auto* v : {&above, &below})
      for (const auto& s : *v) w = std::max(w, text_px(s));
    return w;
  }
};

std::optional<double> measured(const nlohmann::json& m, const char* key) {
  if (!m.is_object() || !m.contains(key) || !m[key].is_number()) return std::nullopt;
  return m[key].get<double>();
}

Label label_of(const topo::WanLink& l, const std::optional<nlohmann::json>& check) {
  Label out;
  const std::string ab = topo::describe(l.a_to_b), ba = topo::describe(l.b_to_a);
  if (ab == ba)
    out.above = {"each way: " + ab};
  else
    out.above = {l.a + " → " + l.b + ": " + ab, l.b + " → " + l.a + ": " + ba};
  if (const size_t n = l.a_to_b_changes.size() + l.b_to_a_changes.size(); n > 0)
    out.above.push_back(fmt::format("+ {} scheduled change{} while it ran", n, n > 1 ? "s" : ""));
  if (!check || !check->contains("links") || !(*check)["links"].is_array()) return out;
  for (const auto& [from, to] : {std::pair{l.a, l.b}, std::pair{l.b, l.a}})
    for (const auto& c : (*check)["links"]) {
      if (!c.is_object() || c.value("from", "") != from || c.value("to", "") != to) continue;
      const auto m = c.value("measured", nlohmann::json::object());
      std::string s;
      if (auto rtt = measured(m, "rtt_median_ms")) s += fmt::format("RTT {:.1f} ms", *rtt);
      if (auto g = measured(m, "goodput_mbit"))
        s += (s.empty() ? "" : ", ") + fmt::format("{:.0f} Mbit/s", *g);
      if (!s.empty()) out.below.push_back(from + " → " + to + " measured: " + s);
    }
  return out;
}

Box box_of(const topo::Dc& dc, const topo::IntraDc& lan,
           const std::map<std::string, std::vector<int>>& ranks_of) {
  Box b;
  b.dc = &dc;
  auto ranks = [&](const std::string& host) {
    auto it = ranks_of.find(host);
    return it == ranks_of.end() ? std::vector<int>{} : it->second;
  };
  const size_t shown = dc.hosts.size() > kMaxHostRows ? kMaxHostRows - 1 : dc.hosts.size();
  for (size_t i = 0; i < shown; ++i) {
    const std::string r = ranks_text(ranks(dc.hosts[i].name));
    b.rows.emplace_back(dc.hosts[i].name, r.empty() ? "no rank" : r);
  }
  if (shown < dc.hosts.size()) {
    std::vector<int> rest;
    for (size_t i = shown; i < dc.hosts.size(); ++i) {
      const auto r = ranks(dc.hosts[i].name);
      rest.insert(rest.end(), r.begin(), r.end());
    }
    std::sort(rest.begin(), rest.end());
    b.rows.emplace_back(fmt::format("+{} hosts", dc.hosts.size() - shown), ranks_text(rest));
  }
  b.lan = "LAN " + format_rate(lan.rate_bps) + ", " + format_duration(lan.delay_us);
  b.w = std::max(text_px(dc.name) + 24, text_px(b.lan) + 20);
  for (const auto& [host, r] : b.rows) b.w = std::max(b.w, text_px(host) + text_px(r) + 44);
  b.h = 30 + kHostRow * static_cast<double>(b.rows.size()) + 22;
  return b;
}

void draw_box(Svg& svg, const Box& b, double y0) {
  svg.rect(b.x, y0, b.w, b.h, "dc", b.dc->name);
  svg.text(b.x + 10, y0 + 19, b.dc->name, "dcn");
  double y = y0 + 28;
  for (const auto& [host, ranks] : b.rows) {
    svg.rect(b.x + 8, y, b.w - 16, kHostRow - 4, "host");
    svg.text(b.x + 14, y + 13, host, "hn");
    svg.text(b.x + b.w - 14, y + 13, ranks, ranks == "no rank" ? "rk none" : "rk", "end");
    y += kHostRow;
  }
  svg.text(b.x + 10, y0 + b.h - 9, b.lan, "rl");
}

// The label's lines centred on x, the first baseline at y.
void draw_lines(Svg& svg, const std::vector<std::string>& lines, double x, double y,
                const char* cls) {
  for (size_t k = 0; k < lines.size(); ++k)
    svg.text(x, y + kLine * static_cast<double>(k), lines[k], cls, "middle");
}

}  // namespace

std::string ranks_text(const std::vector<int>& ranks) {
  if (ranks.empty()) return "";
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    out += (out.empty() ? "" : ", ") +
           (j >= i + 2 ? fmt::format("{}-{}", ranks[i], ranks[j]) : std::to_string(ranks[i]));
    if (j == i + 1) out += ", " + std::to_string(ranks[j]);
    i = j + 1;
  }
  return (ranks.size() == 1 ? "rank " : "ranks ") + out;
}

std::string topology_svg(const topo::Topology& t, const std::vector<std::string>& rank_hosts,
                         const std::optional<nlohmann::json>& link_check,
                         const std::vector<std::string>& sole_link_measured) {
  std::map<std::string, std::vector<int>> ranks_of;
  for (size_t r = 0; r < rank_hosts.size(); ++r)
    ranks_of[rank_hosts[r]].push_back(static_cast<int>(r));
  std::vector<Box> boxes;
  std::map<std::string, size_t> index;
  for (const auto& dc : t.dcs) {
    index[dc.name] = boxes.size();
    boxes.push_back(box_of(dc, t.intra_dc, ranks_of));
  }
  if (boxes.empty()) return "";
  // Links between neighbours in the row go across their gap; the others get lanes.
  std::vector<std::optional<Label>> gap(boxes.size());
  std::vector<std::pair<std::pair<size_t, size_t>, Label>> lanes;
  for (const auto& l : t.wan) {
    if (!index.count(l.a) || !index.count(l.b)) continue;
    const size_t i = std::min(index[l.a], index[l.b]), j = std::max(index[l.a], index[l.b]);
    Label label = label_of(l, link_check);
    if (t.wan.size() == 1)
      label.below.insert(label.below.end(), sole_link_measured.begin(), sole_link_measured.end());
    if (j == i + 1)
      gap[i] = std::move(label);
    else
      lanes.push_back({{i, j}, std::move(label)});
  }
  double hmin = 0;
  for (const auto& g : gap)
    if (g)
      hmin = std::max(
          hmin, 2 * kLine * static_cast<double>(std::max(g->above.size(), g->below.size())) + 24);
  double x = kPad, row_h = 0;
  for (size_t i = 0; i < boxes.size(); ++i) {
    boxes[i].x = x;
    boxes[i].h = std::max(boxes[i].h, hmin);
    row_h = std::max(row_h, boxes[i].h);
    x += boxes[i].w +
         (i + 1 < boxes.size() ? (gap[i] ? std::max(60.0, gap[i]->width() + 24) : 40) : 0);
  }
  const double width = std::max(x + kPad, [&] {
    double w = 0;
    for (const auto& l : lanes) w = std::max(w, l.second.width() + 2 * kPad);
    return w;
  }());
  double lane_y = kPad + row_h + 22, height = kPad + row_h + kPad;
  std::vector<double> lane_ys;
  for (const auto& l : lanes) {
    lane_ys.push_back(lane_y);
    height =
        lane_y + kLine * static_cast<double>(l.second.above.size() + l.second.below.size()) + 8;
    lane_y = height + 14;
  }

  Svg svg(width, height, "topo", "the emulated network: datacenters, hosts, ranks, WAN links");
  for (const auto& b : boxes) draw_box(svg, b, kPad);
  for (size_t i = 0; i + 1 < boxes.size(); ++i) {
    if (!gap[i]) continue;
    const Box &a = boxes[i], &b = boxes[i + 1];
    const double y = kPad + std::min(a.h, b.h) / 2, mid = (a.x + a.w + b.x) / 2;
    svg.line(a.x + a.w, y, b.x, y, "wan");
    draw_lines(svg, gap[i]->above, mid,
               y - 6 - kLine * static_cast<double>(gap[i]->above.size() - 1), "wl");
    draw_lines(svg, gap[i]->below, mid, y + 15, "wl m");
  }
  for (size_t k = 0; k < lanes.size(); ++k) {
    const auto& [ends, label] = lanes[k];
    const double off = 6 * static_cast<double>(k % 4) - 9, y = lane_ys[k];
    const double xa = boxes[ends.first].x + boxes[ends.first].w / 2 + off;
    const double xb = boxes[ends.second].x + boxes[ends.second].w / 2 + off;
    svg.polyline(
        {{xa, kPad + boxes[ends.first].h}, {xa, y}, {xb, y}, {xb, kPad + boxes[ends.second].h}},
        "wan lane", kWanColour);
    const double half = label.width() / 2;
    const double mid =
        std::clamp((xa + xb) / 2, half + kPad, std::max(half + kPad, width - half - kPad));
    draw_lines(svg, label.above, mid, y + 14, "wl");
    draw_lines(svg, label.below, mid, y + 14 + kLine * static_cast<double>(label.above.size()),
               "wl m");
  }
  return svg.str();
}

}  // namespace xdc::report
