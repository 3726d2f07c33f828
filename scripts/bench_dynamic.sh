#!/usr/bin/env bash
# Runtime link changes: how fast a change of delay or rate is in force, and
# what it costs the traffic (drops, reorders), measured on a real A — GW — B line of
# namespaces with every backend this machine can run (tests/shaper/bench_dynamic.cpp
# says how each figure is taken).
#   scripts/bench_dynamic.sh [OUT.json]      default results/bench/dynamic.json
# The userspace backend runs here; the kernel backend runs here when this kernel has
# sch_netem, else inside a User-Mode Linux guest (scripts/uml/run.sh) when
# user-mode-linux is installed -- its timings are the guest's (a kernel whose timer
# interrupts are host signals), its drop and order figures the real kernel code's.
# Then a 1 s WAN flap under a running job: `xdc run tests/run/flap.yaml` (its topology's
# changes: down 1 s at 5 s), its exit code, iterations and stall ("flap"); and a partition
# longer than mpi.timeout_s: `xdc run tests/run/partition.yaml`, its exit code and
# message ("partition"); the flap anchored to iteration 5 of experiments/flap.yaml, measured
# beside the simulator's prediction ("flap_event"), and experiments/trace-wan.yaml
# ("trace_wan", ~2 min).
# Top-level keys: the userspace backend's; "backends" holds each backend's; "bench" the
# record of the run (bench_record).
# Needs root (namespaces, qdiscs, iptables) and iperf3. About 20 s per backend.
. "$(dirname "$0")/lib.sh"
OUT=${1:-results/bench/dynamic.json}
need_root bench_dynamic
build_targets bench_dynamic xdc-delayline
out_dir "$OUT"
rm -f "$OUT"
export XDC_DELAYLINE="$PWD/$BUILD_DIR/harness/cli/xdc-delayline"
BENCH="$BUILD_DIR/tests/shaper/bench_dynamic"
"$BENCH" --backend userspace "$OUT"
if "$BENCH" --backend kernel "$OUT" 2>/dev/null; then
  :
elif command -v linux.uml > /dev/null; then
  echo "bench_dynamic: no sch_netem here: the kernel backend in a User-Mode Linux guest" >&2
  scripts/uml/run.sh --timeout 300 "$BUILD_DIR/uml-bench-dynamic" -- \
    env XDC_DELAYLINE="$XDC_DELAYLINE" "$BENCH" --backend kernel "$OUT"
else
  echo "bench_dynamic: kernel backend not measured (no sch_netem, no user-mode-linux)" >&2
fi
build_targets xdc xdc-worker
FLAP_DIR=$(mktemp -d /tmp/xdc-bench-flap.XXXXXX)
rc=0
"$BUILD_DIR/harness/cli/xdc" run tests/run/flap.yaml -o "$FLAP_DIR" --name bflap >&2 || rc=$?
"$BENCH" --flap "$FLAP_DIR" "$rc" "$OUT"
rm -rf "$FLAP_DIR"
EV_DIR=$(mktemp -d /tmp/xdc-bench-flap-event.XXXXXX)
rc=0
"$BUILD_DIR/harness/cli/xdc" run experiments/flap.yaml -o "$EV_DIR" --name bflapev >&2 || rc=$?
"$BENCH" --flap-event "$EV_DIR" "$rc" "$OUT"
rm -rf "$EV_DIR"
TW_DIR=$(mktemp -d /tmp/xdc-bench-trace-wan.XXXXXX)
rc=0
"$BUILD_DIR/harness/cli/xdc" run experiments/trace-wan.yaml -o "$TW_DIR" --name btwan >&2 || rc=$?
"$BENCH" --trace-wan "$TW_DIR" "$rc" "$OUT"
rm -rf "$TW_DIR"
PART_DIR=$(mktemp -d /tmp/xdc-bench-partition.XXXXXX)
rc=0
"$BUILD_DIR/harness/cli/xdc" run tests/run/partition.yaml -o "$PART_DIR" --name bpart >&2 || rc=$?
"$BENCH" --partition "$PART_DIR" "$rc" "$OUT"
rm -rf "$PART_DIR"
bench_record "$OUT"
echo "bench_dynamic: wrote $OUT" >&2
