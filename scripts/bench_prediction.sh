#!/usr/bin/env bash
# Prediction accuracy (issue 15): runs every shipped experiment and a sample of the
# reproduction grids on the emulator with their own (stock) settings, and tabulates each
# schedule's measured iteration against the simulator's prediction made beside it.
#   scripts/bench_prediction.sh [--quick] [--resume] [OUT.json]
#   (default results/bench/prediction.json). Each run records the prediction made beside
#   it, by the simulator of its day: the points' run directories are removed first, and
#   --resume keeps the finished ones (to go on after an interruption, same build only).
# Points: experiments/two-dc.yaml (the demo, real compute), experiments/two-dc-modeled.yaml
# (--quick: at time dilation 1 instead of its 5), CrossPipe at (latency, bandwidth-delay)
# = (2, 2) T_F, GeoPipe at 20 ms, Atlas PP and DP at 80 ms one way (atlas.yaml's points).
# Writes {"points": [{"experiment", "point", "schedule", "compute", "measured_s",
# "simulated_s", "err_pct", "measured_iterations_s", "target_pct", "within_target"}...],
# "stock_settings", "overrides": [{"experiment", "setting"}], "within_target": "K of N",
# "load_before", "quick"} and prints a table. err_pct = (simulated - measured) / measured,
# measured = the mean of the measured iterations (each listed, so the spread a lossy or
# bursty WAN gives one run shows); target_pct: issue 15's, 5 for modeled compute, 10 for real.
# The demo is run eight times (seeds 1-8) and its runs pooled into one point per schedule
# ("measured_runs_s": each run's mean; "simulated_s": the mean of their predictions): its
# 0.1% random loss and four ranks on two cores move one 20-iteration run's mean far from
# the next: over 24, 17 and 24 runs (2026-11-28) the sd of a run's mean is 8.5% (1f1b),
# 7.3% (overlap) and 12.9% (crosspipe-greedy: 2.37-4.31 s), so the mean of three had a
# standard error of up to 7.4%, near the 10% the point is held to; of eight, 4.6%.
# CrossPipe's point runs 16 iterations
# (its experiment has 2): its greedy schedule's iterations vary by a quarter from one to
# the next (sd 0.42 s of a 4.6 s mean, 4.10-5.71 s, 2026-11-28), so the mean of 6 has a
# standard error of 3.7%, too close to the 5% the point is held to (6 iterations: 4.975 s,
# 16 on the same machine the next day: 4.585 s); 16 bring it to 2.3%.
# Needs root (namespaces); each point's run directory is kept under results/bench/prediction/.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD_DIR=${XDC_BUILD_DIR:-build}
XDC=${XDC:-$BUILD_DIR/harness/cli/xdc}
QUICK=0
RESUME=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1; shift ;;
    --resume) RESUME=1; shift ;;
    *) break ;;
  esac
done
OUT=${1:-results/bench/prediction.json}
RUNS=results/bench/prediction
mkdir -p "$RUNS"
load=$(cut -d' ' -f1 /proc/loadavg)

# name | experiment | grid lines (YAML, two-space indented under grid:)
points=(
  "two-dc|experiments/two-dc.yaml|  seed: [1, 2, 3, 4, 5, 6, 7, 8]"
  "two-dc-modeled|experiments/two-dc-modeled.yaml|  time_dilation: [$([ $QUICK = 1 ] && echo 1 || echo 5)]"
  "crosspipe-L2-D2|experiments/repro/crosspipe-base.yaml|  wan.delay: [80ms]
  wan.rate: [26214kbit]
  iterations: [16]"
  "geopipe-20ms|experiments/repro/geopipe-base.yaml|  wan.delay: [20ms]"
  "atlas-pp-80ms|experiments/repro/atlas-base.yaml|  wan.delay: [80ms]"
  "atlas-dp-80ms|experiments/repro/atlas-base.yaml|  wan.delay: [80ms]
  pipeline.stages: [1]
  pipeline.data_parallel: [6]
  microbatches: [1]
  compute: [{modeled: {f: 480ms, b: 960ms, w: 432ms, activation: 1mib, grad: 64mib}}]
  pipeline.placement: [[[useast-h1], [useast-h2], [uswest-h1], [uswest-h2], [europe-h1], [europe-h2]]]"
)
for p in "${points[@]}"; do
  # Split by hand: `read` would stop at the first of the grid's lines.
  name=${p%%|*}
  rest=${p#*|}
  exp=${rest%%|*}
  grid=${rest#*|}
  echo "== $name ($exp)" >&2
  [ $RESUME = 1 ] || rm -rf "${RUNS:?}/$name"
  cat >"$RUNS/$name.sweep.yaml" <<YAML
name: prediction-$name
description: measured vs simulated, $exp
experiment: $ROOT/$exp
grid:
$grid
YAML
  "$XDC" sweep "$RUNS/$name.sweep.yaml" -o "$RUNS/$name" >&2 || echo "(some points of $name failed; kept)" >&2
done

/usr/bin/python3 - "$RUNS" "$OUT" "$QUICK" "$load" "${points[@]}" <<'PY'
import csv, json, os, sys
runs, out, quick, load = sys.argv[1], sys.argv[2], sys.argv[3] == "1", float(sys.argv[4])
rows, overrides = [], []
REPEATED = {"two-dc"}  # points run more than once (seeds), pooled
for p in sys.argv[5:]:
    name, exp = p.split("|")[:2]
    base = os.path.join(runs, name)
    if not os.path.isdir(base):
        continue
    # The grid's points (sweep.csv): a directory left from an earlier grid is not one.
    grid = os.path.join(base, "sweep.csv")
    ids = {r["id"] for r in csv.DictReader(open(grid))} if os.path.isfile(grid) else None
    for point in sorted(os.listdir(base)):
        if ids is not None and point not in ids:
            continue
        d = os.path.join(base, point)
        sj, ej = os.path.join(d, "summary.json"), os.path.join(d, "environment.json")
        if not os.path.isfile(sj):
            continue
        s = json.load(open(sj))
        env = json.load(open(ej)) if os.path.isfile(ej) else {}
        for setting in env.get("non_default_settings", []):
            if {"experiment": exp, "setting": setting} not in overrides:
                overrides.append({"experiment": exp, "setting": setting})
        for r in s.get("schedules", []):
            m, sim = r.get("iteration_s_mean"), r.get("simulated_iteration_s")
            if not r.get("ok") or not m or not sim:
                continue
            compute = env.get("compute_mode", s.get("compute_mode", "?"))
            # A repeated point (the grid varies the seed alone) pools its runs: one row.
            pooled = name in REPEATED
            key = f"{name}/seeds" if pooled else f"{name}/{point}"
            row = next((x for x in rows if x["point"] == key and x["schedule"] == r["schedule"]),
                       None)
            if row is None:
                row = {"experiment": exp, "point": key, "schedule": r["schedule"],
                       "compute": compute, "measured_iterations_s": [], "measured_runs_s": [],
                       "_runs": [], "_sims": []}
                rows.append(row)
            row["measured_iterations_s"] += [round(x, 3) for x in r.get("iteration_s", [])]
            row["measured_runs_s"].append(round(m, 4))
            row["_runs"].append(m)
            row["_sims"].append(sim)
for row in rows:
    runs_s, sims = row.pop("_runs"), row.pop("_sims")  # runs of equal iteration counts
    m, sim = sum(runs_s) / len(runs_s), sum(sims) / len(sims)
    err = round(100 * (sim - m) / m, 1)
    target = 5 if row["compute"] == "modeled" else 10
    row.update({"measured_s": round(m, 4), "simulated_s": round(sim, 4), "err_pct": err,
                "target_pct": target, "within_target": abs(err) <= target})
    if len(row["measured_runs_s"]) == 1:
        del row["measured_runs_s"]
within = sum(r["within_target"] for r in rows)
doc = {"points": rows, "stock_settings": not overrides, "overrides": overrides,
       "within_target": f"{within} of {len(rows)}", "load_before": load, "quick": quick}
os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
with open(out, "w") as f:
    json.dump(doc, f, indent=1)
    f.write("\n")
print(f"{'point':<44} {'schedule':<18} {'compute':<8} {'measured':>9} {'simulated':>9} {'err':>7}"
      f"  {'target':>6}  iterations (s)")
for r in rows:
    its = ", ".join(f"{x:.2f}" for x in r["measured_iterations_s"])
    print(f"{r['point'][:44]:<44} {r['schedule']:<18} {r['compute']:<8} {r['measured_s']:>9.3f} "
          f"{r['simulated_s']:>9.3f} {r['err_pct']:>+6.1f}%  {'<=' if r['within_target'] else '>'}"
          f"{r['target_pct']:>3}%  {its}")
print(f"within target: {doc['within_target']}; stock settings: {doc['stock_settings']}; "
      f"overrides: {overrides}; wrote {out}")
PY
