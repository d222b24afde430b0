"""Where sandbox jobs run, picked by a URL as Optuna picks storage: local processes, or a Dask cluster.

`get_executor(url, workers)` returns a `concurrent.futures.Executor`, made by the `ExecutorFactory` that
the registry (`generator.registry`, kind "executor") names for the URL. Each job it runs is one call of
`generator.sandbox.run_job`, which itself starts an isolated sandbox host process and waits on it, so the
local executor is a thread pool: threads only shuttle oracle answers, the candidates run in their own
processes (one per run, at most `workers` at a time).
"""

from __future__ import annotations

import os
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Protocol, runtime_checkable

from generator import registry
from generator.config import executor_choices, executor_name
from generator.errors import TunesmithError


@runtime_checkable
class ExecutorFactory(Protocol):
    """Makes the executor of one kind of URL (a registry "executor" entry: `local`, `dask-local`, `dask://`)."""

    def open(self, url: str | None, workers: int, *, worker_wait_s: float = 300.0, notice=None) -> Executor:
        """A running executor for `url` with `workers` slots. Called once when a campaign, `evaluate` or
        `hpo` starts running sandbox jobs; the caller shuts it down when it ends. A cluster executor may
        expose `slots` (the evaluation cuts a candidate's runs into that many jobs); `worker_wait_s` bounds
        the wait for a worker, `notice(message)` hears that the run waits. The URL is already checked
        (`generator.config.url_problem`)."""
        ...


def default_workers() -> int:
    """Number of CPU cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


class _Local:
    """`local`: a thread pool in this process; each thread waits on one sandbox host process."""

    def open(self, url: str | None, workers: int, *, worker_wait_s: float = 300.0, notice=None) -> Executor:
        return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tunesmith-sandbox")


LOCAL = _Local()


def get_executor(
    url: str | None = None, workers: int | None = 1, *, worker_wait_s: float = 300.0, notice=None
) -> Executor:
    """An executor for sandbox jobs: `None`/`"local"` (threads), `dask-local` or `dask://HOST:PORT`.

    Dask only: `worker_wait_s` bounds the wait for a worker, `notice(message)` hears that the run waits."""
    n = default_workers() if not workers or workers < 1 else int(workers)
    name = executor_name(url)
    if name not in registry.names("executor"):
        raise TunesmithError(f"executor {url!r}: unknown kind; use {executor_choices()}")
    return registry.load("executor", name).open(url, n, worker_wait_s=worker_wait_s, notice=notice)
