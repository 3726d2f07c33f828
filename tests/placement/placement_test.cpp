// Placement search (`xdc plan`): the search file's errors point into it, the enumeration
// finds the placements counted by hand, the ranking leaves out a DC behind a slow link,
// and the best placement written out loads as an experiment that predicts what was ranked.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "common/input_error.h"
#include "harness/placement/search.h"
#include "harness/plan/predict.h"
#include "tests/network/leftovers.h"

namespace {

using xdc::InputError;
using xdc::placement::parse_search;

const std::string kLabel = "tests/placement/search.yaml";

// Two DCs of two GPUs, a symmetric link; every shape of 4 ranks.
const std::string kTwoDcs = R"(name: two
dcs:
  - {name: east, gpus: 2}
  - {name: west, gpus: 2}
wan:
  - {between: [east, west], delay: 10ms, rate: 1gbit}
gpus: 4
compute: {modeled: {model: llama2-7b, device: a100, seq: 1024}}
microbatches: 4
schedules: [1f1b]
)";

// The InputError's "FILE:LINE:COL: " prefix, and its message.
std::string error_of(const std::string& text) {
  try {
    parse_search(text, kLabel);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(PlacementSearch, ErrorsPointIntoTheSearchFile) {
  // An unknown key.
  EXPECT_TRUE(std::regex_search(error_of(kTwoDcs + "dcz: 1\n"),
                                std::regex("^tests/placement/search.yaml:11:1: dcz: unknown key")))
      << error_of(kTwoDcs + "dcz: 1\n");
  // A DC's GPUs.
  std::string bad = kTwoDcs;
  bad.replace(bad.find("gpus: 2}"), 8, "gpus: two}");
  EXPECT_TRUE(std::regex_search(
      error_of(bad), std::regex("^tests/placement/search.yaml:3:24: dcs\\[0\\].gpus: expected an "
                                "integer in 1..250, got \"two\"")))
      << error_of(bad);
  // A WAN link to a DC not in the inventory: the topology's check, at the search's line.
  bad = kTwoDcs;
  bad.replace(bad.find("[east, west]"), 12, "[east, north]");
  EXPECT_TRUE(
      std::regex_search(error_of(bad), std::regex("^tests/placement/search.yaml:6:.*north")))
      << error_of(bad);
  // A base experiment key: the experiment's check, at the search's line.
  bad = kTwoDcs;
  bad.replace(bad.find("microbatches: 4"), 15, "microbatches: 0");
  EXPECT_TRUE(std::regex_search(
      error_of(bad),
      std::regex("^tests/placement/search.yaml:9:15: microbatches: expected an integer")))
      << error_of(bad);
  // What the search chooses cannot be given.
  EXPECT_TRUE(std::regex_search(
      error_of(kTwoDcs + "pipeline: {stages: 2, placement: [east-h1, west-h1]}\n"),
      std::regex("^tests/placement/search.yaml:11:1: pipeline: not in a placement search")));
  // Per-stage constants with several depths to compare.
  bad = kTwoDcs;
  const std::string shape = "{model: llama2-7b, device: a100, seq: 1024}";
  bad.replace(bad.find(shape), shape.size(), "{f: 10ms, b: 20ms}");
  EXPECT_TRUE(std::regex_search(
      error_of(bad), std::regex("^tests/placement/search.yaml:8:10: compute: constants and "
                                "profiles are per-stage costs at one pipeline depth; this search "
                                "compares depths 1, 2, 4")))
      << error_of(bad);
  // More ranks than GPUs.
  bad = kTwoDcs;
  bad.replace(bad.find("gpus: 4"), 7, "gpus: 5");
  EXPECT_TRUE(std::regex_search(error_of(bad),
                                std::regex("^tests/placement/search.yaml:7:7: .*5 ranks asked, the "
                                           "DCs have 4 GPUs")))
      << error_of(bad);
  // The experiment's `wan:` override is not the inventory's links.
  bad = kTwoDcs;
  const std::string links = "wan:\n  - {between: [east, west], delay: 10ms, rate: 1gbit}";
  bad.replace(bad.find(links), links.size(), "wan: {delay: 10ms}");
  EXPECT_TRUE(std::regex_search(
      error_of(bad), std::regex("^tests/placement/search.yaml:5:6: wan: expected a list")))
      << error_of(bad);
}

TEST(PlacementSearch, EnumeratesThePlacementsCountedByHand) {
  // 4 ranks over east (2 GPUs) and west (2 GPUs):
  //   4 x 1: east:2>west:2, west:2>east:2                                   -> 2
  //   2 x 2: pipelines east:2, west:2 (inside a DC: same links) and east:1>west:1,
  //          west:1>east:1 (over the link: same links both ways, it is symmetric);
  //          pairs that fit 2 + 2 GPUs: {east:2, west:2}; {e>w, e>w}, {e>w, w>e},
  //          {w>e, w>e}; never an inside-DC pipeline with a crossing one     -> 4
  //   1 x 4: {east, east, west, west}                                      -> 1
  const auto s = parse_search(kTwoDcs, kLabel);
  const auto all = xdc::placement::enumerate(s);
  std::vector<std::string> seen;
  for (const auto& p : all)
    seen.push_back(std::to_string(p.stages) + "x" + std::to_string(p.data_parallel) + " " +
                   p.describe(s));
  EXPECT_EQ(seen, (std::vector<std::string>{"1x4 2x east:1 | 2x west:1", "2x2 2x east:1>west:1",
                                            "2x2 east:1>west:1 | west:1>east:1",
                                            "2x2 2x west:1>east:1", "2x2 east:2 | west:2",
                                            "4x1 east:2>west:2", "4x1 west:2>east:2"}));
  // Slower east->west than west->east: east:1>west:1 and west:1>east:1 see different links
  // (the simulator simulates one replica for all), so they are not mixed: 6.
  std::string asym = kTwoDcs;
  asym.replace(asym.find("rate: 1gbit}"), 12, "rate: 1gbit, east_to_west: {rate: 100mbit}}");
  EXPECT_EQ(xdc::placement::enumerate(parse_search(asym, kLabel)).size(), 6u);
  // Constraints: 2 stages only.
  EXPECT_EQ(xdc::placement::enumerate(
                parse_search(kTwoDcs + "constraints: {min_stages: 2, max_stages: 2}\n", kLabel))
                .size(),
            4u);
  // Too many to predict.
  EXPECT_THROW(xdc::placement::enumerate(
                   parse_search(kTwoDcs + "constraints: {max_placements: 3}\n", kLabel)),
               InputError);
}

// Two near DCs with enough GPUs between them and a far one 200 ms away; a 4-stage
// pipeline (per-stage constants: one depth), 24 placements (2 DCs: 6 orders x (2, 2);
// 3 DCs: 6 orders x (1, 1, 2), (1, 2, 1), (2, 1, 1)).
const std::string kFar = R"(name: far
dcs:
  - {name: near1, gpus: 2}
  - {name: far, gpus: 2}
  - {name: near2, gpus: 2}
wan:
  - {between: [near1, near2], delay: 5ms, rate: 1gbit}
  - {between: [near1, far], delay: 200ms, rate: 1gbit}
  - {between: [near2, far], delay: 200ms, rate: 1gbit}
gpus: 4
constraints: {min_stages: 4}
compute: {modeled: {f: 20ms, b: 40ms, activation: 2mib}}
microbatches: 8
iterations: 3
schedules: [1f1b, overlap]
)";

TEST(PlacementSearch, LeavesOutTheDcBehindTheSlowLink) {
  const auto s = parse_search(kFar, kLabel);
  const auto o = xdc::placement::rank(s);
  EXPECT_EQ(o.placements, 24u);
  ASSERT_EQ(o.ranked.size(), 48u);
  // Every placement without `far` is faster than every placement with it.
  auto uses_far = [&](const xdc::placement::Ranked& r) {
    return r.placement.gpus_per_dc(3)[1] > 0;
  };
  size_t without = 0;
  while (without < o.ranked.size() && !uses_far(o.ranked[without])) ++without;
  ASSERT_GT(without, 0u);
  for (size_t i = without; i < o.ranked.size(); ++i) EXPECT_TRUE(uses_far(o.ranked[i])) << i;
  for (size_t i = 1; i < o.ranked.size(); ++i)
    EXPECT_LE(o.ranked[i - 1].iteration_s, o.ranked[i].iteration_s + 1e-4);
  // 200 ms one way is felt: the best with far is at least 0.4 s (a round trip) slower.
  EXPECT_GT(o.ranked[without].iteration_s, o.ranked[0].iteration_s + 0.4);
}

TEST(PlacementSearch, TheBestWrittenOutLoadsAndPredictsWhatWasRanked) {
  const auto s = parse_search(kFar, kLabel);
  const auto o = xdc::placement::rank(s);
  const auto& best = o.ranked.front();
  const std::string text =
      xdc::placement::experiment_text(s, best.placement, best.schedule, {"generated by a test"});
  EXPECT_EQ(text.rfind("# generated by a test\n", 0), 0u);
  const auto path = std::filesystem::temp_directory_path() /
                    ("xdc-placement-" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(path) << text;
  const xdc::run::Experiment e = xdc::run::load_experiment(path.string());
  std::filesystem::remove(path);
  EXPECT_EQ(e.name, "far");
  EXPECT_EQ(e.world_size(), 4);
  EXPECT_EQ(e.stages, best.placement.stages);
  ASSERT_EQ(e.schedules.size(), 1u);
  EXPECT_EQ(e.schedules[0].name, best.schedule);
  // One host per rank, only the DCs used, hosts named by the DC.
  int hosts = 0;
  for (const auto& dc : e.topology.dcs) {
    EXPECT_NE(dc.name, "far");
    hosts += static_cast<int>(dc.hosts.size());
  }
  EXPECT_EQ(hosts, 4);
  EXPECT_EQ(e.iterations, 3);
  const auto plan = xdc::run::make_plan(e);
  const auto pred = xdc::run::predict(plan, plan.schedules[0], plan.schedules[0].costs);
  EXPECT_NEAR(pred.iteration_s(), best.iteration_s, 1e-9);
}

TEST(PlacementSearch, ShippedSearchRanksAtLeastTenPlacements) {
  const auto s = xdc::placement::load_search("experiments/plan-3dc.yaml");
  const auto o = xdc::placement::rank(s);
  EXPECT_GE(o.ranked.size(), 10u);
  EXPECT_TRUE(o.not_predicted.empty());
}

TEST(PlanCli, BadSearchExitsTwoWithPosition) {
  auto r = xdc::testing::run_xdc({"plan", "tests/placement/bad-gpus.yaml"}, 60);
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("tests/placement/bad-gpus.yaml:8:11: gpus[1]: 4 ranks asked, the DCs "
                       "have 3 GPUs in all"),
            std::string::npos)
      << r.out;
}

TEST(PlanCli, JsonRanksAndWritesTheBest) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("xdc-plan-cli-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "search.yaml") << kFar;
  const std::string best = (dir / "best.yaml").string();
  auto r = xdc::testing::run_xdc(
      {"plan", (dir / "search.yaml").string(), "--json", "--top", "3", "-o", best}, 60);
  ASSERT_EQ(r.rc, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  EXPECT_EQ(j["placements"], 24);
  ASSERT_EQ(j["ranked"].size(), 3u);
  EXPECT_EQ(j["ranked"][0]["rank"], 1);
  EXPECT_EQ(j["ranked"][0]["stages"], 4);
  EXPECT_EQ(j["ranked"][0]["gpus_per_dc"].count("far"), 0u);
  const auto e = xdc::run::load_experiment(best);
  EXPECT_EQ(e.schedules[0].name, j["ranked"][0]["schedule"]);
  std::ifstream in(best);
  std::string first;
  std::getline(in, first);
  EXPECT_EQ(first.rfind("# Generated by xdc plan from " + (dir / "search.yaml").string(), 0), 0u)
      << first;
  // `xdc simulate` of the best placement predicts the iteration `xdc plan` ranked it by: one
  // prediction (plan/predict.h), the same figure to the printed digit.
  const double ranked = j["ranked"][0]["predicted_iteration_s"];
  auto sim = xdc::testing::run_xdc({"simulate", best, "-o", (dir / "sim").string()}, 60);
  ASSERT_EQ(sim.rc, 0) << sim.out;
  std::ifstream summary(dir / "sim" / "summary.json");
  const auto sj = nlohmann::json::parse(summary);
  const std::string schedule = j["ranked"][0]["schedule"];
  double simulated = -1;
  for (const auto& sc : sj["schedules"])
    if (sc["schedule"] == schedule) simulated = sc["simulated_iteration_s"];
  EXPECT_EQ(std::llround(simulated * 1000), std::llround(ranked * 1000))
      << "simulated " << simulated << " ranked " << ranked;
  EXPECT_NEAR(simulated, ranked, 1e-9);
  std::filesystem::remove_all(dir);
}

}  // namespace
