"""Where sandbox jobs run, picked by a URL as Optuna picks storage: local processes now, Dask later.

`get_executor(url, workers)` returns a `concurrent.futures.Executor`. Each job it runs is one
call of `generator.sandbox.run_job`, which itself starts an isolated sandbox host process and
waits on it, so the local executor is a thread pool: threads only shuttle oracle answers, the
candidates run in their own processes (one per run, at most `workers` at a time).
"""

from __future__ import annotations

import os
from concurrent.futures import Executor, ThreadPoolExecutor

from generator.errors import TunesmithError

LOCAL_SCHEMES = (None, "", "local")


def default_workers() -> int:
    """Number of CPU cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def get_executor(
    url: str | None = None, workers: int | None = 1, *, worker_wait_s: float = 300.0, notice=None
) -> Executor:
    """An executor for sandbox jobs: `None`/`"local"` (threads), `dask-local` or `dask://HOST:PORT`.

    Dask only: `worker_wait_s` bounds the wait for a worker, `notice(message)` hears that the run waits."""
    n = default_workers() if not workers or workers < 1 else int(workers)
    scheme = url.split("://", 1)[0] if url and "://" in url else url
    if scheme in LOCAL_SCHEMES:
        return ThreadPoolExecutor(max_workers=n, thread_name_prefix="tunesmith-sandbox")
    from generator.evaluation.dask_executor import dask_executor, is_dask_url  # Dask is imported only when used

    if is_dask_url(url):
        return dask_executor(url, n, worker_wait_s=worker_wait_s, notice=notice)
    raise TunesmithError(f"executor {url!r}: unknown kind; use 'local', 'dask-local' or 'dask://HOST:PORT'")
