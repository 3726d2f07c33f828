"""The headline figures of the paper reproductions (scripts/reproduce.sh).

Each function reads the sweeps reproduce.sh ran under REPRO (results/repro), prints the
tables it printed, and where a paper has a headline writes REPRO/<paper>/headline.json.
Every ``err_pct`` is results.err_pct: 100 * (simulated - measured) / measured.

    python3 -m xdc_results.papers pivot CSV ROW COLUMNS METRIC
    python3 -m xdc_results.papers {atlas|geopipe-latency|geopipe-paper|crosspipe|bubbletea|dhelix|diloco} REPRO
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict, List, Optional

from .results import err_pct, find_row, load_sweep, try_load_run, try_load_sweep

BUBBLES = ("megatron", "zerobubble", "crosspipe")


def _write_json(path: str, doc: Dict[str, Any]) -> None:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f, indent=2)


def _read_json(path: str) -> Any:
    """The JSON document at `path`; None when there is none."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


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


def _ratio(a: Optional[float], b: Optional[float], digits: int) -> Optional[float]:
    return round(a / b, digits) if a and b else None


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


# --- DHelix ----------------------------------------------------------------------------

DHELIX_EXTRA_MEMORY = (
    "dhelix's peak activations (the validator's: a pair's BW frees as its F fills) "
    "plus the most a pair holds beyond one half's at a step of its plan, over 1F1B's "
    "peak (rank 0: p microbatches of a rank's layers)")
DHELIX_COMM_HIDDEN = (
    "TP all-reduce time that co-executed pairs run beside the other half's "
    "computation (net of the interference), over all TP all-reduce time in an "
    "iteration's F and backward")
DHELIX_MEASURED = (("dhelix-measured", "7B, seq 2048, TP 8 x PP 4, 8 microbatches"),
                   ("dhelix-measured-scale", "13B, seq 4096, TP 8 x PP 8, 16 microbatches"))


def _points(repro: str, name: str) -> List[tuple]:
    sweep = try_load_sweep(os.path.join(repro, name))
    return list(sweep.runs()) if sweep else []


def dhelix(repro: str) -> Optional[Dict[str, Any]]:
    """DHelix in its setting (REPRO/dhelix-a40, dhelix-h100: simulated) and its emulated
    points (dhelix-measured, dhelix-measured-scale); writes REPRO/dhelix/headline.json."""
    gain: Dict[str, Any] = {}
    mfu: Dict[str, Any] = {}
    memory: Dict[str, float] = {}
    hidden: Dict[str, Any] = {}
    fraction: Dict[str, Any] = {}
    print("-- DHelix in its setting (TP 8 x PP 8, Llama-2 13B, 64 microbatches), simulated")
    print("  %-22s %6s %9s %9s %9s %8s %8s" % ("config", "TP %", "1f1b s", "interl. s",
                                              "dhelix s", "vs best", "vs 1f1b"))
    for name, label in (("dhelix-a40", "a40"), ("dhelix-h100", "h100")):
        for row, run in _points(repro, name):
            s = run.summary
            config = label + ("-tp" + row["compute.modeled.tp_bandwidth"]
                              if "compute.modeled.tp_bandwidth" in row else "")
            entries = {k: (run.schedule(k).raw if run.schedule(k) else {})
                       for k in ("1f1b", "interleaved", "dhelix")}
            t = {k: e.get("simulated_iteration_s") for k, e in entries.items()}
            if not all(t.values()):
                continue
            best = min(t["1f1b"], t["interleaved"])
            shape = s.get("schedule_shape", {})
            gain[config] = {"vs_best_of_1f1b_interleaved": 100 * (best / t["dhelix"] - 1),
                            "vs_1f1b_equal_memory": 100 * (t["1f1b"] / t["dhelix"] - 1),
                            "iteration_s": t, "tp_comm_fraction": s.get("tp_comm_fraction"),
                            "peak_activations": {k: v["peak_activations"]
                                                 for k, v in shape.items()}}
            mfu[config] = {k: (e.get("simulated_mfu") or {}).get("value")
                           for k, e in entries.items()}
            d = shape.get("dhelix", {})
            peak_1f1b = shape.get("1f1b", {}).get("peak_activations")
            if peak_1f1b and "peak_activations" in d:
                memory[config] = 100 * ((d["peak_activations"] +
                                         d.get("pair_extra_activations", 0)) / peak_1f1b - 1)
            hidden[config] = d.get("tp_comm_hidden_pct")
            fraction[config] = s.get("tp_comm_fraction")
            print("  %-22s %5.1f%% %9.3f %9.3f %9.3f %+7.1f%% %+7.1f%%" % (
                config, 100 * (fraction[config] or 0), t["1f1b"], t["interleaved"],
                t["dhelix"], gain[config]["vs_best_of_1f1b_interleaved"],
                gain[config]["vs_1f1b_equal_memory"]))
    print("   paper: 12-40% over Megatron's best on 64 A40s; less on H100s (faster network)")
    measured = []
    for name, point in DHELIX_MEASURED:
        for _, run in _points(repro, name):
            for x in run.schedules:
                m, sim = x.measured_iteration_s, x.simulated_iteration_s
                if m and sim:
                    measured.append({"point": point, "schedule": x.name, "measured_s": m,
                                     "simulated_s": sim, "err_pct": err_pct(sim, m)})
    if measured:
        print("-- emulated at dilation 40: measured vs simulated")
        for p in measured:
            print("  %-44s %-12s %.3f s vs %.3f s (%+.1f%%)" % (
                p["point"], p["schedule"], p["measured_s"], p["simulated_s"], p["err_pct"]))
    if not gain:
        return None
    a40 = [c for c in gain if c.startswith("a40")]
    h = {"throughput_gain_pct": {c: g["vs_best_of_1f1b_interleaved"] for c, g in gain.items()},
         "throughput_gain_vs_1f1b_pct": {c: g["vs_1f1b_equal_memory"] for c, g in gain.items()},
         "mfu": mfu,
         "extra_memory_pct": max(memory.values()) if memory else None,
         "comm_hidden_pct": hidden.get("a40-tp200gbit"),
         "comm_hidden_pct_per_config": hidden,
         "tp_comm_fraction": fraction,
         "details": gain,
         "measured_beside_simulated": measured,
         "basis": "simulated (modeled compute), figures per config; comm_hidden_pct: the A40 "
                  "nodes at 25 GB/s (TP all-reduce 46% of layer time); "
                  "measured_beside_simulated: an emulated point",
         "extra_memory_definition": DHELIX_EXTRA_MEMORY,
         "comm_hidden_definition": DHELIX_COMM_HIDDEN,
         "paper": {"throughput_gain_pct_a40": [12, 40], "h100": "smaller gain",
                   "extra_memory_pct": "< 3"}}
    path = os.path.join(repro, "dhelix", "headline.json")
    _write_json(path, h)
    print("-- headline (%s)" % path)
    print("  A40: dhelix %s over the best of 1f1b/interleaved (paper 12-40%%); H100: %s" % (
        ", ".join("%+.1f%%" % gain[c]["vs_best_of_1f1b_interleaved"] for c in sorted(a40)),
        ", ".join("%+.1f%%" % gain[c]["vs_best_of_1f1b_interleaved"] for c in gain
                  if c.startswith("h100"))))
    print("  extra activation memory %.1f%% over 1f1b (paper: under 3%%); TP communication "
          "hidden %s" % (h["extra_memory_pct"] or 0, ", ".join(
              "%s %.0f%%" % (c, v) for c, v in hidden.items() if v is not None)))
    return h


# --- Low-communication DP (DiLoCo) ------------------------------------------------------

def _in_units(text: str, units: tuple) -> Optional[float]:
    """The number in TEXT ("4mib", "1.6gbit") times its unit suffix's scale (UNITS: (suffix,
    scale) pairs); None without a listed suffix or a number."""
    t = str(text).strip().lower()
    for unit, scale in units:
        if t.endswith(unit):
            try:
                return float(t[:-len(unit)]) * scale
            except ValueError:
                return None
    return None


def _mib(text: str) -> Optional[float]:
    """A size label of xdc ("4mib", "400MiB", "1gib") in MiB; None when it is none."""
    return _in_units(text, (("gib", 1024.0), ("mib", 1.0), ("kib", 1 / 1024.0)))


def _ms(text: str) -> Optional[float]:
    t = str(text).strip().lower()
    try:
        return float(t[:-2]) if t.endswith("ms") else float(t[:-1]) * 1000 if t.endswith(
            "s") else None
    except ValueError:
        return None


def dp_sync_points(sweep_dir: str) -> List[Dict[str, Any]]:
    """The synchronous DP all-reduce sweep (experiments/repro/dp-sync.yaml): per point its
    replicas, gradient MiB, one-way delay, measured and simulated iteration, err_pct."""
    sweep = try_load_sweep(sweep_dir)
    out = []
    for r in sweep.ok_rows() if sweep else []:
        m, s = r.get("iteration_s"), r.get("simulated_iteration_s")
        out.append({"replicas": int(float(r["replicas"])),
                    "grad_mib": _mib(r["compute.modeled.grad"]),
                    "delay_ms": _ms(r["wan.delay"]), "measured_s": m, "simulated_s": s,
                    "err_pct": err_pct(s, m)})
    return sorted(out, key=lambda p: (p["replicas"], p["grad_mib"] or 0, p["delay_ms"] or 0))


def _method_entries(sweep_dir: str) -> Dict[str, Dict[str, Any]]:
    """A sweep with a "method" axis (diloco-loss.yaml, diloco-bytes.yaml): per method
    label, its first schedule's summary.json entry (only points that finished)."""
    sweep = try_load_sweep(sweep_dir)
    out: Dict[str, Dict[str, Any]] = {}
    for row, run in sweep.runs() if sweep else []:
        entries = [sc.raw for sc in run if sc.ok]
        if entries and row.get("method"):
            out[row["method"]] = entries[0]
    return out


def diloco_loss(sweep_dir: str) -> Optional[Dict[str, Any]]:
    """Final evaluation loss per method of diloco-loss.yaml: dp, diloco_h10/h30/h100, the fp4
    payload and plain averaging (outer lr 1, no momentum) at H = 30, and Streaming DiLoCo
    at H = 30 (fragments overlapped, fp4)."""
    e = _method_entries(sweep_dir)
    if not e:
        return None
    loss = {k.replace("-", "_"): v.get("eval_loss") for k, v in e.items()}
    out = {"dp": loss.get("dp"), "diloco_h10": loss.get("diloco_h10"),
           "diloco_h30": loss.get("diloco_h30"), "diloco_h100": loss.get("diloco_h100"),
           "diloco_fp4_h30": loss.get("diloco_h30_fp4"),
           "diloco_averaging_h30": loss.get("diloco_h30_avg"),
           "streaming_fp4_h30": loss.get("streaming_h30_fp4")}
    dp = out["dp"]
    out["gap_pct"] = {k: None if v is None or not dp else round(100 * (v - dp) / dp, 2)
                      for k, v in out.items() if k != "dp"}
    return out


def diloco_bytes(sweep_dir: str) -> Optional[Dict[str, Any]]:
    """diloco-bytes.yaml: the WAN's sent bytes (all directions) of DP and of DiLoCo H in fp32
    and fp4 over the same iterations, their ratios, and DiLoCo's bytes per outer step
    against the analytic count with headers."""
    e = _method_entries(sweep_dir)

    def total(m: str) -> Optional[float]:
        return (e.get(m, {}).get("wan_wire_bytes") or {}).get("total")

    dp, fp32, fp4 = total("dp"), total("diloco-h10"), total("diloco-h10-fp4")
    if dp is None and fp32 is None:
        return None
    per_step = []
    for m in ("diloco-h10", "diloco-h10-fp4"):
        d = e.get(m, {}).get("dp_sync") or {}
        measured, analytic = d.get("wan_wire_bytes_per_outer_step"), d.get(
            "collective_wire_bytes_analytic")
        per_step.append({"method": m, "payload": d.get("payload"), "measured": measured,
                         "analytic": analytic,
                         "err_pct": None if not measured or not analytic else
                         round(100 * (measured - analytic) / analytic, 2)})
    h = (e.get("diloco-h10", {}).get("dp_sync") or {}).get("inner_steps")
    return {"h": h, "bytes_dp_over_diloco": _ratio(dp, fp32, 3),
            "bytes_fp4_over_fp32": _ratio(fp4, fp32, 4), "per_outer_step": per_step,
            "wan_bytes": {"dp": dp, "diloco_h10": fp32, "diloco_h10_fp4": fp4}}


def _mbit(text: str) -> Optional[float]:
    """A rate label of xdc ("100mbit", "1.6gbit") in Mbit/s; None when it is none."""
    return _in_units(text, (("gbit", 1000.0), ("mbit", 1.0), ("kbit", 1e-3)))


def diloco_utilisation(sweep_dir: str) -> List[Dict[str, Any]]:
    """diloco-utilisation.yaml: per method and WAN rate, the ranks' mean compute utilisation
    measured and simulated, and their difference in points (simulated - measured);
    analytic stays None (the paper's zero-latency model is not computed here)."""
    sweep = try_load_sweep(sweep_dir)
    out = []
    for r in sweep.ok_rows() if sweep else []:
        m, s = r.get("utilisation"), r.get("simulated_utilisation")
        out.append({"method": r.get("method"), "rate_mbit": _mbit(r.get("wan.rate", "")),
                    "measured": m, "simulated": s, "analytic": None,
                    "diff_points": None if m is None or s is None else round(100 * (s - m), 2)})
    return sorted(out, key=lambda p: (str(p["method"]), p["rate_mbit"] or 0))


def diloco_overlap(sweep_dir: str) -> Optional[Dict[str, Any]]:
    """diloco-overlap.yaml: the streaming outer loop's compute utilisation with its syncs
    blocking and overlapped, measured and simulated."""
    e = _method_entries(sweep_dir)
    if not e:
        return None
    out: Dict[str, Any] = {}
    for m in ("blocking", "overlapped"):
        u = (e.get(m) or {}).get("utilisation") or {}
        su = (e.get(m) or {}).get("simulated_utilisation") or {}
        out[m] = u.get("mean")
        out[m + "_simulated"] = su.get("mean")
    return out


_TABLE4_LABELS = {"Data-Parallel": "dp", "Vanilla DiLoCo": "diloco",
                  "Streaming DiLoCo": "streaming",
                  "Streaming DiLoCo w/ overlapped com.": "streaming-overlapped",
                  "Streaming DiLoCo w/ overlapped FP4 com.": "streaming-overlapped-fp4"}


def diloco_table4(table_dir: str) -> Optional[List[Dict[str, Any]]]:
    """REPRO/diloco-table4: `xdc simulate --paper-table4`'s cells (the paper's and xdc's
    under the paper's assumptions) with, for the 1B model, the rate xdc's own prediction
    needs (`xdc simulate diloco-table4-1b.yaml --utilisation U` in xdc-U/): at 0 ms
    (xdc_tcp_gbit, the paper's zero latency) and 10 ms one way (xdc_tcp_10ms_gbit); None
    where no rate up to the range's top reaches U."""
    cells = _read_json(os.path.join(table_dir, "table4.json"))
    if cells is None:
        return None
    for c in cells:
        c["xdc_tcp_gbit"] = c["xdc_tcp_10ms_gbit"] = None
        if c["model"] != "1B":
            continue
        rates = _read_json(os.path.join(table_dir, "xdc-%g" % c["utilisation"], "rate.json"))
        for r in (rates or {}).get("schedules", []):
            point = r.get("point", "")
            if not point.endswith("method-" + _TABLE4_LABELS.get(c["method"], "?")):
                continue
            gbit = None if r.get("rate_bps") is None else r["rate_bps"] / 1e9
            key = "xdc_tcp_gbit" if point.startswith("delay-0ms_") else "xdc_tcp_10ms_gbit"
            c[key] = gbit
    return cells


def diloco(repro: str) -> Dict[str, Any]:
    """REPRO/dp-sync (the WAN all-reduce of synchronous DP, measured beside predicted),
    REPRO/diloco-loss and REPRO/diloco-bytes; writes REPRO/diloco/headline.json, the keys
    not measured null."""
    points = dp_sync_points(os.path.join(repro, "dp-sync"))
    print("-- synchronous DP across DCs: iteration (s) measured / simulated (err %)")
    print("  %-8s %8s %8s %9s %9s %7s" % ("replicas", "grad MiB", "delay ms", "measured",
                                         "simulated", "err %"))
    for p in points:
        e = p["err_pct"]
        print("  %-8d %8g %8g %9.3f %9.3f %7s" % (p["replicas"], p["grad_mib"] or 0,
                                                  p["delay_ms"] or 0, p["measured_s"] or 0,
                                                  p["simulated_s"] or 0,
                                                  "-" if e is None else "%+.1f" % e))
    within = [p for p in points if p["err_pct"] is not None and abs(p["err_pct"]) <= 5]
    if points:
        print("  within 5%%: %d of %d points" % (len(within), len(points)))
    loss = diloco_loss(os.path.join(repro, "diloco-loss"))
    if loss:
        print("-- evaluation loss, same tokens (paper, 35M: DP 3.51, DiLoCo H=30 3.54)")
        for k in ("dp", "diloco_h10", "diloco_h30", "diloco_h100", "diloco_fp4_h30",
                  "diloco_averaging_h30", "streaming_fp4_h30"):
            v, g = loss.get(k), loss["gap_pct"].get(k)
            print("  %-20s %s%s" % (k, "-" if v is None else "%.4f" % v,
                                    "" if g is None else " (%+.2f%% vs DP)" % g))
    nbytes = diloco_bytes(os.path.join(repro, "diloco-bytes"))
    if nbytes:
        print("-- WAN bytes: DP / DiLoCo H=%s = %s; fp4 / fp32 = %s" % (
            nbytes["h"], nbytes["bytes_dp_over_diloco"], nbytes["bytes_fp4_over_fp32"]))
        for p in nbytes["per_outer_step"]:
            print("  %-15s per outer step %s measured, %s analytic (%s)" % (
                p["method"], p["measured"], p["analytic"],
                "-" if p["err_pct"] is None else "%+.2f%%" % p["err_pct"]))
    util = diloco_utilisation(os.path.join(repro, "diloco-utilisation"))
    if util:
        print("-- compute utilisation vs WAN rate: measured / simulated (points)")
        for p in util:
            print("  %-12s %7g Mbit/s %6.3f / %6.3f (%+.1f)" % (
                p["method"], p["rate_mbit"] or 0, p["measured"] or 0, p["simulated"] or 0,
                p["diff_points"] or 0))
        close = [p for p in util if p["diff_points"] is not None and abs(p["diff_points"]) <= 5]
        print("  within 5 points: %d of %d" % (len(close), len(util)))
    overlap = diloco_overlap(os.path.join(repro, "diloco-overlap"))
    if overlap:
        def f(x: Optional[float]) -> str:
            return "-" if x is None else "%.3f" % x
        print("-- overlap: utilisation measured (simulated): blocking %s (%s), overlapped %s "
              "(%s)" % (f(overlap["blocking"]), f(overlap["blocking_simulated"]),
                        f(overlap["overlapped"]), f(overlap["overlapped_simulated"])))
    table4 = diloco_table4(os.path.join(repro, "diloco-table4"))
    if table4:
        near = [c for c in table4 if c["method"] != "Data-Parallel" and
                abs(c["xdc_gbit"] - c["paper_gbit"]) <= 0.2 * c["paper_gbit"]]
        print("-- Table 4 (Gbit/s): paper / xdc under the paper's assumptions / xdc's own "
              "model at 0 ms and 10 ms (1B)")
        for c in table4:
            print("  %-4s %-40s %3.0f%% %7.2f %7.2f %s %s" % (
                c["model"], c["method"], 100 * c["utilisation"], c["paper_gbit"], c["xdc_gbit"],
                "-" if c["xdc_tcp_gbit"] is None else "%7.2f" % c["xdc_tcp_gbit"],
                "-" if c["xdc_tcp_10ms_gbit"] is None else "%7.2f" % c["xdc_tcp_10ms_gbit"]))
        print("  DiLoCo and Streaming cells within 20%% of the paper's: %d of %d" % (
            len(near), len([c for c in table4 if c["method"] != "Data-Parallel"])))
    headline = {"dp_sync": points, "loss": loss, "utilisation": util, "overlap": overlap,
                "table4": table4,
                "bytes_dp_over_diloco": nbytes and nbytes["bytes_dp_over_diloco"],
                "h": nbytes and nbytes["h"],
                "bytes_fp4_over_fp32": nbytes and nbytes["bytes_fp4_over_fp32"],
                "bytes_per_outer_step": nbytes and nbytes["per_outer_step"]}
    path = os.path.join(repro, "diloco", "headline.json")
    _write_json(path, headline)
    print("-- headline: %s" % path)
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
