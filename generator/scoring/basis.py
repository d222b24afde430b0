"""The task's side of the score P (autotuning_methodology's SearchspaceStatistics and baseline): the
cutoffs, the time range and the calculated random-search curve, computed once per task from its answer
key. `scoring.score` fits a strategy's curve against it; nothing here depends on a strategy's runs.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass, field

import numpy as np

from generator.tasks.cache import Task

CUTOFF_START = 0.01  # statistics_settings.cutoff_percentile_start
CUTOFF_END = 0.95  # statistics_settings.cutoff_percentile
CUTOFF_MARGIN = 0.1  # the package gives every run 10% more time than it scores
RESOLUTION = 1000  # visualization_settings.resolution: points of the time range


@dataclass(frozen=True, eq=False)
class ScoreBasis:
    """Everything about a task the score needs, computed once (SearchspaceStatistics + baseline)."""

    dist: np.ndarray  # valid objective values, ascending
    minimization: bool
    optimum: float
    median: float
    time_per_feval: float  # mean_per_feval: mean valid time + invalid fraction * mean invalid time
    time_median: float  # median T4 time of all configurations
    fevals_start: int
    fevals_end: int
    t_start: float
    t_end: float
    time_range: np.ndarray = field(repr=False)
    baseline_time: np.ndarray = field(repr=False)  # random-search curve over time_range
    fevals_range: np.ndarray = field(repr=False)
    baseline_fevals: np.ndarray = field(repr=False)  # random-search curve over fevals_range


_BASIS_CACHE: weakref.WeakKeyDictionary[Task, ScoreBasis] = weakref.WeakKeyDictionary()


def score_basis(task: Task) -> ScoreBasis:
    """The task's score basis (cached per Task object)."""
    basis = _BASIS_CACHE.get(task)
    if basis is None:
        basis = _build_basis(task)
        _BASIS_CACHE[task] = basis
    return basis


def _build_basis(task: Task) -> ScoreBasis:
    key = task.key
    values = np.asarray(key.values, dtype=float)
    times = np.asarray(key.baseline_seconds if key.baseline_seconds is not None else key.eval_seconds, dtype=float)
    invalid = np.isnan(values)
    dist = np.sort(values[~invalid])
    if dist.size < 2:
        raise ValueError(f"task {task.name}: fewer than two valid objective values; cannot score")
    minimization = not task.objective.higher_is_better
    optimum = float(dist[0] if minimization else dist[-1])
    median = float(np.median(dist))
    valid_times = times[~np.isnan(times)]
    time_median = float(np.median(valid_times))
    if invalid.any():
        tpf = float(np.mean(times[~invalid]) + invalid.sum() / times.size * np.mean(times[invalid]))
    else:
        tpf = float(np.mean(valid_times))
    fs, fe = _cutoff_fevals_start_end(dist, minimization, optimum, median)
    t_start = fs * time_median if CUTOFF_START > 0 else 0.0
    t_end = fe * time_median
    time_range = np.linspace(t_start, t_end, RESOLUTION)
    worst_first = dist[::-1] if minimization else dist
    baseline_time = _random_curve(_time_to_fevals(time_range, tpf), worst_first)
    fevals_range = np.arange(fs, fe + 1)
    baseline_fevals = _random_curve(fevals_range, worst_first)
    return ScoreBasis(
        dist,
        minimization,
        optimum,
        median,
        tpf,
        time_median,
        fs,
        fe,
        t_start,
        t_end,
        time_range,
        baseline_time,
        fevals_range,
        baseline_fevals,
    )


def _cutoff_point(dist, minimization, optimum, median, percentile) -> int:
    """Fevals random search needs to get `percentile` of the way from the median to the optimum."""
    worst_first = dist[::-1] if minimization else dist
    target = optimum + (median - optimum) * (1 - percentile)
    hits = np.flatnonzero(worst_first <= target) if minimization else np.flatnonzero(worst_first >= target)
    i = int(hits[0])
    if percentile != 1.0 and worst_first[i] == optimum:
        if i == 0:
            raise ValueError("the optimum is reached directly; the cutoff is undefined")
        i -= 1
    n = worst_first.size
    return math.ceil(i / (n + 1 - i))


def _cutoff_fevals_start_end(dist, minimization, optimum, median) -> tuple[int, int]:
    start = _cutoff_point(dist, minimization, optimum, median, CUTOFF_START)
    end = _cutoff_point(dist, minimization, optimum, median, CUTOFF_END)
    if end - start < 2:  # the package's safety margin, verbatim
        full = _cutoff_point(dist, minimization, optimum, median, 1.0)
        if start == 0:
            end = min(full, end + 2)
        else:
            end = min(full, end + 1)
            start -= 1
    if end == start:
        raise ValueError("cutoff start and end are the same")
    return start, end


def _time_to_fevals(time_range: np.ndarray, time_per_feval: float) -> np.ndarray:
    return np.array(np.round(np.maximum(time_range / time_per_feval, 1)), dtype=int)


def _random_curve(fevals_range: np.ndarray, worst_first: np.ndarray) -> np.ndarray:
    """Expected best of random search without replacement after k draws (smoothed with PCHIP)."""
    n = worst_first.shape[0]
    # Python's round (half to even) on purpose: the package uses it
    draws = np.array([worst_first[min(n - 1, round(int(k) * (n + 1) / (int(k) + 1)))] for k in fevals_range])
    if len(fevals_range) <= 2:
        return draws
    first = np.concatenate([[True], np.ediff1d(fevals_range) > 0])
    x, y = fevals_range[first], draws[first]
    if len(x) < 2:
        return draws
    from scipy.interpolate import PchipInterpolator

    smooth_x = np.linspace(fevals_range[0], fevals_range[-1], len(fevals_range))
    return PchipInterpolator(x, y)(smooth_x)
