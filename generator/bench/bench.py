"""`tunesmith bench`: score strategies on tasks, R repeats each, in parallel over tasks x repeats.

Each run is one (strategy, task, repeat) with its own seed (from the base seed and the repeat
number, the same for every strategy and task, so strategies meet the same random streams). Runs go
to a pool of worker processes that inherit the loaded tasks and keep one fast SearchSpace per
task, so neighbour lists cached in one repeat serve the next. The parent scores the traces with
the methodology score P.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from generator.errors import TunesmithError
from generator.bench.runner import StrategyError, StrategySpec, require_runs_on, run_once
from generator.scoring.score import Budget, TaskScore, Trace, budget_for, score_traces
from generator.tasks.space import SearchSpace
from generator.tasks.cache import Task


@dataclass(frozen=True)
class StrategyResult:
    """One strategy's bench result: mean P over tasks, P per task, wall seconds."""

    label: str
    score: float
    per_task: dict[str, TaskScore]
    wall_s: float
    unique_evals: dict[str, float]  # mean unique evaluations per run, per task


def run_seed(seed: int, repeat: int) -> int:
    """The seed of one repeat: distinct per repeat, deterministic, not overlapping between base seeds."""
    return int(np.random.SeedSequence([int(seed), int(repeat)]).generate_state(1)[0])


# ------------------------------------------------------------------------ worker side

_TASKS: list[Task] = []
_SPACES: dict[int, SearchSpace] = {}
_MAX_FEVALS: int | None = None


def _init_worker(tasks: list[Task] | None, max_fevals: int | None) -> None:
    global _TASKS, _MAX_FEVALS
    if tasks is not None:  # spawned workers get them pickled; forked ones inherit them
        _TASKS = tasks
    _MAX_FEVALS = max_fevals
    _SPACES.clear()


def _job(spec: StrategySpec, task_index: int, repeat: int, seed: int) -> tuple:
    task = _TASKS[task_index]
    space = _SPACES.get(task_index)
    if space is None:
        space = _SPACES[task_index] = SearchSpace(task.space)
    budget = budget_for(task)
    if _MAX_FEVALS is not None:
        budget = Budget(budget.seconds, _MAX_FEVALS)
    start = time.perf_counter()
    try:
        trace = run_once(task, spec, seed, budget, space)
    except TunesmithError:
        raise
    except Exception as exc:  # noqa: BLE001 - a strategy's own bug: say where, keep it one line
        where = traceback.extract_tb(exc.__traceback__)[-1]
        raise StrategyError(f"strategy {spec.label} crashed on {task.name} (repeat {repeat}): "
                            f"{type(exc).__name__}: {exc} at {Path(where.filename).name}:{where.lineno}; "
                            "fix the strategy") from None
    # a live run keeps its Trace object (it carries the measured values); others cross as dicts
    out = trace if getattr(task, "oracle_class", None) is not None else trace.to_dict()
    return task_index, repeat, out, time.perf_counter() - start


# ------------------------------------------------------------------------ parent side


def bench(tasks: list[Task], specs: list[StrategySpec], repeats: int = 50, seed: int = 0,
          workers: int | None = None, progress: bool = True, max_fevals: int | None = None) -> list[StrategyResult]:
    """Run every strategy on every task `repeats` times and score it; strategies one after another."""
    if repeats < 1:
        raise TunesmithError(f"--repeats {repeats}: must be at least 1")
    workers = workers or _cpu_count()
    live = any(getattr(t, "oracle_class", None) is not None for t in tasks)
    if live:  # live tasks measure on this machine's device: one run at a time, in this process
        workers = 1
        for spec in specs:  # before anything runs: a strategy that cannot run live is a usage error
            for task in tasks:
                require_runs_on(spec, task)
    total = len(specs) * len(tasks) * repeats
    bar = _progress(total, progress)
    results = []
    pool = _pool(tasks, workers, max_fevals) if workers > 1 else None
    if pool is None:
        _init_worker(tasks, max_fevals)
    try:
        for spec in specs:
            bar.set_description(spec.label[-30:])
            start = time.perf_counter()
            traces = _run_strategy(pool, spec, len(tasks), repeats, seed, bar)
            per_task, evals = {}, {}
            for ti, task in enumerate(tasks):
                per_task[task.name] = _score(task, traces[ti], seed)
                evals[task.name] = float(np.mean([t.rows.size for t in traces[ti]]))
            mean = float(np.mean([s.score for s in per_task.values()]))
            results.append(StrategyResult(spec.label, mean, per_task, time.perf_counter() - start, evals))
    finally:
        bar.close()
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    return results


def _score(task: Task, traces: list[Trace], seed: int) -> TaskScore:
    """P; a live task without a measured cache is scored against live random search instead."""
    if getattr(task, "oracle_class", None) is not None:
        from generator.evaluation.live_eval import score_live

        return score_live(task, traces, seed)
    return score_traces(task, traces)


def _run_strategy(pool, spec, n_tasks, repeats, seed, bar) -> list[list[Trace]]:
    traces: list[list[Trace | None]] = [[None] * repeats for _ in range(n_tasks)]
    jobs = [(spec, ti, r, run_seed(seed, r)) for r in range(repeats) for ti in range(n_tasks)]
    if pool is None:
        done = (_job(*j) for j in jobs)
    else:
        done = (f.result() for f in as_completed([pool.submit(_job, *j) for j in jobs]))
    for ti, r, trace, _ in done:
        traces[ti][r] = trace if isinstance(trace, Trace) else Trace.from_dict(trace)
        bar.update(1)
    return traces


def _pool(tasks, workers, max_fevals) -> ProcessPoolExecutor:
    global _TASKS
    methods = mp.get_all_start_methods()
    if "fork" in methods:  # children inherit the loaded tasks instead of unpickling them
        _TASKS = tasks
        return ProcessPoolExecutor(workers, mp.get_context("fork"), initializer=_init_worker,
                                   initargs=(None, max_fevals))
    return ProcessPoolExecutor(workers, initializer=_init_worker, initargs=(tasks, max_fevals))


def _cpu_count() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def _progress(total: int, enabled: bool):
    from tqdm import tqdm

    return tqdm(total=total, unit="run", disable=not enabled, dynamic_ncols=True, leave=False)


# ------------------------------------------------------------------------ output


def results_json(results: list[StrategyResult], **meta) -> dict:
    """The JSON document of `--json`: {"results": {STRATEGY: {"score", "per_task", "wall_s"}}, ...meta}."""
    doc = {"results": {
        r.label: {"score": r.score, "wall_s": r.wall_s,
                  "per_task": {name: {"score": s.score, "std": s.std, "se": _finite(standard_error(s)),
                                      "error": s.error, "unique_evals": r.unique_evals[name]}
                               for name, s in r.per_task.items()}}
        for r in results}}
    doc.update(meta)
    return doc


def _finite(x: float) -> float | None:
    """JSON has no NaN: an undefined number (e.g. the standard error of one repeat) is null."""
    return x if np.isfinite(x) else None


def write_json(path, results: list[StrategyResult], **meta) -> None:
    """Write the `--json` document."""
    Path(path).write_text(json.dumps(results_json(results, **meta), indent=2) + "\n")


def standard_error(score: TaskScore) -> float:
    """Standard error of P over repeats: std of the single-repeat scores / sqrt(repeats).

    P itself comes from one curve fitted over all repeats, so this is an estimate; checked against
    20 seeds x 100 repeats of random search (hotspot H200, convolution A100) it is on the safe side
    (0.046 and 0.044 vs a between-seed spread of 0.038 and 0.028).
    """
    n = len(score.per_repeat)
    return float(score.std / np.sqrt(n)) if n > 1 else float("nan")


def mean_standard_error(result: StrategyResult) -> float:
    """Standard error of the mean over tasks (tasks are run independently: errors add in quadrature)."""
    ses = [standard_error(s) for s in result.per_task.values()]
    return float(np.sqrt(np.sum(np.square(ses))) / len(ses)) if ses else float("nan")


def table(results: list[StrategyResult], se: bool = False) -> str:
    """Rows: strategies; columns: tasks, mean P, wall seconds; `se` adds "± standard error" to each P."""
    if not results:
        return ""
    names = list(results[0].per_task)
    heads = [_short(n) for n in names]
    label_w = max(8, *(len(r.label) for r in results))
    cell_w = 15 if se else 7  # "-0.236 ± 0.062"
    widths = [max(cell_w, len(h)) for h in heads]
    lines = ["  ".join([f"{'strategy':<{label_w}}"] + [f"{h:>{w}}" for h, w in zip(heads, widths)]
                       + [f"{'mean':>{cell_w}}", f"{'wall s':>8}"])]

    def cell(p: float, err: float, w: int) -> str:
        return f"{f'{p:.3f} ± {err:.3f}' if se else f'{p:.3f}':>{w}}"

    for r in results:
        cells = [cell(r.per_task[n].score, standard_error(r.per_task[n]), w) for n, w in zip(names, widths)]
        lines.append("  ".join([f"{r.label:<{label_w}}"] + cells
                               + [cell(r.score, mean_standard_error(r), cell_w), f"{r.wall_s:>8.1f}"]))
    return "\n".join(lines)


def _short(name: str) -> str:
    """convolution_milo/A100 -> convolution/A100 (keeps the table narrow)."""
    app, _, gpu = name.partition("/")
    return f"{app.removesuffix('_milo')}/{gpu}" if gpu else app
