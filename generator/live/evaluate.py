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
import time
from dataclasses import dataclass, field

import numpy as np

from generator.errors import TunesmithError
from generator.live.scoring import advantage, best_curve, live_values, random_search_curves
from generator.live.tasks import LiveTask, make_oracle, run_live_job
from generator.scoring.fitness import CandidateError
from generator.scoring.score import Budget, TaskScore, Trace, budget_for, score_traces


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
    from generator.candidate.checks import inspect_source
    from generator.evaluation.runs import init_kwargs, run_seed
    from generator.sandbox.jobs import Job, SandboxConfig

    found = inspect_source(source)
    if isinstance(found, CandidateError):
        return None, found
    kwargs = init_kwargs(found, hyperparameters, budget.max_fevals)
    runs = [(0, r, run_seed(seed, r)) for r in range(repeats)]
    job = Job(
        source,
        found.class_name,
        kwargs,
        [task],
        [budget],
        runs,
        SandboxConfig(timeout_s=float(timeout_s)),
        oracle_factory=make_oracle,
    )
    outcome = run_live_job(job)
    return outcome, outcome.error


def scored_against_random(task) -> bool:
    """Whether a task's score is the advantage over live random search rather than P: a live task with no
    measured cache for this device (score_live)."""
    return getattr(task, "oracle_class", None) is not None and not getattr(task, "cached", True)


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
    curves = [best_curve(live_values(t), sign) for t in traces]
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
