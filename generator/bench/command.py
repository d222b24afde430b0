"""`tunesmith bench`: score strategies on tasks, R repeats each, in parallel over tasks x repeats.

Each run is one (strategy, task, repeat) with its own seed (from the base seed and the repeat
number, the same for every strategy and task, so strategies meet the same random streams). Runs go
to a pool of worker processes that inherit the loaded tasks and keep one fast SearchSpace per
task, so neighbour lists cached in one repeat serve the next. The parent scores the traces with
the methodology score P.

A run that raises is that strategy's failure on that task (its other repeats there are cancelled),
never the benchmark's: the other tasks and strategies go on, and the result says where it failed.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool

import numpy as np

from generator.bench.crash import crash_message
from generator.bench.kt_simulation import plain_cache_folder, use_plain_cache_folder
from generator.bench.results import (
    StrategyResult,
)
from generator.bench.runner import StrategySpec, require_runs_on, run_once
from generator.errors import TunesmithError
from generator.scoring.score import Budget, TaskScore, Trace, budget_for, score_traces
from generator.tasks.cache import Task
from generator.tasks.space import SearchSpace


def run_seed(seed: int, repeat: int) -> int:
    """The seed of one repeat: distinct per repeat, deterministic, not overlapping between base seeds."""
    return int(np.random.SeedSequence([int(seed), int(repeat)]).generate_state(1)[0])


def select_tasks(tasks: list[Task], only: list[str] | None) -> list[Task]:
    """The tasks whose name contains one of `only` (all if none given), as `evaluate --task` selects."""
    if not only:
        return tasks
    kept = [t for t in tasks if any(o in t.name for o in only)]
    if not kept:
        raise TunesmithError(
            f"--task {' '.join(only)}: no task name matches; the names are "
            f"{', '.join(t.name for t in tasks[:6])}{', ...' if len(tasks) > 6 else ''}"
        )
    return kept


# ------------------------------------------------------------------------ worker side

_TASKS: list[Task] = []
_SPACES: dict[int, SearchSpace] = {}
_MAX_FEVALS: int | None = None


def _init_worker(
    tasks: list[Task] | None, max_fevals: int | None, cache_folder: str | None = None, in_pool: bool = False
) -> None:
    global _TASKS, _MAX_FEVALS
    if in_pool:  # Ctrl-C and `kill` are the parent's to handle: it saves what finished, then stops the workers
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if tasks is not None:  # spawned workers get them pickled; forked ones inherit them
        _TASKS = tasks
    _MAX_FEVALS = max_fevals
    _SPACES.clear()
    if cache_folder is not None:
        use_plain_cache_folder(cache_folder)


def _job(spec: StrategySpec, task_index: int, repeat: int, seed: int) -> tuple:
    """One run: (task index, repeat, trace or None, seconds, None or the one-line error that ended it)."""
    task = _TASKS[task_index]
    start = time.perf_counter()
    try:
        space = _SPACES.get(task_index)
        if space is None:
            space = _SPACES[task_index] = SearchSpace(task.space)
        budget = budget_for(task)
        if _MAX_FEVALS is not None:
            budget = Budget(budget.seconds, _MAX_FEVALS)
        trace = run_once(task, spec, seed, budget, space)
    except Exception as exc:  # noqa: BLE001 - recorded as this strategy's failure on this task
        return task_index, repeat, None, time.perf_counter() - start, crash_message(spec, task.name, repeat, exc)
    # a live run keeps its Trace object (it carries the measured values); others cross as dicts
    out = trace if getattr(task, "oracle_class", None) is not None else trace.to_dict()
    return task_index, repeat, out, time.perf_counter() - start, None


# ------------------------------------------------------------------------ parent side


def bench(
    tasks: list[Task],
    specs: list[StrategySpec],
    repeats: int = 50,
    seed: int = 0,
    workers: int | None = None,
    progress: bool = True,
    max_fevals: int | None = None,
    on_result: Callable[[StrategyResult], None] | None = None,
) -> list[StrategyResult]:
    """Run every strategy on every task `repeats` times and score it; strategies one after another.

    `on_result` gets each strategy's result as soon as it is scored (`tunesmith bench` writes its
    JSON there, so an interrupted benchmark keeps what it finished).
    """
    if repeats < 1:
        raise TunesmithError(f"--repeats {repeats}: must be at least 1")
    workers = workers or _cpu_count()
    live = any(getattr(t, "oracle_class", None) is not None for t in tasks)
    if live:  # live tasks measure on this machine's device: one run at a time, in this process
        workers = 1
        for spec in specs:  # before anything runs: a strategy that cannot run live is a usage error
            for task in tasks:
                require_runs_on(spec, task)
    bar = _progress(len(specs) * len(tasks) * repeats, progress)
    results = []
    with plain_cache_folder() as cache_folder:  # Kernel Tuner's cache copies: gone when this ends, however
        pool = None
        if workers == 1:
            _init_worker(tasks, max_fevals)
        try:
            for spec in specs:
                if pool is None and workers > 1:
                    pool = _pool(tasks, workers, max_fevals, cache_folder)
                bar.set_description(bar_label(spec.label))
                start = time.perf_counter()
                traces, failed, broken = _run_strategy(pool, spec, len(tasks), repeats, seed, bar)
                result = _result(spec, tasks, traces, failed, seed, time.perf_counter() - start)
                results.append(result)
                if on_result is not None:
                    on_result(result)
                if broken:  # a worker died (killed, or a crash of the interpreter): fresh ones for the next
                    pool.shutdown(cancel_futures=True)
                    pool = None
        except BaseException:
            if pool is not None:
                _stop_workers(pool)
            raise
        finally:
            bar.close()
            if pool is not None:
                pool.shutdown(cancel_futures=True)
    return results


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    """End the workers now: cancelling leaves the runs already queued to them, minutes of work on Ctrl-C.

    They hold nothing to save (the parent has every finished run), so they are killed; the
    executor has no public way to do it before Python 3.14 (`terminate_workers`).
    """
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        if process.is_alive():
            process.kill()


def _result(spec, tasks, traces, failed: dict[int, str], seed, wall_s) -> StrategyResult:
    """Score each task the strategy finished; a task it failed on keeps its error instead of a P."""
    per_task, evals, errors = {}, {}, {}
    for ti, task in enumerate(tasks):
        if ti in failed:
            errors[task.name] = failed[ti]
            continue
        try:
            per_task[task.name] = _score(task, traces[ti], seed)
        except TunesmithError as exc:
            errors[task.name] = f"scoring {spec.label} on {task.name} failed: {exc}"
            continue
        except Exception as exc:  # noqa: BLE001 - Tunesmith's scoring, not the strategy: keep the others
            errors[task.name] = (
                f"scoring {spec.label} on {task.name} failed: {type(exc).__name__}: {exc}; "
                "please report it (with this line) to Tunesmith"
            )
            continue
        evals[task.name] = float(np.mean([t.rows.size for t in traces[ti]]))
    mean = float(np.mean([s.score for s in per_task.values()])) if per_task and not errors else float("nan")
    return StrategyResult(spec.label, mean, per_task, wall_s, evals, errors)


def _score(task: Task, traces: list[Trace], seed: int) -> TaskScore:
    """P; a live task without a measured cache is scored against live random search instead."""
    if getattr(task, "oracle_class", None) is not None:
        from generator.live.scoring import score_live

        return score_live(task, traces, seed)
    return score_traces(task, traces)


def _run_strategy(pool, spec, n_tasks, repeats, seed, bar) -> tuple[list[list[Trace]], dict[int, str], bool]:
    """All runs of one strategy: traces per task and repeat, the first error per failed task, and
    whether the pool broke (a worker process died)."""
    traces: list[list[Trace | None]] = [[None] * repeats for _ in range(n_tasks)]
    failed: dict[int, str] = {}
    jobs = [(spec, ti, r, run_seed(seed, r)) for r in range(repeats) for ti in range(n_tasks)]

    def record(ti, r, trace, error) -> None:
        if error is not None:
            failed.setdefault(ti, error)
        elif ti not in failed:
            traces[ti][r] = trace if isinstance(trace, Trace) else Trace.from_dict(trace)
        bar.update(1)

    if pool is None:
        for job in jobs:
            if job[1] in failed:  # the task already failed: its other repeats would only repeat that
                bar.update(1)
                continue
            ti, r, trace, _, error = _job(*job)
            record(ti, r, trace, error)
        return traces, failed, False
    futures = {pool.submit(_job, *job): job for job in jobs}
    broken = False
    for future in as_completed(futures):
        _, ti, r, _ = futures[future]
        if future.cancelled():
            bar.update(1)
            continue
        try:
            ti, r, trace, _, error = future.result()
        except BrokenProcessPool:
            broken = True
            trace, error = (
                None,
                (
                    f"strategy {spec.label}: a worker process died during its runs (killed, out of "
                    "memory, or a crash of the interpreter); run it with --workers 1 to see the error"
                ),
            )
        record(ti, r, trace, error)
        if error is not None:
            for other, job in futures.items():
                if job[1] == ti:
                    other.cancel()
    return traces, failed, broken


def _pool(tasks, workers, max_fevals, cache_folder) -> ProcessPoolExecutor:
    global _TASKS
    methods = mp.get_all_start_methods()
    if "fork" in methods:  # children inherit the loaded tasks instead of unpickling them
        _TASKS = tasks
        return ProcessPoolExecutor(
            workers, mp.get_context("fork"), initializer=_init_worker, initargs=(None, max_fevals, cache_folder, True)
        )
    return ProcessPoolExecutor(workers, initializer=_init_worker, initargs=(tasks, max_fevals, cache_folder, True))


def _cpu_count() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def _progress(total: int, enabled: bool):
    from tqdm import tqdm

    # disable=None: drawn on a terminal only (in a log file every update would add a carriage-return line)
    return tqdm(total=total, unit="run", disable=(not enabled) or None, dynamic_ncols=True, leave=False)


def bar_label(label: str, width: int = 40) -> str:
    """A strategy's name on the bar: a file's name without its folders, cut at the end (the start names it)."""
    name = label.rstrip("/").rsplit("/", 1)[-1] if label.endswith(".py") else label
    return name if len(name) <= width else name[: width - 1] + "\u2026"
