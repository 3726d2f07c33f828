#!/usr/bin/env bash
# Schedule benchmark: builds xdc-bench-schedules if needed and writes
# results/bench/schedules.json with
#   crosspipe_grid   {SCHEDULE: {"0,0": t, "2,0.25": t, "0.25,2": t, "2,2": t}}  time per
#                    microbatch in T_F (8 stages, 2 DCs split 4|4, m=32, T_F=T_B=T_W);
#                    printed beside CrossPipe's Table 5 (M70) as ratios to 1F1B
#   formula_checks   [{name, expected, simulated}]  zero-delay bubble ratios, peaks
#   overlap_case     GeoPipe-style overlap vs 1F1B across a 20 ms WAN
#   sim_64x512_s     seconds to simulate a 64-stage, 512-microbatch 1F1B iteration
#   optimal_vs_greedy  the MILP's orders against the greedy's, makespans by evaluate_order
#   bench            the record of the run (bench_record)
#   scripts/bench_schedules.sh [--milp-seconds S] [--microbatches M]
. "$(dirname "$0")/lib.sh"
OUT=results/bench/schedules.json
build_targets xdc-bench-schedules
out_dir "$OUT"
"$BUILD_DIR/harness/sim/xdc-bench-schedules" "$OUT" "$@"
bench_record "$OUT"
