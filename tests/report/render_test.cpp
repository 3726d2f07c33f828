// A whole report rendered the way a reader sees it: `xdc simulate` writes a small run,
// `xdc report` builds the page, headless Chromium (Debian's `chromium`) loads it from disk.
// The DOM after rendering must hold every timeline block and section; the screenshot must
// be a picture of them (size as asked, not blank, the blocks' colours on it). The first
// screen of a laptop (1280 x 800) must hold the answer and the whole comparison table.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "common/text_file.h"
#include "harness/process/process.h"
#include "png.h"
#include "workloads/trace/trace.h"

namespace xdc::report {
namespace {
namespace fs = std::filesystem;

std::string chromium_path() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin");
  for (std::string d; std::getline(dirs, d, ':');)
    for (const char* name : {"chromium", "chromium-browser"})
      if (fs::exists(fs::path(d) / name)) return (fs::path(d) / name).string();
  return "";
}

size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

// How much of a screenshot is drawn on: share of non-white pixels, distinct colours, and
// pixels of exactly the F and BW block fills.
struct Ink {
  double share = 0;
  size_t colours = 0, blue = 0, green = 0;
};
Ink ink_of(const testing::Png& png) {
  Ink ink;
  size_t drawn = 0;
  std::set<uint32_t> colours;
  for (size_t i = 0; i + 2 < png.pixels.size(); i += png.channels) {
    const uint8_t R = png.pixels[i], G = png.pixels[i + 1], B = png.pixels[i + 2];
    drawn += R < 240 || G < 240 || B < 240;
    ink.blue += R == 0x4e && G == 0x79 && B == 0xa7;
    ink.green += R == 0x2e && G == 0x7d && B == 0x57;
    colours.insert((uint32_t{R} << 16) | (uint32_t{G} << 8) | B);
  }
  ink.share = static_cast<double>(drawn) / (static_cast<double>(png.width) * png.height);
  ink.colours = colours.size();
  return ink;
}

struct Rendered {
  fs::path dir;
  std::string dom;
  size_t compute_events = 0;
};

class ReportRender : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = chromium_path();
    if (chromium_.empty()) GTEST_SKIP() << "chromium is not installed (apt-get install chromium)";
    dir_ = fs::temp_directory_path() / ("xdc-report-render-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty() && !HasFailure()) fs::remove_all(dir_);
  }

  // Simulates `schedules`, builds the report, returns the DOM Chromium rendered.
  Rendered simulate_and_render(const std::vector<std::string>& simulate_args) {
    Rendered r;
    r.dir = dir_ / "results";
    std::vector<std::string> argv = {XDC_EXE, "simulate", "-o", r.dir.string()};
    argv.insert(argv.end(), simulate_args.begin(), simulate_args.end());
    auto sim = proc::run(argv, std::chrono::seconds(120));
    EXPECT_EQ(sim.exit_code, 0) << sim.err;
    auto rep = proc::run({XDC_EXE, "report", r.dir.string()}, std::chrono::seconds(120));
    EXPECT_EQ(rep.exit_code, 0) << rep.err;
    EXPECT_NE(rep.out.find("report.html"), std::string::npos);
    for (auto& sub : fs::directory_iterator(r.dir))
      if (fs::exists(sub.path() / "simulated.trace.csv"))
        for (auto& e :
             trace::from_csv(xdc::read_text_file_or_empty(sub.path() / "simulated.trace.csv"))
                 .events)
          r.compute_events += sched::is_compute(e.kind);
    auto dom = proc::run(chromium({"--dump-dom", url(r.dir)}), std::chrono::seconds(120));
    EXPECT_EQ(dom.exit_code, 0) << dom.err;
    r.dom = dom.out;
    return r;
  }

  std::vector<std::string> chromium(std::vector<std::string> args) {
    std::vector<std::string> argv = {
        chromium_,      "--headless",        "--disable-gpu",
        "--no-sandbox", "--hide-scrollbars", "--user-data-dir=" + (dir_ / "profile").string()};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }
  static std::string url(const fs::path& results) {
    return "file://" + fs::absolute(results / "report.html").string();
  }

  // The first screen of `results`/report.html in a 1280 x 800 window: where the browser
  // laid out the answer and the comparison table (a copy of the page gets a script that
  // writes their boxes into the DOM, read back with --dump-dom; the report itself has no
  // script), and a screenshot of that screen (`png`).
  struct FirstScreen {
    double answer_bottom = -1, table_top = -1, table_bottom = -1, table_right = -1;
    double width = 0;
    std::string dom;
    testing::Png png;
  };
  FirstScreen first_screen(const fs::path& results, const fs::path& png) {
    FirstScreen f;
    std::string page = xdc::read_text_file_or_empty(results / "report.html");
    const size_t end = page.rfind("</body>");
    if (end == std::string::npos) return f;
    page.insert(end,
                "<script>(function(){var t=document.querySelector('table.cmp')."
                "getBoundingClientRect(),a=document.querySelector('p.answer')."
                "getBoundingClientRect();document.body.setAttribute('data-first-screen',[a.bottom,"
                "t.top,t.bottom,t.right,window.innerWidth].join(' '));})();"
                "</script>");
    const fs::path probe = results / "probe.html";
    std::ofstream(probe) << page;
    auto dom =
        proc::run(chromium({"--window-size=1280,800", "--dump-dom", "file://" + probe.string()}),
                  std::chrono::seconds(120));
    EXPECT_EQ(dom.exit_code, 0) << dom.err;
    f.dom = dom.out;
    const std::string key = "data-first-screen=\"";
    if (const size_t at = f.dom.find(key); at != std::string::npos)
      std::istringstream(f.dom.substr(at + key.size())) >> f.answer_bottom >> f.table_top >>
          f.table_bottom >> f.table_right >> f.width;
    fs::remove(png);
    auto s = proc::run(
        chromium({"--screenshot=" + png.string(), "--window-size=1280,800", url(results)}),
        std::chrono::seconds(120));
    EXPECT_EQ(s.exit_code, 0) << s.err;
    f.png = testing::read_png(png.string());
    return f;
  }
  // The comparison table wholly inside the window, under the answer.
  static void expect_on_first_screen(const FirstScreen& f) {
    // The layout is at the window's width. Its height does not shape the page (no vh
    // units), and --dump-dom's viewport is the window less headless's frame, so the first
    // screen is the page's top 800 px, as the screenshot takes it.
    ASSERT_EQ(f.width, 1280) << "no layout read back from the probe";
    EXPECT_GT(f.answer_bottom, 0);
    EXPECT_LE(f.answer_bottom, f.table_top);
    EXPECT_GT(f.table_bottom, f.table_top);
    EXPECT_LE(f.table_bottom, 800) << "the comparison ends below the first screen";
    EXPECT_LE(f.table_right, 1280) << "the comparison is cut off at the right";
    EXPECT_EQ(f.png.width, 1280);
    EXPECT_EQ(f.png.height, 800);
    if (f.png.channels > 0) {
      EXPECT_GT(ink_of(f.png).share, 0.05);
    }
  }

  std::string chromium_;
  fs::path dir_;
};

// A simulation: the answer is the prediction, and the table of predictions is on the
// first screen.
TEST_F(ReportRender, FirstScreenHoldsTheAnswerAndTheComparisonOfASimulation) {
  const Rendered r =
      simulate_and_render({"--schedule", "1f1b,overlap,crosspipe-greedy", "--stages", "4",
                           "--microbatches", "8", "--dcs", "2", "--latency", "20ms", "--bandwidth",
                           "1gbit", "--tf", "20ms", "--tb", "40ms", "--activation", "4mb"});
  const FirstScreen f =
      first_screen(r.dir, fs::path(XDC_ARTEFACT_DIR) / "first-screen-simulated.png");
  expect_on_first_screen(f);
  EXPECT_NE(f.dom.find("<p class=\"answer\">Simulation only, nothing measured: "),
            std::string::npos);
  EXPECT_NE(f.dom.find("is predicted fastest: "), std::string::npos);
}

// A measured run (the demo's results, kept in tests/report/data/two-dc: three schedules
// repeated 3 times, a fourth failed): the answer names the fastest with its interval, the
// table of all four is on the first screen, the network is drawn under it.
TEST_F(ReportRender, FirstScreenHoldsTheAnswerAndTheComparisonOfAMeasuredRun) {
  const fs::path results = dir_ / "two-dc";
  fs::copy(fs::path(XDC_REPORT_DATA) / "two-dc", results, fs::copy_options::recursive);
  auto rep = proc::run({XDC_EXE, "report", results.string()}, std::chrono::seconds(120));
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  const FirstScreen f =
      first_screen(results, fs::path(XDC_ARTEFACT_DIR) / "first-screen-measured.png");
  expect_on_first_screen(f);
  EXPECT_NE(f.dom.find("<p class=\"answer\">crosspipe-greedy is fastest: 999.8 ms per iteration "
                       "(95% CI 956.9–1043 ms, 3 runs), 0.70x of 1f1b and 0.93x of overlap"),
            std::string::npos);
  EXPECT_NE(f.dom.find("zbh1 failed"), std::string::npos);
  EXPECT_NE(f.dom.find("<td class=\"n\">1.99 x<br>"),
            std::string::npos);  // Megatron's, in computes
  EXPECT_NE(f.dom.find("class=\"topo\""), std::string::npos);
  EXPECT_NE(f.dom.find(">each way: delay 40ms, jitter 1ms, rate 1gbit</text>"), std::string::npos);
  EXPECT_NE(f.dom.find("none (stock OpenMPI and TCP)"), std::string::npos);
  EXPECT_NE(f.dom.find("<details class=\"env\">"), std::string::npos);
}

TEST_F(ReportRender, SmallSimulatedRunDrawsTimelinesAndTable) {
  const Rendered r =
      simulate_and_render({"--schedule", "1f1b,overlap", "--stages", "4", "--microbatches", "8",
                           "--dcs", "2", "--latency", "20ms", "--bandwidth", "1gbit", "--tf",
                           "20ms", "--tb", "40ms", "--activation", "4mb"});
  ASSERT_GT(r.compute_events, 0u);
  // After rendering: both timelines, every compute block (+6 legend swatches: F, B, W,
  // BW, second chunk, PREFILL), the table.
  EXPECT_EQ(count(r.dom, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"gantt"), 2u);
  EXPECT_EQ(count(r.dom, "class=\"blk "), r.compute_events + 6);
  EXPECT_EQ(count(r.dom, "<div class=\"timeline\""), 2u);
  EXPECT_NE(r.dom.find("<section id=\"comparison\">"), std::string::npos);
  EXPECT_NE(r.dom.find(">idle ZB</th>"), std::string::npos);
  EXPECT_NE(r.dom.find("<td>overlap</td>"), std::string::npos);
  EXPECT_NE(r.dom.find(">time (ms)</text>"), std::string::npos);

  const fs::path shot = dir_ / "report.png";
  auto s =
      proc::run(chromium({"--screenshot=" + shot.string(), "--window-size=1280,1600", url(r.dir)}),
                std::chrono::seconds(120));
  ASSERT_EQ(s.exit_code, 0) << s.err;
  ASSERT_TRUE(fs::exists(shot));
  EXPECT_GT(fs::file_size(shot), 20'000u);  // a blank 1280x1600 PNG is a few KB
  const testing::Png png = testing::read_png(shot.string());
  EXPECT_EQ(png.width, 1280);
  EXPECT_EQ(png.height, 1600);
  if (png.channels == 0) {
    std::cout << "pixels not checked: " << png.error << "\n";
    return;
  }
  // Not blank: a good share of the page is ink, in many colours, among them the
  // timeline's forward blue (#4e79a7) and full-backward green (#2e7d57) block fills.
  const Ink ink = ink_of(png);
  std::cout << "screenshot: " << ink.share * 100 << " % ink, " << ink.colours << " colours, "
            << ink.blue << " F-blue and " << ink.green << " BW-green pixels\n";
  EXPECT_GT(ink.share, 0.05);
  EXPECT_GT(ink.colours, 50u);
  EXPECT_GT(ink.blue, 2000u);
  EXPECT_GT(ink.green, 2000u);
}

// The judge above, shown a blank page, says blank: the thresholds mean something.
TEST_F(ReportRender, BlankPageIsJudgedBlank) {
  const fs::path page = dir_ / "blank.html", shot = dir_ / "blank.png";
  std::ofstream(page) << "<!DOCTYPE html><html><body><p>.</p></body></html>\n";
  auto s = proc::run(chromium({"--screenshot=" + shot.string(), "--window-size=1280,1600",
                               "file://" + page.string()}),
                     std::chrono::seconds(120));
  ASSERT_EQ(s.exit_code, 0) << s.err;
  const testing::Png png = testing::read_png(shot.string());
  EXPECT_EQ(png.width, 1280);
  if (png.channels == 0) GTEST_SKIP() << "pixels not decoded: " << png.error;
  const Ink ink = ink_of(png);
  EXPECT_LT(ink.share, 0.01);
  EXPECT_EQ(ink.blue, 0u);
  EXPECT_EQ(ink.green, 0u);
}

TEST_F(ReportRender, SixtyFourRanksFiveHundredTwelveMicrobatches) {
  const Rendered r = simulate_and_render({"--schedule", "1f1b", "--stages", "64", "--microbatches",
                                          "512", "--tf", "1ms", "--tb", "2ms"});
  EXPECT_EQ(r.compute_events, 2u * 64 * 512);
  EXPECT_EQ(count(r.dom, "class=\"blk "), r.compute_events + 6);
  EXPECT_EQ(count(r.dom, "class=\"rl\" text-anchor=\"end\">rank 0</text>"), 1u);  // the timeline's
  EXPECT_LT(fs::file_size(r.dir / "report.html"), 16u << 20);
}

// The probe above, shown a table that starts below the first screen, says so.
TEST_F(ReportRender, AComparisonBelowTheFirstScreenIsSeenThere) {
  const fs::path page = dir_ / "low";
  fs::create_directories(page);
  std::ofstream(page / "report.html")
      << "<!DOCTYPE html><html><body><p class=\"answer\">a</p><div style=\"height:900px\">"
         "</div><table class=\"cmp\"><tr><td>x</td></tr></table></body></html>\n";
  const FirstScreen f = first_screen(page, dir_ / "low.png");
  ASSERT_EQ(f.width, 1280);
  EXPECT_GT(f.table_top, 900);
  EXPECT_GT(f.table_bottom, 800);
}

// Needs no browser: a directory without summary.json is bad input, named, exit 2.
TEST(ReportCli, NotAResultsDirectoryExits2) {
  const fs::path dir =
      fs::temp_directory_path() / ("xdc-report-empty-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto r = proc::run({XDC_EXE, "report", dir.string()}, std::chrono::seconds(60));
  fs::remove_all(dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find((dir / "summary.json").string()), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("wrote"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "report.html"));
}

}  // namespace
}  // namespace xdc::report
