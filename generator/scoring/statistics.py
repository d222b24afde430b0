"""Search-space characteristics shown to the LLM: size, constraints, failures, spread, ruggedness.

Every number is an aggregate over the whole space (no configuration or objective value of its
own), so it is safe to put in a prompt. Computed once per task and cached. It lives with scoring
because it includes the methodology's budget (`budget_for`).
"""

from __future__ import annotations

import weakref
from dataclasses import asdict, dataclass

import numpy as np

from generator.scoring.score import budget_for
from generator.tasks.cache import Task

# Above this many Cartesian cells the local-optima count is estimated from a sample of rows
# instead of a dense grid (the grid is exact but needs one float per cell).
DENSE_GRID_LIMIT = 5_000_000
SAMPLE_ROWS = 2000


@dataclass(frozen=True)
class SpaceStatistics:
    """Aggregates of one task's search space, in prompt order."""

    size: int  # valid configurations (after restrictions)
    cartesian_size: int
    constraint_density: float  # share of the Cartesian product that the restrictions remove
    n_params: int
    cardinality: str  # values per parameter, "name=n, ..."
    failed_fraction: float  # valid configurations that failed to compile or run
    objective_spread: float  # median objective / optimum (how much a typical pick loses; >= 1)
    worst_over_optimum: float  # worst working objective / optimum
    fdc: float  # fitness-distance correlation to the optimum (index distance); ~1 = easy, ~0 = needle
    local_optima_share: float  # share of working configurations with no better adjacent neighbour
    budget_fevals: int  # about this many evaluations fit in a run's time budget
    budget_seconds: float

    def lines(self) -> dict[str, str]:
        """`key -> value` strings for the prompt's `- key: value` lines."""
        out = {}
        for k, v in asdict(self).items():
            out[k] = f"{v:.4g}" if isinstance(v, float) else str(v)
        return out


_CACHE: weakref.WeakKeyDictionary[Task, SpaceStatistics] = weakref.WeakKeyDictionary()


def space_statistics(task: Task) -> SpaceStatistics:
    """The statistics of a task (cached per Task object)."""
    hit = _CACHE.get(task)
    if hit is None:
        hit = _compute(task)
        _CACHE[task] = hit
    return hit


def _minimised(task: Task) -> np.ndarray:
    """Objective values turned into 'lower is better', NaN where the configuration failed."""
    v = np.asarray(task.key.values, dtype=float)
    return -v if task.objective.higher_is_better else v


def _compute(task: Task) -> SpaceStatistics:
    spec = task.space
    cards = [len(v) for v in spec.tune_params.values()]
    size, cart = len(spec.valid), spec.cartesian_size
    v = _minimised(task)
    ok = np.isfinite(v)
    spread, worst = _spread(task, v[ok])
    seconds, fevals = _budget(task)
    return SpaceStatistics(
        size=size,
        cartesian_size=cart,
        constraint_density=1.0 - size / cart if cart else 0.0,
        n_params=len(cards),
        cardinality=", ".join(f"{n}={c}" for n, c in zip(spec.tune_params, cards)),
        failed_fraction=float(task.key.failed.mean()) if size else 0.0,
        objective_spread=spread,
        worst_over_optimum=worst,
        fdc=_fdc(spec.valid, v, cards),
        local_optima_share=_local_optima_share(spec.valid, v, cards),
        budget_fevals=fevals,
        budget_seconds=seconds,
    )


def _spread(task: Task, v: np.ndarray) -> tuple[float, float]:
    """Median and worst relative to the optimum, in the objective's own units (>= 1 means worse)."""
    if v.size == 0:
        return float("nan"), float("nan")
    raw = -v if task.objective.higher_is_better else v
    best = raw.max() if task.objective.higher_is_better else raw.min()
    worst = raw.min() if task.objective.higher_is_better else raw.max()
    med = float(np.median(raw))
    if best == 0:
        return float("nan"), float("nan")
    if task.objective.higher_is_better:
        return float(best / med) if med else float("inf"), float(best / worst) if worst else float("inf")
    return float(med / best), float(worst / best)


def _fdc(valid: np.ndarray, v: np.ndarray, cards: list[int]) -> float:
    """Correlation between objective and distance to the optimum, distance in normalised indices."""
    ok = np.isfinite(v)
    if ok.sum() < 3:
        return float("nan")
    scale = np.maximum(np.asarray(cards, dtype=float) - 1, 1)
    pos = valid[ok] / scale
    best = pos[np.argmin(v[ok])]
    dist = np.abs(pos - best).sum(axis=1)
    if dist.std() == 0 or v[ok].std() == 0:
        return float("nan")
    return float(np.corrcoef(v[ok], dist)[0, 1])


def _local_optima_share(valid: np.ndarray, v: np.ndarray, cards: list[int]) -> float:
    """Share of working configurations that no adjacent neighbour (each index +-1) beats."""
    ok = np.isfinite(v)
    if not ok.any():
        return float("nan")
    if int(np.prod(cards)) <= DENSE_GRID_LIMIT:
        from scipy.ndimage import minimum_filter

        # Invalid and failed cells are +inf, so they never count as a better neighbour.
        grid = np.full(cards, np.inf)
        grid[tuple(valid[ok].T)] = v[ok]
        lowest = minimum_filter(grid, size=3, mode="constant", cval=np.inf)
        return float((grid[tuple(valid[ok].T)] <= lowest[tuple(valid[ok].T)]).mean())
    return _sampled_local_optima_share(valid, v, ok)


def _sampled_local_optima_share(valid: np.ndarray, v: np.ndarray, ok: np.ndarray) -> float:
    rng = np.random.default_rng(0)
    rows = np.flatnonzero(ok)
    rows = rng.choice(rows, size=min(SAMPLE_ROWS, rows.size), replace=False)
    hits = 0
    for r in rows:
        near = np.abs(valid - valid[r]).max(axis=1) <= 1
        better = np.where(near & ok, v, np.inf).min()
        hits += bool(v[r] <= better)
    return hits / rows.size


def _budget(task: Task) -> tuple[float, int]:
    """A run's time budget and the evaluations it buys at the mean cost of one evaluation."""
    budget = budget_for(task)
    seconds = float(budget.seconds)
    mean = float(np.mean(task.key.eval_seconds)) if len(task.key.eval_seconds) else 0.0
    fevals = int(seconds / mean) if mean > 0 and np.isfinite(seconds) else 0
    if budget.max_fevals is not None:  # e.g. a live task given fevals=N
        fevals = min(fevals, budget.max_fevals) if fevals else budget.max_fevals
    return seconds, fevals
