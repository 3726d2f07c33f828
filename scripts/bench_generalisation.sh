#!/usr/bin/env bash
# Prediction off the shipped points: N random but valid experiments drawn from SEED, each
# run on the emulator and predicted beside it (--simulate-only: predicted alone).
#   scripts/bench_generalisation.sh N SEED [--simulate-only | --repredict]
# Writes results/bench/generalisation.json:
#   {"seed", "points": [{"experiment_yaml", "schedule", "compute", "measured_s",
#    "simulated_s", "band_s", "err_pct", "inside", "tcp_timeouts"}], "median_abs_err_pct",
#    "p90_abs_err_pct", "inside_fraction", "bench"}
# one point per schedule of every experiment (python/xdc_results/generalisation.py
# defines each field), and prints a table. The experiments (and generated.json, what
# they hold) are in results/bench/generalisation/SEED/, their runs under run/ (or
# simulate/) there; bench is the record of the run (bench_record). Needs root
# (namespaces) unless --simulate-only. --repredict runs nothing: the kept runs of SEED are
# predicted again by this build (`xdc simulate RUN/experiment.yaml --measured RUN`, as each
# run predicted itself, into RUN/repredicted/) and collected with those predictions.
. "$(dirname "$0")/lib.sh"
if [[ $# -lt 2 || ( $# -eq 3 && ${3:-} != --simulate-only && ${3:-} != --repredict ) ||
  $# -gt 3 ]]; then
  echo "usage: $0 N SEED [--simulate-only | --repredict]" >&2
  exit 2
fi
N=$1
SEED=$2
MODE=run
[ "${3:-}" = --simulate-only ] && MODE=simulate
[ $MODE = run ] && [ $# -eq 2 ] && need_root bench_generalisation.sh
DIR=results/bench/generalisation/$SEED
OUT=results/bench/generalisation.json

if [ "${3:-}" = --repredict ]; then
  runs=()
  for run in "$DIR"/run/gen-*/; do
    run=${run%/}
    [ -f "$run/summary.json" ] || continue
    rm -rf "$run/repredicted"
    echo "== $run (xdc simulate --measured)" >&2
    "$XDC" simulate "$run/experiment.yaml" --measured "$run" -o "$run/repredicted" >/dev/null ||
      echo "($run could not be predicted again)" >&2
    runs+=("$run")
  done
  "$XDC_PY" -m xdc_results.generalisation collect --seed "$SEED" --runs "${runs[@]}" \
    --out "$OUT" --repredicted "$(git -C "$ROOT" rev-parse --short HEAD)"
  bench_record "$OUT"
  exit 0
fi

"$XDC_PY" -m xdc_results.generalisation generate --seed "$SEED" --n "$N" --out "$DIR" \
  --xdc "$XDC" >&2
runs=()
for exp in "$DIR"/gen-*.yaml; do
  run=$DIR/$MODE/$(basename "$exp" .yaml)
  rm -rf "$run"
  echo "== $exp (xdc $MODE, load $(load_avg))" >&2
  "$XDC" "$MODE" "$exp" -o "$run" >&2 || echo "($exp failed; what it measured is kept)" >&2
  runs+=("$run")
done
"$XDC_PY" -m xdc_results.generalisation collect --seed "$SEED" --runs "${runs[@]}" --out "$OUT"
bench_record "$OUT"
