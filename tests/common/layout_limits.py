#!/usr/bin/env python3
"""Size limits that keep the code readable: no source file outside workloads/model over
700 lines; no C++ function outside workloads/model (and the ported ZB-V heuristic,
workloads/schedule/gen_zero_bubble.cpp) over 120 lines; scripts/reproduce.sh at most 120
lines of bash (the papers' figures live in python/xdc_results). A function is measured
from its head (a line at column 0 that opens a parameter list) to the closing brace at
column 0, which is how clang-format lays out every definition here.
Prints FILE:LINE: what is over and exits 1 when anything is.
Usage: layout_limits.py SOURCE_ROOT"""
import os
import re
import subprocess
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "."
os.chdir(root)
DIRS = ["harness", "netem", "workloads", "common", "python", "scripts", "tests"]
git = subprocess.run(["git", "-c", "safe.directory=*", "ls-files", "--cached", "--others",
                      "--exclude-standard"] + DIRS, stdout=subprocess.PIPE,
                     stderr=subprocess.DEVNULL, universal_newlines=True)
if git.returncode == 0:
    files = git.stdout.split()
else:  # not a git checkout: every file below the folders
    files = [os.path.join(d, n) for top in DIRS for d, _, ns in os.walk(top) for n in ns]
bad = []
for f in files:
    if f.startswith("workloads/model/") or not os.path.isfile(f):
        continue
    if not re.search(r"\.(cpp|cc|h|hpp|cu|cuh|py|sh)$", f):
        continue
    with open(f, errors="replace") as fh:
        lines = fh.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) > 700:
        bad.append("%s:1: %d lines (at most 700)" % (f, len(lines)))
    if not re.search(r"\.(cpp|cc|h|hpp|cu|cuh)$", f) or f.endswith("gen_zero_bubble.cpp"):
        continue
    head = None
    for i, line in enumerate(lines):
        if (re.match(r"[A-Za-z_].*\(", line) and not line.startswith(("namespace", "#", "//"))
                and not line.rstrip().endswith(";")):
            head = i
        elif line.startswith("}") and head is not None and not line.startswith("}  // namespace"):
            if i - head + 1 > 120:
                bad.append("%s:%d: a function of %d lines (at most 120)" % (f, head + 1, i - head + 1))
            head = None
with open("scripts/reproduce.sh") as fh:
    n = len(fh.read().rstrip("\n").split("\n"))
if n > 120:
    bad.append("scripts/reproduce.sh:1: %d lines (at most 120)" % n)
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
