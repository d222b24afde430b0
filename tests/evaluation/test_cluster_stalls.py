"""A real cluster that stalls (issue 27): no workers, Ctrl-C/SIGTERM while waiting, an unreachable
scheduler, a frozen worker. Scheduler and workers are separate processes (tests/support/cluster_fixtures.py);
the campaign runs as `tunesmith` in its own process, as a user runs it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from support.paths import ROOT

pytest.importorskip("distributed")

from support.cluster_fixtures import Cluster, free_port


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path)
    yield c
    c.close()


def _tunesmith(run_dir: Path, *args: str) -> subprocess.Popen:
    argv = [
        sys.executable,
        "-m",
        "generator.cli",
        "run",
        "campaigns/quickstart.toml",
        "--budget",
        "4",
        "--run-dir",
        str(run_dir),
        "--no-progress",
        *args,
    ]
    err_path = run_dir.parent / f"{run_dir.name}.stderr"
    proc = subprocess.Popen(
        argv,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=open(err_path, "w"),
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
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
        raise AssertionError(
            f"tunesmith still running {limit_s} s later; stderr:\n{proc.err_path.read_text()[-2000:]}"
        ) from None
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


# ---------------------------------------------------------------------------- a frozen worker
# Honest and slow on purpose: a pause per call makes one run last a few seconds of wall time (the score
# uses the simulated clock, so the pause changes nothing else): long enough to freeze its worker mid-run.
SLOW = """
import time


class SlowSampler:
    hyperparameters = {"pause": {"type": "float", "low": 0.0, "high": 0.01, "default": 0.004}}

    def __init__(self, budget=5000, pause=0.004):
        self.pause = pause

    def __call__(self, func, searchspace):
        seen = set()
        while True:
            cfg = tuple(searchspace.get_random_sample(1)[0])
            if cfg in seen:
                continue
            seen.add(cfg)
            time.sleep(self.pause)
            func(list(cfg))
"""
REPEATS = 2


def _sandbox():
    from generator.sandbox.jobs import SandboxConfig

    return SandboxConfig(timeout_s=8.0, startup_s=20.0)


@pytest.fixture(scope="module")
def local_slow(conv_task):
    from generator.evaluation.evaluate import evaluate_source

    fit = evaluate_source(SLOW, [conv_task], repeats=REPEATS, seed=7, workers=2, config=_sandbox())
    assert fit.error is None, fit.error
    assert not fit.metadata.get("runs_cut_at_time_limit")
    return fit


def _same_scores(a, b):
    assert a.error is None and b.error is None, (a.error, b.error)
    assert not b.metadata.get("runs_cut_at_time_limit"), "a run was cut while its evaluator was frozen"
    assert a.score == b.score
    for name, tf in a.per_task.items():
        assert (tf.per_repeat, tf.fevals, tf.unique) == (
            b.per_task[name].per_repeat,
            b.per_task[name].fevals,
            b.per_task[name].unique,
        )


def _evaluate_while_freezing(cluster, task, frozen_s: float | None):
    """Evaluate on the cluster; once a worker runs our job, SIGSTOP it for `frozen_s` (None: for good)."""
    from generator.evaluation.evaluate import evaluate_source
    from generator.evaluation.executors import get_executor

    notices: list[str] = []
    ex = get_executor(cluster.url, 2, worker_wait_s=60, notice=notices.append)
    ex.client.wait_for_workers(2, timeout=60)
    pids = ex.client.run(os.getpid)
    box = {}
    thread = threading.Thread(
        target=lambda: box.update(
            fit=evaluate_source(SLOW, [task], repeats=REPEATS, seed=7, workers=2, executor=ex, config=_sandbox())
        )
    )
    thread.start()
    try:
        end = time.monotonic() + 60
        while not (busy := [a for a, keys in ex.client.processing().items() if keys]):
            assert time.monotonic() < end, "no worker started the evaluation"
            time.sleep(0.05)
        _wait_for_a_run(pids[busy[0]])
        os.kill(pids[busy[0]], signal.SIGSTOP)
        if frozen_s is not None:
            time.sleep(frozen_s)
            os.kill(pids[busy[0]], signal.SIGCONT)
        thread.join(timeout=180)
        assert not thread.is_alive(), "the evaluation hung on a frozen worker"
    finally:
        for pid in pids.values():
            os.kill(pid, signal.SIGCONT)
        ex.shutdown(cancel_futures=True)
    return box["fit"], notices


def _wait_for_a_run(worker_pid: int, limit_s: float = 60.0) -> None:
    """Until the worker's sandbox host has forked a run (its processes below the host), then a little more."""
    import psutil  # a dependency of distributed

    end = time.monotonic() + limit_s
    while len(psutil.Process(worker_pid).children(recursive=True)) < 2:
        assert time.monotonic() < end, "the sandbox host started no run"
        time.sleep(0.05)
    time.sleep(1.0)  # the oracle is answering


@pytest.fixture
def two_workers(tmp_path):
    c = Cluster(tmp_path)
    c.add_worker()
    c.add_worker()
    yield c
    c.close()


def test_a_worker_frozen_mid_run_changes_no_score(two_workers, conv_task, local_slow):
    """Frozen longer than the run's time limit: the time its evaluator stood still is not the run's."""
    fit, _ = _evaluate_while_freezing(two_workers, conv_task, frozen_s=_sandbox().timeout_s + 4)
    _same_scores(local_slow, fit)


def test_a_worker_frozen_for_good_loses_its_job_to_another(two_workers, conv_task, local_slow):
    fit, notices = _evaluate_while_freezing(two_workers, conv_task, frozen_s=None)
    _same_scores(local_slow, fit)
    assert any("made no progress" in n and "moved to another worker" in n for n in notices), notices


def test_a_scheduler_killed_mid_run_is_one_line_and_resumable(cluster, tmp_path):
    cluster.add_worker()
    run_dir = tmp_path / "run"
    # a budget the run cannot spend before the kill (with the quickstart's 4 it could finish first and exit 0)
    proc = _tunesmith(run_dir, "--executor", cluster.url, "--worker-wait", "120", "--budget", "40")
    end = time.monotonic() + 120
    while not (run_dir / "candidates.jsonl").exists() or not (run_dir / "candidates.jsonl").read_text().strip():
        assert proc.poll() is None and time.monotonic() < end, proc.err_path.read_text()[-2000:]
        time.sleep(0.2)
    os.killpg(cluster.scheduler.pid, signal.SIGKILL)
    rc, err, _ = _finish(proc, 120)
    assert rc != 0
    assert "Traceback" not in err, err[-3000:]
    assert err.count("tunesmith: error:") == 1, err[-3000:]
    assert f"to continue: tunesmith resume {run_dir}" in err


def _scores(run_dir: Path) -> dict:
    from generator.archive import Archive

    return {
        c.id: (c.score, c.error and c.error.get("kind") if isinstance(c.error, dict) else c.error)
        for c in Archive.open(run_dir).candidates()
    }


def test_a_campaign_with_a_frozen_worker_scores_as_the_local_one(two_workers, tmp_path):
    """The quickstart (4 candidates) on 2 workers, one frozen for 15 s mid-run: every score as local."""
    local = tmp_path / "local"
    rc, err, _ = _finish(_tunesmith(local, "--executor", "local"), 300)
    assert rc == 0, err[-2000:]
    run_dir = tmp_path / "dask"
    proc = _tunesmith(run_dir, "--executor", two_workers.url)
    worker = two_workers.workers[0]
    _wait_for_a_run(worker.pid, limit_s=240)
    os.kill(worker.pid, signal.SIGSTOP)
    time.sleep(15)  # longer than the quickstart's 10 s per-run limit
    os.kill(worker.pid, signal.SIGCONT)
    rc, err, _ = _finish(proc, 300)
    assert rc == 0, err[-2000:]
    assert _scores(run_dir) == _scores(local)
