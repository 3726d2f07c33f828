"""Random but valid experiments, run and predicted: the simulator judged off the shipped
points (scripts/bench_generalisation.sh).

    python3 -m xdc_results.generalisation generate --seed S --n N --out DIR [--xdc PATH]
        [--budget-s 120] [--no-check]
    python3 -m xdc_results.generalisation collect --seed S --runs RUN_DIR... --out FILE
        [--experiments DIR] [--repredicted COMMIT]

generate writes N experiments, DIR/gen-sS-001.yaml ..., drawn from random.Random(S) (each
experiment from its own stream, so that experiment i does not depend on how often an
earlier one was redrawn), and DIR/generated.json: per experiment its settings, how many
draws it took and why the others were refused, the simulated iterations and the
predicted run time. Each is checked with `xdc simulate FILE` and drawn again when that
exits non-zero (2: bad input) or when the predicted run time -- the simulated iterations
of its schedules x (iterations + warmup) x time_dilation -- is over the budget.

collect reads the runs' summary.json files (results.py) into the bench's document:

    {"seed", "points": [{"experiment_yaml", "schedule", "compute", "measured_s",
     "simulated_s", "band_s", "err_pct", "inside", "tcp_timeouts"}], "median_abs_err_pct",
     "p90_abs_err_pct", "inside_fraction"}

measured_s is the schedule's measured iteration mean (null unless it ran and is ok),
simulated_s its simulated_iteration_s, band_s the summary's simulated_band_s where it has
one, else [simulated_s, simulated_s]; err_pct = 100 (simulated - measured) / measured;
inside: whether the measured iterations' 95% confidence interval (the summary's
iteration_s_ci95 where it has one, else mean +- t s / sqrt(n)) overlaps band_s (null
without a measurement); tcp_timeouts: the retransmission timeouts the run's hosts counted
over the whole job (the summary's tcp.timeouts; null where it has none), each a stall of at
least 200 ms the simulator does not predict. median and p90 (linear interpolation) are of |err_pct| over the
measured points, inside_fraction the share of those whose inside is true; all three null
when nothing was measured. With --repredicted, simulated_s and band_s are those of
RUN/repredicted/ (the run predicted again by a later simulator, results.repredicted) and
the document says at which commit ("repredicted_at").
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from typing import Any, Dict, Iterable, List, Optional, Tuple

from . import results
from .results import err_pct, try_load_run

DEFAULT_XDC = "build/harness/cli/xdc"
BUDGET_S = 120.0   # predicted run time of one experiment, all its schedules
MAX_DRAWS = 50     # draws of one experiment before generate gives up

# What is drawn. Durations ms, rates Mbit/s, sizes KiB / MiB.
DC_NAMES = ("useast", "uswest", "europe", "asia")
N_DCS = (2, 4)
DELAY_MS = (1, 100)          # one way, log-uniform
RATE_MBIT = (50, 1000)       # log-uniform, in steps of 10
LOSS_PCT = (0.01, 0.05, 0.1, 0.2, 0.5)   # mean loss of a lossy link (random or gemodel)
MAX_LOSS_PCT = 0.5
STAGES = (2, 8)
DATA_PARALLEL = (1, 4)
MAX_WORLD = 8                # stages x data_parallel x tensor_parallel, one rank per host
MICROBATCHES = (2, 12)
F_MS = (10, 200)             # log-uniform; b = f x [1.7, 2.3], w = b x [0.3, 0.6]
ACTIVATION_KIB = (256, 32 * 1024)
TP_ACTIVATION_KIB = 2 * 1024     # with tensor_parallel 2: its all-reduces carry activations
GRAD_MIB = (1, 64)
CONNECTIONS = (1, 8)
ITERATIONS = (3, 4)
WARMUP = 1
TIMEOUT_S = 300
SEED = 1
INTRA_DC = {"rate": "1gbit", "delay": "50us"}   # what the shipped modeled experiments use
# The userspace delay line on this 2-core machine carries about 1 Gbit/s over all WAN
# directions: above that the experiment is run time-dilated, k = ceil(sum of rates / this).
DELAY_LINE_MBIT = 1000
# Schedules drawn (1-2 an experiment) and their weights; interleaved only where the
# microbatches are a multiple of the stages. Not drawn: optimal (a MILP of its own) and
# zbh2 / dhelix (outside the set the bench judges).
SCHEDULE_WEIGHTS = {"1f1b": 3.0, "zbh1": 2.0, "interleaved": 1.5, "zbv": 1.5, "overlap": 2.0,
                    "crosspipe-greedy": 2.0, "gpipe": 1.0}
# Replicas (data_parallel > 1): "within" -- every replica spans the DCs alike, each
# stage's all-reduce stays in its DC; "across" -- each replica inside one DC, the replicas
# spread over the DCs (the all-reduce crosses the WAN); "rotated" -- every replica spans
# the DCs, replica r shifted r DCs along (both cross the WAN).
LAYOUTS = (("within", 0.45), ("across", 0.3), ("rotated", 0.25))
TP_PROBABILITY = 0.1
LOSS_KINDS = (("none", 0.65), ("random", 0.25), ("gemodel", 0.10))
JITTER_PROBABILITY = 0.25
CONNECTIONS_PROBABILITY = 0.3
TEMPORAL_PROBABILITY = 0.35


# ---- drawing

def _weighted(rng: random.Random, choices: Iterable[Tuple[Any, float]]) -> Any:
    choices = list(choices)
    x = rng.random() * sum(w for _, w in choices)
    for value, w in choices:
        x -= w
        if x < 0:
            return value
    return choices[-1][0]


def _log_uniform(rng: random.Random, lo: float, hi: float) -> float:
    return math.exp(rng.uniform(math.log(lo), math.log(hi)))


def _rate(mbit: int) -> str:
    return "%dgbit" % (mbit // 1000) if mbit % 1000 == 0 else "%dmbit" % mbit


def _size(kib: int) -> str:
    return "%dmib" % (kib // 1024) if kib % 1024 == 0 else "%dkib" % kib


def _pct(x: float) -> str:
    return ("%.4f" % x).rstrip("0").rstrip(".") + "%"


def _loss(rng: random.Random, kind: str) -> Any:
    mean = rng.choice(LOSS_PCT)
    if kind == "random":
        return _pct(mean)
    # Gilbert-Elliott, tc's order (topology.h): p good -> bad, r bad -> good, h the loss
    # in the bad state, k in the good one (0); its mean loss p / (p + r) x h is `mean`.
    r = rng.choice((10.0, 20.0, 30.0, 50.0))
    h = rng.choice((50.0, 100.0))
    p = mean * r / (h - mean)
    return {"model": "gemodel", "p": _pct(p), "r": _pct(r), "h": _pct(h), "k": "0%"}


def _world_shape(rng: random.Random) -> Tuple[int, int, int]:
    """(stages, data_parallel, tensor_parallel): TP 2 with TP_PROBABILITY, then every
    (stages, data_parallel) in range within MAX_WORLD alike."""
    tp = 2 if rng.random() < TP_PROBABILITY else 1
    shapes = [(p, d) for p in range(STAGES[0], STAGES[1] + 1)
              for d in range(DATA_PARALLEL[0], DATA_PARALLEL[1] + 1) if p * d * tp <= MAX_WORLD]
    p, d = rng.choice(shapes)
    return p, d, tp


def draw(rng: random.Random, name: str, network: str) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """One experiment, as a dict in the YAML's key order, and its settings (flat, for the
    manifest and tables). Ranges: the constants above."""
    stages, dp, tp = _world_shape(rng)
    layout = _weighted(rng, LAYOUTS) if dp > 1 else "pipeline"
    if layout == "across":
        n_dcs = rng.randint(N_DCS[0], min(N_DCS[1], dp))
    else:
        n_dcs = rng.randint(N_DCS[0], min(N_DCS[1], stages))
    dcs = rng.sample(DC_NAMES, n_dcs)   # the pipeline visits them in this order
    shape = "pair" if n_dcs == 2 else rng.choice(("chain", "mesh"))
    if shape == "mesh":
        pairs = [(dcs[i], dcs[j]) for i in range(n_dcs) for j in range(i + 1, n_dcs)]
    else:
        pairs = [(dcs[i], dcs[i + 1]) for i in range(n_dcs - 1)]

    # WAN links.
    loss_kind = _weighted(rng, LOSS_KINDS)
    jitter = rng.random() < JITTER_PROBABILITY
    links, rates, delays, losses = [], [], [], []
    for i, (a, b) in enumerate(pairs):
        delay = round(_log_uniform(rng, *DELAY_MS))
        mbit = min(RATE_MBIT[1], max(RATE_MBIT[0], 10 * round(_log_uniform(rng, *RATE_MBIT) / 10)))
        link: Dict[str, Any] = {"between": [a, b], "delay": "%dms" % delay, "rate": _rate(mbit)}
        # A lossy experiment has loss on about half its links, and on one at least.
        lossy = loss_kind != "none" and (i == 0 or rng.random() < 0.5)
        if lossy:
            link["loss"] = _loss(rng, loss_kind)
        if jitter:
            link["jitter"] = "%.1fms" % rng.uniform(0.1, min(2.0, delay / 2.0))
        links.append(link)
        rates.append(mbit)
        delays.append(delay)
        losses.append(loss_kind if lossy else "none")
    k = math.ceil(sum(rates) / DELAY_LINE_MBIT) if sum(rates) > DELAY_LINE_MBIT else 1

    # Placement: one rank per host, hosts named as `hosts: N` names them.
    cuts = sorted(rng.sample(range(1, stages), n_dcs - 1)) if layout != "across" else []
    segment = [sum(1 for c in cuts if c <= s) for s in range(stages)]
    used = {dc: 0 for dc in dcs}

    def host(dc: str) -> str:
        used[dc] += 1
        return "%s-h%d" % (dc, used[dc])

    replicas = []
    for r in range(dp):
        ranks = []
        for s in range(stages):
            if layout == "across":
                dc = dcs[r % n_dcs]
            elif layout == "rotated":
                dc = dcs[(segment[s] + r) % n_dcs]
            else:
                dc = dcs[segment[s]]
            ranks.append(host(dc) if tp == 1 else [host(dc) for _ in range(tp)])
        replicas.append(ranks)

    # Compute: modeled constants.
    f = round(_log_uniform(rng, *F_MS))
    b = round(f * rng.uniform(1.7, 2.3))
    w = round(b * rng.uniform(0.3, 0.6)) if rng.random() < 0.8 else None
    kib = round(_log_uniform(rng, ACTIVATION_KIB[0],
                             TP_ACTIVATION_KIB if tp > 1 else ACTIVATION_KIB[1]))
    grad = round(_log_uniform(rng, *GRAD_MIB)) if dp > 1 else None
    modeled: Dict[str, Any] = {"f": "%dms" % f, "b": "%dms" % b}
    if w is not None:
        modeled["w"] = "%dms" % w
    modeled["activation"] = _size(kib)
    if grad is not None:
        modeled["grad"] = "%dmib" % grad

    # Schedules.
    m = rng.randint(*MICROBATCHES)
    if m % stages and rng.random() < 0.25:   # give interleaved its chance
        m = stages * rng.randint(1, MICROBATCHES[1] // stages)
    weights = {s: wt for s, wt in SCHEDULE_WEIGHTS.items()
               if s != "interleaved" or m % stages == 0}
    schedules: List[str] = []
    for _ in range(1 if rng.random() < 0.4 else 2):
        pick = _weighted(rng, weights.items())
        schedules.append(pick)
        del weights[pick]

    mpi: Dict[str, Any] = {"timeout_s": TIMEOUT_S}
    conns = rng.randint(*CONNECTIONS) if rng.random() < CONNECTIONS_PROBABILITY else None
    if conns is not None:
        mpi["connections"] = {"wan": conns}
    temporal = dp > 1 and tp == 1 and rng.random() < TEMPORAL_PROBABILITY
    if temporal:
        mpi["wan_sharing"] = "temporal"
    iterations = rng.randint(*ITERATIONS)

    pipeline: Dict[str, Any] = {"stages": stages}
    if dp > 1:
        pipeline["data_parallel"] = dp
    if tp > 1:
        pipeline["tensor_parallel"] = tp
    pipeline["placement"] = replicas[0] if dp == 1 else replicas

    exp: Dict[str, Any] = {"name": name, "topology": {
        "name": network, "intra_dc": dict(INTRA_DC),
        "dcs": [{"name": dc, "hosts": used[dc]} for dc in dcs], "wan": links}}
    if tp > 1:
        exp["model"] = {"layers": 2 * stages}   # TP with constants takes layers from here
    exp["compute"] = {"modeled": modeled}
    if k > 1:
        exp["time_dilation"] = k
    exp.update({"pipeline": pipeline, "microbatches": m, "microbatch_size": 1,
                "iterations": iterations, "warmup": WARMUP, "schedules": schedules,
                "mpi": mpi, "seed": SEED})
    settings = {"dcs": n_dcs, "shape": shape, "delay_ms": delays, "rate_mbit": rates,
                "loss": losses, "jitter": jitter, "stages": stages, "data_parallel": dp,
                "tensor_parallel": tp, "layout": layout, "microbatches": m,
                "schedules": schedules, "f_ms": f, "b_ms": b, "w_ms": w,
                "activation_kib": kib, "grad_mib": grad, "connections": conns,
                "temporal": temporal, "time_dilation": k, "iterations": iterations}
    return exp, settings


def describe(s: Dict[str, Any]) -> str:
    """One line for a YAML's header and the tables: DCs, parallelism, dilation."""
    par = "PP %d" % s["stages"]
    if s["data_parallel"] > 1:
        par += " x DP %d (%s)" % (s["data_parallel"], s["layout"])
    if s["tensor_parallel"] > 1:
        par += " x TP %d" % s["tensor_parallel"]
    return "%d DCs (%s), %s, %s, k %d" % (s["dcs"], s["shape"], par, " + ".join(s["schedules"]),
                                          s["time_dilation"])


# ---- YAML: what draw() makes, written and read back

_BLOCK = ("topology", "pipeline")   # maps written as blocks; other maps and lists flow


def _scalar(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    return str(v)


def _flow(v: Any) -> str:
    if isinstance(v, dict):
        return "{" + ", ".join("%s: %s" % (k, _flow(x)) for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(_flow(x) for x in v) + "]"
    return _scalar(v)


def to_yaml(doc: Dict[str, Any], header: str = "") -> str:
    """DOC as YAML: top-level keys and `topology:`/`pipeline:` as blocks, lists of maps as
    `- {...}` items, everything else in flow style."""
    out = ["# " + line if line else "#" for line in header.splitlines()]

    def block(d: Dict[str, Any], indent: str) -> None:
        for key, v in d.items():
            if isinstance(v, dict) and key in _BLOCK:
                out.append("%s%s:" % (indent, key))
                block(v, indent + "  ")
            elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
                out.append("%s%s:" % (indent, key))
                out.extend("%s  - %s" % (indent, _flow(x)) for x in v)
            else:
                out.append("%s%s: %s" % (indent, key, _flow(v)))

    block(doc, "")
    return "\n".join(out) + "\n"


def _read_scalar(text: str) -> Any:
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if re.fullmatch(r"-?\d+\.\d*(e-?\d+)?", text):
        return float(text)
    return {"true": True, "false": False}.get(text, text)


def _read_flow(text: str, i: int = 0) -> Tuple[Any, int]:
    while text[i] == " ":
        i += 1
    if text[i] in "{[":
        close = "}" if text[i] == "{" else "]"
        items: Any = {} if close == "}" else []
        i += 1
        while True:
            while text[i] in " ,":
                i += 1
            if text[i] == close:
                return items, i + 1
            if close == "}":
                colon = text.index(":", i)
                key = text[i:colon].strip()
                items[key], i = _read_flow(text, colon + 1)
            else:
                value, i = _read_flow(text, i)
                items.append(value)
    j = i
    while j < len(text) and text[j] not in ",]}":
        j += 1
    return _read_scalar(text[i:j].strip()), j


def parse_yaml(text: str) -> Dict[str, Any]:
    """Reads back what to_yaml writes (not YAML at large)."""
    lines = []
    for raw in text.splitlines():
        if raw.strip() and not raw.lstrip().startswith("#"):
            lines.append((len(raw) - len(raw.lstrip(" ")), raw.strip()))

    def block(i: int) -> Tuple[Any, int]:
        indent = lines[i][0]
        if lines[i][1].startswith("- "):
            items = []
            while i < len(lines) and lines[i][0] == indent and lines[i][1].startswith("- "):
                items.append(_read_flow(lines[i][1][2:])[0])
                i += 1
            return items, i
        d: Dict[str, Any] = {}
        while i < len(lines) and lines[i][0] == indent:
            key, _, rest = lines[i][1].partition(":")
            if rest.strip():
                d[key] = _read_flow(rest.strip())[0]
                i += 1
            else:
                d[key], i = block(i + 1)
        return d, i

    return block(0)[0] if lines else {}


# ---- generating, each experiment checked by `xdc simulate`

def _check(xdc: str, path: str, out: str, exp: Dict[str, Any],
           budget_s: float) -> Tuple[Optional[str], Dict[str, float], float]:
    """(why it is refused or None, simulated iteration per schedule, predicted run time)."""
    shutil.rmtree(out, ignore_errors=True)
    try:
        p = subprocess.run([xdc, "simulate", path, "-o", out], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
    except subprocess.TimeoutExpired:
        return "xdc simulate took over 300 s", {}, 0.0
    if p.returncode != 0:
        lines = (p.stderr.strip() or p.stdout.strip() or "no message").splitlines()
        msg = lines[-1].replace(path, os.path.basename(path))
        return "exit %d: %s" % (p.returncode, msg[:300]), {}, 0.0
    run = try_load_run(out)
    if run is None:
        return "xdc simulate wrote no summary.json", {}, 0.0
    sims: Dict[str, float] = {}
    for s in run.schedules:
        if not s.ok or s.simulated_iteration_s is None:
            return "%s: not simulated (%s)" % (s.name, s.error or "no iteration"), {}, 0.0
        sims[s.name] = s.simulated_iteration_s
    run_s = sum(sims.values()) * (exp["iterations"] + exp["warmup"]) * \
        exp.get("time_dilation", 1)
    if run_s > budget_s:
        return "over budget: %.0f s predicted" % run_s, sims, run_s
    return None, sims, run_s


def generate(seed: int, n: int, out_dir: str, xdc: Optional[str] = DEFAULT_XDC,
             budget_s: float = BUDGET_S, max_draws: int = MAX_DRAWS) -> List[Dict[str, Any]]:
    """Writes N experiments into OUT_DIR (removing gen-*.yaml left there) and
    generated.json; returns its records. XDC None: written without the check."""
    if xdc is not None and not (os.path.isfile(xdc) and os.access(xdc, os.X_OK)):
        raise FileNotFoundError("%s: no xdc binary (build it, or pass --xdc PATH)" % xdc)
    os.makedirs(out_dir, exist_ok=True)
    for old in glob.glob(os.path.join(out_dir, "gen-*.yaml")):
        os.remove(old)
    rng = random.Random(seed)
    records = []
    with tempfile.TemporaryDirectory(prefix="xdc-generalisation-") as tmp:
        for i in range(1, n + 1):
            stream = random.Random(rng.getrandbits(64))
            name = "gen-s%s-%03d" % (seed, i)
            path = os.path.join(out_dir, name + ".yaml")
            refused: List[str] = []
            for draws in range(1, max_draws + 1):
                exp, settings = draw(stream, name, "gen%03d" % (i % 1000))
                header = ("Generated by python3 -m xdc_results.generalisation (seed %s, "
                          "experiment %d):\n%s" % (seed, i, describe(settings)))
                with open(path, "w") as f:
                    f.write(to_yaml(exp, header))
                if xdc is None:
                    why, sims, run_s = None, {}, None
                    break
                why, sims, run_s = _check(xdc, path, os.path.join(tmp, name), exp, budget_s)
                if why is None:
                    break
                refused.append(why)
            else:
                os.remove(path)
                raise RuntimeError("%s: no valid draw in %d (last: %s)" %
                                   (name, max_draws, refused[-1]))
            records.append({"file": path, "name": name, "draws": draws, "refused": refused,
                            "simulated_iteration_s": {k: round(v, 4) for k, v in sims.items()},
                            "predicted_run_s": None if run_s is None else round(run_s, 1),
                            "settings": settings})
    with open(os.path.join(out_dir, "generated.json"), "w") as f:
        json.dump({"seed": seed, "n": n, "budget_s": budget_s, "checked_with": xdc,
                   "experiments": records}, f, indent=1)
        f.write("\n")
    return records


def _span(xs: List[Any]) -> str:
    return "%s" % xs[0] if min(xs) == max(xs) else "%s-%s" % (min(xs), max(xs))


def generated_table(records: List[Dict[str, Any]]) -> str:
    out = (f"{'experiment':<13} {'DCs':<7} {'delay ms':>8} {'Mbit/s':>9} {'loss':<7} "
           f"{'PPxDPxTP':<9} {'layout':<8} {'m':>2} {'f ms':>4} {'act':>7} "
           f"{'conn':>4} {'k':>2}  {'schedules (simulated s)':<40} {'run s':>6} draws\n")
    for r in records:
        s = r["settings"]
        loss = sorted(set(x for x in s["loss"] if x != "none")) or ["-"]
        loss_s = ",".join(x[:2] if x == "gemodel" else x[:4] for x in loss)
        if s["jitter"]:
            loss_s += "+j"
        sims = r["simulated_iteration_s"]
        scheds = ", ".join("%s %.2f" % (x, sims[x]) if x in sims else x for x in s["schedules"])
        act = _size(s["activation_kib"])
        conn = ("%d" % s["connections"] if s["connections"] else "-") + \
            ("T" if s["temporal"] else "")
        run_s = "%.0f" % r["predicted_run_s"] if r["predicted_run_s"] is not None else "-"
        out += (f"{r['name']:<13} {s['dcs']} {s['shape']:<5} {_span(s['delay_ms']):>8} "
                f"{_span(s['rate_mbit']):>9} {loss_s:<7} "
                f"{'%dx%dx%d' % (s['stages'], s['data_parallel'], s['tensor_parallel']):<9} "
                f"{s['layout']:<8} {s['microbatches']:>2} {s['f_ms']:>4} {act:>7} {conn:>4} "
                f"{s['time_dilation']:>2}  {scheds:<40} {run_s:>6} {r['draws']}\n")
    return out


def _counts(xs: Iterable[Any]) -> str:
    c: Dict[Any, int] = {}
    for x in xs:
        c[x] = c.get(x, 0) + 1
    return ", ".join("%s: %d" % (k, v) for k, v in sorted(c.items(), key=lambda kv: str(kv[0])))


def distribution(records: List[Dict[str, Any]]) -> str:
    """What the experiments hold, counted."""
    ss = [r["settings"] for r in records]
    lines = [
        "DCs: " + _counts("%d %s" % (s["dcs"], s["shape"]) for s in ss),
        "PP x DP x TP: " + _counts("%dx%dx%d" % (s["stages"], s["data_parallel"],
                                               s["tensor_parallel"]) for s in ss),
        "layout: " + _counts(s["layout"] for s in ss),
        "schedules: " + _counts(x for s in ss for x in s["schedules"]),
        "links' loss: " + _counts(x for s in ss for x in s["loss"]) +
        "; jitter in %d of %d" % (sum(s["jitter"] for s in ss), len(ss)),
        "time_dilation: " + _counts(s["time_dilation"] for s in ss),
        "connections.wan: %d, wan_sharing temporal: %d" % (
            sum(s["connections"] is not None for s in ss), sum(s["temporal"] for s in ss)),
    ]
    run_s = [r["predicted_run_s"] for r in records if r["predicted_run_s"] is not None]
    if run_s:
        lines.append("predicted run time (s): min %.0f, median %.0f, max %.0f, total %.0f" %
                     (min(run_s), statistics.median(run_s), max(run_s), sum(run_s)))
    refused = [why.split(":")[0] for r in records for why in r["refused"]]
    lines.append("draws refused: %d (%s)" % (len(refused), _counts(refused) or "none"))
    return "\n".join(lines) + "\n"


# ---- collecting the runs

# t quantiles, 97.5%, by degrees of freedom (1..30); beyond, 1.96 + 2.5 / df (within 0.003).
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def t975(df: int) -> float:
    return _T975[df - 1] if df <= len(_T975) else 1.96 + 2.5 / df


def ci95(xs: List[float]) -> Optional[List[float]]:
    """mean +- t(0.975, n-1) s / sqrt(n); one value: [x, x]; none: None."""
    if not xs:
        return None
    m = statistics.mean(xs)
    if len(xs) == 1:
        return [m, m]
    h = t975(len(xs) - 1) * statistics.stdev(xs) / math.sqrt(len(xs))
    return [m - h, m + h]


def percentile(xs: List[float], q: float) -> Optional[float]:
    """The q-th percentile (0..100), interpolated linearly between the sorted values."""
    if not xs:
        return None
    xs = sorted(xs)
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def _pair(x: Any) -> Optional[List[float]]:
    """[lo, hi] from a summary's [lo, hi] or {"lo", "hi"}; None otherwise."""
    if isinstance(x, dict):
        x = [x.get("lo"), x.get("hi")]
    if isinstance(x, (list, tuple)) and len(x) == 2 and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in x):
        return [float(x[0]), float(x[1])]
    return None


def _round(x: Optional[float], digits: int) -> Optional[float]:
    return None if x is None else round(x, digits)


def experiment_yaml(run_dir: str, experiments_dir: Optional[str] = None) -> str:
    """The generated YAML a run directory ran: NAME.yaml in EXPERIMENTS_DIR (default: the
    run directory's grandparent, as the bench lays them out), else its experiment.yaml."""
    name = os.path.basename(os.path.normpath(run_dir))
    where = experiments_dir or os.path.dirname(os.path.dirname(os.path.normpath(run_dir)))
    path = os.path.join(where, name + ".yaml")
    return path if os.path.isfile(path) else os.path.join(run_dir, "experiment.yaml")


def collect(run_dirs: Iterable[str], seed: Any = None,
            experiments_dir: Optional[str] = None, repredicted: bool = False) -> Dict[str, Any]:
    """The bench's document from the runs' summary.json (a directory without one is
    skipped): one point per schedule of every run. `repredicted`: each prediction (and band)
    is the one RUN/repredicted/ holds (results.repredicted; none there: no prediction)."""
    points = []
    for d in run_dirs:
        run = try_load_run(d)
        if run is None:
            continue
        again = results.repredicted(d) if repredicted else None
        for s in run.schedules:
            p = s if again is None else again.get(s.name)
            sim = p.simulated_iteration_s if p is not None else None
            measured = s.measured_iteration_s if s.ok else None
            band = (_pair(p.raw.get("simulated_band_s")) if p is not None else None) or \
                (None if sim is None else [sim, sim])
            inside = None
            if measured is not None and band is not None:
                ci = _pair(s.raw.get("iteration_s_ci95")) or ci95(s.iteration_s) or \
                    [measured, measured]
                inside = ci[0] <= band[1] and band[0] <= ci[1]
            points.append({"experiment_yaml": experiment_yaml(d, experiments_dir),
                           "schedule": s.name, "compute": run.compute_mode,
                           "measured_s": _round(measured, 4), "simulated_s": _round(sim, 4),
                           "band_s": None if band is None else [round(x, 4) for x in band],
                           "err_pct": _round(err_pct(sim, measured), 2), "inside": inside,
                           "tcp_timeouts": (s.raw.get("tcp") or {}).get("timeouts")})
    errs = [abs(p["err_pct"]) for p in points if p["err_pct"] is not None]
    insides = [p["inside"] for p in points if p["inside"] is not None]
    return {"seed": seed, "points": points,
            "median_abs_err_pct": _round(statistics.median(errs), 2) if errs else None,
            "p90_abs_err_pct": _round(percentile(errs, 90), 2),
            "inside_fraction": round(sum(insides) / len(insides), 3) if insides else None}


def _num(x: Optional[float], fmt: str) -> str:
    return "-" if x is None else fmt % x


def table(doc: Dict[str, Any]) -> str:
    out = (f"{'experiment':<28} {'schedule':<17} {'measured':>9} {'simulated':>9} "
           f"{'band':>17} {'err':>8} inside  RTOs\n")
    for p in doc["points"]:
        exp = os.path.basename(os.path.dirname(p["experiment_yaml"])) \
            if p["experiment_yaml"].endswith("/experiment.yaml") \
            else os.path.basename(p["experiment_yaml"])[:-len(".yaml")]
        band = "-" if p["band_s"] is None else "%.3f-%.3f" % tuple(p["band_s"])
        inside = "-" if p["inside"] is None else ("yes" if p["inside"] else "no")
        out += (f"{exp[:28]:<28} {p['schedule']:<17} {_num(p['measured_s'], '%.3f'):>9} "
                f"{_num(p['simulated_s'], '%.3f'):>9} {band:>17} "
                f"{_num(p['err_pct'], '%+.1f%%'):>8} {inside:<6} "
                f"{_num(p.get('tcp_timeouts'), '%d'):>5}\n")
    return out


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m xdc_results.generalisation",
                                 description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command")
    g = sub.add_parser("generate", help="write N random experiments, each checked by xdc")
    g.add_argument("--seed", type=int, required=True)
    g.add_argument("--n", type=int, required=True)
    g.add_argument("--out", required=True, help="the directory to write them into")
    g.add_argument("--xdc", default=DEFAULT_XDC, help="the xdc binary (default %(default)s)")
    g.add_argument("--budget-s", type=float, default=BUDGET_S,
                   help="most predicted run time of one experiment (default %(default)s)")
    g.add_argument("--no-check", action="store_true", help="write them without xdc simulate")
    c = sub.add_parser("collect", help="the bench's JSON from the runs' summary.json")
    c.add_argument("--seed", type=int, required=True)
    c.add_argument("--runs", nargs="+", required=True, help="run directories")
    c.add_argument("--out", required=True, help="the JSON to write")
    c.add_argument("--experiments", help="where the generated YAMLs are (default: each run "
                   "directory's grandparent)")
    c.add_argument("--repredicted", metavar="COMMIT",
                   help="take each prediction from RUN/repredicted/ (made at COMMIT)")
    a = ap.parse_args(argv)
    if a.command == "generate":
        records = generate(a.seed, a.n, a.out, None if a.no_check else a.xdc, a.budget_s)
        sys.stdout.write(generated_table(records) + distribution(records))
        print("wrote %d experiments and generated.json into %s" % (len(records), a.out))
        return 0
    if a.command == "collect":
        doc = collect(a.runs, a.seed, a.experiments, bool(a.repredicted))
        if a.repredicted:
            doc["repredicted_at"] = a.repredicted
        os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
        with open(a.out, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        sys.stdout.write(table(doc))
        measured = sum(p["measured_s"] is not None for p in doc["points"])
        print("%d points, %d measured; |err| median %s, p90 %s; inside %s; wrote %s" % (
            len(doc["points"]), measured, _num(doc["median_abs_err_pct"], "%.1f%%"),
            _num(doc["p90_abs_err_pct"], "%.1f%%"), _num(doc["inside_fraction"], "%.3f"),
            a.out))
        return 0
    ap.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
