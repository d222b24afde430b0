"""Evaluating a candidate on a live task: its code in the sandbox, every objective call measured for real.

The candidate runs in the sandbox exactly as on a cached task (the child holds the public SpaceSpec
and a func proxy); the evaluating process answers each new configuration with a `LiveOracle`,
which compiles, verifies and times it on the device through Kernel Tuner. The score:

- where the problem has a measured cache for this device, the methodology's P of the traces
  against that brute-force space (the trace's time axis is the live-measured evaluation cost);
- otherwise, the advantage over a random search run live with the same budget and seeds:
  the mean over evaluations k of (r_k - c_k) / |r_k|, with c_k and r_k the best objective found
  after k evaluations by the candidate and by random search (0: as good as random, > 0: better).
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from generator.errors import TunesmithError
from generator.live.tasks import LiveOracle, LiveTask, make_oracle, run_live_job
from generator.scoring.fitness import CandidateError
from generator.scoring.oracle import StopCriterionReached
from generator.scoring.score import Budget, TaskScore, Trace, budget_for, score_traces
from generator.tasks.space import SearchSpace


@dataclass
class LiveResult:
    """A candidate on a live task: score, how it was scored, and the live-measured best per repeat."""

    task: str
    score: float | None
    basis: str  # "cache" (P against the brute-force space) or "random" (advantage over live random search)
    per_repeat: list[float] = field(default_factory=list)
    best: list[float] = field(default_factory=list)  # best live-measured objective per repeat
    fevals: list[int] = field(default_factory=list)  # unique configurations measured per repeat
    traces: list[Trace] = field(default_factory=list)
    curves: list[np.ndarray] = field(default_factory=list)  # live best-so-far per evaluation, per repeat
    wall_s: float = 0.0
    error: CandidateError | None = None

    def summary(self) -> str:
        if self.error is not None:
            return f"{self.task}: failed ({self.error.kind}: {self.error.message})"
        what = "P vs the brute-force cache" if self.basis == "cache" else "advantage over live random search"
        best = ", ".join(f"{b:.4g}" for b in self.best)
        return (
            f"{self.task}: score {self.score:.3f} ({what}); best per repeat [{best}]; "
            f"mean unique evaluations {np.mean(self.fevals):.0f}; {self.wall_s:.0f} s"
        )


def live_budget(task: LiveTask, max_fevals: int | None = None, seconds: float | None = None) -> Budget:
    """The budget of a live run: evaluations and/or seconds; by default the task's own, or else the
    methodology's, where cached."""
    if seconds is None and max_fevals is None:
        if task.budget is not None:
            return task.budget
        if not task.cached:
            raise TunesmithError(f"{task.name}: no measured cache to derive a budget from; give max_fevals or seconds")
        return budget_for(task)
    return Budget(float(seconds) if seconds is not None else math.inf, max_fevals)


def _run_sandboxed(
    source: str, task: LiveTask, budget: Budget, repeats: int, seed: int, timeout_s: float, hyperparameters: dict | None
):
    from generator import sandbox
    from generator.candidate.checks import inspect_source
    from generator.evaluation.runs import init_kwargs, run_seed

    found = inspect_source(source)
    if isinstance(found, CandidateError):
        return None, found
    kwargs = init_kwargs(found, hyperparameters, budget.max_fevals)
    runs = [(0, r, run_seed(seed, r)) for r in range(repeats)]
    job = sandbox.Job(
        source,
        found.class_name,
        kwargs,
        [task],
        [budget],
        runs,
        sandbox.SandboxConfig(timeout_s=float(timeout_s)),
        oracle_factory=make_oracle,
    )
    outcome = run_live_job(job)
    return outcome, outcome.error


def random_search_run(task: LiveTask, budget: Budget, seed: int, repeat: int) -> LiveOracle:
    """One run of random search without replacement, live, with the budget and seed of a candidate's
    repeat `repeat` (the baseline without a cache)."""
    from generator.evaluation.runs import run_seed

    space = SearchSpace(task.space)
    oracle = LiveOracle(task, budget, space)
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


def random_search_curves(task: LiveTask, budget: Budget, repeats: int, seed: int) -> list[np.ndarray]:
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


RANDOM_BASIS_NOTE = "advantage over live random search of the same budget (no measured cache)"


def scored_against_random(task) -> bool:
    """Whether a task's score is the advantage over live random search rather than P: a live task with no
    measured cache for this device (score_live)."""
    return getattr(task, "oracle_class", None) is not None and not getattr(task, "cached", True)


def not_p_line(task_name: str, note: str = RANDOM_BASIS_NOTE) -> str:
    """The line under a table that says a task's number is not P (evaluate and bench print it alike)."""
    return f"note: {task_name} is scored by its {note}, not P: 0 = as good as random search there, higher is better"


def score_live(task: LiveTask, traces: list, seed: int = 0) -> TaskScore:
    """A live task's score: P against its measured cache, or else the advantage over live random search
    (same budget, same run seeds) computed from the live-measured values the traces carry."""
    if task.cached:
        return score_traces(task, traces)
    sign = -1.0 if task.objective.higher_is_better else 1.0
    baselines = random_search_curves(task, budget_for(task), len(traces), seed)
    per = [advantage(best_curve(_live_values(t), sign), b) for t, b in zip(traces, baselines)]
    return TaskScore(float(np.mean(per)), float(np.std(per)), tuple(per), note=RANDOM_BASIS_NOTE)


def _live_values(trace) -> np.ndarray:
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


def evaluate_live(
    source: str,
    task: LiveTask,
    repeats: int = 3,
    seed: int = 0,
    max_fevals: int | None = None,
    seconds: float | None = None,
    timeout_s: float = 600.0,
    hyperparameters: dict | None = None,
) -> LiveResult:
    """Tune the task's kernel for real with the candidate (in the sandbox), `repeats` times, and score it."""
    start = time.monotonic()
    budget = live_budget(task, max_fevals, seconds)
    outcome, error = _run_sandboxed(source, task, budget, repeats, seed, timeout_s, hyperparameters)
    result = LiveResult(task.name, None, "cache" if task.cached else "random")
    if error is not None:
        result.error, result.wall_s = error, time.monotonic() - start
        return result
    sign = -1.0 if task.objective.higher_is_better else 1.0
    traces = [r.trace for r in outcome.runs]
    curves = [best_curve(_live_values(t), sign) for t in traces]
    result.traces, result.curves = traces, curves
    result.fevals = [int(t.rows.size) for t in traces]
    result.best = [float(sign * c[-1]) if c.size and np.isfinite(c[-1]) else math.nan for c in curves]
    if task.cached:
        ts = score_traces(task, traces)
    else:
        baselines = random_search_curves(task, budget, repeats, seed)
        per = [advantage(c, b) for c, b in zip(curves, baselines)]
        ts = TaskScore(float(np.mean(per)), float(np.std(per)), tuple(per))
    result.score, result.per_repeat = ts.score, list(ts.per_repeat)
    result.wall_s = time.monotonic() - start
    return result
