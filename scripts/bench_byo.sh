#!/usr/bin/env bash
# Your own program across the emulated DCs (docs/workload.md): writes results/bench/byo.json.
#   ddp              experiments/byo/ddp-two-dc.yaml (PyTorch DDP, gloo, CPU) at 0, 20, 40
#                    and 80 ms one way: the measured step (mean after warm-up) beside the
#                    simulator's prediction of the same step description (predicted.yaml:
#                    the measured compute, the bytes all-reduced), err_pct = 100 (simulated
#                    - measured) / measured, and the loss at the first and last step
#   pingpong_rtt_ms  experiments/byo/mpi-pingpong.yaml (mpi4py over xdc's mpirun path):
#                    the median round trip of 50 (pingpong_min_ms: the least), beside
#                    configured_rtt_ms, twice the configured one-way delay between the
#                    two hosts: the WAN's and the receiving DC's fabric (intra_dc.delay,
#                    crossed once each way: docs/emulation.md)
#   bench            the record of the run (bench_record: machine, load, command)
#   scripts/bench_byo.sh [OUT.json]
# Needs root, Debian's python3-torch and python3-mpi4py (installed if missing). ~3 minutes.
. "$(dirname "$0")/lib.sh"
OUT=${1:-results/bench/byo.json}
need_root bench_byo
for pkg in python3-torch python3-mpi4py; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    echo "bench_byo: installing $pkg (Debian package)" >&2
    apt-get install -y -qq --no-install-recommends "$pkg" >&2
  fi
done
build_targets xdc xdc-delayline
out_dir "$OUT"
work=$(mktemp -d /tmp/xdc-bench-byo.XXXXXX)
trap 'rm -rf "$work" experiments/byo/.bench-ddp-*ms.yaml' EXIT

rows=()
for delay in 0 20 40 80; do
  echo "== DDP at ${delay} ms one way" >&2
  # The shipped experiment with its delay set, run from the shipped directory.
  exp=experiments/byo/.bench-ddp-${delay}ms.yaml
  sed "s/^wan: {delay: [0-9]*ms}/wan: {delay: ${delay}ms}/" experiments/byo/ddp-two-dc.yaml > "$exp"
  rc=0
  "$XDC" run "$exp" -o "$work/ddp-$delay" --name "byob$delay" >&2 || rc=$?
  rm -f "$exp"
  [[ $rc -eq 0 ]] || { echo "bench_byo: the DDP run at ${delay} ms failed (exit $rc)" >&2; exit 1; }
  rows+=("$delay:$work/ddp-$delay")
done

echo "== MPI ping-pong at 20 ms one way" >&2
"$XDC" run experiments/byo/mpi-pingpong.yaml -o "$work/pingpong" --name byobpp >&2

"$XDC_PY" - "$OUT" "$work" "${rows[@]}" <<'PY'
import json, re, sys
out, work, rows = sys.argv[1], sys.argv[2], sys.argv[3:]
ddp = []
for row in rows:
    delay, d = row.split(":", 1)
    s = json.load(open(f"{d}/summary.json"))
    e = s["schedules"][0]
    m, p = e["iteration_s_mean"], e["simulated_iteration_s"]
    ddp.append({"delay_ms": int(delay), "measured_step_s": round(m, 4),
                "simulated_step_s": round(p, 4),
                "err_pct": round(100 * (p - m) / m, 1) if m > 0 else None,
                "steps": e["iterations"], "compute_s": round(e["steps"]["compute_s_mean"], 4),
                "allreduce_bytes": e["steps"]["allreduce_bytes"],
                "loss_first": e["loss"][0], "loss_last": e["loss"][-1],
                "wan_sample_interval_p50_s": min(v["interval_p50_s"] for v in s["wan"].values())})
log = open(f"{work}/pingpong/mpirun.log").read()
mins = re.search(r"min ([0-9.]+) ms median ([0-9.]+) ms", log)
# The one-way delay the ping-pong ran with, as its results directory recorded it.
one_way = re.search(r"^wan: {delay: ([0-9.]+)ms}", open(f"{work}/pingpong/experiment.yaml").read(), re.M)
fabric = re.search(r"^intra_dc: {[^}]*delay: ([0-9.]+)(us|ms)", open(f"{work}/pingpong/topology.yaml").read(), re.M)
fabric_ms = float(fabric.group(1)) / (1000 if fabric.group(2) == "us" else 1) if fabric else 0
res = {"ddp": ddp,
       "pingpong_rtt_ms": float(mins.group(2)), "pingpong_min_ms": float(mins.group(1)),
       "configured_rtt_ms": round(2 * (float(one_way.group(1)) + fabric_ms), 3)}
json.dump(res, open(out, "w"), indent=2)
print(json.dumps(res, indent=2))
PY
bench_record "$OUT" >&2 || true
