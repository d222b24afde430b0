"""A real Dask cluster for tests: `dask scheduler` and `dask worker` as separate processes on 127.0.0.1.

Workers run without a nanny, so the process the test started is the worker itself: SIGSTOP freezes
it, kill -9 kills it.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

DASK = str(Path(sys.executable).with_name("dask"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port: int, limit_s: float = 60.0) -> None:
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {limit_s} s")


class Cluster:
    """A scheduler process and any number of single-threaded worker processes."""

    def __init__(self, log_dir: Path):
        self.port = free_port()
        self.url = f"dask://127.0.0.1:{self.port}"
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.log_dir = log_dir
        self.workers: list[subprocess.Popen] = []
        self.scheduler = self._start(
            "scheduler", [DASK, "scheduler", "--host", "127.0.0.1", "--port", str(self.port), "--no-dashboard"]
        )
        _wait_port(self.port)

    def _start(self, name: str, argv: list[str]) -> subprocess.Popen:
        log = open(self.log_dir / f"{name}.log", "ab")
        return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def add_worker(self, nthreads: int = 1) -> subprocess.Popen:
        proc = self._start(
            f"worker{len(self.workers)}",
            [
                DASK,
                "worker",
                self.address,
                "--nthreads",
                str(nthreads),
                "--no-nanny",
                "--host",
                "127.0.0.1",
                "--no-dashboard",
            ],
        )
        self.workers.append(proc)
        return proc

    def close(self) -> None:
        for proc in [*self.workers, self.scheduler]:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGCONT)  # a frozen one must be able to die
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
