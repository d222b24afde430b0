"""Scoring a live task's runs: P against its measured cache, or else the advantage over live random search.

Without a measured cache there is no brute-force space to compute P from; the score is then the mean over
evaluations k of (r_k - c_k) / |r_k|, with c_k and r_k the best objective found after k evaluations by the
candidate and by a random search run live with the same budget and run seeds (0: as good as random, > 0:
better). The functions take any LiveTask-like task and measure through `task.make_oracle`, so this module
does not import `live.tasks` (which asks it to score).
"""

from __future__ import annotations

import threading

import numpy as np

from generator.errors import TunesmithError
from generator.evaluation.evaluate import RANDOM_BASIS_NOTE
from generator.evaluation.runs import run_seed
from generator.scoring.oracle import StopCriterionReached
from generator.scoring.score import Budget, TaskScore, budget_for, score_traces
from generator.tasks.space import SearchSpace


def random_search_run(task, budget: Budget, seed: int, repeat: int):
    """One run of random search without replacement, live, with the budget and seed of a candidate's
    repeat `repeat` (the baseline without a cache)."""
    space = SearchSpace(task.space)
    oracle = task.make_oracle(budget, space)
    try:
        for row in np.random.default_rng(run_seed(seed, repeat)).permutation(space.size):
            oracle.call_row(int(row))
    except StopCriterionReached:
        pass
    return oracle


# The live random-search baseline per (task, device, budget, seed, repeat): measured once per process,
# then every candidate of a campaign is compared with the same runs (and the GPU is not spent twice).
_BASELINES: dict[tuple, np.ndarray] = {}
_BASELINE_LOCK = threading.Lock()


def random_search_curves(task, budget: Budget, repeats: int, seed: int) -> list[np.ndarray]:
    """Best-so-far curves (minimised) of live random search, one per repeat (memoised per process)."""
    sign = -1.0 if task.objective.higher_is_better else 1.0
    out = []
    with _BASELINE_LOCK:
        for r in range(repeats):
            key = (task.name, str(task.problem.path), task.device, budget, seed, r)
            if key not in _BASELINES:
                oracle = random_search_run(task, budget, seed, r)
                _BASELINES[key] = best_curve(oracle.values[oracle.trace().rows], sign)
            out.append(_BASELINES[key])
    return out


def score_live(task, traces: list, seed: int = 0) -> TaskScore:
    """A live task's score: P against its measured cache, or else the advantage over live random search
    (same budget, same run seeds) computed from the live-measured values the traces carry."""
    if task.cached:
        return score_traces(task, traces)
    sign = -1.0 if task.objective.higher_is_better else 1.0
    baselines = random_search_curves(task, budget_for(task), len(traces), seed)
    per = [advantage(best_curve(live_values(t), sign), b) for t, b in zip(traces, baselines)]
    return TaskScore(float(np.mean(per)), float(np.std(per)), tuple(per), note=RANDOM_BASIS_NOTE)


def live_values(trace) -> np.ndarray:
    values = getattr(trace, "values", None)
    if values is None:
        raise TunesmithError("a live run's trace lacks its measured values; it must come from a LiveOracle")
    return np.asarray(values, dtype=float)


def best_curve(values: np.ndarray, sign: float) -> np.ndarray:
    """Best (signed) objective after each evaluation; failed evaluations (NaN) do not improve it."""
    v = np.where(np.isnan(values), np.inf, sign * values)
    return np.minimum.accumulate(v) if v.size else v


def advantage(candidate: np.ndarray, baseline: np.ndarray) -> float:
    """Mean over evaluations of (r_k - c_k) / |r_k| for best-so-far curves (minimised)."""
    k = min(candidate.size, baseline.size)
    c, r = candidate[:k], baseline[:k]
    ok = np.isfinite(r) & np.isfinite(c)
    if not ok.any():
        return 0.0
    return float(np.mean((r[ok] - c[ok]) / np.abs(r[ok])))
