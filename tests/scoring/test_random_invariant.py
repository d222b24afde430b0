"""Random search scores P ~ 0: the score's own invariant, on every shipped cache and every hub space.

The methodology's baseline *is* the expected best-so-far curve of random search, so `random_sample`
run the way `tunesmith bench` runs it must score 0 within noise. Two checks per space:

- mechanism (exact): every run goes on until the budget is spent. A run that stops early (Kernel
  Tuner's default `fraction=0.1` caps random_sample at 10% of the space) freezes its curve while
  the baseline keeps improving; that scored -0.24 on convolution A100 (issue 19).
- invariant (statistical): P is within 3 standard errors (over REPEATS repeats, bench's seeds, so
  the numbers equal `tunesmith bench --strategies random_sample --repeats 100 --seed 0 --se`) of
  what random search scores in expectation, and that expectation is ~0.

Why "~0" and not 0: the package's calculated baseline reads the value at index round(k(N+1)/(k+1))
of the N sorted values (worst first). k(N+1)/(k+1) is the expected *1-based* rank of the best of k
draws without replacement; used as a 0-based index it is one rank ahead of random search. Tunesmith
matches the package (tests/scoring/test_scoring.py), so random search's expected P is that one rank's worth:
-0.07 (convolution A100) to +0.03 (convolution MI250X) on these spaces, computed below
(`_expected_p`); the band is centred there. Against 0 it is also inside 3 SE at 100 repeats.
"""

import math
import os
from pathlib import Path

import numpy as np
import pytest
from support.paths import ROOT

from generator.bench.command import run_seed
from generator.bench.results import standard_error
from generator.bench.runner import parse_strategy, run_once
from generator.scoring.basis import score_basis
from generator.scoring.score import budget_for, score_traces, standardise
from generator.tasks.entries import load_tasks
from generator.tasks.space import SearchSpace

REPEATS = 100  # SE 0.03-0.08 per space: the band (3 SE) is 0.09-0.24 wide on each side
PACKAGE_REPEATS = 3  # Kernel Tuner's own simulation is slower; the exact check needs few runs

SHIPPED = sorted(f"{p.parent.name}/{p.name.split('.')[0]}" for p in (ROOT / "problems" / "caches").glob("*/*.json.gz"))
_HUB = Path(os.environ.get("TUNESMITH_BENCHMARK_HUB", ROOT.parent / "shared" / "data" / "benchmark_hub"))
HUB = sorted(
    f"{p.parent.name}/{p.name.split('.')[0]}"
    for p in (_HUB / "cachefiles").glob("*/*.json.gz")
    if not p.name.split(".")[0].endswith("_T4")
)
# Where the package's one-rank offset is not small: on stencil3d (flat near its optimum, a budget of
# about 1,100 of its 3,096 configurations) random search's best is one or two ranks from the optimum
# at the end of a run, where one rank is a large share of the shrinking (baseline - optimum) gap.
# gemv (144 configurations, a budget of a few dozen evaluations, many within 10% of the best) is the
# small-space case of the same thing: one rank is a quarter of the gap the score measures.
# The small H200 and H100 spaces of issue 38's new families (92 to 772 configurations, budgets of 25 to 270
# evaluations, flat near their best) are more of the same.
RANK_OFFSET_SPACES = {
    "stencil3d/H100": -0.157,
    "gemv/H100": -0.249,
    "attention/H200": -0.144,
    "batched_gemm/H200": -0.106,
    "bitonic_sort/H200": -0.170,
    "fwht/H200": -0.233,
    "softmax/H200": -0.161,
    "attention/H100": -0.112,
    "bitonic_sort/H100": -0.152,
    "fwht/H100": -0.156,
    "scan/H100": -0.138,
}
# without the hub, one placeholder that skips with the reason (conftest's hub_dir; CI fails instead)
HUB_PARAMS = HUB or [pytest.param(None, id="hub-absent")]


@pytest.fixture(scope="module")
def shipped_tasks():
    """Every problem's measured caches (problems/caches/<name>/<GPU>.json.gz), with the problem's restrictions."""
    names = sorted({n.split("/")[0] for n in SHIPPED})
    return {t.name: t for t in load_tasks([ROOT / "problems" / n / "problem.toml" for n in names])}


def _task(name, shipped_tasks, request):
    if name in shipped_tasks:
        return shipped_tasks[name]
    return {t.name: t for t in request.getfixturevalue("hub_tasks")}[name]


def _runs(task, strategy: str, repeats: int):
    spec = parse_strategy(strategy)
    space = SearchSpace(task.space)
    budget = budget_for(task)
    return budget, [run_once(task, spec, run_seed(0, r), budget, space) for r in range(repeats)]


def _check_runs_reach_budget(task, budget, traces, until: float):
    """Every run spends time up to `until`, or has evaluated every configuration of the space."""
    short = [
        (i, float(np.sum(t.seconds)), t.rows.size)
        for i, t in enumerate(traces)
        if np.sum(t.seconds) < until and np.unique(t.rows).size < task.key.values.size
    ]
    assert not short, (
        f"{task.name}: random_sample stopped before the budget ({until:.1f} s) in "
        f"{len(short)}/{len(traces)} runs, e.g. run {short[0][0]} after {short[0][2]} "
        f"evaluations, {short[0][1]:.1f} s; the frozen curve biases P below 0"
    )


def _expected_p(task) -> float:
    """P that random search scores in expectation against the package's baseline (0 up to one rank).

    At time t random search has made k = t / (seconds per valid draw) valid draws; the best of them
    has expected 0-based index (N+1)/(k+1) - 1 from the best, and the package's curve is the value at
    the rounded mean index (its isotonic fit estimates the mean index). The baseline is the
    package's: one rank better.
    """
    basis = score_basis(task)
    n_valid, n_all = basis.dist.size, task.key.values.size
    seconds_per_valid_draw = float(np.mean(task.key.eval_seconds)) * n_all / n_valid
    k = np.maximum(np.round(basis.time_range / seconds_per_valid_draw), 1)
    best_first = basis.dist if basis.minimization else basis.dist[::-1]
    index = np.clip(np.round((n_valid + 1) / (k + 1) - 1).astype(int), 0, n_valid - 1)
    return float(np.mean(standardise(basis, best_first[index])))


def _check_scores_zero(task, traces):
    score = score_traces(task, traces)
    se = standard_error(score)
    expected = _expected_p(task)
    assert math.isfinite(score.score) and se > 0
    if task.name in RANK_OFFSET_SPACES:  # a known, documented offset: still checked, and scored as expected
        assert expected == pytest.approx(RANK_OFFSET_SPACES[task.name], abs=0.01), f"{task.name}: {expected:+.3f}"
    else:
        assert abs(expected) < 0.1, f"{task.name}: random search's expected P is {expected:+.3f}, not ~0"
    assert abs(score.score - expected) <= 3 * se, (
        f"{task.name}: random search scored P = {score.score:+.3f} ± {se:.3f} (SE, {len(traces)} repeats), "
        f"expected {expected:+.3f} (0 but for the package's one-rank offset): more than 3 SE apart"
    )


@pytest.mark.parametrize("name", SHIPPED + HUB_PARAMS)
def test_random_search_scores_zero(name, shipped_tasks, request):
    if name is None:
        request.getfixturevalue("hub_dir")  # skips: the hub is absent (reason in the message)
    task = _task(name, shipped_tasks, request)
    budget, traces = _runs(task, "random_sample", REPEATS)
    _check_runs_reach_budget(task, budget, traces, until=budget.seconds)
    _check_scores_zero(task, traces)


@pytest.mark.parametrize("name", SHIPPED + HUB_PARAMS)
def test_random_sample_reaches_the_budget_with_package_accounting(name, shipped_tasks, request):
    """In Kernel Tuner's own simulation on the package's time axis, too, random_sample runs past the
    scored time range (its budget is Kernel Tuner's clock, which differs a little from the package's)."""
    if name is None:
        request.getfixturevalue("hub_dir")
    task = _task(name, shipped_tasks, request)
    budget, traces = _runs(task, "random_sample:engine=kerneltuner:accounting=package", PACKAGE_REPEATS)
    _check_runs_reach_budget(task, budget, traces, until=score_basis(task).t_end)


def test_random_search_scores_zero_with_package_accounting(shipped_tasks):
    """The statistical check on the package's time axis, where it is cheap (hotspot: 1,196 configurations)."""
    task = shipped_tasks["hotspot/H200"]
    _, traces = _runs(task, "random_sample:engine=kerneltuner:accounting=package", REPEATS)
    _check_scores_zero(task, traces)


def test_kernel_tuner_default_fraction_still_available(shipped_tasks):
    """`fraction=0.1` restores Kernel Tuner's own default (the runs then stop at 10% of the space)."""
    task = shipped_tasks["hotspot/H200"]
    _, traces = _runs(task, "random_sample:fraction=0.1", 2)
    assert all(t.rows.size == math.ceil(0.1 * task.key.values.size) for t in traces)
