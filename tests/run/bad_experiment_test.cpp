// Bad experiment files are refused with FILE:LINE:COL and what was expected, before
// anything is built: each case is a good file (experiment_fixture.h) with one mistake.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "common/input_error.h"
#include "harness/experiment/experiment.h"
#include "harness/plan/predict.h"
#include "tests/run/experiment_fixture.h"

namespace {

using xdc::run::parse_experiment;
using xdc::test::kGood;
using xdc::test::kGoodDp;
using xdc::test::kLabel;
using xdc::test::with;

struct Bad {
  std::string name, text;
  int line;              // where the message must point
  std::string fragment;  // what it must say
};

// Test names show the case, not the bytes of the parameter.
void PrintTo(const Bad& b, std::ostream* os) {
  *os << b.name;
}

class BadExperiment : public ::testing::TestWithParam<Bad> {};

TEST_P(BadExperiment, IsRefusedWithFileLineColumn) {
  const Bad& b = GetParam();
  try {
    xdc::run::make_plan(parse_experiment(b.text, kLabel));
    FAIL() << "accepted:\n" << b.text;
  } catch (const xdc::InputError& err) {
    const std::string what = err.what();
    std::printf("%s\n", what.c_str());
    const std::regex pos("^" + kLabel + ":" + std::to_string(b.line) + ":[1-9][0-9]*: ");
    EXPECT_TRUE(std::regex_search(what, pos)) << what;
    EXPECT_NE(what.find(b.fragment), std::string::npos) << what;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadExperiment,
    ::testing::Values(
        Bad{"unknown_key", kGood + "iteration: 3\n", 8, "did you mean 'iterations'"},
        // `xdc plan`'s file given to `xdc simulate` or `xdc run`: says which command reads it.
        Bad{"placement_search_file",
            with("topology: ../../topologies/two-dc.yaml\n", "dcs: [{name: a, gpus: 2}]\n"), 2,
            "`xdc plan` reads this file"},
        Bad{"host_not_in_topology", with("w1, w2]", "w1, w9]"), 4, "a host of topology 'two-dc'"},
        Bad{"unknown_schedule", with("crosspipe-greedy", "zigzag"), 7, "expected one of"},
        Bad{"bad_wan_delay", kGood + "wan: {delay: fast}\n", 8, "wan.delay"},
        Bad{"stages_mismatch", with("stages: 4", "stages: 3"), 4, "number of hosts in placement"},
        Bad{"zero_microbatches", with("microbatches: 8", "microbatches: 0"), 5, "1..4096"},
        Bad{"unknown_model_shape", with("llama2-13b", "llama2-999b"), 3, "llama2-7b"},
        Bad{"unknown_device", with("device: a100", "device: tpu"), 3, "a100"},
        Bad{"missing_schedules", with("schedules: [1f1b, crosspipe-greedy]\n", ""), 1,
            "missing required key 'schedules'"},
        Bad{"missing_topology_file", with("../../topologies/two-dc.yaml", "../nope.yaml"), 2,
            "no file"},
        // A name longer than the file system takes threw std::filesystem::filesystem_error
        // (found by tests/fuzz's experiment target).
        Bad{"topology_file_name_too_long",
            with("../../topologies/two-dc.yaml", std::string(300, 'x') + ".yaml"), 2, "no file"},
        Bad{"schedule_file_name_too_long",
            with("crosspipe-greedy]", "{csv: " + std::string(300, 'x') + ".csv}]"), 7, "no file"},
        Bad{"model_key_a_list",  // threw YAML::TypedBadConversion (tests/fuzz's experiment)
            with("compute: {modeled: {model: llama2-13b, device: a100, seq: 1024}}",
                 "compute: real\nmodel: {[layers]: 4}"),
            4, "model: expected keys like layers or dim, got a list"},
        Bad{"yaml_syntax", with("microbatches: 8", "microbatches: [8"), 6, "syntax"},
        Bad{"schedule_twice", with("crosspipe-greedy]", "1f1b]"), 7, "listed twice"},
        Bad{"tcp_links_zero", kGood + "mpi: {tcp_links: 0}\n", 8, "1..64"},
        Bad{"connections_zero", kGood + "mpi: {connections: {wan: 0}}\n", 8, "1..64"},
        Bad{"connections_not_a_map", kGood + "mpi: {connections: 8}\n", 8, "{wan: 8, dc: 1}"},
        Bad{"connections_unknown_class", kGood + "mpi: {connections: {lan: 2}}\n", 8,
            "unknown key"},
        Bad{"tcp_unknown_key", kGood + "tcp: {congestion_algo: bbr}\n", 8,
            "tcp.congestion_algo: unknown key"},
        Bad{"tcp_bad_ecn", kGood + "tcp: {ecn: maybe}\n", 8, "expected one of: off, on, server"},
        Bad{"real_needs_layers",
            with("compute: {modeled: {model: llama2-13b, device: a100, seq: 1024}}",
                 "compute: real\nmodel: {preset: tiny}"),
            5, "the model has 2 layers"},
        Bad{"replica_lists",
            with("placement: [east-h1, east-h2, w1, w2]}",
                 "placement: [[east-h1], [w1], [w2]], data_parallel: 2}"),
            4, "one host list per data-parallel replica"},
        Bad{"mixed_cost_sources", with("model: llama2-13b,", "f: 10ms, model: llama2-13b,"), 3,
            "one cost source"},
        Bad{"weight_grad_over_backward",
            with("{model: llama2-13b, device: a100, seq: 1024}", "{f: 1ms, b: 2ms, w: 5ms}"), 3,
            "w <= b"},
        Bad{"unknown_model_preset",
            with("compute: {modeled: {model: llama2-13b, device: a100, seq: 1024}}",
                 "compute: real\nmodel: {preset: huge, layers: 4}"),
            4, "preset"},
        Bad{"inline_topology_unknown_dc",
            with("topology: ../../topologies/two-dc.yaml",
                 "topology: {name: x, dcs: [{name: a, hosts: [east-h1, east-h2]}, {name: b, "
                 "hosts: [w1, w2]}], wan: [{between: [a, zz], delay: 1ms}]}"),
            2, "zz"},
        Bad{"duplicate_key", kGood + "iterations: 3\n", 8, "duplicate"},
        Bad{"bad_mca_name", kGood + "mpi: {mca: {\"btl; rm\": 1}}\n", 8, "MCA parameter name"},
        Bad{"negative_warmup", kGood + "warmup: -1\n", 8, "0..100000"},
        Bad{"message_scale_removed", with("seq: 1024}", "seq: 1024, message_scale: 0.1}"), 3,
            "use `time_dilation: K`"},
        Bad{"time_dilation_below_one", kGood + "time_dilation: 0.5\n", 8, "1..1000"},
        Bad{"time_dilation_not_a_number", kGood + "time_dilation: fast\n", 8, "a number"},
        Bad{"unknown_real_device",
            with("compute: {modeled: {model: llama2-13b, device: a100, seq: 1024}}",
                 "compute: {real: {device: tpu}}\nmodel: {preset: tiny, layers: 4}"),
            3, "expected one of: cpu, cuda"},
        Bad{"bf16_on_cpu",
            with("compute: {modeled: {model: llama2-13b, device: a100, seq: 1024}}",
                 "compute: real\nmodel: {preset: tiny, layers: 4, precision: bf16}"),
            4, "needs real compute on cuda"},
        Bad{"unknown_precision",
            with("compute: {modeled: {model: llama2-13b, device: a100, seq: 1024}}",
                 "compute: {real: {device: cuda}}\nmodel: {preset: tiny, layers: 4, precision: "
                 "fp8}"),
            4, "expected fp32 or bf16"},
        Bad{"gpus_without_cuda",
            with("compute: {modeled: {model: llama2-13b, device: a100, seq: 1024}}",
                 "compute: {real: {gpus: [0]}}\nmodel: {preset: tiny, layers: 4}"),
            3, "gpus only with device: cuda"},
        Bad{"gpus_empty",
            with("compute: {modeled: {model: llama2-13b, device: a100, seq: 1024}}",
                 "compute: {real: {device: cuda, gpus: []}}\nmodel: {preset: tiny, layers: 4}"),
            3, "at least one GPU"},
        Bad{"gpus_negative",
            with("compute: {modeled: {model: llama2-13b, device: a100, seq: 1024}}",
                 "compute: {real: {device: cuda, gpus: [-1]}}\nmodel: {preset: tiny, layers: 4}"),
            3, "0..1023"},
        Bad{"tp_group_spans_dcs",
            with("pipeline: {stages: 4, placement: [east-h1, east-h2, w1, w2]}",
                 "pipeline: {stages: 2, tensor_parallel: 2,\n  placement: [[east-h1, w1], [w1, "
                 "w2]]}"),
            5, "a TP group must stay inside one DC"},
        Bad{"tp_group_wrong_size",
            with("pipeline: {stages: 4, placement: [east-h1, east-h2, w1, w2]}",
                 "pipeline: {stages: 2, tensor_parallel: 2, placement: [[east-h1], [w1, w2]]}"),
            4, "one host per TP rank"},
        Bad{"tp_does_not_divide_heads",
            with("compute: {modeled: {model: llama2-13b, device: a100, seq: 1024}}\npipeline: "
                 "{stages: 4, placement: [east-h1, east-h2, w1, w2]}",
                 "compute: real\nmodel: {preset: tiny}\npipeline: {stages: 2, tensor_parallel: 3, "
                 "placement: [east-h1, w1]}"),
            5, "divisor of heads"},
        Bad{"tp_constants_without_model",
            with("compute: {modeled: {model: llama2-13b, device: a100, seq: 1024}}\npipeline: "
                 "{stages: 4, placement: [east-h1, east-h2, w1, w2]}",
                 "compute: {modeled: {f: 1ms, b: 2ms}}\npipeline: {stages: 2, tensor_parallel: "
                 "2, placement: [east-h1, w1]}"),
            4, "layer count from `model:`"},
        Bad{"node_tp_with_launched_tp",
            with("compute: {modeled: {model: llama2-13b, device: a100, seq: 1024}}\npipeline: "
                 "{stages: 4, placement: [east-h1, east-h2, w1, w2]}",
                 "compute: {modeled: {model: llama2-13b, tensor_parallel: 8}}\npipeline: {stages: "
                 "2, tensor_parallel: 2, placement: [east-h1, w1]}"),
            3, "use one of them"},
        Bad{"node_tp_bandwidth_without_tp", with("seq: 1024}}", "seq: 1024, tp_bandwidth: 1tbit}}"),
            3, "give tensor_parallel > 1"},
        Bad{"node_tp_with_constants",
            with("compute: {modeled: {model: llama2-13b, device: a100, seq: 1024}}",
                 "compute: {modeled: {f: 1ms, b: 2ms, tensor_parallel: 8}}"),
            3, "one cost source"},
        Bad{"event_unknown_link",
            kGood + "events: [{at_iteration: 1, link: [east, mars], down_for: 1s}]\n", 8,
            "there is none between east and mars"},
        Bad{"event_unknown_dc", kGood + "events: [{at_iteration: 1, dc: mars, kill_ranks: true}]\n",
            8, "a DC of the topology"},
        Bad{"event_iteration_past_the_run",
            kGood + "events: [{at_iteration: 2, link: [east, west], down_for: 1s}]\n", 8,
            "a measured iteration 0..1"},
        Bad{"event_negative_iteration",
            kGood + "events: [{at_iteration: -1, link: [east, west], down_for: 1s}]\n", 8,
            "0..100000"},
        Bad{"event_bad_duration",
            kGood + "events: [{at_iteration: 1, link: [east, west], down_for: 2 parsecs}]\n", 8,
            "down_for"},
        Bad{"event_zero_down",
            kGood + "events: [{at_iteration: 1, link: [east, west], down_for: 0s}]\n", 8,
            "a duration the link stays down"},
        Bad{"event_two_targets",
            kGood + "events: [{at_iteration: 1, link: [east, west], dc: west, down_for: 1s}]\n", 8,
            "one target"},
        Bad{"event_no_target", kGood + "events: [{at_iteration: 1, down_for: 1s}]\n", 8,
            "expected a target"},
        Bad{"event_nothing_to_do", kGood + "events: [{at_iteration: 1, link: [east, west]}]\n", 8,
            "expected down_for, delay"},
        Bad{"event_kill_a_link",
            kGood + "events: [{at_iteration: 1, link: [east, west], kill_ranks: true}]\n", 8,
            "kill_ranks: goes with dc:"},
        Bad{"event_bad_direction",
            kGood + "events: [{at_iteration: 1, link: [east, west], direction: up, rate: 1mbit}]\n",
            8, "east->west or west->east"},
        Bad{"event_unknown_key", kGood + "events: [{at_iteration: 1, dc: west, explode: true}]\n",
            8, "unknown key"},
        Bad{"event_missing_iteration", kGood + "events: [{dc: west, kill_ranks: true}]\n", 8,
            "missing required key 'at_iteration'"},
        Bad{"event_dc_with_delay", kGood + "events: [{at_iteration: 1, dc: west, delay: 5ms}]\n", 8,
            "a dc: event cuts"},
        Bad{"dp_sync_unknown_method", kGoodDp + "dp_sync: {method: gossip}\n", 9,
            "sync, diloco, streaming"},
        Bad{"dp_sync_streaming_no_inner_steps", kGoodDp + "dp_sync: {method: streaming}\n", 9,
            "missing required key 'inner_steps'"},
        Bad{"dp_sync_fragments_with_diloco",
            kGoodDp + "dp_sync: {method: diloco, inner_steps: 10, fragments: 4}\n", 9,
            "go with method: streaming"},
        Bad{"dp_sync_fragments_over_h",
            kGoodDp + "dp_sync: {method: streaming, inner_steps: 4, fragments: 5}\n", 9, "1..4"},
        Bad{"dp_sync_overlap_h",
            kGoodDp + "dp_sync: {method: streaming, inner_steps: 4, overlap_steps: 4}\n", 9,
            "0..3"},
        Bad{"dp_sync_eager_with_overlap",
            kGoodDp +
                "dp_sync: {method: streaming, inner_steps: 4, eager: true, overlap_steps: 1}\n",
            9, "no overlap_steps or merge with it"},
        Bad{"dp_sync_eager_with_sync", kGoodDp + "dp_sync: {method: sync, eager: true}\n", 9,
            "eager go with method: diloco or streaming"},
        Bad{"dp_sync_merge_over_one",
            kGoodDp + "dp_sync: {method: streaming, inner_steps: 4, merge: 1.5}\n", 9, "merge"},
        Bad{"dp_sync_fragments_over_shape_layers",
            kGoodDp + "dp_sync: {method: streaming, inner_steps: 100, fragments: 41}\n", 9,
            "llama2-13b's 40 layers"},
        Bad{"dp_sync_gloo_with_diloco",
            kGoodDp + "dp_sync: {method: diloco, inner_steps: 10, collective: gloo}\n", 9,
            "goes with method: sync"},
        Bad{"dp_sync_unknown_collective", kGoodDp + "dp_sync: {method: sync, collective: nccl}\n",
            9, "openmpi, gloo"},
        Bad{"dp_sync_sync_steps_with_sync", kGoodDp + "dp_sync: {method: sync, sync_steps: 3}\n", 9,
            "go with method: diloco"},
        Bad{"dp_sync_negative_sync_steps",
            kGoodDp + "dp_sync: {method: diloco, inner_steps: 3, sync_steps: -1}\n", 9,
            "0..10000000"},
        Bad{"dp_sync_missing_inner_steps", kGoodDp + "dp_sync: {method: diloco}\n", 9,
            "missing required key 'inner_steps'"},
        Bad{"dp_sync_zero_inner_steps", kGoodDp + "dp_sync: {method: diloco, inner_steps: 0}\n", 9,
            "1..100000"},
        Bad{"dp_sync_bad_payload",
            kGoodDp + "dp_sync: {method: diloco, inner_steps: 5, payload: fp16}\n", 9, "fp4"},
        Bad{"dp_sync_bad_optimizer",
            kGoodDp + "dp_sync: {method: diloco, inner_steps: 5, outer: {optimizer: adam}}\n", 9,
            "nesterov"},
        Bad{"dp_sync_momentum_one",
            kGoodDp + "dp_sync: {method: diloco, inner_steps: 5, outer: {momentum: 1}}\n", 9,
            "below 1"},
        Bad{"dp_sync_one_replica", kGood + "dp_sync: {method: diloco, inner_steps: 5}\n", 8,
            "data_parallel to 2"},
        Bad{"dp_sync_sync_with_inner_steps", kGoodDp + "dp_sync: {method: sync, inner_steps: 5}\n",
            9, "go with method: diloco"},
        Bad{"dp_sync_unknown_key",
            kGoodDp + "dp_sync: {method: diloco, inner_steps: 5, gossip: 3}\n", 9,
            "dp_sync.gossip: unknown key"},
        Bad{"prefill_unknown_key", kGood + "prefill: {rate_rps: 10, burst: 3}\n", 8,
            "prefill.burst: unknown key"},
        Bad{"prefill_missing_rate", kGood + "prefill: {deadline: 2s}\n", 8,
            "missing required key 'rate_rps'"},
        Bad{"prefill_bad_dist",
            kGood + "prefill: {rate_rps: 10, prompt_tokens: {dist: zipf, mean: 10}}\n", 8,
            "expected one of: fixed, uniform, exponential"},
        Bad{"prefill_mean_over_max",
            kGood + "prefill: {rate_rps: 10, prompt_tokens: {mean: 900, max: 100}}\n", 8,
            "a mean of at most max (100)"},
        Bad{"prefill_zero_deadline", kGood + "prefill: {rate_rps: 10, deadline: 0s}\n", 8,
            "a deadline longer than 0"},
        Bad{"prefill_model", kGood + "prefill: {rate_rps: 10, model: llama2-7b}\n", 8,
            "no separate model"},
        Bad{"wan_sharing_progress_none", kGood + "mpi: {progress: none, wan_sharing: temporal}\n",
            8, "temporal sharing needs mpi.progress: thread"},
        Bad{"prefill_tensor_parallel",
            with("placement: [east-h1, east-h2, w1, w2]}",
                 "placement: [east-h1, east-h2, w1, w2], tensor_parallel: 2}") +
                "prefill: {rate_rps: 10}\n",
            8, "prefill with tensor_parallel > 1 is not built"},
        Bad{"time_dilation_real_compute",
            with("compute: {modeled: {model: llama2-13b, device: a100, seq: 1024}}",
                 "compute: real\nmodel: {preset: tiny, layers: 4}") +
                "time_dilation: 2\n",
            9, "time dilation needs modeled compute"}),
    [](const auto& info) { return info.param.name; });

}  // namespace
