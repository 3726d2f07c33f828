#!/usr/bin/env bash
# `xdc plan` speed (goal: at least 10 placements ranked in under 10 s):
# the shipped 3-DC search, experiments/plan-3dc.yaml (4 ranks over three DCs of 2 GPUs,
# every pipeline depth, DC order and data-parallel layout, each predicted with 1f1b and
# overlap through plan/plan.h), needs no root.
#   scripts/bench_plan.sh [SEARCH.yaml] [OUT.json]   (default results/bench/plan.json)
# Writes {"file", "placements", "predictions", "seconds", "cpu_seconds", "load", "runs"}
# (medians over RUNS runs of the whole command: wall time, and user + system CPU time;
# load: the 1-minute load average before) and prints it, then adds bench_record's record.
# Goal: < 10 s.
. "$(dirname "$0")/lib.sh"
SEARCH=${1:-experiments/plan-3dc.yaml}
OUT=${2:-results/bench/plan.json}
RUNS=${RUNS:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
load=$(load_avg)
walls=() cpus=()
for _ in $(seq 1 "$RUNS"); do
  /usr/bin/time -f "%e %U %S" -o "$tmp/time" "$XDC" plan "$SEARCH" --json -o "$tmp/best.yaml" >"$tmp/plan.json"
  read -r wall user sys <"$tmp/time"
  walls+=("$wall")
  cpus+=("$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.3f", u + s }')")
done
placements=$("$XDC_PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["placements"])' "$tmp/plan.json")
predictions=$("$XDC_PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["predicted"])' "$tmp/plan.json")
out_dir "$OUT"
printf '{"file": "%s", "placements": %d, "predictions": %d, "seconds": %.3f, "cpu_seconds": %.3f, "load": %s, "runs": %d}\n' \
  "$SEARCH" "$placements" "$predictions" "$(median "${walls[@]}")" "$(median "${cpus[@]}")" \
  "$load" "$RUNS" | tee "$OUT"
bench_record "$OUT"
