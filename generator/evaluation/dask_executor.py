"""Evaluations as Dask tasks: `dask-local` (a cluster on this machine) or `dask://HOST:PORT` (a running one).

Each sandbox job (one candidate, a chunk of its task x repeat runs: `generator.sandbox.run_job`) is
one Dask task. The Dask worker is just another parent for the sandbox: the candidate still runs in
its own isolated child process, the oracle and the answer key in the worker. A task's result is the
same `JobOutcome` the local executor returns, and run seeds depend only on (seed, task, repeat), so
scores do not depend on where a run ran.

Failures: a task that raises is retried (`retries`); a task whose worker dies is rescheduled by
the scheduler, and one that has killed `allowed-failures` workers (Dask's setting, default 3) comes
back as `WorkerLost`, which the evaluation records as a failed candidate of kind "killed". Results
only come back through the future, so a run that was rescheduled is counted once.

GPU: jobs with live GPU tasks ask for the worker resource `GPU: 1`, so a worker that advertises one
GPU (`dask worker --resources GPU=1`) runs one such evaluation at a time.

Dask is an optional dependency (`pip install tunesmith[dask]`); it is imported only when used.
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import os
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field

from generator import registry
from generator.config import executor_name, url_problem
from generator.errors import TunesmithError


class WorkerLost(RuntimeError):
    """Dask gave up on a task: the workers that ran it kept dying (its `KilledWorker`)."""


DASK_LOCAL = "dask-local"  # the registry's name of LOCAL_CLUSTER: a cluster started here


def is_dask_url(url: str | None) -> bool:
    """True for the executor URLs this module serves (the registry entries whose target is here)."""
    target = registry.TABLES["executor"].get(executor_name(url), "")
    return bool(url) and target.startswith(f"{__name__}:")


def checked_url(url: str, where: str = "--executor") -> str:
    """The URL if it is a valid executor URL, else a one-line TunesmithError naming `where`."""
    problem = url_problem(url)
    if problem:
        raise TunesmithError(f"{where}: {problem}")
    return url


def scheduler_address(url: str) -> str:
    """The Dask address of `dask://HOST:PORT` (tcp://HOST:PORT); tcp:// and tls:// pass through."""
    problem = url_problem(url)
    if problem or url == DASK_LOCAL:
        raise TunesmithError(problem or "dask-local has no address; it starts its own cluster")
    scheme, rest = url.split("://", 1)
    return f"{'tcp' if scheme == 'dask' else scheme}://{rest.rstrip('/')}"


def gpu_count() -> int:
    """GPUs this machine offers to a local cluster (CUDA_VISIBLE_DEVICES, else nvidia-smi; 0 if none)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len([d for d in visible.split(",") if d.strip() and d.strip() != "-1"])
    if shutil.which("nvidia-smi") is None:
        return 0
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


def needs_gpu(task) -> bool:
    """A live task on a GPU (not a cached one, not the C backend) needs a worker's GPU."""
    problem = getattr(task, "problem", None)  # a generator.live.tasks.LiveTask
    if problem is not None:
        return str(getattr(problem, "lang", "CUDA")).upper() != "C"
    info = getattr(task, "info", None) or {}
    return bool(info.get("live")) and str(info.get("lang", "CUDA")).upper() != "C"


def job_resources(job) -> dict | None:
    """Dask resources of a sandbox job: one GPU when it runs a live GPU task."""
    used = {r[0] for r in getattr(job, "runs", ())}
    tasks = getattr(job, "tasks", ())
    return {"GPU": 1} if any(needs_gpu(tasks[i]) for i in used) else None


POLL_S = 1.0  # how often the watchdog asks the scheduler about workers and running tasks
RPC_TIMEOUT_S = 10.0  # one question to the scheduler; a frozen or gone scheduler never blocks us longer
CLOSE_TIMEOUT_S = 10.0  # closing the client / a local cluster
MAX_MOVES = 2  # a job moved off this many stalled workers fails as the infrastructure's fault


class ClusterStalled(TunesmithError):
    """The cluster could not run an evaluation (no workers, or it made no progress): not the candidate's fault."""


def job_deadline_s(job) -> float:
    """How long a running sandbox job may take at most: start-up, then per run its limit, stop grace, exit."""
    cfg = getattr(job, "config", None)
    if cfg is None:
        return float("inf")
    return float(cfg.startup_s) + len(getattr(job, "runs", ())) * (2 * float(cfg.timeout_s) + 10.0)


def _claim(fut: cf.Future) -> bool:
    """Take the caller's future to set its outcome; False when it was cancelled or another thread took it.

    A Dask callback (the result) and a failure of all calls (shutdown after Ctrl-C, a stall) can reach one
    future at once: the first makes it RUNNING, and the second must leave it, not raise RuntimeError
    (which in shutdown skipped closing the client and left the process hanging)."""
    try:
        return fut.set_running_or_notify_cancel()
    except RuntimeError:  # RUNNING or FINISHED: the other thread sets (or has set) its outcome
        return False


@dataclass
class _Call:
    """One submitted call: the caller's future follows the Dask future of its latest attempt."""

    cfut: cf.Future
    fn: object
    args: tuple
    kwargs: dict
    resources: dict | None
    dfut: object = None
    worker: str | None = None  # where it runs (first seen processing there)
    started: float | None = None
    moved_from: list = field(default_factory=list)


class DaskExecutor(cf.Executor):
    """A `concurrent.futures.Executor` whose calls are Dask tasks on a cluster's workers.

    A watchdog thread asks the scheduler every POLL_S: with no worker it says so (`notice`) and, after
    `worker_wait_s`, fails what waits as ClusterStalled; a job running on one worker past
    `job_deadline_s` (a frozen worker: Dask keeps it for minutes) is moved to another worker, or fails
    as ClusterStalled. Neither is ever scored or blamed on the candidate.
    """

    def __init__(
        self, client, cluster=None, retries: int = 1, url: str = DASK_LOCAL, worker_wait_s: float = 300.0, notice=None
    ):
        self.client, self.cluster, self.retries, self.url = client, cluster, int(retries), url
        self.worker_wait_s = float(worker_wait_s)
        self.notice = notice or (lambda message: None)
        self._calls: dict[str, _Call] = {}  # Dask key -> call
        self._lock = threading.Lock()
        self._closed = False
        self._stalled: ClusterStalled | None = None
        self._no_workers_since: float | None = None
        self._stop = threading.Event()
        self._watch = threading.Thread(target=self._watchdog, name="tunesmith-dask-watchdog", daemon=True)
        self._watch.start()

    @property
    def slots(self) -> int:
        """Tasks the cluster runs at once (threads over all workers); chunk an evaluation into this many."""
        try:
            return max(1, sum(self.client.nthreads(callback_timeout=RPC_TIMEOUT_S).values()))
        except Exception:  # noqa: BLE001 - the scheduler is slow or gone: the watchdog reports it
            return 1

    def submit(self, fn, /, *args, **kwargs) -> cf.Future:
        """Run fn(*args, **kwargs) as a Dask task; a sandbox job asks for a GPU when it needs one."""
        if self._closed:
            raise RuntimeError("cannot submit to a DaskExecutor after shutdown")
        if self._stalled is not None:
            raise self._stalled
        resources = job_resources(args[0]) if args else None
        if resources:
            self._require_resources(resources)
        call = _Call(cf.Future(), fn, args, kwargs, resources)
        call.cfut.add_done_callback(lambda f: f.cancelled() and call.dfut is not None and call.dfut.cancel())
        self._launch(call)
        return call.cfut

    def _launch(self, call: _Call, workers: list[str] | None = None) -> None:
        # pure=False: every call is a new task (no key deduplication, no hashing of the tasks' arrays).
        dfut = self.client.submit(
            call.fn,
            *call.args,
            pure=False,
            retries=self.retries,
            resources=call.resources,
            workers=workers,
            allow_other_workers=False,
            **call.kwargs,
        )
        with self._lock:
            call.dfut, call.worker, call.started = dfut, None, None
            self._calls[dfut.key] = call
        dfut.add_done_callback(lambda f: self._on_dask_done(call, f))

    def _on_dask_done(self, call: _Call, f) -> None:
        with self._lock:
            self._calls.pop(f.key, None)
            if call.dfut is not f:
                return  # an attempt we moved away from a stalled worker
            # Let go of the Dask future now: the caller's future and its call form a cycle that only the
            # garbage collector breaks, and until then the result stays in a worker's memory, which Dask
            # recomputes elsewhere when that worker dies (a finished evaluation run again for nothing).
            call.dfut = None
        if not _claim(call.cfut):
            return  # we cancelled it (the call above woke cf.wait() on it), or a failure took it first
        if f.status == "cancelled":  # not by us: the scheduler dropped it (restarted, lost, shut down)
            call.cfut.set_exception(
                ClusterStalled(
                    f"executor {self.url!r}: the Dask cluster dropped an evaluation (scheduler restarted or gone); "
                    "check the cluster, then continue the run"
                )
            )
            return
        try:
            call.cfut.set_result(f.result())
        except BaseException as exc:  # noqa: BLE001 - handed to the caller through the future
            call.cfut.set_exception(_translate(exc))

    # ------------------------------------------------------------------ the watchdog
    def _watchdog(self) -> None:
        while not self._stop.wait(POLL_S):
            try:
                self._check_workers()
                self._check_progress()
            except Exception:  # noqa: BLE001 - scheduler unreachable for a moment; Dask reports a real loss
                continue

    def _sync(self, method, **kwargs):
        return self.client.sync(method, callback_timeout=RPC_TIMEOUT_S, **kwargs)

    def _check_workers(self) -> None:
        n = len(self._sync(self.client.scheduler.ncores, workers=None))
        now = time.monotonic()
        if n:
            if self._no_workers_since is not None:
                self.notice(f"executor {self.url!r}: {n} Dask worker(s) joined; evaluations go on")
            self._no_workers_since = None
            return
        if self._no_workers_since is None:
            self._no_workers_since = now
            self.notice(
                f"executor {self.url!r}: waiting for Dask workers (none is connected to the scheduler); "
                f"giving up after {self.worker_wait_s:g} s ([evaluation] worker_wait / --worker-wait)"
            )
        elif now - self._no_workers_since > self.worker_wait_s:
            self._fail_all(
                ClusterStalled(
                    f"executor {self.url!r}: no Dask worker joined within {self.worker_wait_s:g} s; start workers "
                    "(`dask worker SCHEDULER`) or raise [evaluation] worker_wait, then continue the run"
                )
            )

    def _check_progress(self) -> None:
        processing = self._sync(self.client.scheduler.processing, workers=None)
        now = time.monotonic()
        where = {key: w for w, keys in processing.items() for key in keys}
        with self._lock:
            calls = list(self._calls.items())
        for key, call in calls:
            worker = where.get(key)
            if worker != call.worker:  # started (or restarted elsewhere by Dask): its clock starts now
                call.worker, call.started = worker, (now if worker else None)
            elif worker and now - call.started > job_deadline_s(call.args[0] if call.args else None):
                self._move(call, worker, sorted(set(processing) - {worker} - set(call.moved_from)), now - call.started)

    def _move(self, call: _Call, worker: str, others: list[str], waited: float) -> None:
        """A job made no progress on `worker`: run it again elsewhere (same seeds: the same result)."""
        call.moved_from.append(worker)
        old = call.dfut
        if not others or len(call.moved_from) > MAX_MOVES:
            error = ClusterStalled(
                f"executor {self.url!r}: an evaluation made no progress for {waited:.0f} s on "
                f"Dask worker {worker} (frozen or overloaded) and no other worker could take it; "
                "check the workers, then continue the run"
            )
            with self._lock:
                call.dfut = None
            old.cancel()
            if _claim(call.cfut):
                call.cfut.set_exception(error)
            return
        self.notice(
            f"executor {self.url!r}: an evaluation made no progress for {waited:.0f} s on Dask worker "
            f"{worker} (frozen?); moved to another worker"
        )
        self._launch(call, workers=others)
        old.cancel()

    def _fail_all(self, error: ClusterStalled) -> None:
        """Fail every waiting call (and later submits) with `error`."""
        self._stalled = error
        with self._lock:
            calls, self._calls = list(self._calls.values()), {}
        for call in calls:
            dfut, call.dfut = call.dfut, None
            if dfut is not None:
                dfut.cancel()
            if _claim(call.cfut):
                call.cfut.set_exception(error)

    def _require_resources(self, resources: dict) -> None:
        """Fail at once, with the fix, instead of queueing forever for a resource no worker has."""
        workers = self.client.scheduler_info(n_workers=-1).get("workers", {}).values()
        for name, amount in resources.items():
            if not any((w.get("resources") or {}).get(name, 0) >= amount for w in workers):
                raise TunesmithError(
                    f"executor {self.url!r}: a live task needs worker resource {name}={amount} and no worker "
                    f"offers it; start GPU workers with `dask worker SCHEDULER --resources {name}=1`"
                )

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False, timeout_s: float | None = None) -> None:
        """Wait (at most `timeout_s`, default the worker wait) for what is in flight, or cancel it; then close.

        Never blocks without bound: what is still in flight after the wait is cancelled, and every caller
        still waiting on a future is woken with ClusterStalled."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        with self._lock:
            inflight = [c.cfut for c in self._calls.values()]
        if wait and not cancel_futures and inflight:
            cf.wait(inflight, timeout=self.worker_wait_s if timeout_s is None else timeout_s)
        try:
            self._fail_all(
                ClusterStalled(
                    f"executor {self.url!r}: shut down while an evaluation was in flight; "
                    "continue the run to evaluate it again"
                )
            )
        finally:  # whatever happened above, the client's threads must not keep the process alive
            for close in (
                lambda: self.client.close(timeout=CLOSE_TIMEOUT_S),
                lambda: self.cluster is not None and self.cluster.close(timeout=CLOSE_TIMEOUT_S),
            ):
                try:
                    close()
                except Exception:  # noqa: BLE001 - a gone or frozen scheduler: nothing left to close cleanly
                    pass


def _translate(exc: BaseException) -> BaseException:
    from distributed.scheduler import KilledWorker

    if isinstance(exc, KilledWorker):
        return WorkerLost(f"the Dask workers running this evaluation died repeatedly ({exc})")
    return exc


def local_cluster(workers: int, gpus: int | None = None):
    """A Dask cluster of `workers` single-threaded worker processes here; the first `gpus` own one GPU each."""
    from distributed import Nanny, Scheduler, SpecCluster

    gpus = gpu_count() if gpus is None else gpus
    spec = {}
    for i in range(max(1, int(workers))):
        options = {
            "nthreads": 1,
            "host": "127.0.0.1",
            "silence_logs": logging.ERROR,
            "preload": ["generator.evaluation.dask_worker_setup"],
        }  # Ctrl-C: the campaign's, not theirs
        if i < gpus:  # one GPU per worker: CUDA sees only its own device
            options.update(resources={"GPU": 1}, env={"CUDA_VISIBLE_DEVICES": str(i)})
        spec[f"tunesmith-{i}"] = {"cls": Nanny, "options": options}
    # the HTTP endpoints on a free port of this host only: no clash with a dashboard the user runs
    scheduler = {"cls": Scheduler, "options": {"host": "127.0.0.1", "dashboard_address": "127.0.0.1:0"}}
    return SpecCluster(workers=spec, scheduler=scheduler, silence_logs=logging.ERROR, name="tunesmith")


def _quiet_dask_logs() -> None:
    """A scheduler that restarts or goes away makes Dask's client log tracebacks (tens of lines) while it
    reconnects; the evaluation fails with one line of ours (ClusterStalled) instead, so keep them quiet."""
    for name in (
        "distributed.client",
        "distributed.core",
        "distributed.comm",
        "distributed.batched",
        "distributed.utils",
        "tornado.application",
    ):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def dask_executor(
    url: str,
    workers: int,
    retries: int = 1,
    gpus: int | None = None,
    connect_timeout_s: float = 20.0,
    worker_wait_s: float = 300.0,
    notice=None,
) -> DaskExecutor:
    """`dask-local`: start a cluster of `workers` processes here; `dask://HOST:PORT`: connect to a scheduler."""
    try:
        from distributed import Client
    except ImportError as exc:
        raise TunesmithError(
            f"executor {url!r} needs Dask; install it with `pip install 'tunesmith[dask]'` "
            f"(or dask[distributed]) or use executor = 'local'"
        ) from exc
    from generator import parsing

    parsing.isolate()  # Dask's threads parse and compile in this process too: ours go to a child (gh-106905)
    _quiet_dask_logs()
    if url == DASK_LOCAL:
        cluster = local_cluster(workers, gpus)
        return DaskExecutor(Client(cluster), cluster, retries, url, worker_wait_s, notice)
    address = scheduler_address(url)
    try:
        client = Client(address, timeout=f"{connect_timeout_s}s")
    except OSError:
        raise TunesmithError(
            f"executor {url!r}: no Dask scheduler answered at {address} within "
            f"{connect_timeout_s:g} s; start one (`dask scheduler`, or dask-jobqueue's "
            "SLURMCluster) or fix the address"
        ) from None
    return DaskExecutor(client, None, retries, url, worker_wait_s, notice)


class _DaskFactory:
    """`dask-local` (a cluster of `workers` processes started here) or `dask://HOST:PORT` (a scheduler)."""

    def open(self, url: str | None, workers: int, *, worker_wait_s: float = 300.0, notice=None) -> DaskExecutor:
        return dask_executor(url, workers, worker_wait_s=worker_wait_s, notice=notice)


LOCAL_CLUSTER = _DaskFactory()
SCHEDULER = _DaskFactory()
