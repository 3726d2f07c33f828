"""docs/figures.md, rendered from the benchmarks' JSON (results/bench/NAME.json).

    python3 -m xdc_results.figures [--check] [--bench DIR] [--out FILE]

Writes OUT (default docs/figures.md) from every DIR/*.json (default results/bench/): a
table of the benchmarks, then one section per file -- what the benchmark measures, the
command, date, commit, machine and load it ran with (the file's ``bench`` record,
bench.py), and its figures with their units -- and last the benchmarks without a file,
with the command that makes one. --check writes nothing: it exits 1 and prints the
difference when OUT is not what the files give (ctest python_results runs it).

Each benchmark's rows come from its renderer in figures_render.py.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
import textwrap
from typing import Any, Callable, Dict, List, Tuple

from .bench import BENCH_DIR, ROOT, load_all
# The renderers and formatting helpers, imported here so xdc_results.figures still offers
# every one of them.
from .figures_render import (MISSING, Rows, _is_num, cell, num, rate, render_calibration,
                             render_chaos, render_check, render_dilation, render_dynamic,
                             render_fuzz, render_generalisation, render_gpu, render_lab,
                             render_model, render_network, render_other, render_plan,
                             render_prediction, render_scale, render_schedules, render_shaping,
                             render_simulate, render_wan, sig, signed_pct, yes_no)

FIGURES_MD = os.path.join(ROOT, "docs", "figures.md")
HISTORY_MD = "history/figures.md"  # relative to docs/


class Benchmark:
    """A benchmark's file (results/bench/NAME.json), what it measures and its renderer."""

    def __init__(self, name: str, command: str, title: str, what: str,
                 render: Callable[[Dict[str, Any]], Rows], needs: str = "",
                 optional: bool = False):
        self.name, self.command, self.title, self.what = name, command, title, what
        self.render, self.needs, self.optional = render, needs, optional


BENCHMARKS = [
    Benchmark("network", "sudo scripts/bench_network.sh", "`xdc up` / `xdc down` at scale",
              "`xdc up` then `xdc down` of topologies/scale-64.yaml (64 hosts in 8 DCs) on "
              "the native and the Mininet backend; the median round.", render_network,
              "root"),
    Benchmark("scale", "sudo scripts/bench_scale.sh", "scaling: prediction and emulation",
              "`xdc simulate` of one 1F1B point (Llama-2 70B on H100s, modeled, PP 64 over a "
              "ring of 8 DCs, 256 microbatches) at DP 8 / 32 / 128, under a 12 GB cap; `xdc "
              "up` then `xdc down` of rings of 64, 256 and 1,024 hosts, back to back, the "
              "median round; the 64-host network beside Mininet's in the same run. Slopes: "
              "least squares on log-log (1: linear, 2: quadratic).", render_scale, "root"),
    Benchmark("shaping", "sudo scripts/bench_shaping.sh", "WAN shaping fidelity",
              "One direction shaped at a time on a real A - GW - B line of namespaces, for "
              "every backend this kernel runs; each figure against its acceptance bounds "
              "(tests/shaper/fidelity.h).", render_shaping, "root, iperf3"),
    Benchmark("wan", "sudo scripts/bench_wan.sh", "TCP over a lossy WAN",
              "One TCP flow over a lossy 1 Gbit/s two-DC link against the same flow with every "
              "offload off (the reference) and Mathis' model, loss counted by TCP's "
              "retransmissions; the kernel backend in a User-Mode Linux guest; time-dilated "
              "links (bench_dilation.sh).", render_wan, "root, iperf3; ~15 min"),
    Benchmark("dilation", "sudo scripts/bench_dilation.sh", "time dilation",
              "One WAN link faster than this machine carries, built k times slower "
              "(`xdc up --time-dilation k`) and measured by `xdc check`, which reports it "
              "undilated; one TCP flow per direction.", render_dilation, "root, iperf3"),
    Benchmark("dynamic", "sudo scripts/bench_dynamic.sh", "runtime link changes",
              "`xdc link set` on a real A - GW - B line: from the request to the change in "
              "force as the traffic shows it, the changes' artefacts under a saturating TCP "
              "flow, a replayed trace; then a flap, a cut at an iteration, a trace and a "
              "partition under running jobs.", render_dynamic, "root, iperf3"),
    Benchmark("lab", "sudo scripts/bench_lab.sh", "a lab of three machines",
              "Three User-Mode Linux guests as a lab (scripts/uml/lab.sh): `xdc up --lab` of "
              "topologies/three-dc.yaml, cross-machine round trips, `xdc run --lab` against "
              "the same run on one machine, clock offsets, a machine lost mid-run.",
              render_lab, "root, user-mode-linux; ~14 min"),
    Benchmark("model", "scripts/bench_model.sh", "mini Llama training speed",
              "Training tokens/s of the mini Llama's reference config (dim 256, 4 layers, "
              "seq 128, batch 8) against PyTorch's, at 1 and 2 threads, best of alternating "
              "rounds.", render_model, "python3-torch"),
    Benchmark("model_avx512", "scripts/bench_model.sh", "mini Llama training speed, AVX-512",
              "bench_model.sh's second pass where the CPU has AVX-512: both sides with "
              "OPENBLAS_CORETYPE=SKYLAKEX.", render_model, optional=True),
    Benchmark("gpu", "scripts/bench_gpu.sh", "the CUDA stage",
              "The CUDA stage's training speed and gradients against the CPU stage and "
              "PyTorch, fp32 and bf16 GEMM operands.", render_gpu,
              "an NVIDIA GPU, CUDA, PyTorch with CUDA"),
    Benchmark("schedules", "scripts/bench_schedules.sh", "schedules in the simulator",
              "The schedules alone in the simulator: CrossPipe's grid (8 stages in 2 DCs "
              "split 4|4, 32 microbatches, T_F = T_B = T_W; time per microbatch at (latency, "
              "bandwidth-delay) = (0,0) / (2,.25) / (.25,2) / (2,2), all in T_F) beside "
              "CrossPipe's Table 5, the zero-delay formula checks, a GeoPipe-style overlap "
              "case, the MILP `optimal` against the greedy, the simulator's speed.",
              render_schedules),
    Benchmark("simulate", "scripts/bench_simulate.sh", "`xdc simulate` speed",
              "`xdc simulate SWEEP.yaml` of two points (1F1B, crosspipe-greedy), each 512 world "
              "ranks on 64 hosts in two DCs, Llama-2 70B-shaped stages on H100s: the plan, "
              "the prediction, sweep.csv; the whole command timed.", render_simulate),
    Benchmark("plan", "scripts/bench_plan.sh", "`xdc plan` speed",
              "`xdc plan` of experiments/plan-3dc.yaml: every placement of 4 ranks over three "
              "DCs predicted and ranked; the whole command timed.", render_plan),
    Benchmark("check", "sudo scripts/bench_check.sh", "`xdc check` of every shipped topology",
              "`xdc check` of each topologies/*.yaml with the options its header names "
              "(time dilation and flows where a link is beyond this machine): every WAN "
              "direction's delay, jitter, rate and loss against its configuration plus the "
              "machine's own floor measured with it.", render_check, "root, iperf3; ~15 min"),
    Benchmark("fuzz", "scripts/fuzz.sh", "fuzzing the input parsers",
              "Every parser of a user's file (tests/fuzz: topology, WAN changes, trace CSV, "
              "Mahimahi trace, experiment, sweep, lab, schedule CSV, profile CSV, run spec) "
              "under libFuzzer with ASan and UBSan, one after another from its seed corpus; "
              "a crash or hang is a bug (the contract: InputError, nothing else).",
              render_fuzz, "clang, libFuzzer; ~100 min at 600 s a target"),
    Benchmark("chaos", "sudo scripts/chaos.sh 200", "the chaos loop",
              "xdc's commands on shipped files (up, run modeled and real, sweep, link set, "
              "link down, down), each killed at a random moment, or one of its delay lines, "
              "MPI processes or workers instead, with SIGKILL, SIGINT or SIGTERM; `xdc clean` "
              "after each, then every check below must find nothing.", render_chaos,
              "root; ~30 min"),
    Benchmark("prediction", "sudo scripts/bench_prediction.sh --quick", "prediction accuracy",
              "Every shipped experiment and a sample of the reproduction grids run on the "
              "emulator with their own settings, each schedule's measured iteration against the "
              "prediction made beside it (err = (predicted - measured) / measured).",
              render_prediction, "root; ~1 h"),
    Benchmark("calibration", "sudo scripts/bench_calibration.sh", "prediction bands",
              "How often a run's measured mean falls inside the 90% band predicted beside it, "
              "over the demo's and lossy-modeled's seeds.", render_calibration, "root"),
    Benchmark("generalisation", "sudo scripts/bench_generalisation.sh 40 1",
              "prediction off the shipped points",
              "Random but valid experiments (python/xdc_results/generalisation.py), each run "
              "and predicted beside it.", render_generalisation, "root; ~1 h"),
]
_BY_NAME = {b.name: b for b in BENCHMARKS}


# ---- the page ------------------------------------------------------------------------

_LOAD_KEYS = (("load", "before"), ("load_before", "before"), ("loadavg_1m", "at the end"),
              ("load_average_1min", "at the end"))


def load_of(doc: Dict[str, Any]) -> str:
    """The 1-minute load average the benchmark recorded, and when: "load 0.52 before"."""
    for key, when in _LOAD_KEYS:
        if _is_num(doc.get(key)):
            return "load %s %s" % (num(doc[key], "%.2f"), when)
    return ""


def run_line(name: str, doc: Dict[str, Any]) -> str:
    """How the file was made: command, date, commit, machine, load."""
    b = doc.get("bench")
    parts = []
    if isinstance(b, dict):
        parts.append("`%s`" % b.get("command", MISSING))
        date = str(b.get("date", ""))
        parts.append(date.replace("T", " ").replace("Z", " UTC") if date else "date not recorded")
        commit = b.get("commit")
        parts.append(("at %s" % commit + (" (modified)" if b.get("modified") else ""))
                     if commit else "commit not recorded")
        parts.append("%s cores, kernel %s" % (b.get("cores", MISSING), b.get("kernel", MISSING)))
    else:
        parts.append("command, date and commit not recorded (no `bench` key)")
    load = load_of(doc)
    if load:
        parts.append(load)
    return "`results/bench/%s.json`: " % name + "; ".join(parts)


def _summary_row(name: str, doc: Dict[str, Any]) -> str:
    bench = _BY_NAME.get(name)
    b = doc.get("bench") if isinstance(doc.get("bench"), dict) else {}
    date = str(b.get("date", ""))[:10] or MISSING
    commit = (b.get("commit") or MISSING) + ("+" if b.get("modified") else "")
    return "| [%s](#%s) | %s | %s | %s |" % (name, name, bench.title if bench else MISSING,
                                              date, commit)


def _wrap(text: str) -> str:
    """A paragraph in lines of at most 92 characters (Markdown joins them again)."""
    return textwrap.fill(text, width=92, break_long_words=False, break_on_hyphens=False)


def render(docs: List[Tuple[str, Dict[str, Any]]]) -> str:
    """The page for DOCS, (name, document) of each results/bench file."""
    order = {b.name: i for i, b in enumerate(BENCHMARKS)}
    docs = sorted(docs, key=lambda nd: (order.get(nd[0], len(order)), nd[0]))
    have = {n for n, _ in docs}
    out = [
        "# Figures",
        "",
        _wrap("What each benchmark (`scripts/bench_*.sh`) measured the last time it ran. "
              "Each writes its figures to `results/bench/NAME.json` with a record of the run "
              "(command, date, commit, machine: `bench_record` in scripts/lib.sh); this page is "
              "rendered from those files by `python3 -m xdc_results.figures` "
              "(python/xdc_results/figures.py) and is not edited by hand: rerun a benchmark, "
              "then the generator, and commit the JSON with the page (ctest `python_results` "
              "fails when they differ). How each benchmark measures: its script's header. "
              "Figures from before, and from one-off runs no benchmark repeats: "
              "[past figures](%s)." % HISTORY_MD),
        "",
        "| benchmark | measures | date | commit |",
        "|---|---|---|---|",
    ]
    out += [_summary_row(n, d) for n, d in docs]
    missing = [b for b in BENCHMARKS if b.name not in have and not b.optional]
    if missing:
        out.append("| [not recorded yet](#not-recorded-yet) | %s | | |" % ", ".join(
            b.name for b in missing))
    for name, doc in docs:
        bench = _BY_NAME.get(name)
        out += ["", "## %s" % name, ""]
        if bench:
            out += [_wrap(bench.what), ""]
        out += [run_line(name, doc), "", "| figure | value |", "|---|---|"]
        rows = (bench.render if bench else render_other)(doc)
        out += ["| %s | %s |" % (cell(k), cell(v)) for k, v in rows]
    if missing:
        out += ["", "## Not recorded yet", "",
                _wrap("These benchmarks have no file in results/bench/ yet; what they "
                      "measured before is on the [past figures](%s) page." % HISTORY_MD), "",
                "| benchmark | command | needs |", "|---|---|---|"]
        out += ["| %s | `%s` | %s |" % (b.name, b.command, b.needs or "-") for b in missing]
    return "\n".join(out) + "\n"


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m xdc_results.figures",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 and print the difference when OUT is stale")
    ap.add_argument("--bench", default=BENCH_DIR, help="the benchmarks' JSON (%(default)s)")
    ap.add_argument("--out", default=FIGURES_MD, help="the page (%(default)s)")
    a = ap.parse_args(argv)
    text = render(load_all(a.bench))
    if a.check:
        try:
            with open(a.out) as f:
                current = f.read()
        except FileNotFoundError:
            current = ""
        if current == text:
            return 0
        sys.stdout.writelines(difflib.unified_diff(
            current.splitlines(True), text.splitlines(True), a.out,
            "rendered from " + a.bench))
        print("%s: not what %s gives; run python3 -m xdc_results.figures" % (a.out, a.bench),
              file=sys.stderr)
        return 1
    with open(a.out, "w") as f:
        f.write(text)
    print("wrote %s from %d files in %s" % (a.out, len(load_all(a.bench)), a.bench),
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
