"""Calibration of the prediction bands: how often a run's measured mean falls inside the
90% band predicted beside it (summary.json's simulated_band_s), over runs that differ only
in their seed (scripts/bench_calibration.sh).

    python3 -m xdc_results.calibration --out OUT.json [--load X] SWEEP_DIR...

Each SWEEP_DIR is an `xdc sweep` directory whose points are runs of one experiment. One
row per experiment and schedule: runs, inside (runs whose iteration_s_mean lies in their
own simulated_band_s), band_halfwidth_pct (the bands' mean half-width, % of their middle),
iterations (measured iterations per run: a band of a run's mean narrows with its length).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict, List

from .results import try_load_run, try_load_sweep


def band_of(raw: Dict[str, Any]):
    """(low, high) of a schedule entry's simulated_band_s; None when absent or empty."""
    b = raw.get("simulated_band_s")
    if not isinstance(b, list) or len(b) != 2 or not all(isinstance(x, (int, float)) for x in b):
        return None
    lo, hi = float(b[0]), float(b[1])
    return (lo, hi) if hi > 0 and lo <= hi else None


def collect(sweep_dirs: List[str]) -> Dict[str, Any]:
    rows: Dict[tuple, Dict[str, Any]] = {}
    for d in sweep_dirs:
        sweep = try_load_sweep(d)
        ids = sweep.point_ids() if sweep else sorted(os.listdir(d))
        for point in ids:
            run = try_load_run(os.path.join(d, point))
            if run is None:
                continue
            for s in run.schedules:
                band, mean = band_of(s.raw), s.measured_iteration_s
                if not s.ok or band is None or mean is None:
                    continue
                row = rows.setdefault((run.experiment, s.name), {
                    "experiment": run.experiment, "schedule": s.name, "runs": 0, "inside": 0,
                    "iterations": len(s.iteration_s), "_half": [], "measured_s": [], "band_s": []})
                row["runs"] += 1
                row["iterations"] = min(row["iterations"], len(s.iteration_s))
                row["inside"] += int(band[0] <= mean <= band[1])
                mid = (band[0] + band[1]) / 2
                row["_half"].append(100 * (band[1] - band[0]) / 2 / mid)
                row["measured_s"].append(round(mean, 4))
                row["band_s"].append([round(band[0], 4), round(band[1], 4)])
    points = []
    for row in rows.values():
        half = row.pop("_half")
        row["band_halfwidth_pct"] = round(sum(half) / len(half), 2)
        points.append(row)
    return {"points": points}


def table(doc: Dict[str, Any]) -> str:
    out = (f"{'experiment':<20} {'schedule':<18} {'iters':>5} {'runs':>4} {'inside':>6} "
           f"{'band +-%':>8}\n")
    for p in doc["points"]:
        out += (f"{p['experiment'][:20]:<20} {p['schedule']:<18} {p.get('iterations', 0):>5} "
                f"{p['runs']:>4} "
                f"{p['inside']:>6} {p['band_halfwidth_pct']:>8.2f}\n")
    return out


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m xdc_results.calibration",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--load", type=float, default=0.0, help="load average before the runs")
    ap.add_argument("sweeps", nargs="+")
    a = ap.parse_args(argv)
    doc = collect(a.sweeps)
    doc["load_before"] = a.load
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    sys.stdout.write(table(doc))
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
