#!/usr/bin/env bash
# How often a run's measured mean falls inside the 90% band predicted beside it.
#   scripts/bench_calibration.sh [RUNS] [OUT]      (SCHEDULES="1f1b" to run only those)
# Runs the demo's pipeline over the lossy WAN (experiments/two-dc-lossy.yaml, 0.1% random
# loss, real compute) with seeds 1..RUNS (default 20) and experiments/lossy-modeled.yaml
# with seeds 1..RUNS/2, each an `xdc sweep` over `seed`, then writes OUT (default
# results/bench/calibration.json):
#   {"points": [{"experiment", "schedule", "runs", "iterations", "inside",
#                "band_halfwidth_pct", "measured_s", "band_s"}], "load_before", "bench"}
#   (bench: bench_record's)
# Where the losses fall is the noise, so the band of a run's mean narrows with the run's
# measured iterations (about as 1/sqrt): the runs here are longer than the experiments'
# own (two-dc-lossy 40 iterations, lossy-modeled 8 with its first two, slow start's
# transient, as warmup), so a band is at most 12% of the mean. TWO_DC_ITERATIONS and
# MODELED_ITERATIONS / MODELED_WARMUP change those lengths.
. "$(dirname "$0")/lib.sh"
need_root bench_calibration.sh
RUNS=${1:-20}
OUT=${2:-results/bench/calibration.json}
DIR=results/bench/calibration
mkdir -p "$DIR"
load=$(load_avg)
build_targets xdc xdc-worker xdc-delayline

sweep() {  # sweep NAME EXPERIMENT SEEDS ITERATIONS WARMUP
  local seeds
  seeds=$(seq -s ', ' 1 "$3")
  cat >"$DIR/$1.sweep.yaml" <<YAML
name: calibration-$1
description: seeds 1-$3 of $2 at $4 iterations ($5 warmup), each predicted with its band
experiment: $ROOT/$2
grid:
  seed: [$seeds]
  iterations: [$4]
  warmup: [$5]
${SCHEDULES:+  schedules: [[${SCHEDULES// /, }]]}
YAML
  rm -rf "${DIR:?}/$1"
  "$XDC" sweep "$DIR/$1.sweep.yaml" -o "$DIR/$1" >&2 || echo "(some runs of $1 failed; kept)" >&2
}
sweep two-dc-lossy experiments/two-dc-lossy.yaml "$RUNS" "${TWO_DC_ITERATIONS:-40}" 2
sweep lossy-modeled experiments/lossy-modeled.yaml $(((RUNS + 1) / 2)) \
  "${MODELED_ITERATIONS:-8}" "${MODELED_WARMUP:-2}"
"$XDC_PY" -m xdc_results.calibration --out "$OUT" --load "$load" "$DIR/two-dc-lossy" "$DIR/lossy-modeled"
bench_record "$OUT"
