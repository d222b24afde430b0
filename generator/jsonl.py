"""Append-only JSON-lines files (a run's candidates, exchanges, generations): reading and repair.

A crash can tear the last line of such a file; readers skip it and `repair_tail` cuts it before the
next append, so a resumed run starts on a fresh line.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

_WARNED: set = set()  # (file, line number, line): each damaged line is reported once per process


def _skip_warning(path: Path, number: int, line: str, why: str) -> None:
    key = (str(path), number, line)
    if key not in _WARNED:
        _WARNED.add(key)
        print(
            f"tunesmith: warning: {path} line {number}: {why}; the line is skipped and the rest of the run is "
            "read as usual (a candidate lost this way is made again on resume)",
            file=sys.stderr,
        )


def read_lines(path: Path, make=None) -> list:
    """All complete JSON lines of a file (each through `make`, if given); a torn last line from a crash
    is skipped silently, a damaged line elsewhere with a warning that gives its number."""
    if not path.exists():
        return []
    records = []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for number, line in enumerate(fh, 1):
            if not line.endswith("\n"):
                break  # cut short by a crash mid-write
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                _skip_warning(path, number, line, f"not valid JSON ({exc.msg})")
                continue
            if make is None:
                records.append(record)
                continue
            try:
                records.append(make(record))
            except (TypeError, AttributeError, ValueError) as exc:
                _skip_warning(path, number, line, f"not a {make.__qualname__.split('.')[0].lower()} record ({exc})")
    return records


def repair_tail(path: Path) -> None:
    """Cut a torn last line so that new appends start on a fresh line."""
    if not path.exists():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with open(path, "r+b") as fh:
            fh.truncate(data.rfind(b"\n") + 1)
