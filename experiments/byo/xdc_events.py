"""The program side of xdc's events protocol (docs/workload.md): one JSON line per event
appended to the file named by XDC_EVENTS; nothing when the variable is unset."""
import json
import os
import time

_PATH = os.environ.get("XDC_EVENTS")


def emit(rank, name, phase=None, t=None, **fields):
    """One event now (or at `t`, a time.time() taken earlier)."""
    if not _PATH:
        return
    line = {"t": time.time() if t is None else t, "rank": rank, "name": name}
    if phase:
        line["phase"] = phase
    line.update(fields)
    # One write of one line with O_APPEND: the ranks' lines never interleave.
    fd = os.open(_PATH, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(line) + "\n").encode())
    finally:
        os.close(fd)


class span:
    """with span(rank, "step", step=i) as s: ...; s.fields["loss"] = x goes on the end line."""

    def __init__(self, rank, name, **fields):
        self.rank, self.name, self.fields = rank, name, dict(fields)

    def __enter__(self):
        emit(self.rank, self.name, "begin", **self.fields)
        return self

    def __exit__(self, *exc):
        emit(self.rank, self.name, "end", **self.fields)
        return False
