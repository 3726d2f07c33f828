#!/usr/bin/env bash
# A lab of three machines on this one (User-Mode Linux guests, scripts/uml/lab.sh) and one
# network across them (`xdc up --lab`, topologies/three-dc.yaml): how long the machines
# take to boot, the network to build and to go, and each cross-machine round trip against
# the configured one. It runs tests/lab/uml_lab_test.sh and keeps its figures.
#   scripts/bench_lab.sh [OUT.json]      default results/bench/lab.json
# Writes {"machines", "kernels", "up_s", "down_s", "wan_rtt_err_pct" (the largest, %),
# "rtts": [...], and the run figures (run_exit, iteration_s, single_machine_iteration_s,
# clock_residual_us) as null: `xdc run --lab` is not built yet}. Needs root. ~6 min.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-results/bench/lab.json}
BUILD_DIR=${XDC_BUILD_DIR:-build}
if [[ $(id -u) -ne 0 ]]; then
  echo "bench_lab: needs root (namespaces, TAP devices); try sudo $0" >&2
  exit 2
fi
cmake --build "$BUILD_DIR" --target xdc xdc-delayline -j2 >&2
mkdir -p "$(dirname "$OUT")"
raw=$(mktemp /root/xdc-bench-lab.XXXXXX 2>/dev/null || mktemp)
XDC_LAB_JSON=$raw tests/lab/uml_lab_test.sh "$BUILD_DIR/harness/cli/xdc" "$BUILD_DIR/uml-lab" >&2
python3 - "$raw" "$OUT" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
errs = [100 * (r["median_ms"] / r["configured_ms"] - 1) for r in j["rtts"]]
j["wan_rtt_err_pct"] = max(errs, key=abs) if errs else None
json.dump(j, open(sys.argv[2], "w"), indent=2)
print("bench_lab: %d machines (kernels %s), up %.1f s, down %.1f s, RTT errors %s%%" % (
    j["machines"], ", ".join(sorted(set(j["kernels"]))), j["up_s"], j["down_s"],
    " / ".join("%+.2f" % e for e in errs)))
PY
rm -f "$raw"
echo "bench_lab: wrote $OUT" >&2
