#!/usr/bin/env bash
# A lab of three machines on this one (User-Mode Linux guests, scripts/uml/lab.sh), one
# network across them (`xdc up --lab`, topologies/three-dc.yaml) and one run
# (`xdc run --lab`, experiments/lab-3dc.yaml): how long the machines take to boot, the
# network to build and to go, each cross-machine round trip against the configured one,
# the run's iteration time against the same experiment on this machine alone, the clock
# offsets between machines and their residual, and a run that loses a machine. It runs
# tests/lab/uml_lab_test.sh and keeps its figures.
#   scripts/bench_lab.sh [OUT.json]      default results/bench/lab.json
# Writes {"machines", "kernels", "up_s", "down_s", "wan_rtt_err_pct" (the largest, %),
# "rtts": [...], "run_exit", "run_s", "iteration_s", "single_machine_iteration_s",
# "clock_offset_max_us", "clock_residual_us", "lost_machine_exit", "lost_machine_end_s",
# "bench"} (bench: the record of the run, bench_record).
# Needs root. ~14 min.
. "$(dirname "$0")/lib.sh"
OUT=${1:-results/bench/lab.json}
if [[ $(id -u) -ne 0 ]]; then
  echo "bench_lab: needs root (namespaces, TAP devices); try sudo $0" >&2
  exit 2
fi
build_targets xdc xdc-delayline
out_dir "$OUT"
raw=$(mktemp /root/xdc-bench-lab.XXXXXX 2>/dev/null || mktemp)
XDC_LAB_JSON=$raw tests/lab/uml_lab_test.sh "$BUILD_DIR/harness/cli/xdc" "$BUILD_DIR/uml-lab" >&2
"$XDC_PY" - "$raw" "$OUT" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
errs = [100 * (r["median_ms"] / r["configured_ms"] - 1) for r in j["rtts"]]
j["wan_rtt_err_pct"] = max(errs, key=abs) if errs else None
json.dump(j, open(sys.argv[2], "w"), indent=2)
print("bench_lab: %d machines (kernels %s), up %.1f s, down %.1f s, RTT errors %s%%" % (
    j["machines"], ", ".join(sorted(set(j["kernels"]))), j["up_s"], j["down_s"],
    " / ".join("%+.2f" % e for e in errs)))
print("bench_lab: run exit %d, iteration %.3f s (one machine %.3f s, %+.1f%%), clock offsets "
      "up to %.0f us, residual %.1f us; a lost machine: exit %d after %.1f s" % (
    j["run_exit"], j["iteration_s"], j["single_machine_iteration_s"],
    100 * (j["iteration_s"] / j["single_machine_iteration_s"] - 1), j["clock_offset_max_us"],
    j["clock_residual_us"], j["lost_machine_exit"], j["lost_machine_end_s"]))
PY
rm -f "$raw"
bench_record "$OUT"
echo "bench_lab: wrote $OUT" >&2
