"""The objective oracle: answers one configuration at a time from a task's answer key.

It follows Kernel Tuner 1.5.0's `CostFunc` as an `OptAlg` sees it (no snapping, no scaling) in
simulation mode, on a deterministic simulated clock:

- a configuration that fails the restrictions (or has a value outside `tune_params`) returns
  `sys.float_info.max`; it costs nothing and is not recorded (Kernel Tuner's InvalidConfig);
- a valid configuration seen for the first time is charged its `eval_seconds` and counts as one
  unique evaluation; a failed one (compile/runtime failure in the cache) returns
  `sys.float_info.max` but is charged and counted all the same;
- a revisit returns the same value for free (Kernel Tuner's budget ignores revisits; only real
  time would count there, and the simulated clock has none);
- the budget is checked before every call and again after recording it: the evaluation that
  crosses the limit is recorded and then `StopCriterionReached` is raised, as in `CostFunc`;
- a time budget is exceeded when spent > seconds, a fevals budget when unique evaluations >= max.
"""

from __future__ import annotations

import sys

import numpy as np
from kernel_tuner.util import StopCriterionReached

from generator.scoring.score import Budget, Trace
from generator.tasks.cache import Task
from generator.tasks.space import SearchSpace

__all__ = ["Oracle", "RunEnded", "StopCriterionReached"]


class RunEnded(BaseException):
    """Raised instead of a second StopCriterionReached where `Oracle.end_ignored_stop` is set: the
    optimizer caught the stop and called func again. A BaseException, so that `except Exception`
    and `except StopCriterionReached` do not swallow it; the runner catches it (the run is over)."""


class Oracle:
    """The cost function handed to an optimizer: value to minimise, budget, trace."""

    def __init__(self, task: Task, budget: Budget, space: SearchSpace | None = None):
        self.task = task
        self.budget = budget
        self.space = space if space is not None else SearchSpace(task.space)
        sign = -1.0 if task.objective.higher_is_better else 1.0
        key = task.key
        # cost per valid row: objective (negated when higher is better), float max where it failed
        self._cost = np.where(key.failed | np.isnan(key.values), sys.float_info.max, sign * key.values)
        self._seconds = np.asarray(key.eval_seconds, dtype=float)
        self._seen: set[int] = set()
        self._rows: list[int] = []
        self.spent_seconds = 0.0
        self.calls = 0  # every call, revisits and invalid configurations included
        self.invalid_calls = 0
        self.budget_spent_fraction = 0.0
        self.end_ignored_stop = False  # set by in-process runs of optimizer classes (generator.runner)
        self._stop_raised = False

    # --- Kernel Tuner's CostFunc surface -------------------------------------------------
    def __call__(self, config, check_restrictions: bool = True) -> float:
        """Cost of `config` (lower is better); raises StopCriterionReached when the budget is spent."""
        return self.call_row(self.space.row_of(tuple(config)))

    def call_row(self, row: int | None) -> float:
        """`__call__` for a configuration given by its row (None = not in the space); the sandbox
        sends rows, so the evaluating process skips the config -> row lookup."""
        self._raise_if_done()
        self.calls += 1
        if row is None:
            self.invalid_calls += 1
            return sys.float_info.max
        if self.record(row):
            self._raise_if_done()
        return float(self._cost[row])

    def record(self, row: int) -> bool:
        """Charge the first evaluation of valid `row` (True); a revisit is free (False). Never raises."""
        if row in self._seen:
            return False
        self._seen.add(row)
        self._rows.append(row)
        self.spent_seconds += float(self._seconds[row])
        self.budget_spent_fraction = self._fraction()
        return True

    def eval(self, config, check_restrictions: bool = True) -> float:
        return self(config, check_restrictions)

    def eval_all(self, configs, check_restrictions: bool = True) -> list[float]:
        """Costs of several configurations (stops with the exception like CostFunc does)."""
        return [self(c, check_restrictions) for c in configs]

    # --- bookkeeping ---------------------------------------------------------------------
    @property
    def fevals(self) -> int:
        """Unique valid configurations evaluated so far."""
        return len(self._rows)

    def is_done(self) -> bool:
        """True when the budget is spent (the next call would raise)."""
        b = self.budget
        if b.max_fevals is not None and len(self._rows) >= b.max_fevals:
            return True
        return b.seconds is not None and self.spent_seconds > b.seconds

    def _raise_if_done(self) -> None:
        b = self.budget
        if b.max_fevals is not None and len(self._rows) >= b.max_fevals:
            self._stop(f"max_fevals ({b.max_fevals}) reached")
        if b.seconds is not None and self.spent_seconds > b.seconds:
            self._stop("time limit exceeded")

    def _stop(self, why: str) -> None:
        if self._stop_raised and self.end_ignored_stop:
            raise RunEnded("the optimizer called func again after StopCriterionReached; the budget is spent")
        self._stop_raised = True
        raise StopCriterionReached(why)

    def _fraction(self) -> float:
        b = self.budget
        f = 0.0
        if b.max_fevals:
            f = max(f, len(self._rows) / b.max_fevals)
        if b.seconds:
            f = max(f, self.spent_seconds / b.seconds)
        return min(1.0, f)

    def best(self) -> tuple[tuple | None, float]:
        """Best configuration found so far and its cost (None, float max if none is valid)."""
        if not self._rows:
            return None, sys.float_info.max
        rows = np.asarray(self._rows)
        i = int(rows[np.argmin(self._cost[rows])])
        return self.space.config_of(i), float(self._cost[i])

    def trace(self) -> Trace:
        """The run so far: rows evaluated newly, in order, and their simulated seconds."""
        rows = np.asarray(self._rows, dtype=np.int64)
        return Trace(rows, self._seconds[rows], self.calls)
