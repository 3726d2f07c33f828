"""DHelix's and DiLoCo's headline figures, and the JSON and ratio helpers papers.py shares.

dhelix(REPRO) and diloco(REPRO) read the sweeps scripts/reproduce.sh ran under REPRO, print
their tables and write REPRO/dhelix/headline.json and REPRO/diloco/headline.json; the other
public functions are their parts. xdc_results.papers re-exports every public name here and
runs dhelix and diloco as its subcommands of those names. Every ``err_pct`` is
results.err_pct: 100 * (simulated - measured) / measured.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional

from .results import err_pct, try_load_sweep


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


def _ratio(a: Optional[float], b: Optional[float], digits: int) -> Optional[float]:
    return round(a / b, digits) if a and b else None


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
    at H = 30 (fragments overlapped, fp4), 300 iterations from the initialisation; the
    _warm_900 ones over 900 iterations whose first 300 are synchronous (dp_sync.sync_steps,
    DiLoCo's protocol), against dp_900, with DiLoCo H = 30 also with eager updates.
    gap_pct: each against its own DP."""
    e = _method_entries(sweep_dir)
    if not e:
        return None
    loss = {k.replace("-", "_"): v.get("eval_loss") for k, v in e.items()}
    out = {"dp": loss.get("dp"), "diloco_h10": loss.get("diloco_h10"),
           "diloco_h30": loss.get("diloco_h30"), "diloco_h100": loss.get("diloco_h100"),
           "diloco_fp4_h30": loss.get("diloco_h30_fp4"),
           "diloco_averaging_h30": loss.get("diloco_h30_avg"),
           "streaming_fp4_h30": loss.get("streaming_h30_fp4"),
           "dp_900": loss.get("dp_900"),
           "diloco_h10_warm_900": loss.get("diloco_h10_warm_900"),
           "diloco_h30_warm_900": loss.get("diloco_h30_warm_900"),
           "diloco_h100_warm_900": loss.get("diloco_h100_warm_900"),
           "diloco_h30_eager_warm_900": loss.get("diloco_h30_eager_warm_900"),
           "streaming_fp4_h30_warm_900": loss.get("streaming_h30_fp4_warm_900")}

    def gap(k: str, v: Optional[float]) -> Optional[float]:
        dp = out["dp_900"] if k.endswith("_900") else out["dp"]
        return None if v is None or not dp else round(100 * (v - dp) / dp, 2)

    out["gap_pct"] = {k: gap(k, v) for k, v in out.items() if k not in ("dp", "dp_900")}
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
    blocking, overlapped and eager, measured and simulated."""
    e = _method_entries(sweep_dir)
    if not e:
        return None
    out: Dict[str, Any] = {}
    for m in ("blocking", "overlapped", "eager"):
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
                  "diloco_averaging_h30", "streaming_fp4_h30", "dp_900", "diloco_h10_warm_900",
                  "diloco_h30_warm_900", "diloco_h100_warm_900", "streaming_fp4_h30_warm_900"):
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
              "(%s), eager %s (%s)" % (f(overlap["blocking"]), f(overlap["blocking_simulated"]),
                                      f(overlap["overlapped"]), f(overlap["overlapped_simulated"]),
                                      f(overlap["eager"]), f(overlap["eager_simulated"])))
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
