"""The rows of docs/figures.md's per-benchmark tables, and the formatting they share.

render_NAME(doc) gives the (figure, value) rows of results/bench/NAME.json's table, read
from the keys its script writes (the scripts' headers list them); a file no renderer
knows shows its top-level numbers and strings (render_other). A key a file lacks shows
as "-". xdc_results.figures lays the rows out into the page and imports every name here.
"""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

Rows = List[Tuple[str, str]]
MISSING = "-"


# ---- formatting ----------------------------------------------------------------------

def _is_num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def num(x: Any, fmt: str = "%.3f", unit: str = "") -> str:
    """X by FMT with UNIT after it ("1.234 s"); "-" where X is not a number."""
    if not _is_num(x):
        return MISSING
    return (fmt % x) + (" " + unit if unit else "")


def sig(x: Any, unit: str = "") -> str:
    """X to four significant digits, without an exponent below 10^6 ("10.02", "956.3")."""
    if not _is_num(x):
        return MISSING
    text = "%.0f" % x if abs(x) >= 1000 else "%.4g" % x
    return text + (" " + unit if unit else "")


def signed_pct(x: Any, fmt: str = "%+.1f") -> str:
    return num(x, fmt) + "%" if _is_num(x) else MISSING


def rate(mbit: Any) -> str:
    """A rate given in Mbit/s: "5 Gbit/s" from 1000 up, else "100 Mbit/s"."""
    if not _is_num(mbit):
        return MISSING
    return "%g Gbit/s" % (mbit / 1000) if mbit >= 1000 else "%g Mbit/s" % mbit


def yes_no(x: Any) -> str:
    return MISSING if not isinstance(x, bool) else ("yes" if x else "no")


def cell(text: Any) -> str:
    """TEXT as one Markdown table cell: pipes escaped, lines joined."""
    return " ".join(str(text).split("\n")).replace("|", "\\|")


def _get(doc: Any, *path: Any) -> Any:
    """doc[path[0]][path[1]]...; None where a step is missing."""
    for p in path:
        if isinstance(doc, dict):
            doc = doc.get(p)
        elif isinstance(doc, list) and isinstance(p, int) and -len(doc) <= p < len(doc):
            doc = doc[p]
        else:
            return None
    return doc


def _list(x: Any) -> List[Any]:
    return x if isinstance(x, list) else []


# ---- one renderer per benchmark ------------------------------------------------------

def render_network(d: Dict[str, Any]) -> Rows:
    return [
        ("hosts, WAN directions", "%s, %s (shaping: %s)" % (
            d.get("hosts", MISSING), d.get("wan_directions", MISSING),
            d.get("shaping_backend", MISSING))),
        ("native backend: up / down", "%s / %s s" % (num(d.get("up_s")), num(d.get("down_s")))),
        ("native backend: up + down per host", num(d.get("per_host_ms"), "%.2f", "ms")),
        ("Mininet backend: up / down", "%s / %s s" % (num(_get(d, "mininet", "up_s")),
                                                      num(_get(d, "mininet", "down_s")))),
    ]


_SHAPING_LABEL = {"delay": "one-way delay %g ms", "jitter": "normal jitter %g ms (RTT stdev)",
                  "rate": "TCP goodput at %g Mbit/s", "loss": "random loss %g%%",
                  "wireloss": "loss per wire packet under TCP, %g%%"}


def render_shaping(d: Dict[str, Any]) -> Rows:
    rows = []
    for f in _list(d.get("figures")):
        label = _SHAPING_LABEL.get(f.get("what"), str(f.get("what")) + " %g") % (
            f.get("configured") if _is_num(f.get("configured")) else 0)
        unit = f.get("unit", "")
        rows.append(("%s, %s" % (label, f.get("backend", MISSING)), "%s (accepted %s-%s)%s" % (
            sig(f.get("measured"), unit), sig(f.get("low")), sig(f.get("high")),
            "" if f.get("ok", True) else ", OUTSIDE")))
    rows.append(("all figures within their bounds", yes_no(d.get("all_ok"))))
    if d.get("sch_netem") is False:
        rows.append(("kernel backend", "not measured: no sch_netem (%s)" % (
            d.get("sch_netem_probe") or "kernel %s" % d.get("kernel", MISSING))))
    return rows


def _tcp_loss_rows(points: List[Any]) -> Rows:
    rows = []
    for p in points:
        ret = p.get("tcp_retransmission_loss") or {}
        rows.append(("%s, RTT %g ms, loss %g%%" % (
            str(p.get("congestion", MISSING)).upper(), p.get("rtt_ms", 0), p.get("loss_pct", 0)),
            "%s vs reference %s (Mathis %s), ratio %s%s; retransmitted %s of %s" % (
                sig(p.get("goodput_mbit"), "Mbit/s"), sig(p.get("reference_mbit")),
                sig(p.get("model_mbit")), num(p.get("ratio_to_reference"), "%.2f"),
                "" if p.get("within_25pct", True) else " (OUTSIDE +-25%)",
                num(ret.get("measured_pct"), "%.3f%%"), num(ret.get("expected_pct"), "%g%%"))))
    if points:
        within = sum(1 for p in points if p.get("within_25pct"))
        rows.append(("goodput within +-25% of the reference", "%d of %d" % (within, len(points))))
    return rows


def _dilation_rows(points: List[Any]) -> Rows:
    return [("k = %g, %s, %g ms one way" % (p.get("k", 0), rate(p.get("rate_mbit")),
                                             p.get("delay_ms", 0)),
             "goodput %s of the rate (%s), RTT error %s (%s, median of %s runs x 2 directions)" % (
                 num(100 * p["goodput_ratio"] if _is_num(p.get("goodput_ratio")) else None,
                     "%.1f%%"), sig(p.get("goodput_mbit"), "Mbit/s"),
                 num(p.get("rtt_err_pct"), "%.3f%%"), p.get("congestion", MISSING),
                 p.get("runs", MISSING)))
            for p in points]


def render_wan(d: Dict[str, Any]) -> Rows:
    rows = _tcp_loss_rows(_list(d.get("tcp_loss")))
    k = d.get("kernel_backend")
    if isinstance(k, dict) and k.get("ran"):
        rows.append(("kernel backend in a User-Mode Linux guest (kernel %s)" % k.get(
            "kernel", MISSING), "delay error at most %s, TCP goodput at least %s of the rate, "
            "loss within %s sigma" % (num(k.get("rtt_err_pct_max"), "%.2f%%"),
                                      num(k.get("goodput_ratio_min"), "%.3f"),
                                      num(k.get("loss_sigma_max"), "%.2f"))))
    elif isinstance(k, dict):
        rows.append(("kernel backend in a User-Mode Linux guest",
                     "not run: %s" % k.get("error", "no figures")))
    rows += _dilation_rows(_list(d.get("dilation")))
    rows.append(("`xdc up` records the hosts' TCP settings",
                 yes_no(d.get("tcp_settings_recorded"))))
    return rows


def render_dilation(d: Dict[str, Any]) -> Rows:
    return _dilation_rows(_list(d.get("dilation")))


def _dynamic_backend_rows(name: str, b: Dict[str, Any]) -> Rows:
    a, x, t = b.get("change_apply_ms") or {}, b.get("change_artefacts") or {}, \
        b.get("trace_replay") or {}
    return [
        ("%s: delay change in force, p50 / max" % name,
         "%s / %s ms" % (num(a.get("delay_p50"), "%.2f"), num(a.get("delay_max"), "%.2f"))),
        ("%s: rate change in force, p50 / max" % name,
         "%s / %s ms" % (num(a.get("rate_p50"), "%.2f"), num(a.get("rate_max"), "%.2f"))),
        ("%s: under TCP, drops at delay changes / reorders" % name,
         "%s / %s" % (x.get("delay_change_drops", MISSING), x.get("reorders", MISSING))),
        ("%s: under TCP, rate decrease's drops: queue overflow / other" % name,
         "%s / %s" % (x.get("rate_decrease_overflow_drops", MISSING),
                      x.get("rate_decrease_other_drops", MISSING))),
        ("%s: trace replay (%s rows, %sx faster): delay / rate RMSE" % (
            name, t.get("points", MISSING), t.get("compress", MISSING)),
         "%s / %s" % (num(t.get("delay_rmse_ms"), "%.3f", "ms"),
                      num(t.get("rate_rmse_pct"), "%.2f%%"))),
    ]


def _series_error(f: Dict[str, Any], measured: str, simulated: str) -> str:
    m, s = f.get(measured), f.get(simulated)
    err = 100 * (s - m) / m if _is_num(m) and _is_num(s) and m > 0 else None
    return "%s measured vs %s predicted (%s)" % (num(m, "%.3f", "s"), num(s, "%.3f", "s"),
                                                 signed_pct(err))


def render_dynamic(d: Dict[str, Any]) -> Rows:
    rows: Rows = []
    backends = d.get("backends") or {}
    for name in sorted(backends, key=lambda n: (n != "userspace", n)):
        rows += _dynamic_backend_rows(name, backends[name])
    f = d.get("flap")
    if isinstance(f, dict):
        rows.append(("WAN down %s s under a job (%s)" % (num(f.get("down_s"), "%.2f"),
                                                         f.get("experiment", MISSING)),
                     "exit %s, %s iterations, the slowest %s over the median" % (
                         f.get("run_exit", MISSING), f.get("iterations_done", MISSING),
                         num(f.get("stall_s"), "%.2f", "s"))))
    f = d.get("flap_event")
    if isinstance(f, dict):
        rows.append(("the cut iteration of %s" % f.get("experiment", MISSING),
                     "exit %s; %s" % (f.get("run_exit", MISSING),
                                      _series_error(f, "slowest_measured_s",
                                                    "slowest_simulated_s"))))
    f = d.get("trace_wan")
    if isinstance(f, dict):
        rows.append(("%s, iteration mean" % f.get("experiment", MISSING),
                     "exit %s, %s iterations, %s changes; %s" % (
                         f.get("run_exit", MISSING), f.get("iterations_done", MISSING),
                         f.get("changes_applied", MISSING),
                         _series_error(f, "mean_measured_s", "mean_simulated_s"))))
    f = d.get("partition")
    if isinstance(f, dict):
        message = str(f.get("message") or "")
        if len(message) > 160:
            message = message[:157] + "..."
        rows.append(("a partition past mpi.timeout_s (%s)" % f.get("experiment", MISSING),
                     "exit %s: %s" % (f.get("run_exit", MISSING), message or "(no message)")))
    return rows


def render_lab(d: Dict[str, Any]) -> Rows:
    rtts = ["%s->%s %s of %s" % (r.get("from", "?"), r.get("to", "?"),
                                 signed_pct(100 * (r["median_ms"] / r["configured_ms"] - 1)
                                            if _is_num(r.get("median_ms")) and
                                            _is_num(r.get("configured_ms")) and r["configured_ms"]
                                            else None, "%+.2f"),
                                 num(r.get("configured_ms"), "%g", "ms"))
            for r in _list(d.get("rtts"))]
    it, one = d.get("iteration_s"), d.get("single_machine_iteration_s")
    return [
        ("machines, kernels", "%s, %s" % (d.get("machines", MISSING),
                                          ", ".join(sorted(set(map(str, _list(d.get("kernels")))))
                                                    ) or MISSING)),
        ("machines booted in", num(d.get("boot_s"), "%.1f", "s")),
        ("`xdc up --lab` / `xdc down --lab`", "%s / %s s" % (num(d.get("up_s"), "%.1f"),
                                                           num(d.get("down_s"), "%.1f"))),
        ("cross-machine RTT medians against configured", "; ".join(rtts) or MISSING),
        ("`xdc run --lab %s`" % d.get("experiment", MISSING),
         "exit %s, iteration %s vs %s on one machine (%s)" % (
             d.get("run_exit", MISSING), num(it, "%.3f", "s"), num(one, "%.3f", "s"),
             signed_pct(100 * (it / one - 1) if _is_num(it) and _is_num(one) and one else None))),
        ("clock offsets applied / residual", "up to %s / %s" % (
            num(d.get("clock_offset_max_us"), "%.0f", "us"),
            num(d.get("clock_residual_us"), "%.1f", "us"))),
        ("a machine lost mid-run", "exit %s after %s" % (
            d.get("lost_machine_exit", MISSING), num(d.get("lost_machine_end_s"), "%.1f", "s"))),
    ]


def render_model(d: Dict[str, Any]) -> Rows:
    rows = []
    threads = (("1t", "1 thread"), ("2t", "2 threads"))
    for t, label in threads:
        rows.append(("training tokens/s, %s: xdc / PyTorch" % label, "%s / %s (%s)" % (
            num(d.get("tokens_per_s_" + t), "%.0f"), num(d.get("torch_tokens_per_s_" + t), "%.0f"),
            num(d.get("speedup_vs_torch_" + t), "%.2fx"))))
    for t, label in threads:
        rows.append(("tokens per CPU-second, %s: xdc / PyTorch" % label,
                     "%s / %s" % (num(d.get("tokens_per_cpu_s_" + t), "%.0f"),
                                  num(d.get("torch_tokens_per_cpu_s_" + t), "%.0f"))))
    rows += [
        ("achieved GFLOP/s, 1 / 2 threads", "%s / %s (SGEMM peak, 1 thread: %s)" % (
            num(d.get("achieved_gflops_1t"), "%.1f"), num(d.get("achieved_gflops_2t"), "%.1f"),
            num(d.get("sgemm_peak_gflops_1t"), "%.1f"))),
        ("OpenBLAS kernel", str(d.get("openblas_core", MISSING))),
        ("peak RSS", num(d.get("peak_rss_mb"), "%.0f", "MB")),
    ]
    return rows


def _gpu_rows(g: Dict[str, Any], precision: str, vs_torch: str, errors: Rows) -> Rows:
    return [
        ("training tokens/s, %s: xdc / PyTorch %s" % (precision, vs_torch), "%s / %s (%s)" % (
            num(g.get("tokens_per_s"), "%.0f"), num(g.get("torch_tokens_per_s"), "%.0f"),
            num(g.get("ratio_vs_torch"), "%.2fx"))),
        ("achieved TFLOP/s, %s, of the GEMM peak" % precision, "%s of %s" % (
            num(g.get("achieved_tflops"), "%.1f"), num(g.get("gemm_peak_tflops"), "%.1f"))),
    ] + errors


def render_gpu(d: Dict[str, Any]) -> Rows:
    c = d.get("config") or {}
    rows: Rows = [("GPU, model", "%s; dim %s, %s layers, %s heads, seq %s, batch %s" % (
        d.get("gpu", MISSING), c.get("dim", MISSING), c.get("layers", MISSING),
        c.get("heads", MISSING), c.get("seq", MISSING), c.get("batch", MISSING)))]
    rows += _gpu_rows(d, "fp32", "eager", [(
        "largest relative error, fp32: vs the CPU stage / vs PyTorch autograd",
        "%s / %s" % (num(d.get("max_rel_err_vs_cpu"), "%.1e"),
                     num(d.get("max_rel_err_vs_torch"), "%.1e")))])
    b = d.get("bf16")
    if isinstance(b, dict):
        rows += _gpu_rows(b, "bf16", "autocast", [(
            "largest relative error, bf16: vs the fp32 stage / vs autocast",
            "%s / %s" % (num(b.get("max_rel_err_vs_fp32_stage"), "%.1e"),
                         num(b.get("max_rel_err_vs_torch_autocast"), "%.1e")))])
    elif b is not None:
        rows.append(("bf16", str(b)))
    return rows


_GRID_POINTS = ("0,0", "2,0.25", "0.25,2", "2,2")
# The grid's rows in the order bench_schedules prints them; others after, by name.
_GRID_ORDER = ("1f1b", "zbh1", "zbv", "interleaved", "overlap", "crosspipe-greedy", "optimal")


def render_schedules(d: Dict[str, Any]) -> Rows:
    rows: Rows = []
    grid = d.get("crosspipe_grid") or {}
    paper = d.get("crosspipe_paper_table5_s") or {}
    base = grid.get("1f1b") or {}
    paper_base = _list(paper.get("1f1b"))
    for s in sorted(grid, key=lambda s: (_GRID_ORDER.index(s) if s in _GRID_ORDER
                                         else len(_GRID_ORDER), s)):
        times = grid[s] if isinstance(grid[s], dict) else {}
        t = [times.get(k) for k in _GRID_POINTS]
        ratios = [x / b if _is_num(x) and _is_num(b) and b else None
                  for x, b in zip(t, [base.get(k) for k in _GRID_POINTS])]
        # CrossPipe's own schedule is "crossud" in its Table 5.
        p = _list(paper.get("crossud" if s == "crosspipe-greedy" else s))
        value = "%s T_F (x 1F1B: %s" % (" / ".join(num(x, "%.2f") for x in t),
                                        " / ".join(num(r, "%.2f") for r in ratios))
        if s != "1f1b" and len(p) == 4 and len(paper_base) == 4:
            value += "; paper: %s" % " / ".join(num(x / y, "%.2f") for x, y in zip(p, paper_base))
        rows.append(("CrossPipe grid, %s" % s, value + ")"))
        info = _get(d, "crosspipe_grid_detail", s, "info") or {}
        if info:
            rows.append(("CrossPipe grid, %s: what the MILP gave" % s, "; ".join(
                "(%s): %s" % (k, _get(info, k, "result") or MISSING) for k in _GRID_POINTS)))
    checks = _list(d.get("formula_checks"))
    if checks:
        ok = sum(1 for c in checks if _is_num(c.get("expected")) and _is_num(c.get("simulated"))
                 and abs(c["expected"] - c["simulated"]) < 1e-3)
        rows.append(("formula checks at zero delay (bubble ratios, peaks)",
                     "%d of %d as the formula gives" % (ok, len(checks))))
    ov = d.get("overlap_case") or {}
    a, o = ov.get("1f1b") or {}, ov.get("overlap") or {}
    if a and o:
        cut = 100 * (1 - o["iteration_ms"] / a["iteration_ms"]) \
            if _is_num(a.get("iteration_ms")) and _is_num(o.get("iteration_ms")) and \
            a["iteration_ms"] else None
        rows.append(("GeoPipe-style case, 1F1B vs overlap across a 20 ms WAN",
                     "iteration %s vs %s (%s shorter); Megatron bubble %s vs %s" % (
                         num(a.get("iteration_ms"), "%.1f", "ms"),
                         num(o.get("iteration_ms"), "%.1f", "ms"), num(cut, "%.1f%%"),
                         num(a.get("bubble_megatron"), "%.3f"),
                         num(o.get("bubble_megatron"), "%.3f"))))
    opt = _list(d.get("optimal_vs_greedy"))
    for r in opt:
        if r.get("instance") == "documented":
            rows.append(("`optimal` (MILP) vs crosspipe-greedy, the documented instance",
                         "makespan %s -> %s, %s; simulated %s -> %s ms" % (
                             sig(r.get("greedy_makespan")), sig(r.get("optimal_makespan")),
                             r.get("result", MISSING), sig(r.get("greedy_sim_ms")),
                             sig(r.get("optimal_sim_ms")))))
    rand = [r for r in opt if r.get("instance") != "documented"]
    if rand:
        gains = [100 * (1 - r["optimal_makespan"] / r["greedy_makespan"]) for r in rand
                 if _is_num(r.get("optimal_makespan")) and _is_num(r.get("greedy_makespan"))
                 and r["greedy_makespan"]]
        wins = sum(1 for g in gains if g > 1e-7)
        proved = sum(1 for r in rand if "proved" in str(r.get("result", "")))
        invalid = sum(1 for r in rand if r.get("valid") is False)
        rows.append(("`optimal` vs crosspipe-greedy, %d random instances" % len(rand),
                     "strictly shorter on %d, mean gain %s, max %s; %d proved optimal%s" % (
                         wins, num(sum(gains) / len(gains) if gains else None, "%.2f%%"),
                         num(max(gains) if gains else None, "%.1f%%"), proved,
                         "; %d INVALID" % invalid if invalid else "")))
    rows.append(("simulating a 64-stage x 512-microbatch 1F1B iteration",
                 num(d.get("sim_64x512_s"), "%.3f", "s")))
    return rows


def render_simulate(d: Dict[str, Any]) -> Rows:
    runs = d.get("runs", MISSING)
    return [
        ("points, each %s stages x %s microbatches x data parallel %s" % (
            d.get("stages", MISSING), d.get("microbatches", MISSING),
            d.get("data_parallel", MISSING)), str(d.get("points", MISSING))),
        ("wall time per point, median of %s runs (goal < 1 s)" % runs,
         num(d.get("seconds_per_point"), "%.2f", "s")),
        ("CPU time (user + system) per point, median of %s runs" % runs,
         num(d.get("cpu_seconds_per_point"), "%.2f", "s")),
    ]


def render_scale(d: Dict[str, Any]) -> Rows:
    rows: Rows = []
    slopes = d.get("slopes") or {}
    for p in _list(d.get("predict")):
        label = "predict %s ranks (%s microbatches, %s DCs)" % (
            p.get("ranks", MISSING), p.get("microbatches", MISSING), p.get("dcs", MISSING))
        if p.get("failed"):
            rows.append((label, "failed: %s" % p["failed"]))
        else:
            rows.append((label, "%s, %s" % (num(p.get("seconds"), "%.2f", "s"),
                                            num(p.get("peak_mb"), "%.0f", "MB"))))
    rows.append(("predict: slope of log time / log memory against log ranks", "%s / %s" % (
        num(slopes.get("predict_seconds_per_ranks"), "%.2f"),
        num(slopes.get("predict_peak_mb_per_ranks"), "%.2f"))))
    for e in _list(d.get("emulate")):
        rows.append(("emulate %s hosts in %s DCs: up / down, xdc's peak memory" % (
            e.get("hosts", MISSING), e.get("dcs", MISSING)), "%s / %s s, %s" % (
                num(e.get("up_s")), num(e.get("down_s")), num(e.get("peak_mb"), "%.0f", "MB"))))
    rows.append(("emulate: slope of log (up + down) / log memory against log hosts",
                 "%s / %s" % (num(slopes.get("emulate_up_down_s_per_hosts"), "%.2f"),
                              num(slopes.get("emulate_peak_mb_per_hosts"), "%.2f"))))
    side = d.get("side_by_side_64") or {}
    native = [side.get("native_up_s"), side.get("native_down_s")]
    mininet = [side.get("mininet_up_s"), side.get("mininet_down_s")]
    ratio = (sum(mininet) / sum(native)) if all(_is_num(x) for x in native + mininet) and \
        sum(native) > 0 else None
    rows.append(("64 hosts side by side: native up / down, Mininet up / down",
                 "%s / %s s, %s / %s s (Mininet %s x slower)" % (
                     num(native[0]), num(native[1]), num(mininet[0]), num(mininet[1]),
                     num(ratio, "%.1f"))))
    return rows


def render_plan(d: Dict[str, Any]) -> Rows:
    runs = d.get("runs", MISSING)
    return [
        ("placements ranked, predictions (%s)" % d.get("file", MISSING),
         "%s, %s" % (d.get("placements", MISSING), d.get("predictions", MISSING))),
        ("wall time, median of %s runs (goal < 10 s)" % runs, num(d.get("seconds"), "%.2f", "s")),
        ("CPU time (user + system), median of %s runs" % runs,
         num(d.get("cpu_seconds"), "%.2f", "s")),
    ]


def render_prediction(d: Dict[str, Any]) -> Rows:
    overrides = _list(d.get("overrides"))
    rows: Rows = [
        ("points within target (|error| 5% modeled, 10% real compute)",
         str(d.get("within_target", MISSING))),
        ("settings", "stock" if d.get("stock_settings") else "overrides: " + "; ".join(
            "%s %s" % (o.get("experiment"), o.get("setting")) for o in overrides)),
    ]
    for p in _list(d.get("points")):
        its = [x for x in _list(p.get("measured_iterations_s")) if _is_num(x)]
        runs = _list(p.get("measured_runs_s"))
        spread = "; iterations %s-%s s" % (num(min(its), "%.2f"), num(max(its), "%.2f")) \
            if its else ""
        if runs:
            spread += " over %d runs" % len(runs)
        rows.append(("%s, %s (%s)" % (p.get("point", MISSING), p.get("schedule", MISSING),
                                      p.get("compute", MISSING)),
                     "%s measured vs %s predicted (%s, %s %s%%)%s" % (
                         num(p.get("measured_s"), "%.3f", "s"), num(p.get("simulated_s"), "%.3f"),
                         signed_pct(p.get("err_pct")),
                         "within" if p.get("within_target") else "OUTSIDE",
                         p.get("target_pct", MISSING), spread)))
    return rows


def render_calibration(d: Dict[str, Any]) -> Rows:
    def runs(p: Dict[str, Any]) -> str:  # older files do not say how long the runs were
        n = p.get("iterations")
        return "%s runs of %s iterations" % (p.get("runs", MISSING), n) if _is_num(n) else \
            "%s runs" % p.get("runs", MISSING)
    return [("%s, %s" % (p.get("experiment", MISSING), p.get("schedule", MISSING)),
             "%s of %s inside their band (band +-%s)" % (
                 p.get("inside", MISSING), runs(p), num(p.get("band_halfwidth_pct"), "%.1f%%")))
            for p in _list(d.get("points"))]


def render_generalisation(d: Dict[str, Any]) -> Rows:
    points = _list(d.get("points"))
    measured = sum(1 for p in points if _is_num(p.get("measured_s")))
    experiments = len({p.get("experiment_yaml") for p in points})
    return [
        ("seed, experiments, schedule points (measured)", "%s, %d, %d (%d)" % (
            d.get("seed", MISSING), experiments, len(points), measured)),
        ("|error| median / p90", "%s / %s" % (num(d.get("median_abs_err_pct"), "%.1f%%"),
                                             num(d.get("p90_abs_err_pct"), "%.1f%%"))),
        ("measured points whose 95% interval meets the band",
         num(100 * d["inside_fraction"] if _is_num(d.get("inside_fraction")) else None,
             "%.0f%%")),
    ]


def render_fuzz(d: Dict[str, Any]) -> Rows:
    targets = _list(d.get("targets"))
    execs = [t.get("executions") for t in targets if _is_num(t.get("executions"))]
    rows: Rows = [("targets, executions in all (hang: an input over %s s)" % d.get(
        "timeout_s", MISSING), "%d, %s" % (len(targets), sig(sum(execs)) if execs else MISSING))]
    for t in targets:
        rows.append(("%s" % t.get("name", MISSING),
                     "%s s, %s executions, %s crashes, %s hangs%s; corpus %s -> %s, %s edges" % (
                         t.get("seconds", MISSING), sig(t.get("executions")),
                         t.get("crashes", MISSING), t.get("hangs", MISSING),
                         " (%s timeouts under load, under 1 s replayed alone)" % t["stalls"]
                         if t.get("stalls") else "",
                         t.get("seeds", MISSING), t.get("corpus", MISSING),
                         t.get("edges", MISSING))))
    cli = d.get("cli")
    if isinstance(cli, dict):
        ts = _list(cli.get("targets"))

        def total(key: str) -> int:
            return int(sum(t.get(key, 0) for t in ts if _is_num(t.get(key, 0))))

        rows.append(("through the CLI (%s inputs a target of the grown corpora)" % cli.get(
            "per_target", MISSING), "%d checked: %d accepted, %d cut at %s s, %d refused with "
            "FILE:LINE:COL, %d failures" % (total("checked"), total("accepted"),
                                             total("accepted_cut"), cli.get("timeout_s", MISSING),
                                             total("rejected_with_position"),
                                             sum(len(_list(t.get("failures"))) for t in ts))))
    return rows


def render_chaos(d: Dict[str, Any]) -> Rows:
    def counts(key: str) -> str:
        return ", ".join("%s %s" % (c.get("name", MISSING), c.get("points", MISSING))
                         for c in _list(d.get(key))) or MISSING
    left = _list(d.get("left"))
    rows: Rows = [("points (seed %s)" % d.get("seed", MISSING), str(d.get("points", MISSING))),
                  ("commands", counts("commands")),
                  ("signals", counts("signals")),
                  ("killed", counts("targets")),
                  ("points that left something after `xdc clean`",
                   str(len({x.get("point") for x in left if isinstance(x, dict)}))),
                  ("checked", "; ".join(str(c) for c in _list(d.get("checks"))) or MISSING)]
    for x in left[:20]:
        if isinstance(x, dict):
            rows.append(("left at point %s (%s, SIG%s to %s after %s s)" % (
                x.get("point"), x.get("command"), x.get("signal"), x.get("target"),
                x.get("after_s")), str(x.get("what", MISSING))))
    return rows


def render_check(d: Dict[str, Any]) -> Rows:
    rows: Rows = []
    for t in _list(d.get("topologies")):
        rep = t.get("report") or {}
        links = _list(rep.get("links"))
        floors = [_get(x, "floor", "rtt_stdev_ms") for x in links]
        floors = [f for f in floors if _is_num(f)]
        failed = ["%s -> %s %s" % (x.get("from"), x.get("to"), ",".join(
            v.get("metric", "?") for v in _list(x.get("verdicts")) if not v.get("ok")))
            for x in links if not x.get("ok")]
        rows.append(("`xdc check %s%s`" % (t.get("file", MISSING), " " + t["options"]
                                          if t.get("options") else ""),
                     "%s: %s%s" % (
                         "passes" if t.get("ok") else "FAILS (exit %s)" % t.get("rc"),
                         "%s WAN directions in %s s, floor (RTT spread) up to %s" % (
                             t.get("links", MISSING), t.get("seconds", MISSING),
                             num(max(floors), "%.3f", "ms") if floors else MISSING)
                         if links else "no WAN link, nothing to check",
                         "; failed: " + "; ".join(failed) if failed else "")))
    return rows


def render_other(d: Dict[str, Any]) -> Rows:
    """A file no renderer knows: its top-level numbers, strings and booleans."""
    return [(k, yes_no(v) if isinstance(v, bool) else str(v)) for k, v in d.items()
            if k != "bench" and isinstance(v, (int, float, str, bool))]
