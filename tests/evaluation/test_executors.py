"""Executors: URLs, Dask results identical to local ones, a worker killed mid-evaluation.

One Dask cluster of 2 worker processes (`dask-local`) serves the module; the kill tests run last
because they leave it with restarted workers.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from generator.config import url_problem
from generator.errors import TunesmithError

pytest.importorskip("distributed")

from generator.evaluation.dask_executor import (
    DaskExecutor,
    is_dask_url,
    job_resources,
    scheduler_address,
)

# Honest and slow on purpose: a 2 ms pause per call makes one run last ~1 s of wall time (the score
# uses the simulated clock, so the pause changes nothing else), long enough to kill a worker mid-run.
CANDIDATE = """
import time


class SlowSampler:
    hyperparameters = {"pause": {"type": "float", "low": 0.0, "high": 0.01, "default": 0.002}}

    def __init__(self, budget=5000, pause=0.002):
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
REPEATS = 4


# ---------------------------------------------------------------------------- URLs (no cluster)
@pytest.mark.parametrize(
    "url", ["local", "dask-local", "dask://scheduler:8786", "tcp://10.0.0.5:8786", "tls://[::1]:8786"]
)
def test_good_urls(url):
    assert url_problem(url) is None


@pytest.mark.parametrize(
    "url", ["dask", "dask://scheduler", "dask://:8786", "http://host:8786", "dask://h:99999", "dask-local://x"]
)
def test_bad_urls_say_what_to_use(url):
    problem = url_problem(url)
    assert problem is not None and url in problem
    assert "dask://HOST:PORT" in problem or "out of range" in problem


def test_scheduler_address():
    assert scheduler_address("dask://scheduler:8786") == "tcp://scheduler:8786"
    assert scheduler_address("tls://h:1") == "tls://h:1"
    assert is_dask_url("dask-local") and is_dask_url("dask://h:1") and not is_dask_url("local")
    with pytest.raises(TunesmithError, match="dask://HOST:PORT"):
        scheduler_address("dask://nope")


def test_unknown_executor_is_a_one_line_error():
    from generator.evaluation.executors import get_executor

    with pytest.raises(TunesmithError, match="dask-local"):
        get_executor("ray://head:10001", 2)


def test_no_scheduler_is_a_clear_error():
    from generator.evaluation.dask_executor import dask_executor

    with pytest.raises(TunesmithError, match="no Dask scheduler answered at .* within 1 s"):
        dask_executor("dask://127.0.0.1:9", 1, connect_timeout_s=1)  # port 9 (discard): nothing listens there


def test_live_gpu_jobs_ask_for_a_gpu(conv_task):
    from types import SimpleNamespace

    live = SimpleNamespace(info={"live": True, "lang": "CUDA"})
    c_live = SimpleNamespace(info={"live": True, "lang": "C"})
    assert job_resources(SimpleNamespace(tasks=[conv_task], runs=[(0, 0, 1)])) is None
    assert job_resources(SimpleNamespace(tasks=[conv_task, live], runs=[(1, 0, 1)])) == {"GPU": 1}
    assert job_resources(SimpleNamespace(tasks=[conv_task, live], runs=[(0, 0, 1)])) is None
    assert job_resources(SimpleNamespace(tasks=[c_live], runs=[(0, 0, 1)])) is None
    cuda_problem = SimpleNamespace(problem=SimpleNamespace(lang="CUDA"), info={})  # as generator.live.tasks.LiveTask
    c_problem = SimpleNamespace(problem=SimpleNamespace(lang="C"), info={})
    assert job_resources(SimpleNamespace(tasks=[cuda_problem], runs=[(0, 0, 1)])) == {"GPU": 1}
    assert job_resources(SimpleNamespace(tasks=[c_problem], runs=[(0, 0, 1)])) is None


# ---------------------------------------------------------------------------- on a cluster
@pytest.fixture(scope="module")
def dask_ex():
    from generator.evaluation.executors import get_executor

    ex = get_executor("dask-local", 2)
    assert isinstance(ex, DaskExecutor) and ex.slots == 2
    yield ex
    ex.shutdown(cancel_futures=True)


@pytest.fixture(scope="module")
def local_fitness(conv_task):
    from generator.evaluation.evaluate import evaluate_source

    fit = evaluate_source(CANDIDATE, [conv_task], repeats=REPEATS, seed=7, workers=2)
    assert fit.error is None, fit.error
    return fit


def _same_scores(a, b):
    assert a.error is None and b.error is None, (a.error, b.error)
    assert a.score == b.score
    for name, tf in a.per_task.items():
        assert (tf.per_repeat, tf.fevals, tf.unique) == (
            b.per_task[name].per_repeat,
            b.per_task[name].fevals,
            b.per_task[name].unique,
        )


def test_gpu_job_without_gpu_workers_fails_fast(dask_ex, conv_task):
    from types import SimpleNamespace

    live = SimpleNamespace(info={"live": True}, name="gemm/live")
    with pytest.raises(TunesmithError, match="GPU=1"):
        dask_ex.submit(len, SimpleNamespace(tasks=[live], runs=[(0, 0, 1)]))


def test_evaluation_dropped_by_the_cluster_is_a_clear_error(dask_ex):
    future = dask_ex.submit(time.sleep, 2)  # a worker cannot interrupt it: keep it short
    with dask_ex._lock:
        dropped = [call.dfut for call in dask_ex._calls.values()]
    dask_ex.client.cancel(dropped)  # as when the scheduler restarts or goes away
    # the campaign adds the real `tunesmith resume <run dir>` (tests/evaluation/test_cluster_stalls.py)
    with pytest.raises(TunesmithError, match="dropped an evaluation.*continue the run"):
        future.result(timeout=30)


def test_cancelled_evaluation_wakes_its_waiters(dask_ex):
    from concurrent.futures import wait

    future = dask_ex.submit(time.sleep, 2)  # a worker cannot interrupt it: keep it short
    assert future.cancel()
    done, pending = wait([future], timeout=30)
    assert future in done and not pending


def test_dask_scores_identical_to_local(dask_ex, conv_task, local_fitness):
    """Same seeds, same candidate: the Dask cluster's Fitness equals the local pool's, run for run."""
    from generator.evaluation.evaluate import evaluate_source

    fit = evaluate_source(CANDIDATE, [conv_task], repeats=REPEATS, seed=7, workers=1, executor=dask_ex)
    assert fit.metadata["workers"] == 2  # cut into one chunk per Dask worker, not `workers`
    _same_scores(local_fitness, fit)


def test_campaign_runs_unchanged_on_a_dask_cluster(dask_ex, conv_task, hub_dir, tmp_path, monkeypatch):
    """A campaign file whose one changed line is `executor` runs on the cluster; its scores are the local ones."""
    from generator.archive import Archive
    from generator.campaign.run import run_campaign
    from generator.evaluation.evaluate import evaluate_source

    monkeypatch.setenv("TUNESMITH_BENCHMARK_HUB", str(hub_dir))
    address = dask_ex.client.scheduler.address.replace("tcp://", "dask://")  # the module's running cluster
    path = tmp_path / "campaign.toml"
    path.write_text(f"""name = "on-a-cluster"
[llm]
model = "synth/components"
seed = 5
[evolution]
n_parents = 1
n_offspring = 1
budget = 1
seed = 5
[tasks]
train = ["hub:convolution_milo/A100"]
[evaluation]
repeats = 2
workers = 2
timeout = 30
executor = "{address}"
[output]
run_dir = "{tmp_path / "run"}"
""")
    assert run_campaign(path, progress=False).state == "finished"
    archive = Archive.open(tmp_path / "run")
    assert archive.config["evaluation"]["executor"] == address
    (cand,) = archive.candidates()
    assert cand.ok, cand.error
    local = evaluate_source(archive.code(cand), [conv_task], repeats=2, seed=5, timeout_s=30, workers=2)
    assert cand.score == local.score


def test_a_finished_evaluation_leaves_no_results_on_the_workers(dask_ex, conv_task):
    """Once an evaluation returns, the cluster holds none of its results: a worker that dies later has
    nothing of it for Dask to recompute (before, reference cycles kept them until a garbage collection)."""
    from generator.evaluation.evaluate import evaluate_source

    for _ in range(2):
        fit = evaluate_source(CANDIDATE, [conv_task], repeats=REPEATS, seed=7, workers=2, executor=dask_ex)
        assert fit.error is None, fit.error
    end = time.monotonic() + 10.0  # the release reaches the scheduler asynchronously
    while dask_ex.cluster.scheduler.tasks and time.monotonic() < end:
        time.sleep(0.1)
    assert not dask_ex.cluster.scheduler.tasks, list(dask_ex.cluster.scheduler.tasks)
    assert not any(dask_ex.client.has_what().values())


def _kill_a_busy_worker(ex: DaskExecutor, deadline_s: float = 60.0) -> tuple[str, int]:
    """SIGKILL the process of a Dask worker once it is running one of our tasks; return (address, pid).

    Only a task of the evaluation in flight counts (a key the executor still waits on): a worker busy
    with anything else (say, a result an earlier kill lost, being recomputed) is the wrong target."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        ours = set(ex._calls)
        busy = [addr for addr, keys in ex.client.processing().items() if ours.intersection(keys)]
        if busy:
            time.sleep(0.5)  # inside the evaluation: the sandbox host has started its runs
            pid = ex.client.run(os.getpid, workers=[busy[0]])[busy[0]]
            os.kill(pid, signal.SIGKILL)
            return busy[0], pid
        time.sleep(0.05)
    raise AssertionError("no Dask worker started the evaluation")


def _evaluate_while_killing(ex, task):
    from generator.evaluation.evaluate import evaluate_source

    box = {}
    thread = threading.Thread(
        target=lambda: box.update(
            fit=evaluate_source(CANDIDATE, [task], repeats=REPEATS, seed=7, workers=2, executor=ex)
        )
    )
    thread.start()
    killed = _kill_a_busy_worker(ex)
    thread.join(timeout=120)
    assert not thread.is_alive(), "evaluation hung after its worker was killed"
    return box["fit"], killed


def test_killed_worker_is_retried_and_counted_once(dask_ex, conv_task, local_fitness):
    """A worker dies mid-evaluation: the scheduler reruns its task; the result is complete, each run once."""
    fit, (addr, pid) = _evaluate_while_killing(dask_ex, conv_task)
    _same_scores(local_fitness, fit)  # complete and identical: no run lost, none counted twice
    assert len(fit.per_task[conv_task.name].per_repeat) == REPEATS
    pids = dask_ex.client.run(os.getpid)
    assert pid not in pids.values()  # the killed process is gone (its nanny started a new one)


def test_worker_deaths_beyond_allowed_failures_fail_as_killed(dask_ex, conv_task):
    """When the scheduler gives up on a task (KilledWorker), the candidate fails as 'killed', nothing raises."""
    scheduler = dask_ex.cluster.scheduler  # runs in this process: set Dask's allowed-failures to 0 for this test
    before, scheduler.allowed_failures = scheduler.allowed_failures, 0
    try:
        fit, _ = _evaluate_while_killing(dask_ex, conv_task)
    finally:
        scheduler.allowed_failures = before
    assert fit.score is None and fit.error is not None and fit.error.kind == "killed"
    assert "died" in fit.error.message


def test_failing_all_calls_leaves_a_future_another_thread_already_took():
    """Ctrl-C while waiting for workers: shutdown fails every call while a Dask callback may be setting one's
    result. The future it took (RUNNING) or finished is left to it; before, shutdown raised RuntimeError
    ('Future in unexpected state') and never closed the client, so the process hung."""
    import concurrent.futures as cf
    import threading

    from generator.evaluation.dask_executor import ClusterStalled, DaskExecutor, _Call

    executor = DaskExecutor.__new__(DaskExecutor)  # no cluster: only the bookkeeping is under test
    executor._lock = threading.Lock()
    taken, finished, waiting = cf.Future(), cf.Future(), cf.Future()
    taken.set_running_or_notify_cancel()  # a callback is about to set its result
    finished.set_result(1.0)
    executor._calls = {k: _Call(f, None, (), {}, None) for k, f in (("a", taken), ("b", finished), ("c", waiting))}
    executor._fail_all(ClusterStalled("shut down"))
    taken.set_result(2.0)  # the callback goes on undisturbed
    assert (taken.result(), finished.result()) == (2.0, 1.0)
    assert isinstance(waiting.exception(), ClusterStalled)
