"""A real cluster that stalls (issue 27): no workers, Ctrl-C/SIGTERM while waiting, an unreachable
scheduler, a frozen worker. Scheduler and workers are separate processes (tests/cluster_fixtures.py);
the campaign runs as `tunesmith` in its own process, as a user runs it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("distributed")

from cluster_fixtures import Cluster, free_port  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path)
    yield c
    c.close()


def _tunesmith(run_dir: Path, *args: str) -> subprocess.Popen:
    argv = [sys.executable, "-m", "generator.cli", "run", "campaigns/quickstart.toml", "--budget", "4",
            "--run-dir", str(run_dir), "--no-progress", *args]
    err_path = run_dir.parent / f"{run_dir.name}.stderr"
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=open(err_path, "w"),
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    proc.err_path = err_path
    return proc


def _wait_for_line(proc: subprocess.Popen, needle: str, limit_s: float) -> tuple[str, float]:
    """Read stderr until a line holds `needle`; (what was read, seconds it took)."""
    start = time.monotonic()
    while time.monotonic() - start < limit_s:
        seen = proc.err_path.read_text()
        if needle in seen:
            return seen, time.monotonic() - start
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    seen = proc.err_path.read_text()
    raise AssertionError(f"no {needle!r} on stderr within {limit_s} s; got:\n{seen[-2000:]}")


def _finish(proc: subprocess.Popen, limit_s: float) -> tuple[int, str, float]:
    start = time.monotonic()
    try:
        proc.wait(timeout=limit_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError(f"tunesmith still running {limit_s} s later; stderr:\n"
                             f"{proc.err_path.read_text()[-2000:]}") from None
    return proc.returncode, proc.err_path.read_text(), time.monotonic() - start


def test_no_workers_is_said_at_once_and_stops_after_the_worker_wait(cluster, tmp_path):
    run_dir = tmp_path / "run"
    proc = _tunesmith(run_dir, "--executor", cluster.url, "--worker-wait", "6")
    seen, took = _wait_for_line(proc, "waiting for Dask workers", 60)
    status = json.loads((run_dir / "status.json").read_text())
    assert status["state"] == "waiting" and "worker_wait" in status["reason"]
    code, err, _ = _finish(proc, 60)
    assert code != 0
    assert "no Dask worker joined within 6 s" in err
    assert f"tunesmith resume {run_dir}" in err  # the real path, not RUN_DIR
    assert json.loads((run_dir / "status.json").read_text())["state"] == "stopped"


def test_a_worker_that_joins_lets_the_waiting_run_go_on(cluster, tmp_path):
    run_dir = tmp_path / "run"
    proc = _tunesmith(run_dir, "--executor", cluster.url, "--worker-wait", "120")
    _wait_for_line(proc, "waiting for Dask workers", 60)
    cluster.add_worker()
    code, err, _ = _finish(proc, 240)
    assert code == 0, err[-2000:]
    assert "worker(s) joined" in err


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_stops_the_run_while_it_waits_for_workers(cluster, tmp_path, sig, code):
    run_dir = tmp_path / "run"
    proc = _tunesmith(run_dir, "--executor", cluster.url, "--worker-wait", "600")
    _wait_for_line(proc, "waiting for Dask workers", 60)
    proc.send_signal(sig)
    rc, err, took = _finish(proc, 30)
    assert rc == code, err[-2000:]
    assert f"to continue: tunesmith resume {run_dir}" in err
    assert "Traceback" not in err


def test_an_unreachable_scheduler_fails_once_in_the_time_it_states(tmp_path):
    run_dir = tmp_path / "run"
    start = time.monotonic()
    proc = _tunesmith(run_dir, "--executor", f"dask://127.0.0.1:{free_port()}")  # nothing listens there
    rc, err, _ = _finish(proc, 120)
    took = time.monotonic() - start
    assert rc != 0
    assert err.count("no Dask scheduler answered") == 1, err[-2000:]
    assert "within 20 s" in err
    assert took < 20 + 25, took  # one attempt (+ start-up on a busy machine), not 4 x 20 s (one per candidate)
    assert f"tunesmith resume {run_dir}" in err
