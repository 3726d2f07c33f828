"""Reading xdc's results directories: one run, one sweep.

A run directory (``xdc run``, ``xdc simulate``, a sweep's point) holds ``summary.json``
(its schema: harness/run/summary_schema.h, ``schema_version``): run facts at the top
(``experiment``, ``compute_mode``, ``time_dilation``, ``stages``, ...) and
``schedules``, a list of per-schedule entries (``summary_json``): ``schedule``, ``ok``,
``error``, the simulator's ``simulated_iteration_s`` and ``simulated_bubble_ratio``, and
when the run was measured ``iteration_s`` (per iteration), ``iteration_s_mean``, ``_p50``,
``_p95``, ``bubble_ratio``, ``loss``, ``tokens_per_s``, ``transfers``, ``prefill``, ...,
and the spread: ``repeats`` (runs pooled: ``xdc run --repeat N``), ``run_means_s`` (per
repeat), ``iteration_s_ci95`` ([low, high], the 95% confidence interval of the mean:
over the runs' means with N >= 2, over the iterations with N = 1) and ``iteration_s_sd``.
Beside it ``environment.json`` (where and with what it ran). A run of the user's own
program (an experiment's ``workload:`` block) has ``kind`` "workload", its processes, a
WAN timeline (``wan``, ``wan.csv``) and one schedule entry named "workload" with its
``steps`` and ``prediction`` (Run.kind, Run.processes, Run.wan, Schedule.steps).

A sweep directory (``xdc sweep``, ``xdc simulate SWEEP.yaml``; harness/sweep/metrics.h)
holds ``sweep.csv`` -- columns ``point``, ``id``, one per axis, ``schedule``, ``status``
("ok", "failed: ...", "interrupted"), then the metrics (``iteration_s``, ``slowdown``,
``bubble.megatron``, ``simulated_iteration_s``, ...; empty when absent) -- and one run
directory per point, named by its ``id``.

Times are seconds; bubble ratios are fractions (0..1); ``_pct`` values are percent.
"""

from __future__ import annotations

import csv
import json
import math
import os
from typing import Any, Dict, Iterator, List, Optional, Tuple

# summary.json's schema version this package reads (harness/run/summary_schema.h).
SCHEMA_VERSION = 1


def err_pct(simulated_s: Optional[float], measured_s: Optional[float]) -> Optional[float]:
    """The prediction error, in percent: 100 * (simulated - measured) / measured.

    Positive: the simulator predicted a slower iteration than was measured (pessimistic);
    negative: faster (optimistic). None when either is missing or measured is not > 0.
    """
    if simulated_s is None or measured_s is None or not measured_s > 0:
        return None
    return 100.0 * (simulated_s - measured_s) / measured_s


def _positive(x: Any) -> Optional[float]:
    """A number > 0 as float, else None (0 in summary.json means "not there")."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    x = float(x)
    return x if math.isfinite(x) and x > 0 else None


def _number(x: Any) -> Optional[float]:
    """A finite number as float, else None."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _read_json(path: str) -> Optional[Dict[str, Any]]:
    if not os.path.isfile(path):
        return None
    with open(path) as f:
        return json.load(f)


class Schedule:
    """One schedule's entry of summary.json; ``raw`` is the entry as written."""

    def __init__(self, raw: Dict[str, Any]):
        self.raw = raw
        self.name: str = raw.get("schedule", "?")
        self.ok: bool = bool(raw.get("ok", False))
        self.error: str = raw.get("error", "")

    @property
    def measured(self) -> bool:
        """Whether the entry has measured figures (``xdc simulate`` entries have none)."""
        return "iteration_s_mean" in self.raw

    @property
    def iteration_s(self) -> List[float]:
        """The measured iterations, seconds each (empty when not measured)."""
        return [float(x) for x in self.raw.get("iteration_s", []) if x is not None]

    @property
    def measured_iteration_s(self) -> Optional[float]:
        """The mean measured iteration (s); None when nothing was measured."""
        return _positive(self.raw.get("iteration_s_mean"))

    @property
    def repeats(self) -> int:
        """How many runs the entry pools (``xdc run --repeat N``; 0 in a killed or stopped
        run's summary where none of its runs finished); 1 when not said."""
        n = self.raw.get("repeats", 1)
        return n if isinstance(n, int) and not isinstance(n, bool) and n >= 0 else 1

    @property
    def run_means_s(self) -> List[Optional[float]]:
        """Per repeat, the mean of its measured iterations (s), None where it measured none.

        An entry without the key (written before repeats existed) is one run:
        [measured_iteration_s] when measured, else [].
        """
        means = self.raw.get("run_means_s")
        if isinstance(means, list):
            return [_number(x) for x in means]
        return [self.measured_iteration_s] if self.measured else []

    @property
    def iteration_s_ci95(self) -> Optional[Tuple[float, float]]:
        """(low, high), the 95% confidence interval of the mean iteration (s): over the runs'
        means with two or more of them, else over the one run's iterations. None where the
        entry has none (too few values, not measured, or written before the key existed)."""
        ci = self.raw.get("iteration_s_ci95")
        if isinstance(ci, list) and len(ci) == 2:
            lo, hi = _number(ci[0]), _number(ci[1])
            if lo is not None and hi is not None:
                return (lo, hi)
        return None

    @property
    def iteration_s_sd(self) -> Optional[float]:
        """The standard deviation the interval rests on (of the run means, or of the
        iterations of one run); None where absent."""
        return _number(self.raw.get("iteration_s_sd"))

    @property
    def simulated_iteration_s(self) -> Optional[float]:
        """The simulator's prediction of the measured iterations (s); None when absent."""
        return _positive(self.raw.get("simulated_iteration_s"))

    @property
    def err_pct(self) -> Optional[float]:
        """Prediction error (``err_pct``) of this schedule's run; None unless ok and both."""
        if not self.ok:
            return None
        return err_pct(self.simulated_iteration_s, self.measured_iteration_s)

    @property
    def steps(self) -> Dict[str, Any]:
        """A workload run's steps (``all_s``, ``warmup``, ``per_rank``, ``compute_s_mean``,
        ``allreduce_bytes``); {} for the worker's schedules."""
        x = self.raw.get("steps", {})
        return x if isinstance(x, dict) else {}

    @property
    def prediction(self) -> Dict[str, Any]:
        """A workload run's prediction of its step (``compute_s``, ``allreduce_bytes``,
        ``experiment``, ``simulated_step_s``, or ``error``); {} where there is none."""
        x = self.raw.get("prediction", {})
        return x if isinstance(x, dict) else {}

    def bubble(self, definition: str = "megatron", simulated: bool = False) -> Optional[float]:
        """A bubble ratio (fraction) by definition: megatron, zerobubble or crosspipe."""
        b = self.raw.get("simulated_bubble_ratio" if simulated else "bubble_ratio") or {}
        x = b.get(definition)
        return float(x) if isinstance(x, (int, float)) else None

    def __repr__(self) -> str:
        return "Schedule(%r, ok=%r, measured_s=%r, simulated_s=%r, repeats=%r)" % (
            self.name, self.ok, self.measured_iteration_s, self.simulated_iteration_s,
            self.repeats)


class Run:
    """A run directory: ``summary`` (summary.json), ``environment`` ({} when absent)."""

    def __init__(self, directory: str, summary: Dict[str, Any],
                 environment: Optional[Dict[str, Any]] = None):
        self.dir = directory
        self.summary = summary
        self.environment = environment or {}
        self.schedules: List[Schedule] = [Schedule(s) for s in _schedule_entries(summary)]

    @property
    def experiment(self) -> str:
        return self.summary.get("experiment", os.path.basename(os.path.normpath(self.dir)))

    @property
    def compute_mode(self) -> str:
        """"real" or "modeled" (environment.json's, else summary.json's); "?" unknown."""
        return self.environment.get("compute_mode", self.summary.get("compute_mode", "?"))

    @property
    def simulated_only(self) -> bool:
        return bool(self.summary.get("simulated", False))

    @property
    def interrupted(self) -> bool:
        return bool(self.summary.get("interrupted", False))

    @property
    def complete(self) -> bool:
        """Every run the experiment asks for has its result here (summary.json ``complete``;
        absent in older summaries: True). A killed or stopped run's entries list the others
        in ``missing_runs``; ``xdc run EXP --resume DIR`` completes it."""
        return bool(self.summary.get("complete", True))

    @property
    def non_default_settings(self) -> List[str]:
        """Settings unlike stock OpenMPI and Linux TCP (environment.json)."""
        return list(self.environment.get("non_default_settings", []))

    def schedule(self, name: str) -> Optional[Schedule]:
        return next((s for s in self.schedules if s.name == name), None)

    def __iter__(self) -> Iterator[Schedule]:
        return iter(self.schedules)

    @property
    def kind(self) -> str:
        """"worker" (xdc's own worker, the default) or "workload" (the user's own program,
        an experiment's ``workload:`` block)."""
        return str(self.summary.get("kind", "worker"))

    @property
    def processes(self) -> List[Dict[str, Any]]:
        """A workload run's processes: ``rank``, ``host``, ``local_rank``, ``exit_code``
        (None: unknown), ``stopped_by_xdc``, ``seconds``; [] for the worker's runs."""
        p = self.summary.get("processes", [])
        return [x for x in p if isinstance(x, dict)] if isinstance(p, list) else []

    @property
    def wan(self) -> Dict[str, Dict[str, Any]]:
        """A workload run's WAN timeline summary per direction ("east->west"): ``samples``,
        ``interval_p50_s``, ``interval_max_s``, ``bytes``, ``drops``, ``mean_mbit_s``,
        ``peak_mbit_s``; the samples themselves are in ``wan.csv``. {} for the worker's."""
        w = self.summary.get("wan", {})
        return {k: v for k, v in w.items() if isinstance(v, dict)} if isinstance(w, dict) else {}

    def wan_samples(self) -> List[Dict[str, Any]]:
        """``wan.csv`` of a workload run as records (numbers as float), [] where absent."""
        path = os.path.join(self.dir, "wan.csv")
        if not os.path.isfile(path):
            return []
        with open(path, newline="") as f:
            return [{k: _cell(v) for k, v in r.items()} for r in csv.DictReader(f)]

    def __repr__(self) -> str:
        return "Run(%r, %d schedules)" % (self.dir, len(self.schedules))


def _cell(text: str) -> Any:
    """A CSV cell as float where it is a number, else the text."""
    try:
        return float(text)
    except ValueError:
        return text


def _schedule_entries(summary: Dict[str, Any]) -> List[Dict[str, Any]]:
    s = summary.get("schedules", [])
    return [e for e in s if isinstance(e, dict)] if isinstance(s, list) else []


def load_run(directory: str) -> Run:
    """The run in DIRECTORY; raises FileNotFoundError without a summary.json."""
    summary = _read_json(os.path.join(directory, "summary.json"))
    if summary is None:
        raise FileNotFoundError(os.path.join(directory, "summary.json") +
                                ": no summary.json (not a results directory of xdc)")
    version = summary.get("schema_version", 0)
    if isinstance(version, int) and version > SCHEMA_VERSION:
        raise ValueError("%s: schema_version %d: written by a newer xdc (this package reads up "
                         "to %d)" % (os.path.join(directory, "summary.json"), version,
                                     SCHEMA_VERSION))
    return Run(directory, summary, _read_json(os.path.join(directory, "environment.json")))


def try_load_run(directory: str) -> Optional[Run]:
    """load_run, or None where DIRECTORY has no summary.json."""
    try:
        return load_run(directory)
    except FileNotFoundError:
        return None


REPREDICTED = "repredicted"  # RUN/repredicted/: `xdc simulate RUN/experiment.yaml --measured RUN`


def repredicted(run_dir: str) -> Dict[str, "Schedule"]:
    """{schedule name: its entry} of RUN/repredicted/summary.json, the run predicted again by
    a later simulator as the run predicted itself ({} when absent)."""
    again = try_load_run(os.path.join(run_dir, REPREDICTED))
    return {} if again is None else {s.name: s for s in again.schedules}


# sweep.csv's columns that are neither axes nor metrics.
_FIXED = ("point", "id", "schedule", "status")


class Sweep:
    """A sweep directory: ``rows`` from sweep.csv (one per point per schedule, in file order).

    Each row is a dict: ``point`` (int), ``id``, each axis' value label (str, as in the
    sweep file: "20ms", "1gbit"), ``schedule``, ``status``, and every metric as float or
    None where the CSV has it empty.
    """

    def __init__(self, directory: str, columns: List[str], rows: List[Dict[str, Any]]):
        self.dir = directory
        self.columns = columns
        self.rows = rows
        end = columns.index("schedule") if "schedule" in columns else len(columns)
        self.axes: List[str] = [c for c in columns[:end] if c not in _FIXED]
        self.metrics: List[str] = [c for c in columns[end:] if c not in _FIXED]

    def ok_rows(self) -> List[Dict[str, Any]]:
        return [r for r in self.rows if r.get("status") == "ok"]

    def point_ids(self) -> List[str]:
        """The points' ids, each once, in file order."""
        seen: List[str] = []
        for r in self.rows:
            if r["id"] not in seen:
                seen.append(r["id"])
        return seen

    def run(self, point_id: str) -> Optional[Run]:
        """The point's run directory, or None where it has no summary.json."""
        return try_load_run(os.path.join(self.dir, point_id))

    def runs(self) -> Iterator[tuple]:
        """(first row of the point, its Run) for every point with a summary.json."""
        for pid in self.point_ids():
            run = self.run(pid)
            if run is not None:
                yield next(r for r in self.rows if r["id"] == pid), run

    def find(self, **where: Any) -> Optional[Dict[str, Any]]:
        """The first ok row whose columns equal WHERE (keys with dots: pass a dict)."""
        return find_row(self.ok_rows(), where)

    def __iter__(self) -> Iterator[Dict[str, Any]]:
        return iter(self.rows)

    def __repr__(self) -> str:
        return "Sweep(%r, axes=%r, %d rows)" % (self.dir, self.axes, len(self.rows))


def find_row(rows: List[Dict[str, Any]], where: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    return next((r for r in rows if all(r.get(k) == v for k, v in where.items())), None)


def _metric(text: str) -> Optional[float]:
    if text == "":
        return None
    try:
        return float(text)
    except ValueError:
        return None


def load_sweep(directory: str) -> Sweep:
    """The sweep in DIRECTORY; raises FileNotFoundError without a sweep.csv."""
    path = os.path.join(directory, "sweep.csv")
    if not os.path.isfile(path):
        raise FileNotFoundError(path + ": no sweep.csv (not a sweep directory of xdc)")
    with open(path, newline="") as f:
        reader = csv.reader(f)
        columns = next(reader, [])
        raw = [dict(zip(columns, line)) for line in reader if line]
    end = columns.index("schedule") if "schedule" in columns else len(columns)
    metrics = {c for c in columns[end:] if c not in _FIXED}
    rows = []
    for r in raw:
        row: Dict[str, Any] = {}
        for c, v in r.items():
            if c == "point":
                row[c] = int(v) if v.isdigit() else v
            elif c in metrics:
                row[c] = _metric(v)
            else:
                row[c] = v
        rows.append(row)
    return Sweep(directory, columns, rows)


def try_load_sweep(directory: str) -> Optional[Sweep]:
    try:
        return load_sweep(directory)
    except FileNotFoundError:
        return None


def schedule_table(run: Run) -> List[Dict[str, Any]]:
    """One plain record per schedule: measured and simulated iteration (s), err_pct, repeats,
    the measured mean's 95% interval (``iteration_s_ci95_low`` / ``_high``), bubbles."""
    out = []
    for s in run.schedules:
        rec = {"experiment": run.experiment, "schedule": s.name, "ok": s.ok,
               "measured_iteration_s": s.measured_iteration_s,
               "simulated_iteration_s": s.simulated_iteration_s, "err_pct": s.err_pct,
               "repeats": s.repeats}
        ci = s.iteration_s_ci95
        rec["iteration_s_ci95_low"], rec["iteration_s_ci95_high"] = ci if ci else (None, None)
        for d in ("megatron", "zerobubble", "crosspipe"):
            rec["bubble_" + d] = s.bubble(d)
            rec["simulated_bubble_" + d] = s.bubble(d, simulated=True)
        out.append(rec)
    return out


def sweep_table(sweep: Sweep) -> List[Dict[str, Any]]:
    """sweep.csv's rows with ``err_pct`` added (None where a side is missing or not ok)."""
    out = []
    for r in sweep.rows:
        rec = dict(r)
        ok = r.get("status") == "ok"
        rec["err_pct"] = err_pct(r.get("simulated_iteration_s"), r.get("iteration_s")) if ok \
            else None
        out.append(rec)
    return out


def to_dataframe(results: Any):
    """A pandas DataFrame of a Run (schedule_table) or a Sweep (sweep_table).

    Raises ImportError where pandas is not installed; nothing else here needs it.
    """
    import pandas  # optional dependency

    if isinstance(results, Run):
        return pandas.DataFrame(schedule_table(results))
    if isinstance(results, Sweep):
        return pandas.DataFrame(sweep_table(results), columns=results.columns + ["err_pct"])
    raise TypeError("to_dataframe: expected a Run or a Sweep, got %r" % type(results).__name__)
