"""The benchmarks' JSON (results/bench/NAME.json, written by scripts/bench_*.sh): the record
each carries of how it was made, and reading them back.

    python3 -m xdc_results.bench record OUT.json --command "scripts/bench_plan.sh ..."

record adds to OUT.json (a JSON object the benchmark wrote) the key ``bench``:

    {"script": "scripts/bench_plan.sh", "command": "scripts/bench_plan.sh ...",
     "date": "2026-01-31T12:00:00Z", "commit": "abc1234", "modified": false,
     "cores": 2, "kernel": "6.1.0-18-amd64"}

date is when the benchmark finished (UTC); commit the checkout's HEAD (short hash; null
outside a git checkout) and modified whether tracked files outside results/ and docs/
differed from it, i.e. whether the programs measured were not that commit's. The machine
load is the benchmark's own key (each records it before it measures: ``load``,
``load_before``, ...), not the record's: at the end the benchmark itself is the load.
scripts/lib.sh's bench_record calls this; python/xdc_results/figures.py renders the
records and figures into docs/figures.md.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import os
import platform
import subprocess
import sys
from typing import Any, Dict, List, Optional, Tuple

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BENCH_DIR = os.path.join(ROOT, "results", "bench")


def _git(root: str, *args: str) -> Optional[str]:
    """git's stdout in ROOT, stripped; None where git is missing or fails. safe.directory:
    a benchmark run as root records the commit of a checkout another user owns."""
    try:
        r = subprocess.run(["git", "-c", "safe.directory=" + root, "-C", root] + list(args),
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           universal_newlines=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout.strip() if r.returncode == 0 else None


def make_record(command: str, root: str = ROOT,
                now: Optional[datetime.datetime] = None) -> Dict[str, Any]:
    """The ``bench`` record of a run of COMMAND that finishes now, in checkout ROOT."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    commit = _git(root, "rev-parse", "--short=7", "HEAD")
    modified = None
    if commit is not None:
        status = _git(root, "status", "--porcelain", "--untracked-files=no", "--", ".",
                      ":(exclude)results", ":(exclude)docs")
        modified = bool(status) if status is not None else None
    script = command.split()[0] if command.split() else ""
    return {"script": script, "command": command,
            "date": now.strftime("%Y-%m-%dT%H:%M:%SZ"), "commit": commit,
            "modified": modified, "cores": os.cpu_count(), "kernel": platform.release()}


def record(path: str, command: str, root: str = ROOT) -> Dict[str, Any]:
    """Adds the ``bench`` record to the JSON object in PATH; returns the document."""
    with open(path) as f:
        doc = json.load(f)
    if not isinstance(doc, dict):
        raise ValueError("%s: expected a JSON object, got %s" % (path, type(doc).__name__))
    doc["bench"] = make_record(command, root)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    return doc


def load_all(bench_dir: str = BENCH_DIR) -> List[Tuple[str, Dict[str, Any]]]:
    """(name, document) of every BENCH_DIR/NAME.json that holds a JSON object, by name.
    Raises ValueError naming the file where one is not JSON."""
    out = []
    for path in sorted(glob.glob(os.path.join(bench_dir, "*.json"))):
        with open(path) as f:
            try:
                doc = json.load(f)
            except ValueError as e:
                raise ValueError("%s: not JSON: %s" % (path, e)) from None
        if isinstance(doc, dict):
            out.append((os.path.splitext(os.path.basename(path))[0], doc))
    return out


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m xdc_results.bench",
                                 description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record", help="add the bench record to a benchmark's JSON")
    r.add_argument("out", help="the benchmark's JSON (an object)")
    r.add_argument("--command", required=True, help="the command that ran the benchmark")
    a = ap.parse_args(argv)
    doc = record(a.out, a.command)
    b = doc["bench"]
    print("%s: recorded %s, %s at %s%s" % (a.out, b["command"], b["date"], b["commit"],
                                           " (modified)" if b["modified"] else ""),
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
