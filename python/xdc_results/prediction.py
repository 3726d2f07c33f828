"""Prediction accuracy: each schedule's measured iteration against the simulator's
prediction made beside it (scripts/bench_prediction.sh).

    python3 -m xdc_results.prediction --runs DIR --out OUT.json [--quick] [--load X]
        [--pooled NAME ...] [--repredicted COMMIT] POINT...

POINT is "name|experiment|..." (the bench's point lines); DIR/<name> is the point's sweep
directory. Points named by --pooled vary the seed alone: their runs are pooled into one
row per schedule (measured_s: the mean of the runs' means; simulated_s: the mean of their
predictions; measured_runs_s: each run's mean). err_pct is results.err_pct of those:
100 * (simulated - measured) / measured, positive when the prediction is slower.
With --repredicted, each run's prediction is the one `xdc simulate RUN/experiment.yaml
--measured RUN` wrote in RUN/repredicted/ (the simulator at COMMIT predicting the run as
the run predicted itself), not the one the run made beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict, List, Optional

from . import results
from .results import err_pct, try_load_run, try_load_sweep

TARGET_PCT = {"modeled": 5, "real": 10}  # |err_pct| a point is held to, by compute mode


def collect(runs_dir: str, points: List[str], pooled: Optional[set] = None,
            repredicted: bool = False) -> tuple:
    """(rows, overrides): one row per point (or pooled point) and schedule, in order; the
    settings unlike stock OpenMPI/TCP the runs had, per experiment. `repredicted`: the
    predictions are those of RUN/repredicted/ (a schedule without one is left out)."""
    pooled = pooled or set()
    rows: List[Dict[str, Any]] = []
    overrides: List[Dict[str, str]] = []
    for p in points:
        name, exp = p.split("|")[:2]
        base = os.path.join(runs_dir, name)
        if not os.path.isdir(base):
            continue
        # The grid's points (sweep.csv): a directory left from an earlier grid is not one.
        sweep = try_load_sweep(base)
        ids = set(sweep.point_ids()) if sweep else None
        for point in sorted(os.listdir(base)):
            if ids is not None and point not in ids:
                continue
            run = try_load_run(os.path.join(base, point))
            if run is None:
                continue
            again = results.repredicted(os.path.join(base, point)) if repredicted else None
            for setting in run.non_default_settings:
                if {"experiment": exp, "setting": setting} not in overrides:
                    overrides.append({"experiment": exp, "setting": setting})
            for s in run.schedules:
                m, sim = s.measured_iteration_s, s.simulated_iteration_s
                if again is not None:
                    sim = again[s.name].simulated_iteration_s if s.name in again else None
                if not s.ok or not m or not sim:
                    continue
                key = "%s/seeds" % name if name in pooled else "%s/%s" % (name, point)
                row = next((x for x in rows if x["point"] == key and x["schedule"] == s.name),
                           None)
                if row is None:
                    row = {"experiment": exp, "point": key, "schedule": s.name,
                           "compute": run.compute_mode, "measured_iterations_s": [],
                           "measured_runs_s": [], "_runs": [], "_sims": []}
                    rows.append(row)
                row["measured_iterations_s"] += [round(x, 3) for x in s.iteration_s]
                row["measured_runs_s"].append(round(m, 4))
                row["_runs"].append(m)
                row["_sims"].append(sim)
    for row in rows:
        runs_s, sims = row.pop("_runs"), row.pop("_sims")  # runs of equal iteration counts
        m, sim = sum(runs_s) / len(runs_s), sum(sims) / len(sims)
        err = round(err_pct(sim, m), 1)
        target = TARGET_PCT["modeled"] if row["compute"] == "modeled" else TARGET_PCT["real"]
        row.update({"measured_s": round(m, 4), "simulated_s": round(sim, 4), "err_pct": err,
                    "target_pct": target, "within_target": abs(err) <= target})
        if len(row["measured_runs_s"]) == 1:
            del row["measured_runs_s"]
    return rows, overrides


def document(rows: List[Dict[str, Any]], overrides: List[Dict[str, str]], load: float,
             quick: bool, repredicted: Optional[str] = None) -> Dict[str, Any]:
    within = sum(r["within_target"] for r in rows)
    doc = {"points": rows, "stock_settings": not overrides, "overrides": overrides,
           "within_target": "%d of %d" % (within, len(rows)), "load_before": load,
           "quick": quick}
    if repredicted:
        doc["repredicted_at"] = repredicted
    return doc


def table(doc: Dict[str, Any]) -> str:
    out = (f"{'point':<44} {'schedule':<18} {'compute':<8} {'measured':>9} {'simulated':>9} "
           f"{'err':>7}  {'target':>6}  iterations (s)\n")
    for r in doc["points"]:
        its = ", ".join(f"{x:.2f}" for x in r["measured_iterations_s"])
        out += (f"{r['point'][:44]:<44} {r['schedule']:<18} {r['compute']:<8} "
                f"{r['measured_s']:>9.3f} {r['simulated_s']:>9.3f} {r['err_pct']:>+6.1f}%  "
                f"{'<=' if r['within_target'] else '>'}{r['target_pct']:>3}%  {its}\n")
    return out


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m xdc_results.prediction",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", required=True, help="the points' sweep directories' parent")
    ap.add_argument("--out", required=True, help="the JSON to write")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--load", type=float, default=0.0, help="load average before the runs")
    ap.add_argument("--pooled", action="append", default=[], help="a point to pool (seeds)")
    ap.add_argument("--repredicted", metavar="COMMIT",
                    help="take each run's prediction from RUN/repredicted/ (made at COMMIT)")
    ap.add_argument("points", nargs="*")
    a = ap.parse_args(argv)
    rows, overrides = collect(a.runs, a.points, set(a.pooled), bool(a.repredicted))
    doc = document(rows, overrides, a.load, a.quick, a.repredicted)
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    sys.stdout.write(table(doc))
    print(f"within target: {doc['within_target']}; stock settings: {doc['stock_settings']}; "
          f"overrides: {overrides}; wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
