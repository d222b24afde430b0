"""Append-only JSON-lines files (a run's candidates, exchanges, generations): reading and repair.

A crash can tear the last line of such a file; readers skip it and `repair_tail` cuts it before the
next append, so a resumed run starts on a fresh line.
"""

from __future__ import annotations

import json
from pathlib import Path


def read_lines(path: Path) -> list[dict]:
    """All complete JSON lines of a file; a torn last line from a crash is skipped."""
    if not path.exists():
        return []
    records = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.endswith("\n"):
                break  # cut short by a crash mid-write
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return records


def repair_tail(path: Path) -> None:
    """Cut a torn last line so that new appends start on a fresh line."""
    if not path.exists():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with open(path, "r+b") as fh:
            fh.truncate(data.rfind(b"\n") + 1)
