#!/usr/bin/env bash
# WAN shaping fidelity: one direction shaped at a time on a
# real A — GW — B line of namespaces; delay 1/10/50/100 ms, jitter 5 ms normal, rate
# 10/100/1000 mbit at 20 ms, random loss 1%/5%, for every backend this kernel can run
# (the kernel backend needs sch_netem; its absence is recorded, not hidden).
#   scripts/bench_shaping.sh [OUT.json]      default results/bench/shaping.json
# Needs root (namespaces, qdiscs, iptables) and iperf3. About a minute per backend.
# Prints one line per figure (configured, measured, acceptance bounds); the JSON adds
# the raw numbers, the delay line's counters and the load average (other processes on
# the machine disturb timing), and bench_record's record. Exits 1 when a figure is outside
# its bounds (its JSON is written all the same).
. "$(dirname "$0")/lib.sh"
OUT=${1:-results/bench/shaping.json}
need_root bench_shaping
build_targets bench_shaping xdc-delayline
out_dir "$OUT"
rm -f "$OUT"
rc=0
XDC_DELAYLINE="$PWD/$BUILD_DIR/harness/cli/xdc-delayline" \
  "$BUILD_DIR/tests/shaper/bench_shaping" "$OUT" || rc=$?
[ -s "$OUT" ] && bench_record "$OUT"
exit $rc
