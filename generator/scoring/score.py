"""The performance score P of the auto-tuning methodology (Willemsen et al. 2024), from traces.

This reproduces `autotuning_methodology` 1.1.0 (`report_experiments.get_strategy_scores`): the
same cutoffs, time range, calculated random-search baseline, isotonic-regression curve with
bootstrap bagging, real-stopping-point freeze and standardisation, so that identical traces give
identical numbers (tests/scoring/test_scoring.py checks it against the package itself).

One thing differs on purpose: a run that returned before spending its budget keeps counting, at
its best-so-far, to the end of the budget (`_held_points`); the package forgets it after its last
point, which rewards quitting runs that look unlucky (issue 39). Runs that spend their budget get
the package's number.

The other difference is where the time axis comes from. The package runs Kernel Tuner and adds the
*real* framework and strategy time of that run to the cached compile/verification/runtime times;
Tunesmith uses a deterministic simulated clock: each newly evaluated configuration costs its
cached `AnswerKey.eval_seconds` (compile + verification + the kernel runtimes), strategy time is
not counted. The baseline and the cutoffs use the brute-force run's full T4 times
(`AnswerKey.baseline_seconds`, which include the framework time it measured), exactly as the package.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from generator.scoring.basis import CUTOFF_MARGIN, ScoreBasis, score_basis
from generator.tasks.cache import Budget, Task  # Budget: re-exported, part of this room's API

DEFAULT_BAGGING_SEED = 0  # the package bags with numpy's global RNG; we fix it so scores repeat


@dataclass
class Trace:
    """One run on one task: the valid rows evaluated (in order) and the simulated seconds each cost."""

    rows: np.ndarray  # int rows of SpaceSpec.valid; a row appears again only if revisits are charged
    seconds: np.ndarray  # simulated cost of each entry of `rows`
    fevals: int = 0  # calls to the objective, revisits and invalid configurations included

    def __post_init__(self):
        self.rows = np.asarray(self.rows, dtype=np.int64).reshape(-1)
        self.seconds = np.asarray(self.seconds, dtype=float).reshape(-1)
        if self.rows.shape != self.seconds.shape:
            raise ValueError(f"Trace rows ({self.rows.size}) and seconds ({self.seconds.size}) differ in length")
        self.fevals = int(self.fevals) or int(self.rows.size)

    def to_dict(self) -> dict:
        """A JSON-ready form (for crossing a process boundary)."""
        return {"rows": self.rows.tolist(), "seconds": self.seconds.tolist(), "fevals": self.fevals}

    @classmethod
    def from_dict(cls, d: dict) -> Trace:
        return cls(
            np.asarray(d["rows"], dtype=np.int64), np.asarray(d["seconds"], dtype=float), int(d.get("fevals", 0))
        )


@dataclass(frozen=True)
class TaskScore:
    """P of a strategy on one task: the methodology's score, and the spread over repeats."""

    score: float  # the package's P: one curve fitted over all repeats, averaged over the time range
    std: float  # standard deviation of `per_repeat`
    per_repeat: tuple[float, ...]  # P of each repeat scored alone (deterministic isotonic curve)
    error: float = 0.0  # the package's "error": std of the standardised curve over the time range
    note: str = ""  # set when a fallback was needed (e.g. runs too short for the package's checks)


def budget_for(task: Task, max_fevals: int | None = None) -> Budget:
    """The budget the methodology gives a run on this task (cutoff time * 1.1).

    A task that carries its own budget (a live task given `fevals=`/`seconds=`) gets that one.
    """
    own = getattr(task, "budget", None)
    if own is not None:
        return own if max_fevals is None else Budget(own.seconds, max_fevals)
    b = score_basis(task)
    return Budget(seconds=b.t_end * (1 + CUTOFF_MARGIN), max_fevals=max_fevals)


# ---------------------------------------------------------------- the strategy curve


def _trace_arrays(task: Task, traces: list[Trace], hold: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(times, best-so-far) as (evaluations, repeats) arrays padded with NaN, like the package's results.

    hold: a run that stopped before its budget was spent keeps counting at its best-so-far to the
    end of the budget (see `_held_points`)."""
    minimization = not task.objective.higher_is_better
    acc = np.fmin.accumulate if minimization else np.fmax.accumulate
    runs = []
    for t in traces:
        run_times, run_best = np.cumsum(t.seconds), acc(task.key.values[t.rows]) if t.rows.size else np.empty(0)
        if hold:
            run_times, run_best = _held_points(task, run_times, run_best)
        runs.append((run_times, run_best))
    lengths = [r[0].size for r in runs]
    max_n = max(lengths) if lengths else 0
    mean_n = float(np.mean(lengths)) if lengths else 0.0
    if max_n > mean_n * 2:  # the package cuts outlier-long runs to twice the mean length
        max_n = int(mean_n * 2)
    times = np.full((max_n, len(traces)), np.nan)
    best = np.full((max_n, len(traces)), np.nan)
    for j, (run_times, run_best) in enumerate(runs):
        n = min(run_times.size, max_n)
        times[:n, j] = run_times[:n]
        best[:n, j] = run_best[:n]
    return times, best


def _held_points(task: Task, times: np.ndarray, best: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A run that returned before spending its budget, continued to the budget's end at its best-so-far.

    Without these points the pooled curve forgets a repeat after its last evaluation, so that runs
    which look unlucky and return early leave the lucky ones to make the curve (issue 39): P rose
    while the search got worse. The held run goes on as a run that keeps evaluating and never
    improves would: one point per `time_per_feval` (the space's mean cost of an evaluation, as in
    the baseline), up to and including the point that crosses the budget, as the oracle records
    the evaluation that crosses it. A run that spent its budget (the oracle stopped it) gets none,
    so its score is the package's number, unchanged."""
    until = budget_for(task).seconds
    basis = score_basis(task)
    if until is None or not np.isfinite(until):  # a budget of evaluations only: the methodology's time
        until = basis.t_end * (1 + CUTOFF_MARGIN)
    if best.size == 0 or np.isnan(best[-1]) or times[-1] > until:
        return times, best
    step = basis.time_per_feval
    extra = times[-1] + step * np.arange(1, int((until - times[-1]) // step) + 2)
    return np.concatenate([times, extra]), np.concatenate([best, np.full(extra.size, best[-1])])


def _values_in_range(times, values, time_range, check=True, carry=False):
    """The package's _get_curve_over_time_values_in_range: pooled points near the time range.

    carry: also keep each repeat's last valid point before the range, so that a run's best-so-far
    holds from there on (the package drops those points; it refuses runs that need them)."""
    num_repeats = values.shape[1]
    keep = ~np.isnan(values).all(axis=1)
    times = times[keep].reshape(-1, num_repeats)
    values = values[keep].reshape(-1, num_repeats)
    times = np.where(np.isnan(values), np.nan, times)
    if values.size == 0 or np.isnan(values).all():
        if check:
            raise _TooShort("no valid evaluation in any repeat")
        return np.empty(0), np.empty(0), float(time_range[-1])
    # the last time of each repeat; the curve freezes at the first one above their median
    highest = np.sort(np.nanmax(np.where(np.isnan(times), -np.inf, times), axis=0))
    highest = highest[np.isfinite(highest)]  # (the package would fail on a repeat with no valid value)
    later = highest[np.median(highest) < highest]
    stop_time = float(later[0]) if later.size else float(time_range[-1])
    margin = 0.1 + 0.25 * (num_repeats / max(times.size, 1))
    lo, hi = time_range[0] * (1 - margin), time_range[-1] * (1 + margin)
    with np.errstate(invalid="ignore"):
        in_range = (lo <= times) & (times <= hi)
    if check and not np.all(np.count_nonzero(in_range, axis=0) > 1):
        raise _TooShort("not enough evaluations in the time range in some repeat")
    mask = in_range & ~np.isnan(values)
    if carry:
        with np.errstate(invalid="ignore"):
            before = (times < lo) & ~np.isnan(values)
        for j in np.flatnonzero(before.any(axis=0)):
            mask[np.flatnonzero(before[:, j])[-1], j] = True
    return times[mask], values[mask], stop_time


class _TooShort(ValueError):
    pass


def _isotonic(x, y, x_new, increasing, y_min, y_max):
    order = np.argsort(x, kind="stable")
    xs, ys = x[order], y[order]
    steps = np.diff(ys)
    if np.all(np.diff(xs) > 0) and (np.all(steps >= 0) if increasing else np.all(steps <= 0)):
        # already monotone with distinct x (one run's best-so-far): the fit is the data itself, and
        # sklearn's prediction is linear interpolation clipped at both ends, exactly np.interp
        return np.interp(x_new, xs, np.clip(ys, y_min, y_max))
    from sklearn.isotonic import IsotonicRegression

    ir = IsotonicRegression(increasing=increasing, y_min=y_min, y_max=y_max, out_of_bounds="clip")
    return ir.fit(x, y).predict(x_new)


def _bagged_isotonic(x, y, x_new, increasing, num_repeats, random_state):
    """The package's curve: mean of bootstrap-bagged isotonic fits (sklearn BaggingRegressor)."""
    from sklearn.ensemble import BaggingRegressor
    from sklearn.isotonic import IsotonicRegression

    n_estimators = max(num_repeats, 3)
    model = IsotonicRegression(increasing=increasing, y_min=y.min(), y_max=y.max(), out_of_bounds="clip")
    br = BaggingRegressor(
        model,
        n_estimators=n_estimators,
        max_samples=1 / np.sqrt(n_estimators),
        bootstrap=True,
        random_state=random_state,
    )
    with warnings.catch_warnings():
        # the package's fraction on few points: sklearn warns that the bootstraps are small, which is
        # the package's own behaviour that the score reproduces, not a problem of this run
        warnings.filterwarnings("ignore", message="Using the fractional value max_samples", category=UserWarning)
        return br.fit(x.reshape(-1, 1), y).predict(x_new.reshape(-1, 1))


def _curve_over_time(basis: ScoreBasis, times, values, num_repeats, curve, random_state, check=True, carry=False):
    """Best-so-far objective over basis.time_range, as the package computes it."""
    tr = basis.time_range
    x, v, stop_time = _values_in_range(times, values, tr, check=check, carry=carry)
    dist = basis.dist
    if x.size == 0:
        return np.full(tr.shape, dist[-1] if basis.minimization else dist[0])
    idx = np.searchsorted(dist, v, side="left").astype(float)
    increasing = not basis.minimization
    if curve == "bagging" and x.size > 1:
        pred = _bagged_isotonic(x, idx, tr, increasing, num_repeats, random_state)
    else:
        pred = _isotonic(x, idx, tr, increasing, idx.min(), idx.max())
    out = dist[np.clip(np.array(np.round(pred), dtype=int), 0, dist.size - 1)]
    if stop_time < tr[-1]:
        if stop_time <= tr[0]:
            if check:
                raise _TooShort("runs stop before the time range starts")
        else:
            i = int(np.nonzero(tr > stop_time)[0][0])
            out[i:] = out[i]
    return out


def standardise(basis: ScoreBasis, curve: np.ndarray, x_type: str = "time") -> np.ndarray:
    """(curve - random) / (optimum - random): 0 = random search, 1 = optimum.

    Where random search is closer to the optimum than the second-best value (tiny spaces, near
    the end of the time range) the package divides by (almost) zero: it raises "Division by zero"
    when exactly zero and otherwise returns numbers in the thousands. Tunesmith keeps the package's
    number everywhere else, and there (a) scores a run at the optimum 1.0 (the formula's value for
    curve == optimum) and (b) divides by the gap between the optimum and the second-best value
    instead, so a run elsewhere is scored by how many such gaps it is behind random search. A
    score is never inf or NaN.
    """
    random = basis.baseline_time if x_type == "time" else basis.baseline_fevals
    division = basis.optimum - random
    gap = _optimum_gap(basis)
    close = np.abs(division) < gap if gap > 0 else division == 0
    if not close.any():
        return (curve - random) / division
    division = np.where(close, gap if gap > 0 else 1.0, np.abs(division)) * (-1.0 if basis.minimization else 1.0)
    return np.where(np.asarray(curve) == basis.optimum, 1.0, (curve - random) / division)


def _optimum_gap(basis: ScoreBasis) -> float:
    """Distance between the optimum and the second-best distinct objective value (0 if none)."""
    d = basis.dist
    if basis.minimization:
        i = int(np.searchsorted(d, d[0], side="right"))
        return float(d[i] - d[0]) if i < d.size else 0.0
    i = int(np.searchsorted(d, d[-1], side="left"))
    return float(d[-1] - d[i - 1]) if i > 0 else 0.0


def score_traces(
    task: Task, traces: list[Trace], curve: str = "bagging", random_state=DEFAULT_BAGGING_SEED, x_type: str = "time"
) -> TaskScore:
    """P of a set of repeated runs on one task, as autotuning_methodology computes it.

    curve: "bagging" (the package's curve; `random_state` seeds its bootstrap, None = numpy's
    global RNG as the package does) or "isotonic" (one isotonic fit, no resampling noise).
    x_type: "time" (the package's score) or "fevals" (unique evaluations instead of time).
    """
    if curve not in ("bagging", "isotonic"):
        raise ValueError(f"curve must be 'bagging' or 'isotonic', not {curve!r}")
    basis = score_basis(task)
    traces = list(traces)
    if not traces:
        raise ValueError("score_traces needs at least one trace")
    if x_type == "fevals":
        return _score_fevals(task, basis, traces)
    if isinstance(random_state, (int, np.integer)):
        random_state = np.random.RandomState(int(random_state))
    times, values = _trace_arrays(task, traces, hold=True)
    curves = [standardise(basis, _repeat_curve(task, basis, t)) for t in traces]
    per_repeat = tuple(float(np.mean(c)) for c in curves)
    try:
        p = standardise(basis, _curve_over_time(basis, times, values, len(traces), curve, random_state))
        note = ""
    except _TooShort as exc:
        # the package refuses these runs (some stop before or early in the time range); each
        # repeat's best-so-far holds to the end of the range, and P is the mean over repeats
        note = f"package checks failed ({exc}); scored as the mean of the repeats, each holding its best-so-far"
        p = np.mean(curves, axis=0)
    return TaskScore(float(np.mean(p)), float(np.std(per_repeat)), per_repeat, float(np.std(p)), note)


def _repeat_curve(task: Task, basis: ScoreBasis, trace: Trace) -> np.ndarray:
    """One run's best-so-far over the time range (isotonic, deterministic), held after it stops."""
    times, values = _trace_arrays(task, [trace])
    return _curve_over_time(basis, times, values, 1, "isotonic", None, check=False, carry=True)


def _score_fevals(task: Task, basis: ScoreBasis, traces: list[Trace]) -> TaskScore:
    """P over unique evaluations: per evaluation count, the median (over repeats) index of the best."""
    fr = basis.fevals_range
    dist = basis.dist
    worst = dist[-1] if basis.minimization else dist[0]
    per = []
    idx = np.empty((fr.size, len(traces)))
    acc = np.fmin.accumulate if basis.minimization else np.fmax.accumulate
    for j, t in enumerate(traces):
        best = acc(task.key.values[t.rows]) if t.rows.size else np.array([worst])
        best = np.where(np.isnan(best), worst, best)
        at = best[np.clip(fr, 1, best.size) - 1]  # runs that ended keep their last best
        idx[:, j] = np.searchsorted(dist, at, side="left")
        per.append(float(np.mean(standardise(basis, at, "fevals"))))
    curve = dist[np.array(np.round(np.median(idx, axis=1)), dtype=int)]
    p = standardise(basis, curve, "fevals")
    return TaskScore(float(np.mean(p)), float(np.std(per)), tuple(per), float(np.std(p)))


def mean_score(scores: dict[str, TaskScore]) -> float:
    """Mean P over tasks (the package averages the standardised curves over search spaces)."""
    return float(np.mean([s.score for s in scores.values()])) if scores else float("nan")
