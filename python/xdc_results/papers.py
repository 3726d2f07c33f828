"""The headline figures of the paper reproductions (scripts/reproduce.sh).

Each function reads the sweeps reproduce.sh ran under REPRO (results/repro), prints the
tables it printed, and where a paper has a headline writes REPRO/<paper>/headline.json.
Every ``err_pct`` is results.err_pct: 100 * (simulated - measured) / measured.

    python3 -m xdc_results.papers pivot CSV ROW COLUMNS METRIC
    python3 -m xdc_results.papers {atlas|geopipe-latency|geopipe-paper|crosspipe|bubbletea|dhelix|diloco} REPRO
"""

from __future__ import annotations

import os
import sys
from typing import Any, Dict, List, Optional

from .papers_dhelix_diloco import (  # noqa: F401 (re-exported: dhelix, diloco, their parts)
    DHELIX_COMM_HIDDEN, DHELIX_EXTRA_MEMORY, DHELIX_MEASURED, _ratio, _write_json, dhelix,
    diloco, diloco_bytes, diloco_loss, diloco_overlap, diloco_table4, diloco_utilisation,
    dp_sync_points)
from .results import err_pct, find_row, load_sweep, try_load_run, try_load_sweep

BUBBLES = ("megatron", "zerobubble", "crosspipe")


def _neg(x: Optional[float]) -> float:
    return -x if x is not None else float("nan")


def pivot(csv_path: str, row_key: str, column_keys: str, metric: str) -> str:
    """A table of METRIC from a sweep.csv: one line per value of ROW_KEY (in file order),
    one column per value of COLUMN_KEYS ("a+b": per pair, shown "a/b"); "-" where absent.
    """
    sweep = try_load_sweep(os.path.dirname(csv_path) or ".")
    if sweep is None:
        return "  (no %s)\n" % csv_path
    keys = column_keys.split("+")
    rows: List[str] = []
    cols: List[str] = []
    val: Dict[tuple, Optional[float]] = {}
    for r in sweep.rows:
        rv = r.get(row_key, "")
        cv = "/".join(str(r.get(k, "")) for k in keys)
        if rv not in rows:
            rows.append(rv)
        if cv not in cols:
            cols.append(cv)
        val[rv, cv] = r.get(metric)
    out = "  %-12s" % row_key + "".join(" %16s" % c for c in cols) + "\n"
    for rv in rows:
        out += "  %-12s" % rv
        for cv in cols:
            v = val.get((rv, cv))
            out += " %16s" % "-" if v is None else " %16.3f" % v
        out += "\n"
    return out


# --- Atlas -----------------------------------------------------------------------------

ATLAS_SETUP = (
    "experiments/repro/atlas.yaml (3 DCs x 2 hosts, modeled compute, 64 MiB gradients, "
    "1 MiB activations, 4 Gbit/s WAN under time dilation 4, stock TCP); "
    "experiments/multi-connection-sweep.yaml (80 ms, 1 Gbit/s, 128 MiB messages)")
ATLAS_SHARING_SETUP = (
    "; experiments/wan-sharing-sweep.yaml (2 replicas x 2 stages over two DCs, 200 "
    "Mbit/s, 20 ms, 4 connections per transfer, CUBIC and BBR)")


def atlas_cell(rows: List[Dict[str, Any]], par: str, sched: str, delay: str,
               key: str) -> Optional[float]:
    r = find_row(rows, {"parallelism": par, "schedule": sched, "wan.delay": delay,
                        "status": "ok"})
    return r.get(key) if r else None


def atlas_slowdown(rows: List[Dict[str, Any]], par: str, sched: str,
                   key: str) -> Optional[float]:
    """KEY at 80 ms over KEY at 0 ms one way, 3 digits."""
    return _ratio(atlas_cell(rows, par, sched, "80ms", key),
                  atlas_cell(rows, par, sched, "0ms", key), 3)


def atlas_goodput(conns_dir: str, connections: int) -> Optional[float]:
    """The WAN messages' p50 goodput (Mbit/s) of the point with CONNECTIONS connections."""
    if not os.path.isdir(conns_dir):
        return None
    for d in sorted(os.listdir(conns_dir)):
        run = try_load_run(os.path.join(conns_dir, d)) if d.endswith("-%d" % connections) \
            else None
        for s in run.schedules if run else []:
            g = (s.raw.get("transfers") or {}).get("goodput_mbit_p50")
            if g:
                return round(g, 1)
    return None


def wan_sharing_ratio(sweep_dir: str, congestion: str, key: str) -> Optional[float]:
    """KEY with temporal WAN sharing over KEY with fair sharing, under CONGESTION."""
    sweep = try_load_sweep(sweep_dir)
    if sweep is None:
        return None
    it = {r["mpi.wan_sharing"]: r[key] for r in sweep.rows
          if r.get("tcp.congestion") == congestion and r["status"] == "ok" and r.get(key)}
    if "fair" in it and "temporal" in it:
        return round(it["temporal"] / it["fair"], 3)
    return None


def atlas_headline(repro: str) -> Optional[Dict[str, Any]]:
    """Atlas's headline from REPRO/atlas, atlas-connections, atlas-simulated,
    atlas-wan-sharing and atlas-wan-sharing-simulated; None without REPRO/atlas/sweep.csv."""
    atlas = try_load_sweep(os.path.join(repro, "atlas"))
    if atlas is None:
        return None
    sim = try_load_sweep(os.path.join(repro, "atlas-simulated"))
    rows, sim_rows = atlas.rows, sim.rows if sim else []
    h: Dict[str, Any] = {
        "dp_slowdown_80ms": atlas_slowdown(rows, "dp", "1f1b", "iteration_s"),
        "pp_slowdown_80ms": atlas_slowdown(rows, "pp", "1f1b", "iteration_s"),
        "pp_overlap_slowdown_80ms": atlas_slowdown(rows, "pp", "overlap", "iteration_s"),
        "dp_over_pp_slowdown_80ms": None,
        "simulated": {
            "dp_slowdown_80ms": atlas_slowdown(sim_rows, "dp", "1f1b", "simulated_iteration_s"),
            "pp_slowdown_80ms": atlas_slowdown(sim_rows, "pp", "1f1b", "simulated_iteration_s"),
            "pp_overlap_slowdown_80ms": atlas_slowdown(sim_rows, "pp", "overlap",
                                                       "simulated_iteration_s"),
        },
        "single_conn_mbit_80ms": atlas_goodput(os.path.join(repro, "atlas-connections"), 1),
        "multi_conn_mbit_80ms": atlas_goodput(os.path.join(repro, "atlas-connections"), 8),
        "connections": 8,
        # iteration(temporal) / iteration(fair) per congestion control (the headline: BBR;
        # under stock CUBIC temporal loses).
        "temporal_vs_fair_iteration_ratio": None,
        "temporal_vs_fair": {},
        "setup": ATLAS_SETUP,
    }
    dp = h["dp_slowdown_80ms"]
    if dp and h["pp_overlap_slowdown_80ms"]:
        h["dp_over_pp_slowdown_80ms"] = {
            "1f1b": _ratio(dp, h["pp_slowdown_80ms"], 2),
            "overlap": _ratio(dp, h["pp_overlap_slowdown_80ms"], 2)}
    for cc in ("cubic", "bbr"):
        h["temporal_vs_fair"][cc] = {
            "measured": wan_sharing_ratio(os.path.join(repro, "atlas-wan-sharing"), cc,
                                          "iteration_s"),
            "simulated": wan_sharing_ratio(os.path.join(repro, "atlas-wan-sharing-simulated"),
                                           cc, "simulated_iteration_s")}
    h["temporal_vs_fair_iteration_ratio"] = h["temporal_vs_fair"]["bbr"]["measured"]
    h["setup"] += ATLAS_SHARING_SETUP
    return h


def atlas(repro: str) -> Optional[Dict[str, Any]]:
    """Writes REPRO/atlas/headline.json and prints the measured beside the simulated."""
    h = atlas_headline(repro)
    adir, sdir = os.path.join(repro, "atlas"), os.path.join(repro, "atlas-simulated")
    if h is None:
        print("-- no %s/sweep.csv: no headline" % adir)
        return None
    _write_json(os.path.join(adir, "headline.json"), h)
    print("-- headline (%s/headline.json)" % adir)
    print("-- iteration time (s), measured / simulated now (%s)" % sdir)
    sim = try_load_sweep(sdir)
    for r in load_sweep(adir).rows:
        s = atlas_cell(sim.rows if sim else [], r["parallelism"], r["schedule"], r["wan.delay"],
                       "simulated_iteration_s")
        m = r.get("iteration_s")
        if r["status"] == "ok" and s and m:
            print("  %-6s %-3s %-8s %8.3f %8.3f  %+6.1f%%" % (
                r["wan.delay"], r["parallelism"], r["schedule"], m, s, err_pct(s, m)))
    dp, pp, ov = h["dp_slowdown_80ms"], h["pp_slowdown_80ms"], h["pp_overlap_slowdown_80ms"]
    print("  at 80 ms: DP slowdown %s, PP 1F1B %s, PP overlap %s (simulated %s / %s / %s)" % (
        dp, pp, ov, *h["simulated"].values()))
    if dp and pp and ov:
        print("  DP / PP slowdown: %.2f vs 1F1B, %.2f vs overlap (paper: DP degrades far more "
              "than a well-scheduled PP)" % (dp / pp, dp / ov))
    print("  one connection %s Mbit/s, 8 connections %s Mbit/s at 80 ms (paper: one flow ~300 "
          "Mbit/s at 160 ms RTT with 6 MiB buffers; several connections recover the bandwidth)"
          % (h["single_conn_mbit_80ms"], h["multi_conn_mbit_80ms"]))
    for cc, v in h["temporal_vs_fair"].items():
        print("  temporal / fair WAN sharing, %s: %s measured, %s simulated (paper: temporal "
              "sharing beats fair sharing)" % (cc, v["measured"], v["simulated"]))
    return h


# --- GeoPipe ---------------------------------------------------------------------------

def geopipe_latency(sweep_dir: str) -> List[Dict[str, Any]]:
    """Per one-way delay (in file order): overlap's bubble (ZeroBubble) and iteration
    change against 1f1b, in percent (negative: overlap is better)."""
    sweep = try_load_sweep(sweep_dir)
    if sweep is None:
        return []
    it: Dict[tuple, Optional[float]] = {}
    bz: Dict[tuple, Optional[float]] = {}
    delays: List[str] = []
    for r in sweep.rows:
        k = (r["wan.delay"], r["schedule"])
        it[k], bz[k] = r.get("iteration_s"), r.get("bubble.zerobubble")
        if r["wan.delay"] not in delays:
            delays.append(r["wan.delay"])
    out = []
    for d in delays:
        i1, io = it.get((d, "1f1b")), it.get((d, "overlap"))
        b1, bo = bz.get((d, "1f1b")), bz.get((d, "overlap"))
        if i1 and io is not None and b1:
            out.append({"wan.delay": d, "bubble_change_pct": 100 * ((bo or 0) / b1 - 1),
                        "iteration_change_pct": 100 * (io / i1 - 1)})
    return out


def print_geopipe_latency(sweep_dir: str) -> None:
    for c in geopipe_latency(sweep_dir):
        print("  %-6s overlap vs 1f1b: bubble %+.1f%%, iteration %+.1f%%" % (
            c["wan.delay"], c["bubble_change_pct"], c["iteration_change_pct"]))


def geopipe_compare(grid: Dict[tuple, Dict[str, Any]], model: str, microbatches: int,
                    delay: str) -> Optional[Dict[str, Any]]:
    """Overlap against 1f1b at one simulated point: iteration (s) and its reduction, and
    per bubble definition both ratios and the reduction (percent: 100 (1 - overlap/1f1b))."""
    a = grid.get((model, microbatches, delay, "1f1b"))
    b = grid.get((model, microbatches, delay, "overlap"))
    if not a or not b or not a.get("simulated_iteration_s") or \
            b.get("simulated_iteration_s") is None:
        return None
    out: Dict[str, Any] = {"iteration_s": {"1f1b": a["simulated_iteration_s"],
                                           "overlap": b["simulated_iteration_s"]}}
    out["iteration_reduction_pct"] = 100 * (1 - out["iteration_s"]["overlap"] /
                                            out["iteration_s"]["1f1b"])
    out["bubble"] = {}
    for k in BUBBLES:
        x, y = a.get("simulated_bubble." + k), b.get("simulated_bubble." + k)
        out["bubble"][k] = {"1f1b": x, "overlap": y,
                            "reduction_pct": 100 * (1 - y / x) if x and y is not None else None}
    return out


def _gbit(rate: str) -> float:
    return float(rate.replace("gbit", "")) if rate.endswith("gbit") else \
        float(rate.replace("mbit", "")) / 1000


def bandwidth_knees(rows: List[Dict[str, Any]]) -> Dict[str, tuple]:
    """Per schedule: its (rate, simulated iteration) points by rate, and the knee: the
    lowest rate (Gbit/s) whose iteration is within 2% of the schedule's best."""
    by: Dict[str, List[tuple]] = {}
    for r in rows:
        if r.get("simulated_iteration_s") is not None:
            by.setdefault(r["schedule"], []).append((r["wan.rate"], r["simulated_iteration_s"]))
    out = {}
    for s, pts in by.items():
        pts.sort(key=lambda p: _gbit(p[0]))
        best = min(t for _, t in pts)
        out[s] = (pts, next(_gbit(r) for r, t in pts if t <= 1.02 * best))
    return out


GEOPIPE_DEFINITION = (
    "computation bubble ratio = (T - C_max) / C_max: T the iteration (the trace's "
    "first event start to its last event end), C_max the compute time of the "
    "busiest rank (F, B, W including its "
    "in-node TP all-reduces); Megatron's bubble over ideal compute, read here as "
    "GeoPipe's (its formula is not given); reduction = 1 - ratio(overlap) / "
    "ratio(1f1b)")


def geopipe_paper(repro: str) -> Optional[Dict[str, Any]]:
    """GeoPipe in its setting from REPRO/geopipe-paper, -paper-bandwidth and
    -paper-measured; writes REPRO/geopipe/headline.json."""
    def rows(name: str) -> List[Dict[str, Any]]:
        sweep = try_load_sweep(os.path.join(repro, name))
        return sweep.rows if sweep else []

    grid = {(r["compute.modeled.model"], int(r["microbatches"]), r["wan.delay"],
             r["schedule"]): r for r in rows("geopipe-paper")}
    print("-- GeoPipe in its setting (910B, TP 8 x PP 8, 3 DCs, 100 Gbit/s DC-OTN),")
    print("   simulated: overlap vs 1f1b, bubble reduction per definition and iteration change")
    print("  %-10s %-5s %-5s %10s %10s %9s %9s %9s %9s" % (
        "model", "mb", "delay", "1f1b s", "overlap s", "iter", "megatron", "zerobub",
        "crosspipe"))
    for (model, m, d, s) in sorted(grid, key=lambda k: (k[0], k[1],
                                                        float(k[2].rstrip("ms") or 0))):
        c = geopipe_compare(grid, model, m, d) if s == "1f1b" else None
        if c:
            print("  %-10s %-5d %-5s %10.3f %10.3f %+8.1f%% %+8.1f%% %+8.1f%% %+8.1f%%" % (
                model, m, d, c["iteration_s"]["1f1b"], c["iteration_s"]["overlap"],
                -c["iteration_reduction_pct"],
                *[_neg(c["bubble"][k]["reduction_pct"]) for k in BUBBLES]))
    head = geopipe_compare(grid, "llama2-13b", 512, "2ms")
    big = geopipe_compare(grid, "llama-72b", 512, "2ms")
    knees = bandwidth_knees(rows("geopipe-paper-bandwidth"))
    if knees:
        print("-- iteration time (s) vs DC-OTN rate, 2 ms, 512 microbatches (simulated)")
        for s, (pts, knee) in knees.items():
            print("  %-8s %s   knee %g Gbit/s" % (s, "  ".join("%s %.2f" % p for p in pts),
                                                   knee))
    knee = {s: k for s, (_, k) in knees.items()}
    measured = []
    for r in rows("geopipe-paper-measured"):
        m, sim = r.get("iteration_s"), r.get("simulated_iteration_s")
        if m and sim:
            measured.append({"schedule": r["schedule"], "microbatches": int(r["microbatches"]),
                             "measured_s": m, "simulated_s": sim, "err_pct": err_pct(sim, m),
                             "bubble_megatron": r.get("bubble.megatron"),
                             "simulated_bubble_megatron": r.get("simulated_bubble.megatron")})
    if measured:
        print("-- emulated (8 microbatches, 2 ms, dilation 100): measured vs simulated")
        for p in measured:
            print("  %-8s %.3f s vs %.3f s (%+.1f%%), bubble %.1f%% vs %.1f%%" % (
                p["schedule"], p["measured_s"], p["simulated_s"], p["err_pct"],
                100 * (p["bubble_megatron"] or 0), 100 * (p["simulated_bubble_megatron"] or 0)))
    if not head:
        return None
    h = {"bubble_reduction_pct": head["bubble"]["megatron"]["reduction_pct"],
         "iteration_reduction_pct": head["iteration_reduction_pct"],
         "bandwidth_knee_gbit": knee.get("overlap"),
         "bandwidth_knee_gbit_1f1b": knee.get("1f1b"),
         "metric_definition": GEOPIPE_DEFINITION,
         "point": {"model": "llama2-13b", "device": "910b", "tp": 8, "pp": 8, "dcs": 3,
                   "microbatches": 512, "wan_delay": "2ms", "wan_rate": "100gbit",
                   "efficiency": 0.5, "basis": "simulated"},
         "other_definitions": {k: head["bubble"][k]["reduction_pct"] for k in BUBBLES},
         "iteration_s": head["iteration_s"],
         "llama_72b": big and {"bubble_reduction_pct": big["bubble"]["megatron"]["reduction_pct"],
                               "iteration_reduction_pct": big["iteration_reduction_pct"]},
         "measured_beside_simulated": measured,
         "paper": {"bubble_reduction_pct": 78.91, "iteration_reduction_pct": 9.1,
                   "bandwidth_knee": "an optimisation point exists (value not reproduced here)"}}
    path = os.path.join(repro, "geopipe", "headline.json")
    _write_json(path, h)
    print("-- headline (%s)" % path)
    print("  bubble ratio %.2f%% lower with overlap (paper: 78.91%%), iteration %.1f%% lower "
          "(paper: 9.1%%), knee %s Gbit/s (1f1b: %s)" % (
              h["bubble_reduction_pct"] if h["bubble_reduction_pct"] is not None
              else float("nan"), h["iteration_reduction_pct"], h["bandwidth_knee_gbit"],
              h["bandwidth_knee_gbit_1f1b"]))
    return h


# --- CrossPipe -------------------------------------------------------------------------

def crosspipe_ratio(sweep_dir: str, key: str, point: str = "L2-D2") -> Optional[float]:
    """crosspipe-greedy's KEY over 1f1b's at POINT of the `delays` axis (0 where greedy
    has none); None where 1f1b has none."""
    sweep = try_load_sweep(sweep_dir)
    val = {r["schedule"]: r.get(key) for r in (sweep.rows if sweep else [])
           if r.get("delays") == point}
    base = val.get("1f1b")
    return (val.get("crosspipe-greedy") or 0) / base if base else None


def print_crosspipe(sweep_dir: str) -> None:
    m = crosspipe_ratio(sweep_dir, "iteration_s")
    s = crosspipe_ratio(sweep_dir, "simulated_iteration_s")
    line = ""
    if m is not None:
        line += "  at (2,2) crosspipe-greedy / 1f1b: measured %.2f" % m
    if s is not None:
        line += ", simulated %.2f" % s
    print(line)


# --- BubbleTea -------------------------------------------------------------------------

def bubbletea(sweep_dir: str) -> Optional[Dict[str, Any]]:
    """Prefill in 1F1B's bubbles, per request rate; the highest rate run is the headline,
    written to SWEEP_DIR/headline.json."""
    sweep = try_load_sweep(sweep_dir)
    points = {float(r["prefill.rate_rps"]): r["id"] for r in (sweep.rows if sweep else [])}
    print("-- BubbleTea: prefill in the bubbles of 1F1B over a 40 ms WAN (4 stages, 2 DCs)")
    print("  %-9s %9s %9s %10s %8s %8s %9s %9s" % ("rate/s", "util w/o", "util with",
          "slowdown", "served", "rejected", "TTFT p50", "TTFT p99"))
    headline, overruns, overrun_ms = None, 0, 0.0
    for rate in sorted(points):
        run = try_load_run(os.path.join(sweep_dir, points[rate]))
        if run is None:
            print("  %-9g (not run)" % rate)
            continue
        p = next((s.raw.get("prefill") for s in run.schedules
                  if s.name.endswith("+prefill")), None)
        if not p or "utilisation_without" not in p:
            print("  %-9g (no prefill result)" % rate)
            continue
        print("  %-9g %8.1f%% %8.1f%% %+9.2f%% %8d %8d %7.0f ms %7.0f ms" % (
            rate, 100 * p["utilisation_without"], 100 * p["utilisation_with"],
            p["training_slowdown_pct"], p["served"], p["rejected"],
            p.get("ttft_ms_p50", 0), p.get("ttft_ms_p99", 0)))
        overruns, overrun_ms = p.get("overruns", 0), p.get("overrun_ms", 0.0)
        headline = {"utilisation_without": p["utilisation_without"],
                    "utilisation_with": p["utilisation_with"],
                    "training_slowdown_pct": p["training_slowdown_pct"],
                    "ttft_p50_ms": p.get("ttft_ms_p50"), "ttft_p99_ms": p.get("ttft_ms_p99"),
                    "served": p["served"], "rejected": p["rejected"]}
    if headline:
        path = os.path.join(sweep_dir, "headline.json")
        _write_json(path, headline)
        print("-- headline (%s):" % path)
        print("  utilisation %.1f%% -> %.1f%% with prefill (paper: up to 94%%)" % (
            100 * headline["utilisation_without"], 100 * headline["utilisation_with"]))
        print("  training iteration %+.2f%% vs without prefill (paper: no harm to training)" %
              headline["training_slowdown_pct"])
        print("  TTFT p50 %.0f ms, p99 %.0f ms; %d served, %d rejected" % (
            headline["ttft_p50_ms"] or 0, headline["ttft_p99_ms"] or 0, headline["served"],
            headline["rejected"]))
        print("  prefill overran %d of the training's waits, by %.1f ms in all" % (
            overruns, overrun_ms))
    return headline


COMMANDS = {
    "atlas": atlas,
    "geopipe-latency": print_geopipe_latency,
    "geopipe-paper": geopipe_paper,
    "crosspipe": print_crosspipe,
    "bubbletea": bubbletea,
    "dhelix": dhelix,
    "diloco": diloco,
}


def main(argv: List[str]) -> int:
    if len(argv) == 5 and argv[0] == "pivot":
        sys.stdout.write(pivot(*argv[1:]))
        return 0
    if len(argv) == 2 and argv[0] in COMMANDS:
        COMMANDS[argv[0]](argv[1])
        return 0
    sys.stderr.write(__doc__.split("\n\n")[-1])
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
