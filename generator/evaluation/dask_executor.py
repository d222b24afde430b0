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

from generator.config import DASK_LOCAL, REMOTE_SCHEMES, url_problem  # noqa: F401  (the URL grammar)
from generator.errors import TunesmithError



class WorkerLost(RuntimeError):
    """Dask gave up on a task: the workers that ran it kept dying (its `KilledWorker`)."""


def is_dask_url(url: str | None) -> bool:
    """True for the executor URLs this module serves."""
    return bool(url) and (url == DASK_LOCAL or url.split("://", 1)[0] in REMOTE_SCHEMES)


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


class DaskExecutor(cf.Executor):
    """A `concurrent.futures.Executor` whose calls are Dask tasks on a cluster's workers."""

    def __init__(self, client, cluster=None, retries: int = 1, url: str = DASK_LOCAL):
        self.client, self.cluster, self.retries, self.url = client, cluster, int(retries), url
        self._inflight: set = set()
        self._lock = threading.Lock()
        self._closed = False

    @property
    def slots(self) -> int:
        """Tasks the cluster runs at once (threads over all workers); chunk an evaluation into this many."""
        return max(1, sum(self.client.nthreads().values()))

    def submit(self, fn, /, *args, **kwargs) -> cf.Future:
        """Run fn(*args, **kwargs) as a Dask task; a sandbox job asks for a GPU when it needs one."""
        if self._closed:
            raise RuntimeError("cannot submit to a DaskExecutor after shutdown")
        resources = job_resources(args[0]) if args else None
        if resources:
            self._require_resources(resources)
        # pure=False: every call is a new task (no key deduplication, no hashing of the tasks' arrays).
        dfut = self.client.submit(fn, *args, pure=False, retries=self.retries, resources=resources, **kwargs)
        with self._lock:
            self._inflight.add(dfut)
        return self._bridge(dfut)

    def _bridge(self, dfut) -> cf.Future:
        """A concurrent.futures.Future that follows the Dask future (so cf.wait / cancel work)."""
        cfut: cf.Future = cf.Future()

        def on_cf_done(f):
            if f.cancelled():
                dfut.cancel()  # a running task finishes on its worker (its sandbox has its own timeout)

        def on_dask_done(f):
            with self._lock:
                self._inflight.discard(f)
            if not cfut.set_running_or_notify_cancel():
                return  # we cancelled it; the call above woke cf.wait() on it
            if f.status == "cancelled":  # not by us: the scheduler dropped it (restarted, lost, shut down)
                cfut.set_exception(TunesmithError(
                    f"executor {self.url!r}: the Dask cluster dropped an evaluation (scheduler restarted or "
                    f"gone); check the cluster, then continue the run with `tunesmith resume RUN_DIR`"))
                return
            try:
                cfut.set_result(f.result())
            except BaseException as exc:  # noqa: BLE001 - handed to the caller through the future
                cfut.set_exception(_translate(exc))

        cfut.add_done_callback(on_cf_done)
        dfut.add_done_callback(on_dask_done)
        return cfut

    def _require_resources(self, resources: dict) -> None:
        """Fail at once, with the fix, instead of queueing forever for a resource no worker has."""
        workers = self.client.scheduler_info(n_workers=-1).get("workers", {}).values()
        for name, amount in resources.items():
            if not any((w.get("resources") or {}).get(name, 0) >= amount for w in workers):
                raise TunesmithError(
                    f"executor {self.url!r}: a live task needs worker resource {name}={amount} and no worker "
                    f"offers it; start GPU workers with `dask worker SCHEDULER --resources {name}=1`")

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Wait for (or cancel) what is in flight, then close the client and any cluster we started."""
        if self._closed:
            return
        self._closed = True
        with self._lock:
            inflight = list(self._inflight)
        if cancel_futures or not wait:
            self.client.cancel(inflight)
        elif inflight:
            from distributed import wait as dask_wait

            dask_wait(inflight)
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


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
        options = {"nthreads": 1, "host": "127.0.0.1", "silence_logs": logging.ERROR}
        if i < gpus:  # one GPU per worker: CUDA sees only its own device
            options.update(resources={"GPU": 1}, env={"CUDA_VISIBLE_DEVICES": str(i)})
        spec[f"tunesmith-{i}"] = {"cls": Nanny, "options": options}
    # the HTTP endpoints on a free port of this host only: no clash with a dashboard the user runs
    scheduler = {"cls": Scheduler, "options": {"host": "127.0.0.1", "dashboard_address": "127.0.0.1:0"}}
    return SpecCluster(workers=spec, scheduler=scheduler, silence_logs=logging.ERROR, name="tunesmith")


def dask_executor(url: str, workers: int, retries: int = 1, gpus: int | None = None,
                  connect_timeout_s: float = 20.0) -> DaskExecutor:
    """`dask-local`: start a cluster of `workers` processes here; `dask://HOST:PORT`: connect to a scheduler."""
    try:
        from distributed import Client
    except ImportError as exc:
        raise TunesmithError(f"executor {url!r} needs Dask; install it with `pip install 'tunesmith[dask]'` "
                             f"(or dask[distributed]) or use executor = 'local'") from exc
    if url == DASK_LOCAL:
        cluster = local_cluster(workers, gpus)
        return DaskExecutor(Client(cluster), cluster, retries, url)
    address = scheduler_address(url)
    try:
        client = Client(address, timeout=f"{connect_timeout_s}s")
    except OSError as exc:
        raise TunesmithError(f"executor {url!r}: no Dask scheduler answers at {address} ({exc}); start one "
                             f"(`dask scheduler`, or dask-jobqueue's SLURMCluster) or fix the address") from exc
    return DaskExecutor(client, None, retries, url)
