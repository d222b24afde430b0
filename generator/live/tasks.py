"""Live tasks: a problem's kernel on this machine's device as a Task, the oracle that measures it,
and the loading of `live:` entries (`SOURCE`, the "live" task source of `generator.registry`).

The syntax of a `live:` reference is parsed in `generator.live.entries`; loading one needs the device.
A LiveTask is a `MeasuredTask` (`generator.tasks.sources`): the evaluation asks it for its oracle, how
to run a job of it and how to score it, without importing this room.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from generator.live.entries import PREFIX, LiveEntry, LiveEntryError, parse_live_entry, problem_spec
from generator.live.kernel import (
    LiveSession,
    device_key,
    device_label,
    device_lock,
    device_name,
    require_device,
    session_for,
)
from generator.scoring.oracle import Oracle
from generator.scoring.score import Budget, Trace
from generator.tasks.cache import AnswerKey, SpaceSpec, Task, valid_index_matrix
from generator.tasks.problems import Problem, load_problem, load_problem_tasks
from generator.tasks.space import SearchSpace


@dataclass(frozen=True, eq=False)
class LiveTask(Task):
    """A task tuned for real: the problem's kernel on a device; the key is its measured cache, if any."""

    problem: Problem | None = None
    device: int = 0
    cached: bool = False  # whether `key` holds a brute-force measurement of this space on this device
    # What one run may spend (evaluations and/or measured seconds); None: the methodology's budget
    # from the measured cache (`scoring.budget_for` returns this one when it is set).
    budget: Budget | None = None

    oracle_class = None  # set below: the sandbox asks the task which oracle answers it

    def make_oracle(self, budget: Budget, space: SearchSpace | None = None) -> Oracle:
        """The LiveOracle of one run (MeasuredTask): every new configuration measured on the device."""
        return LiveOracle(self, budget, space)

    def run_job(self, job):
        """Run a job with this task, holding each device it measures on for the whole job (MeasuredTask)."""
        return run_live_job(job)

    def score(self, traces: list, seed: int = 0):
        """P against the measured cache, or else the advantage over live random search (MeasuredTask)."""
        from generator.live.scoring import score_live

        return score_live(self, traces, seed)


def load_live_task(path, device: int = 0, gpu: str | None = None, budget: Budget | None = None) -> LiveTask:
    """A live task for a problem spec on this machine's device, keyed by the shipped cache of that GPU."""
    problem = load_problem(path)
    require_device(problem)
    label = gpu or device_label(device_name(problem, device))
    cached = [p for p in problem.cache_files() if p.name.split(".")[0] == label]
    if cached:
        base = load_problem_tasks(problem.path, gpus=[label])[0]
        return LiveTask(
            f"{problem.name}/{label}/live",
            base.space,
            base.key,
            base.objective,
            {**base.info, "live": True, "lang": problem.lang},
            base.source,
            problem,
            device,
            True,
            budget,
        )
    valid = valid_index_matrix(problem.path, problem.tune_params, problem.restrictions)
    n = len(valid)
    key = AnswerKey(np.full(n, np.nan), np.zeros(n, dtype=bool), np.zeros(n))
    info = {
        "application": problem.application_info(),
        "app": problem.name,
        "gpu": label,
        "live": True,
        "lang": problem.lang,
        "problem": str(problem.path),
    }
    return LiveTask(
        f"{problem.name}/{label}/live",
        SpaceSpec(problem.tune_params, problem.restrictions, valid),
        key,
        problem.objective,
        info,
        problem.path,
        problem,
        device,
        False,
        budget,
    )


class LiveOracle(Oracle):
    """The Oracle interface, answered by measuring each new configuration on the device."""

    def __init__(
        self, task: LiveTask, budget: Budget, space: SearchSpace | None = None, session: LiveSession | None = None
    ):
        super().__init__(task, budget, space)
        n = len(task.space.valid)
        self._cost = np.full(n, sys.float_info.max)  # filled in as configurations are measured
        self._seconds = np.zeros(n)
        self.values = np.full(n, np.nan)  # the live-measured objective per row (NaN: not measured or failed)
        self.session = session or session_for(task.problem, task.device)
        self._sign = -1.0 if task.objective.higher_is_better else 1.0

    def record(self, row: int) -> bool:
        """Measure valid `row` on first sight (charged its measured seconds); a revisit is free."""
        if row in self._seen:
            return False
        m = self.session.measure(self.space.config_of(row))
        self.values[row] = m.value
        self._seconds[row] = m.seconds
        if m.error is None:
            self._cost[row] = self._sign * m.value
        return super().record(row)

    def trace(self) -> LiveTrace:
        """The run so far, with the live-measured objective of each row (a task without a cache is
        scored from these)."""
        t = super().trace()
        return LiveTrace(t.rows, t.seconds, t.fevals, self.values[t.rows].copy())


@dataclass
class LiveTrace(Trace):
    """A Trace whose rows were measured live: `values` holds each row's objective (NaN: failed)."""

    values: np.ndarray | None = None


def run_live_job(job):
    """`sandbox.pool.run_job` for a job with live tasks: it holds each device it measures on for the whole
    job, so two jobs never interleave measurements on one device (threads or processes alike)."""
    from generator.sandbox import pool

    keys = sorted({device_key(t.problem, t.device) for t in live_tasks_of(job)})
    with contextlib.ExitStack() as stack:
        for key in keys:
            stack.enter_context(device_lock(key))
        return pool.run_job(job)


def live_tasks_of(job) -> list[LiveTask]:
    """The live tasks a sandbox job runs."""
    used = sorted({r[0] for r in job.runs})
    return [job.tasks[i] for i in used if isinstance(job.tasks[i], LiveTask)]


LiveTask.oracle_class = LiveOracle


def make_oracle(task: Task, budget: Budget, space: SearchSpace | None = None) -> Oracle:
    """The oracle that answers a task: measured live for a LiveTask, looked up otherwise."""
    cls = getattr(task, "oracle_class", None) or Oracle
    return cls(task, budget, space)


def resolve_entry(text: str, base: Path | None = None, check_device: bool = False) -> str:
    """The reference with its problem as an absolute problem.toml path (checked; with `check_device`,
    also that this machine can run the problem's kernel, so a run fails before it starts)."""
    entry = parse_live_entry(text)
    spec = problem_spec(entry.target, base)
    if check_device:
        require_device(load_problem(spec))
    return LiveEntry(str(spec), entry.fevals, entry.seconds, entry.device, entry.gpu).text()


def load_live_entry(text: str, base: Path | None = None) -> list:
    """The LiveTask a `live:` reference names (fails fast, with the fix, when the device is missing)."""
    entry = parse_live_entry(text)
    task = load_live_task(problem_spec(entry.target, base), device=entry.device, gpu=entry.gpu, budget=entry.budget())
    if task.budget is None and not task.cached:
        raise LiveEntryError(
            f"{text!r}: {task.problem.name} has no measured cache for {task.info['gpu']} to "
            f"derive a budget from; give one, e.g. {PREFIX}{entry.target},fevals=20 (or seconds=60)"
        )
    return [task]


class _LiveSource:
    """The `live:` task source (registry "task_source", name "live"): LiveTasks on this machine's device."""

    def load(self, entry: str, hub: Path | None = None, base: Path | None = None) -> list:
        return load_live_entry(entry, base)

    def resolve(self, entry: str, base: Path) -> str:
        return resolve_entry(entry, base, check_device=True)


SOURCE = _LiveSource()
