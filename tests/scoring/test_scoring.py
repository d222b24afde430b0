"""The score P: parity with autotuning_methodology 1.1.0 on identical traces, and its edge cases."""

import warnings

import numpy as np
import pytest
from support.score_traces import _random_traces

from generator.scoring.basis import score_basis
from generator.scoring.score import Budget, Trace, budget_for, score_traces


def test_score_is_deterministic_and_near_zero_for_random_search(conv_task):
    traces = _random_traces(conv_task, 10, seed=0)
    a, b = score_traces(conv_task, traces), score_traces(conv_task, traces)
    assert a == b
    assert -0.4 < a.score < 0.4  # random search is the baseline: P ~ 0
    assert len(a.per_repeat) == 10 and a.std == pytest.approx(np.std(a.per_repeat))
    iso = score_traces(conv_task, traces, curve="isotonic")
    assert abs(iso.score - a.score) < 0.2


def test_optimum_first_scores_one_and_worst_scores_below_zero(conv_task):
    key = conv_task.key
    best = int(np.nanargmin(key.values))
    worst = int(np.nanargmax(key.values))
    b = budget_for(conv_task)
    n = int(b.seconds / np.median(key.eval_seconds)) + 5
    filler_best = np.full(n, best)
    top = score_traces(conv_task, [Trace(filler_best, np.full(n, np.median(key.eval_seconds)))] * 3)
    assert top.score == pytest.approx(1.0)
    low = score_traces(conv_task, [Trace(np.full(n, worst), np.full(n, np.median(key.eval_seconds)))] * 3)
    assert low.score < 0


def test_short_or_empty_runs_still_get_a_score(conv_task):
    best = int(np.nanargmin(conv_task.key.values))
    traces = [Trace([], []), Trace([best], [1.0])]
    s = score_traces(conv_task, traces)
    assert np.isfinite(s.score) and s.note
    assert len(s.per_repeat) == 2


def test_fevals_variant(conv_task):
    traces = _random_traces(conv_task, 5, seed=1)
    s = score_traces(conv_task, traces, x_type="fevals")
    assert np.isfinite(s.score) and -1 < s.score < 1
    with pytest.raises(ValueError):
        score_traces(conv_task, traces, curve="nonsense")


def test_trace_roundtrip_and_validation():
    t = Trace([1, 2, 3], [0.1, 0.2, 0.3], fevals=5)
    assert Trace.from_dict(t.to_dict()).to_dict() == t.to_dict()
    with pytest.raises(ValueError):
        Trace([1, 2], [0.1])
    assert Budget(10.0).max_fevals is None


def test_isotonic_fast_path_equals_sklearn():
    from sklearn.isotonic import IsotonicRegression

    from generator.scoring.score import _isotonic

    rng = np.random.default_rng(0)
    x = np.cumsum(rng.uniform(0.1, 2, 50))
    y = np.minimum.accumulate(rng.integers(0, 500, 50)).astype(float)
    new = np.linspace(-1, x[-1] + 5, 300)
    want = (
        IsotonicRegression(increasing=False, y_min=y.min(), y_max=y.max(), out_of_bounds="clip").fit(x, y).predict(new)
    )
    np.testing.assert_allclose(_isotonic(x, y, new, False, y.min(), y.max()), want, rtol=1e-12)
    y2 = rng.integers(0, 500, 50).astype(float)  # not monotone: goes through sklearn
    want2 = (
        IsotonicRegression(increasing=False, y_min=y2.min(), y_max=y2.max(), out_of_bounds="clip")
        .fit(x, y2)
        .predict(new)
    )
    np.testing.assert_allclose(_isotonic(x, y2, new, False, y2.min(), y2.max()), want2, rtol=1e-12)


def test_higher_is_better_objective(hub_dir):
    """GFLOP/s (maximise): best-first scores 1, random search about 0."""
    from generator.tasks.cache import Objective, load_cache_task, read_t1_restrictions

    task = load_cache_task(
        hub_dir / "cachefiles" / "convolution_milo" / "MI250X.json.gz",
        read_t1_restrictions(hub_dir / "kernels" / "convolution_milo.json"),
        name="conv/MI250X/gflops",
        objective=Objective("GFLOP/s", True),
    )
    b = score_basis(task)
    assert b.optimum == np.nanmax(task.key.values) and not b.minimization
    best = int(np.nanargmax(task.key.values))
    n = 200
    sec = np.full(n, np.median(task.key.eval_seconds))
    assert score_traces(task, [Trace(np.full(n, best), sec)] * 3).score == pytest.approx(1.0)
    rnd = score_traces(task, _random_traces(task, 20, seed=2))
    assert -0.5 < rnd.score < 0.5


def _tiny_task(values):
    from generator.tasks.cache import AnswerKey, Objective, SpaceSpec, Task

    n = len(values)
    spec = SpaceSpec({"x": list(range(n))}, (), np.arange(n, dtype=np.int32).reshape(-1, 1))
    return Task("tiny/CPU", spec, AnswerKey(np.array(values, float), np.zeros(n, bool), np.full(n, 0.5)), Objective())


@pytest.mark.parametrize("values", [[4.0, 3.0, 2.0, 1.0], [2.0, 1.0], [5, 4, 3, 2, 1, 0.5]])
def test_tiny_spaces_where_random_search_reaches_the_optimum_score_finite(values):
    # the package raises "Division by zero" (or returns thousands) here; we never give inf/NaN
    task = _tiny_task(values)
    best = len(values) - 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        at_optimum = score_traces(task, [Trace([best], [0.5])])
        worst_only = score_traces(task, [Trace([0], [0.5])])
        everything = score_traces(task, [Trace(np.arange(len(values)), np.full(len(values), 0.5))] * 2)
    assert at_optimum.score == 1.0 and at_optimum.per_repeat == (1.0,)
    for s in (worst_only, everything):
        assert np.isfinite(s.score) and np.isfinite(s.per_repeat).all() and np.isfinite(s.error)
        assert -10 < s.score < 1.0


OPTIMUM_THEN_STOP = """
class OptimumThenStop:
    def __init__(self, budget=5000):
        self.budget = budget

    def __call__(self, func, searchspace):
        return func({config!r})
"""


DRAWS_THEN_STOP = """
class DrawsThenStop:
    def __init__(self, budget=5000):
        self.budget = budget

    def __call__(self, func, searchspace):
        for cfg in searchspace.get_random_sample(20):
            func(cfg)
"""


def test_run_that_finds_the_optimum_and_stops_scores_one(conv_task):
    """Evaluated in the sandbox: one evaluation, all before the time range, at the optimum -> P ~ 1."""
    from generator.evaluation.evaluate import evaluate_source

    best = int(np.nanargmin(conv_task.key.values))
    source = OPTIMUM_THEN_STOP.format(config=conv_task.space.config_of(best))
    fit = evaluate_source(source, [conv_task], repeats=3, seed=1)
    assert fit.ok, fit.error
    task_fit = fit.per_task[conv_task.name]
    assert task_fit.score == pytest.approx(1.0, abs=1e-9)
    assert task_fit.per_repeat == pytest.approx((1.0, 1.0, 1.0), abs=1e-9)


def test_run_that_stops_after_20_draws_scores_its_best_so_far(conv_task):
    """20 random draws then stop: below random search, but never the worst of the space."""
    from generator.evaluation.evaluate import evaluate_source
    from generator.scoring.score import standardise

    fit = evaluate_source(DRAWS_THEN_STOP, [conv_task], repeats=3, seed=1)
    assert fit.ok, fit.error
    task_fit = fit.per_task[conv_task.name]
    basis = score_basis(conv_task)
    worst = float(np.mean(standardise(basis, np.full(basis.time_range.shape, basis.dist[-1]))))
    assert task_fit.score < 0.0  # random search keeps drawing; this run did not
    assert task_fit.score > worst / 10  # the best of 20 draws is worth far more than the worst value
    assert all(p > worst / 10 for p in task_fit.per_repeat)  # (a lucky repeat may even draw the optimum)


def _held_score(task, trace):
    """P of a one-evaluation run whose value holds over the whole time range (the definition, by hand)."""
    from generator.scoring.score import standardise

    basis = score_basis(task)
    value = task.key.values[trace.rows[0]]
    return float(np.mean(standardise(basis, np.full(basis.time_range.shape, value))))


def test_mixed_repeats_average_the_stopped_runs_in(conv_task):
    """7 runs stopped after one random evaluation, 3 ran the budget: every repeat counts in P."""
    working = np.flatnonzero(np.isfinite(conv_task.key.values))
    rows = np.random.default_rng(5).choice(working, 7, replace=False)
    stopped = [Trace([r], [conv_task.key.eval_seconds[r]]) for r in rows]
    full = _random_traces(conv_task, 3, seed=21)
    assert any(t.seconds[0] < score_basis(conv_task).time_range[0] for t in stopped)  # some end before the range
    s = score_traces(conv_task, stopped + full)
    alone_full = score_traces(conv_task, full)
    # held at their best-so-far to the end of the budget, the package's checks pass and its pooled fit
    # scores them (issue 39); before, the package refused these runs and P was the mean of the repeats
    assert s.note == ""
    for trace, p in zip(stopped, s.per_repeat[:7]):
        assert p == pytest.approx(_held_score(conv_task, trace), abs=1e-9)
    assert s.per_repeat[7:] == pytest.approx(alone_full.per_repeat, abs=1e-12)
    assert s.score < alone_full.score - 0.1  # the 7 short runs pull P down, they are not ignored
    assert min(s.per_repeat) < s.score < max(s.per_repeat)


def _quit_when_unlucky(task, traces, at=0.4):
    """The traces of a search that returns at `at` of the budget when its best-so-far is worse than
    the median repeat's there (it looks unlucky), and runs the budget otherwise."""
    limit = budget_for(task).seconds * at
    cut = [int(np.searchsorted(np.cumsum(t.seconds), limit, side="right")) for t in traces]
    best_then = [np.nanmin(task.key.values[t.rows[:n]]) for t, n in zip(traces, cut)]
    unlucky = np.array(best_then) > np.median(best_then)
    return [Trace(t.rows[:n], t.seconds[:n]) if u else t for t, n, u in zip(traces, cut, unlucky)], unlucky


def test_quitting_unlucky_runs_never_raises_the_score(conv_task):
    """A run that returns early keeps counting at its best-so-far: quitting can only cost P."""
    for seed in (0, 40, 80):
        full = _random_traces(conv_task, 20, seed=seed)
        quit, unlucky = _quit_when_unlucky(conv_task, full)
        assert 0 < unlucky.sum() < 20 // 2 + 1  # fewer than half stop: the package's freeze never applies
        p_full, p_quit = score_traces(conv_task, full), score_traces(conv_task, quit)
        assert p_quit.note == "" and p_full.note == ""
        assert p_quit.score <= p_full.score, (seed, p_full.score, p_quit.score)


def test_held_points_leave_runs_that_spent_their_budget_alone(conv_task):
    """Only a run that stopped before its budget is continued: a full run's arrays are the package's."""
    from generator.scoring.score import _trace_arrays

    full = _random_traces(conv_task, 6, seed=9)
    plain, held = _trace_arrays(conv_task, full), _trace_arrays(conv_task, full, hold=True)
    for a, b in zip(plain, held):
        np.testing.assert_array_equal(a, b)
    short = Trace(full[0].rows[:5], full[0].seconds[:5])
    times, best = _trace_arrays(conv_task, [short], hold=True)
    assert times[-1, 0] > budget_for(conv_task).seconds >= times[-2, 0]  # to the budget, like the oracle
    assert np.all(best[5:, 0] == best[4, 0])  # at its best-so-far
