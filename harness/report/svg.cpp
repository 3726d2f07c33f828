#include "harness/report/svg.h"

#include <fmt/format.h>

#include <cmath>

#include "harness/report/html.h"

namespace xdc::report {

std::string coord(double v) {
  if (!std::isfinite(v)) return "0";
  std::string s = fmt::format("{:.2f}", v);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

Svg::Svg(double width, double height, std::string_view cls, std::string_view label)
    : width_(width), height_(height), cls_(cls), label_(label) {}

void Svg::rect(double x, double y, double w, double h, std::string_view cls, std::string_view title,
               std::string_view fill) {
  body_ += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" class="{}")", coord(x),
                       coord(y), coord(std::max(0.0, w)), coord(std::max(0.0, h)), escape(cls));
  if (!fill.empty()) body_ += fmt::format(R"( fill="{}")", escape(fill));
  if (title.empty())
    body_ += "/>";
  else
    body_ += fmt::format("><title>{}</title></rect>", escape(title));
}

void Svg::line(double x1, double y1, double x2, double y2, std::string_view cls) {
  body_ += fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" class="{}"/>)", coord(x1),
                       coord(y1), coord(x2), coord(y2), escape(cls));
}

void Svg::text(double x, double y, std::string_view s, std::string_view cls,
               std::string_view anchor) {
  body_ += fmt::format(R"(<text x="{}" y="{}" class="{}" text-anchor="{}">{}</text>)", coord(x),
                       coord(y), escape(cls), escape(anchor), escape(s));
}

void Svg::polyline(const std::vector<std::pair<double, double>>& points, std::string_view cls,
                   std::string_view stroke) {
  std::string pts;
  for (auto& [x, y] : points) pts += coord(x) + "," + coord(y) + " ";
  if (!pts.empty()) pts.pop_back();
  body_ += fmt::format(R"(<polyline points="{}" class="{}" stroke="{}"/>)", pts, escape(cls),
                       escape(stroke));
}

void Svg::circle(double x, double y, double r, std::string_view cls, std::string_view fill) {
  body_ += fmt::format(R"(<circle cx="{}" cy="{}" r="{}" class="{}" fill="{}"/>)", coord(x),
                       coord(y), coord(r), escape(cls), escape(fill));
}

std::string Svg::str() const {
  return fmt::format(
             R"(<svg xmlns="http://www.w3.org/2000/svg" class="{}" viewBox="0 0 {} {}" width="{}" height="{}" role="img" aria-label="{}">)",
             escape(cls_), coord(width_), coord(height_), coord(width_), coord(height_),
             escape(label_)) +
         body_ + "</svg>";
}

std::vector<double> nice_ticks(double lo, double hi, int max_ticks) {
  std::vector<double> out;
  if (!std::isfinite(lo) || !std::isfinite(hi) || max_ticks < 2) return out;
  if (hi < lo) std::swap(lo, hi);
  if (hi == lo) return {lo};
  const double raw = (hi - lo) / (max_ticks - 1);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10 * mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  for (double v = std::ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step)
    out.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);
  return out;
}

}  // namespace xdc::report
