#!/usr/bin/env bash
# `xdc simulate` speed: one sweep point of 64 pipeline stages x
# 512 microbatches x data parallel 8 (512 world ranks on 64 hosts in two DCs, Llama-2
# 70B-shaped stages on H100s, 1F1B and crosspipe-greedy) planned and predicted by
# `xdc simulate SWEEP.yaml`, which needs no root: the plan (schedules, links between all
# 512 world ranks), the steady-state iteration with the workers' barrier, sweep.csv.
#   scripts/bench_simulate.sh [OUT.json]      (default results/bench/simulate.json)
# Writes {"points", "stages", "microbatches", "data_parallel", "seconds", "seconds_per_point",
# "cpu_seconds", "cpu_seconds_per_point", "load", "runs"} (medians over RUNS runs of the
# whole command, both points: wall time, and user + system CPU time, which does not
# depend on what else the machine runs; load: the 1-minute load average before) and
# prints it, then adds bench_record's record. Goal: < 1 s per point.
. "$(dirname "$0")/lib.sh"
OUT=${1:-results/bench/simulate.json}
RUNS=${RUNS:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
hosts=""
for dc in east west; do
  for i in $(seq 1 32); do hosts+="${hosts:+, }$dc-h$i"; done
done
cat >"$tmp/base.yaml" <<YAML
name: bench-simulate
topology:
  name: benchsim
  intra_dc: {rate: 100gbit, delay: 5us}
  dcs:
    - {name: east, hosts: 32}
    - {name: west, hosts: 32}
  wan:
    - {between: [east, west], delay: 20ms, rate: 100gbit}
compute:
  modeled: {model: llama2-70b, device: h100, seq: 4096}
pipeline:
  stages: 64
  data_parallel: 8
  placement: [$hosts]
microbatches: 512
schedules: [1f1b]
YAML
cat >"$tmp/sweep.yaml" <<YAML
name: bench-simulate
experiment: base.yaml
grid:
  schedules: [[1f1b], [crosspipe-greedy]]
YAML
load=$(load_avg)
walls=() cpus=()
for _ in $(seq 1 "$RUNS"); do
  /usr/bin/time -f "%e %U %S" -o "$tmp/time" "$XDC" simulate "$tmp/sweep.yaml" -o "$tmp/out" >/dev/null
  read -r wall user sys <"$tmp/time"
  walls+=("$wall")
  cpus+=("$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.3f", u + s }')")
done
wall=$(median "${walls[@]}")
cpu=$(median "${cpus[@]}")
points=$(($(wc -l <"$tmp/out/sweep.csv") - 1))
out_dir "$OUT"
printf '{"points": %d, "stages": 64, "microbatches": 512, "data_parallel": 8, "seconds": %.3f, "seconds_per_point": %.3f, "cpu_seconds": %.3f, "cpu_seconds_per_point": %.3f, "load": %s, "runs": %d}\n' \
  "$points" "$wall" "$(awk -v w="$wall" -v n="$points" 'BEGIN { print w / n }')" "$cpu" \
  "$(awk -v c="$cpu" -v n="$points" 'BEGIN { print c / n }')" "$load" "$RUNS" | tee "$OUT"
bench_record "$OUT"
