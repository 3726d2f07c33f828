// Sweep files: reading, grid expansion, overrides by dotted path, axis values and the
// metrics a plot names (see sweep.h).
#include "harness/sweep/sweep.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <stdexcept>

#include "common/text_file.h"
#include "harness/common/units.h"
#include "harness/common/yaml_reader.h"

namespace xdc::sweep {
namespace fs = std::filesystem;

namespace {

std::vector<std::string> split_key(const std::string& key) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t dot = key.find('.', start);
    parts.push_back(key.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return parts;
}

std::string last_part(const std::string& key) {
  const size_t dot = key.rfind('.');
  return dot == std::string::npos ? key : key.substr(dot + 1);
}

// Keeps [A-Za-z0-9.+-], maps the rest to '_', at most 40 characters.
std::string sanitize(const std::string& s) {
  std::string out;
  for (char c : s) {
    const bool keep =
        std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '+';
    if (keep)
      out += c;
    else if (!out.empty() && out.back() != '_')
      out += '_';
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  if (out.size() > 40) out.resize(40);
  return out.empty() ? "x" : out;
}

void check_key(const yaml::Value& key_node, const std::string& key) {
  for (auto& part : split_key(key))
    if (part.empty()) key_node.fail("a dotted experiment key like \"wan.delay\" (no empty parts)");
}

class Reader {
 public:
  explicit Reader(const std::string& file) { s_.file = file; }

  Sweep read(const yaml::Value& root) {
    yaml::Map top = root.map({}, "a sweep: a map with experiment and grid");
    top.check_keys({"name", "description", "experiment", "grid", "zip", "plots"},
                   {{"base", "experiment"}, {"axes", "grid"}, {"plot", "plots"}});
    s_.name = top.get("name") ? top.get("name")->scalar() : fs::path(s_.file).stem().string();
    if (top.get("description")) s_.description = top.get("description")->scalar();
    const yaml::Value exp = top.require("experiment");
    s_.base_file = exp.file_path();
    try {
      s_.base = yaml::load_file(s_.base_file).node();
    } catch (const InputError& e) {
      exp.error("the base experiment: " + std::string(e.what()));
    }
    if (!s_.base.IsMap()) exp.error("the base experiment " + s_.base_file + " is not a map");
    if (auto g = top.get("grid")) read_grid(*g);
    if (auto z = top.get("zip")) read_zip(*z);
    if (s_.axes.empty())
      root.error(
          "a sweep needs at least one axis: a 'grid' key with a list of values, or a 'zip' group");
    size_t points = 1;
    for (const Axis& a : s_.axes)
      if ((points *= a.size()) > kMaxPoints)
        throw InputError(a.pos, a.name + ": a sweep of at most " + std::to_string(kMaxPoints) +
                                    " points, got more with this axis");
    if (auto p = top.get("plots")) read_plots(*p);
    if (s_.plots.empty()) default_plots();
    return std::move(s_);
  }

 private:
  void claim(const yaml::Value& key_node, const std::string& key) {
    check_key(key_node, key);
    for (auto& k : claimed_) {
      const bool clash = k == key || key.rfind(k + ".", 0) == 0 || k.rfind(key + ".", 0) == 0;
      if (clash) key_node.error("set twice in this sweep (also by \"" + k + "\")");
    }
    claimed_.push_back(key);
  }

  std::vector<yaml::Value> value_list(const yaml::Value& v) {
    std::vector<yaml::Value> items = v.list("a list of values, one per point");
    if (items.empty()) v.fail("a non-empty list of values");
    for (auto& it : items)
      if (it.is_null()) it.fail("a value");
    return items;
  }

  void read_grid(const yaml::Value& g) {
    yaml::Map m = g.map({}, "a map of dotted experiment keys to lists of values");
    for (auto& e : m.entries()) {
      claim(e.key_node, e.key);
      Axis a;
      a.name = e.key;
      a.keys = {e.key};
      a.pos = e.key_node.pos();
      a.values.emplace_back();
      for (auto& it : value_list(e.value)) {
        a.values[0].push_back(it.node());
        a.value_pos.push_back(it.pos());
        a.labels.push_back(label_of(it.node()));
      }
      check_distinct(e.value, a);
      s_.axes.push_back(std::move(a));
    }
  }

  void read_zip(const yaml::Value& z) {
    for (auto& group : z.list("a list of zip groups {name, labels, set: {KEY: [...]}}")) {
      yaml::Map m = group.map({"name", "labels", "set"}, "a zip group {name, labels, set}");
      const yaml::Value set = m.require("set");
      yaml::Map keys = set.map({}, "a map of dotted experiment keys to lists of values");
      if (keys.entries().empty()) set.fail("at least one key");
      Axis a;
      a.pos = group.pos();
      size_t n = 0;
      for (auto& e : keys.entries()) {
        claim(e.key_node, e.key);
        std::vector<yaml::Value> items = value_list(e.value);
        if (a.keys.empty()) {
          n = items.size();
          for (auto& it : items) a.value_pos.push_back(it.pos());
        } else if (items.size() != n) {
          e.value.fail("a list of " + std::to_string(n) + " values (as long as \"" + a.keys[0] +
                       "\"'s)");
        }
        a.keys.push_back(e.key);
        a.values.emplace_back();
        for (auto& it : items) a.values.back().push_back(it.node());
      }
      a.name = m.get("name") ? m.get("name")->scalar() : a.keys[0];
      for (auto& other : s_.axes)
        if (other.name == a.name)
          (m.get("name") ? *m.get("name") : group).error("axis name \"" + a.name + "\" used twice");
      if (auto l = m.get("labels")) {
        std::vector<yaml::Value> labels = l->list("a list of labels");
        if (labels.size() != n)
          l->fail("a list of " + std::to_string(n) + " labels, one per value");
        for (auto& x : labels) a.labels.push_back(x.scalar("a label"));
      } else {
        for (auto& v : a.values[0]) a.labels.push_back(label_of(v));
      }
      check_distinct(m.get("labels") ? *m.get("labels") : set, a);
      s_.axes.push_back(std::move(a));
    }
  }

  void check_distinct(const yaml::Value& where, const Axis& a) {
    std::set<std::string> seen;
    for (auto& l : a.labels)
      if (!seen.insert(l).second) where.error("value \"" + l + "\" appears twice");
  }

  void read_plots(const yaml::Value& p) {
    for (auto& item : p.list("a list of plots {x: AXIS, y: METRIC}")) {
      yaml::Map m = item.map({"x", "y", "simulated"}, "a plot {x: AXIS, y: METRIC}");
      PlotSpec spec;
      const yaml::Value x = m.require("x");
      spec.x = x.scalar("an axis name");
      bool found = false;
      std::vector<std::string> names;
      for (auto& a : s_.axes) {
        names.push_back(a.name);
        found = found || a.name == spec.x;
      }
      if (!found) x.fail("one of the sweep's axes: " + yaml::join(names));
      spec.y = m.require("y").choice(metric_names());
      if (auto sim = m.get("simulated")) spec.simulated = sim->boolean();
      s_.plots.push_back(spec);
    }
  }

  void default_plots() {
    const Axis* x = &s_.axes.front();
    for (auto& a : s_.axes)
      if (axis_is_numeric(a)) {
        x = &a;
        break;
      }
    s_.plots.push_back({x->name, "iteration_s", true});
    s_.plots.push_back({x->name, "slowdown", true});
  }

  Sweep s_;
  std::vector<std::string> claimed_;
};

}  // namespace

std::vector<std::string> metric_names() {
  return {"iteration_s",
          "iteration_s_p50",
          "iteration_s_p95",
          "slowdown",
          "bubble.megatron",
          "bubble.zerobubble",
          "bubble.crosspipe",
          "simulated_iteration_s",
          "simulated_bubble.megatron",
          "simulated_bubble.zerobubble",
          "simulated_bubble.crosspipe",
          "measured_over_simulated",
          "tokens_per_s",
          "iteration_s_max",
          "simulated_iteration_s_max",
          "simulated_slowdown",
          "eval_loss",
          "outer_bytes_per_step",
          "stall_s_per_sync",
          "utilisation",
          "simulated_utilisation"};
}

std::optional<double> numeric_value(const std::string& label, std::string* unit) {
  auto set = [&](const char* u) {
    if (unit) *unit = u;
  };
  if (auto d = parse_duration_us(label); d && label != "0") {
    set("ms");
    return static_cast<double>(*d.value) / 1000.0;
  }
  if (auto r = parse_rate_bps(label)) {
    set("Mbit/s");
    return static_cast<double>(*r.value) / 1e6;
  }
  if (!label.empty() && label.back() == '%')
    if (auto p = parse_percent(label)) {
      set("%");
      return *p.value;
    }
  char* end = nullptr;
  const double x = std::strtod(label.c_str(), &end);
  if (!label.empty() && end == label.c_str() + label.size() && std::isfinite(x)) {
    set("");
    return x;
  }
  return std::nullopt;
}

bool axis_is_numeric(const Axis& a) {
  for (auto& l : a.labels)
    if (!numeric_value(l)) return false;
  return !a.labels.empty();
}

size_t reference_axis(const Sweep& s) {
  for (size_t a = 0; a < s.axes.size(); ++a)
    if (axis_is_numeric(s.axes[a])) return a;
  return 0;
}

std::string label_of(const YAML::Node& v) {
  if (v.IsScalar()) return v.Scalar();
  if (v.IsSequence() && v.size() == 1 && v[0].IsScalar()) return v[0].Scalar();
  YAML::Emitter out;
  out.SetMapFormat(YAML::Flow);
  out.SetSeqFormat(YAML::Flow);
  out << v;
  return out.c_str();
}

Sweep parse_sweep(const std::string& text, const std::string& file_label) {
  Sweep s = Reader(file_label).read(yaml::parse(text, file_label));
  // Each value once (with the other axes at their first value), then every point: an
  // error names the value that causes it when one value alone does.
  for (size_t a = 0; a < s.axes.size(); ++a)
    for (size_t v = 0; v < s.axes[a].size(); ++v) {
      Point p;
      p.at.assign(s.axes.size(), 0);
      p.at[a] = v;
      try {
        run::parse_experiment(point_text(s, p), s.base_file);
      } catch (const InputError& e) {
        // A single key's message names it already; a zip group's names one of its keys.
        // A key the experiment does not have is the key's fault, not the value's.
        const Axis& ax = s.axes[a];
        const bool key =
            ax.keys.size() == 1 && e.message().rfind(ax.keys[0] + ": unknown key", 0) == 0;
        throw InputError(key ? ax.pos : ax.value_pos[v],
                         ax.keys.size() == 1 ? e.message()
                                             : ax.name + " = " + ax.labels[v] + ": " + e.message());
      }
    }
  for (auto& p : expand(s)) point_experiment(s, p);
  return s;
}

Sweep load_sweep(const std::string& path) {
  return parse_sweep(read_input_file(path, "the sweep file"), path);
}

std::vector<Point> expand(const Sweep& s) {
  std::vector<Point> out;
  std::vector<size_t> at(s.axes.size(), 0);
  std::set<std::string> ids;
  while (true) {
    Point p;
    p.index = out.size();
    p.at = at;
    for (size_t a = 0; a < s.axes.size(); ++a) {
      if (!p.id.empty()) p.id += "_";
      p.id += sanitize(last_part(s.axes[a].name)) + "-" + sanitize(s.axes[a].labels[at[a]]);
    }
    if (!ids.insert(p.id).second) p.id += "-" + std::to_string(p.index);
    out.push_back(std::move(p));
    // Odometer: the last axis varies fastest.
    size_t a = s.axes.size();
    while (a > 0) {
      --a;
      if (++at[a] < s.axes[a].size()) break;
      at[a] = 0;
      if (a == 0) return out;
    }
    if (s.axes.empty()) return out;
  }
}

void set_by_path(YAML::Node& root, const std::string& key, const YAML::Node& value) {
  const std::vector<std::string> parts = split_key(key);
  // A part of digits indexes a list the base experiment has ("events.0.down_for").
  auto index_of = [](const YAML::Node& node, const std::string& part) -> std::optional<size_t> {
    if (!node.IsSequence() || part.empty() ||
        part.find_first_not_of("0123456789") != std::string::npos)
      return std::nullopt;
    return std::stoul(part);
  };
  YAML::Node node = root;
  std::string walked;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    walked += (walked.empty() ? "" : ".") + parts[i];
    YAML::Node next;
    if (node.IsSequence()) {
      const auto at = index_of(node, parts[i]);
      if (!at || *at >= node.size())
        throw std::invalid_argument("\"" + walked + "\": the base experiment's list has " +
                                    std::to_string(node.size()) + " items (index them from 0)");
      next = node[*at];
    } else {
      next = node[parts[i]];
      if (!next.IsDefined() || next.IsNull()) {
        node[parts[i]] = YAML::Node(YAML::NodeType::Map);
        next = node[parts[i]];
      }
    }
    if (!next.IsMap() && !next.IsSequence())
      throw std::invalid_argument("\"" + walked + "\" in the base experiment is not a map");
    node.reset(next);
  }
  if (node.IsSequence()) {
    const auto at = index_of(node, parts.back());
    if (!at || *at >= node.size())
      throw std::invalid_argument("\"" + key + "\": the base experiment's list has " +
                                  std::to_string(node.size()) + " items (index them from 0)");
    node[*at] = YAML::Clone(value);
    return;
  }
  node[parts.back()] = YAML::Clone(value);
}

std::string point_text(const Sweep& s, const Point& p) {
  YAML::Node root = YAML::Clone(s.base);
  for (size_t a = 0; a < s.axes.size(); ++a)
    for (size_t k = 0; k < s.axes[a].keys.size(); ++k) {
      try {
        set_by_path(root, s.axes[a].keys[k], s.axes[a].values[k][p.at[a]]);
      } catch (const std::invalid_argument& e) {
        throw InputError(s.axes[a].pos, s.axes[a].keys[k] + ": cannot set: " + e.what());
      }
    }
  YAML::Emitter out;
  out << root;
  return std::string("# ") + s.file + ", point " + p.id + "\n" + out.c_str() + "\n";
}

InputError point_error(const Sweep& s, const Point& p, const InputError& e) {
  std::string where;
  for (size_t a = 0; a < s.axes.size(); ++a)
    where += (where.empty() ? "" : ", ") + s.axes[a].name + "=" + s.axes[a].labels[p.at[a]];
  return InputError(s.axes.empty() ? SourcePos{s.file, 1, 1} : s.axes.front().pos,
                    "point (" + where + "): " + e.message());
}

run::Experiment point_experiment(const Sweep& s, const Point& p) {
  const std::string text = point_text(s, p);
  try {
    run::Experiment e = run::parse_experiment(text, s.base_file);
    // Positions in the point's generated text are no line of the base file: later errors
    // (a schedule these sizes refuse, a network's dilation) name the file alone.
    for (auto& c : e.schedules) c.pos = {};
    e.time_dilation_pos = {};
    return e;
  } catch (const InputError& e) {
    throw point_error(s, p, e);
  }
}

}  // namespace xdc::sweep
