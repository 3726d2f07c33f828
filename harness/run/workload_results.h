#pragma once
// What a run of the user's own program (experiment/workload.h) measured: its events file
// (XDC_EVENTS, JSON lines) paired into spans, steps across ranks, the WAN's counters
// sampled under it, and the files made of them: summary.json (summary_schema.h, kind
// "workload"), steps.csv, wan.csv and one Chrome/Perfetto trace holding the program's
// spans per rank, its PyTorch profiler traces, and the WAN's bytes per sample per direction.
// No namespaces here: the runner (workload_run.h) feeds these.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace xdc::run {

// A begin/end pair of one name on one rank (the end's other fields in `end`).
struct ProgramSpan {
  int rank = 0;
  std::string name;
  double begin_s = 0, end_s = 0;  // the program's clock (CLOCK_REALTIME seconds)
  nlohmann::json end;             // the end line (loss, bytes, ...)
};

struct ProgramEvents {
  std::vector<ProgramSpan> spans;        // in end order
  std::vector<nlohmann::json> instants;  // lines with no phase (markers)
  int bad_lines = 0;                     // not JSON, or no t/rank/name; an end with no begin
};

// Parses the events file: begin and end of one (rank, name) pair up last-in first-out,
// so spans of one name may nest; unmatched begins are dropped.
ProgramEvents read_program_events(const std::string& text);

// The program's steps across ranks, over the steps every rank of `world_size` ended: a
// rank's step i runs from the end of its step i-1 to the end of step i (its own begin for
// step 0), so a rank's steps add up to its time, what it does between steps included, and
// a skew that a collective keeps between ranks (a tree's broadcast reaches rank 1 a
// one-way delay after rank 0) cancels out. Step i is the mean of the ranks' i-th: ranks
// in lock-step share one cadence, and the longest of their per-step times would add their
// step-to-step jitter to it.
struct Steps {
  std::vector<double> step_s;   // every step, warm-up included
  std::vector<double> start_s;  // the first rank's begin, program clock
  std::vector<double> loss;     // the lowest rank's "loss" at its step's end (NaN: none)
  // Per step, the slowest rank's own time: its step outside its "allreduce" spans when it
  // reports them, else inside its "compute" spans (spans within its step's window). A step's
  // collective waits for that rank, so this is what a step of identical ranks must compute (the
  // predicted step's).
  std::vector<double> compute_s;
  std::vector<int64_t> allreduce_bytes;  // per step, rank 0's "allreduce" spans' "bytes"
  std::vector<int> per_rank;             // steps each rank ended
  int warmup = 0;                        // the first `warmup` are left out of the statistics
  double mean_s() const;                 // over step_s after warm-up; 0 when none
  double mean_compute_s() const;         // likewise of compute_s
  int64_t bytes_per_step() const;        // the median of allreduce_bytes after warm-up; 0: none
};
Steps program_steps(const ProgramEvents& ev, int world_size, int warmup);

// One sample of one WAN direction's counters (cumulative since the network came up).
struct WanSample {
  double t_s = 0;  // CLOCK_REALTIME seconds
  std::string link;
  uint64_t bytes = 0, packets = 0;  // left the direction (its egress interface)
  uint64_t drops = 0;               // the shaper's: loss model, delay and rate queues
  uint64_t queued = 0;              // packets inside the shaper now
};
// wan.csv: t_s (from `t0_s`), link, bytes, packets, drops, queued, bytes_delta, mbit_s.
std::string wan_csv(const std::vector<WanSample>& samples, double t0_s);
// Per direction: samples, mean and peak Mbit/s between samples, bytes, drops.
nlohmann::json wan_json(const std::vector<WanSample>& samples);

// One trace: process "rank R (HOST)" per rank with the program's spans (steps on their
// own track), process "WAN" with a counter track per direction (bytes and Mbit/s per
// sample interval, queue depth), and each rank's profiler trace (`profiles[r]`, Chrome
// JSON or null) as its own processes, shifted so its first event falls on the rank's
// first span. Times in microseconds from `t0_s`.
nlohmann::json workload_trace(const ProgramEvents& ev, const std::vector<WanSample>& samples,
                              const std::vector<std::string>& rank_hosts,
                              const std::vector<nlohmann::json>& profiles, double t0_s);

}  // namespace xdc::run
