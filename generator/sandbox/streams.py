"""Bytes between the evaluating process, a sandbox host and its runs: frames, captured output, space keys.

Wire format (little endian; the type bytes and JSON kinds are named in `sandbox.wire`). run -> evaluator,
on the run's own request pipe: 5-byte frames, a `Request` type byte and an int32: EVALUATE row (evaluate a
valid configuration by its row), LOCAL (a call answered in the run process: a revisit or a configuration
outside the space; the evaluator counts it), DONE (run finished; its int is ignored: figures come from the
evaluator's own counts), JSON n followed by n bytes of JSON (a `RunEvent`: start / error / setup-error).
evaluator -> run, on the run's own response pipe: first the run's seed rows (int32 n, then n int64
rows in the order they were evaluated; n = 0 outside hybrid runs), then 17-byte `Answer` frames VALUE|STOP,
float64 value, float64 budget_spent_fraction (STOP: the budget is spent). evaluator -> host, on a unix
socket: the pickled job, then `Command.RUN` (start the next run; its two pipe ends ride along as
SCM_RIGHTS) or `Command.ABORT` (skip the rest). host -> evaluator, on the control pipe: JSON frames only
(a `HostEvent`: ready / began run k with pids / run k exited with status / idle).
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import weakref

from generator.sandbox.wire import Request

FRAME = struct.Struct("<ci")
ANSWER = struct.Struct("<cdd")

SEEDS = struct.Struct("<i")  # the number of seed rows, then the rows as int64
MAX_SEEDS = 4096  # 32 KiB of rows: the message fits an empty pipe (64 KiB) in one write


def seed_message(rows) -> bytes:
    """The seed rows of one run, as its response pipe carries them first (an empty list for most runs)."""
    rows = [int(r) for r in rows][:MAX_SEEDS]
    return SEEDS.pack(len(rows)) + struct.pack(f"<{len(rows)}q", *rows)


def read_seeds(fd: int) -> list[int]:
    """The run's seed rows, read off its response pipe before anything else (see `seed_message`)."""
    (n,) = SEEDS.unpack(read_exact(fd, SEEDS.size))
    return list(struct.unpack(f"<{n}q", read_exact(fd, 8 * n))) if n else []


MAX_JSON = 1 << 20


class OutputTail:
    """Captured stdout+stderr of a job: the first and the last `half` bytes, the middle counted."""

    def __init__(self, half: int):
        self.half, self.head, self.tail, self.total = half, bytearray(), bytearray(), 0

    def keep(self, data: bytes) -> None:
        self.total += len(data)
        if len(self.head) < self.half:
            take = self.half - len(self.head)
            self.head += data[:take]
            data = data[take:]
        self.tail = (self.tail + data)[-self.half :]

    def read(self, fd: int, sel) -> None:
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            return
        if not data:
            sel.unregister(fd)
        self.keep(data)

    def drain(self, fd: int) -> None:
        try:
            while data := os.read(fd, 65536):
                self.keep(data)
        except OSError:
            pass

    def text(self) -> str:
        cut = self.total - len(self.head) - len(self.tail)
        middle = f"\n... [{cut} bytes cut] ...\n" if cut > 0 else ""
        return self.head.decode(errors="replace") + middle + self.tail.decode(errors="replace")


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


_SPEC_KEYS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def spec_key(spec) -> str:
    """A content hash of a SpaceSpec: a pooled host builds each search space once."""
    key = _SPEC_KEYS.get(spec)
    if key is None:
        h = hashlib.sha1(json.dumps([list(spec.tune_params.items()), list(spec.restrictions)], default=repr).encode())
        h.update(spec.valid.tobytes())
        key = _SPEC_KEYS[spec] = h.hexdigest()
    return key


def send_json(fd: int, obj) -> None:
    data = json.dumps(obj, default=repr).encode()
    write_all(fd, FRAME.pack(Request.JSON, len(data)) + data)


def read_exact(fd: int, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            raise EOFError("pipe closed")
        buf += chunk
    return buf
