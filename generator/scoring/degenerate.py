"""Spaces where P explodes, found when a task loads; robust ways to aggregate P over tasks.

The methodology standardises a run against random search between two cutoffs: the time random
search needs to get 1% and 95% of the way from the median to the optimum. Where the optimum is a
lone outlier (only the single best configuration reaches the 95% target) or random search ends
within a hair of the optimum, the division by (optimum - random search) is tiny: random search
itself scores far below 0 there (-9.5 on such a space), and one such task decides the mean of a
campaign by itself. The per-task P stays the package's; these tasks get a warning, and a
campaign's fitness can aggregate tasks robustly (`[evaluation] aggregate`).
"""

from __future__ import annotations

import warnings

import numpy as np

from generator.scoring.basis import CUTOFF_END, score_basis
from generator.tasks.cache import Task
from generator.tasks.cache_sanity import TaskWarning

HAIR = 0.01  # random search ends within 1% of the median-to-optimum distance of the optimum
AGGREGATES = ("mean", "median", "iqm")


def degenerate_reason(task: Task) -> str | None:
    """Why P on this task is dominated by one configuration (None when it is not)."""
    try:
        basis = score_basis(task)
    except ValueError:
        return None  # a space the score refuses says so itself when scored
    spread = abs(basis.median - basis.optimum)
    if spread == 0:
        return None
    target = basis.optimum + (basis.median - basis.optimum) * (1 - CUTOFF_END)
    reach = np.count_nonzero(basis.dist <= target if basis.minimization else basis.dist >= target)
    if reach <= 1:
        return "only the single best configuration reaches the methodology's 95% cutoff"
    left = abs(float(basis.baseline_time[-1]) - basis.optimum) / spread
    if left < HAIR:
        return f"random search ends within {left:.2%} of the median-to-optimum distance from the optimum"
    return None


def warn_degenerate(tasks) -> list[str]:
    """Warn (a TaskWarning, once per task and process) about each task whose P one configuration decides."""
    named = []
    for task in tasks:
        why = degenerate_reason(task)
        if why is None:
            continue
        named.append(task.name)
        warnings.warn(
            TaskWarning(
                f"task {task.name}: {why}; P there is dominated by one configuration (random search can score "
                f"far below 0) and can decide a mean over tasks by itself: leave it out, or aggregate robustly "
                f'([evaluation] aggregate = "iqm" or "median")'
            ),
            stacklevel=2,
        )
    return named


def aggregate(scores, how: str = "mean") -> float:
    """P over tasks: the mean, the median, or the interquartile mean (the middle half, by scipy's trim_mean)."""
    values = np.asarray(list(scores), dtype=float)
    if values.size == 0:
        return float("nan")
    if how == "mean":
        return float(np.mean(values))
    if how == "median":
        return float(np.median(values))
    if how == "iqm":
        from scipy.stats import trim_mean

        return float(trim_mean(values, 0.25))
    raise ValueError(f"aggregate must be one of {AGGREGATES}, not {how!r}")


def aggregated(fitness, how: str):
    """The fitness with its score over tasks aggregated `how` (per-task scores as they are)."""
    if how == "mean" or getattr(fitness, "score", None) is None or not getattr(fitness, "per_task", None):
        return fitness
    fitness.score = aggregate((t.score for t in fitness.per_task.values()), how)
    fitness.metadata = {**fitness.metadata, "aggregate": how}
    return fitness
