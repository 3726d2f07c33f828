#pragma once
// A small SVG writer for the report's charts. Coordinates are px of the picture's viewBox;
// the page scales the picture to its column (width 100%), so one chart serves a laptop
// screen and a paper figure. Looks come from CSS classes defined once in the page
// (report.cpp), so a chart is only geometry, classes and escaped text.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace xdc::report {

class Svg {
 public:
  // `label` becomes the picture's aria-label (escaped).
  Svg(double width, double height, std::string_view cls, std::string_view label);

  // `title`, when given, is the tooltip (escaped). `fill` overrides the class's colour.
  void rect(double x, double y, double w, double h, std::string_view cls,
            std::string_view title = {}, std::string_view fill = {});
  void line(double x1, double y1, double x2, double y2, std::string_view cls);
  // anchor: start | middle | end.
  void text(double x, double y, std::string_view s, std::string_view cls,
            std::string_view anchor = "start");
  void polyline(const std::vector<std::pair<double, double>>& points, std::string_view cls,
                std::string_view stroke);
  void circle(double x, double y, double r, std::string_view cls, std::string_view fill);

  double width() const { return width_; }
  double height() const { return height_; }
  std::string str() const;  // <svg ...>...</svg>

 private:
  double width_, height_;
  std::string cls_, label_, body_;
};

// Round tick values covering [lo, hi]: steps of 1, 2 or 5 x 10^k, at most `max_ticks`.
std::vector<double> nice_ticks(double lo, double hi, int max_ticks);

// Coordinates are written with at most 2 decimals ("12.5", not "12.500000").
std::string coord(double v);

}  // namespace xdc::report
