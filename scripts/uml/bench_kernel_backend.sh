#!/usr/bin/env bash
# Kernel-backend figures on a real netem kernel, for scripts/bench_wan.sh:
#   scripts/uml/bench_kernel_backend.sh OUT.json
# Runs `bench_shaping --kernel-summary` (tests/shaper/bench_shaping.cpp: delay 1/10/50/
# 100 ms, jitter 5 ms, TCP at 10/100/1000 Mbit/s, random loss 1%/5%, loss per wire
# packet under TCP) inside a User-Mode Linux guest (scripts/uml/run.sh) and writes
#   {"ran": true, "kernel": "<guest uname -r>", "rtt_err_pct_max": X,
#    "goodput_ratio_min": Y, "loss_sigma_max": Z, "figures": [...], ...}
# When the guest cannot run (no linux.uml, no netem, a crash), OUT.json says
# {"ran": false, "error": "..."} and the exit status is 1. Figures outside the test's
# bounds are written all the same (a benchmark reports; the test asserts). Needs root,
# about 90 s.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ $# -ne 1 ]; then
  echo "usage: $0 OUT.json" >&2
  exit 2
fi
out=$(realpath -m "$1")
BUILD_DIR=${XDC_BUILD_DIR:-build}
mkdir -p "$(dirname "$out")"
not_ran() {
  printf '{"ran": false, "error": "%s"}\n' "$1" >"$out"
  echo "bench_kernel_backend: $1" >&2
  exit 1
}
cmake --build "$BUILD_DIR" --target bench_shaping -j2 >&2 || not_ran "build of bench_shaping failed"
guest_dir="$PWD/$BUILD_DIR/uml-bench-kernel-backend"
# The guest writes into its run directory, which it sees wherever it lies.
scripts/uml/run.sh --timeout 540 "$guest_dir" -- \
  "$BUILD_DIR/tests/shaper/bench_shaping" --kernel-summary "$guest_dir/kernel_backend.json" ||
  true
[ -s "$guest_dir/kernel_backend.json" ] ||
  not_ran "no figures from the UML guest (see $guest_dir/output and console.log)"
cp "$guest_dir/kernel_backend.json" "$out"
echo "bench_kernel_backend: wrote $out" >&2
