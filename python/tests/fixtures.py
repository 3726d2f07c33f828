"""Small results directories in xdc's layout, written for the tests.

The static ones live in tests/data/ (trimmed from real runs); the helpers here build
sweep directories (sweep.csv + one summary.json per point) in a temporary directory.
"""

import csv
import json
import os

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")

METRICS = ["iteration_s", "iteration_s_p50", "iteration_s_p95", "slowdown", "bubble.megatron",
           "bubble.zerobubble", "bubble.crosspipe", "simulated_iteration_s",
           "simulated_bubble.megatron", "simulated_bubble.zerobubble",
           "simulated_bubble.crosspipe", "measured_over_simulated", "tokens_per_s",
           "iteration_s_max", "simulated_iteration_s_max", "simulated_slowdown", "eval_loss",
           "outer_bytes_per_step", "stall_s_per_sync", "utilisation", "simulated_utilisation"]


def write_sweep_csv(directory, axes, rows):
    """sweep.csv as harness/sweep/metrics.cpp writes it: ROWS are dicts with "id", the
    axes' labels, "schedule", "status" (default ok) and any metrics (others empty)."""
    os.makedirs(directory, exist_ok=True)
    ids = []
    with open(os.path.join(directory, "sweep.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["point", "id"] + axes + ["schedule", "status"] + METRICS)
        for r in rows:
            if r["id"] not in ids:
                ids.append(r["id"])
            w.writerow([ids.index(r["id"]), r["id"]] + [r[a] for a in axes] +
                       [r["schedule"], r.get("status", "ok")] +
                       ["" if r.get(m) is None else repr(float(r[m])) for m in METRICS])


def write_summary(directory, schedules, **facts):
    """A point's summary.json: FACTS at the top, SCHEDULES (summary_json entries)."""
    os.makedirs(directory, exist_ok=True)
    doc = {"experiment": facts.pop("experiment", "fixture"), "compute_mode": "modeled",
           "interrupted": False}
    doc.update(facts)
    doc["schedules"] = schedules
    with open(os.path.join(directory, "summary.json"), "w") as f:
        json.dump(doc, f, indent=1)


def write_environment(directory, **env):
    with open(os.path.join(directory, "environment.json"), "w") as f:
        json.dump(env, f)


def entry(schedule, measured_s=None, simulated_s=None, ok=True, iterations=None, **more):
    """One schedule's summary.json entry (harness/run/results.cpp summary_json)."""
    e = {"schedule": schedule, "ok": ok, "simulated_iteration_s": simulated_s or 0,
         "simulated_bubble_ratio": {"megatron": 0.1, "zerobubble": 0.1, "crosspipe": 0.1},
         "simulated_costs": "modeled (what the workers sleep)"}
    if measured_s is not None:
        its = iterations or [measured_s]
        e.update({"iterations": len(its), "iteration_s": its, "iteration_s_mean": measured_s,
                  "iteration_s_p50": measured_s, "iteration_s_p95": max(its),
                  "bubble_ratio": {"megatron": 0.2, "zerobubble": 0.15, "crosspipe": 0.12},
                  "measured_over_simulated": measured_s / simulated_s if simulated_s else None,
                  "tokens_per_s": 1000.0, "loss": [], "waits_s_per_iteration": {}})
    if not ok:
        e["error"] = "rank 2 exited"
    e.update(more)
    return e
