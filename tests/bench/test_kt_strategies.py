"""Every Kernel Tuner built-in strategy on every space of the benchmark hub and of more_spaces (issue 26).

The fast part (always run) gives each strategy a small budget (20 unique evaluations) and two
repeats on all eleven spaces; the slow part (`pytest -m slow`) gives it the methodology's own
budget and three repeats, as `tunesmith bench` does. A strategy that needs a package this
machine lacks (skopt, pyatf_strategies) must fail with a line that names the package to install.
"""

import importlib.util
import math
import os

import numpy as np
import pytest

from generator.bench.command import bench
from generator.bench.runner import builtin_names, parse_strategy, run_once
from generator.scoring.score import Budget

FEVALS = 20
NEEDS = {"skopt": "skopt", "pyatf_strategies": "pyatf"}  # built-ins that import an optional package when run


@pytest.fixture(scope="session")
def every_space(hub_dir, hub_tasks):
    """The benchmark hub's six spaces and more_spaces' five (two without restrictions: pnpoly)."""
    from generator.tasks.entries import load_tasks

    more = hub_dir.parent / "more_spaces"
    if not (more / "cachefiles").is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"more_spaces missing at {more}; CI needs ../shared/data/more_spaces")
        pytest.skip(f"more_spaces not found at {more}")
    tasks = list(hub_tasks) + load_tasks(more)
    assert len(tasks) == 11 and any(not t.space.restrictions for t in tasks)
    return tasks


def _check(name, results, tasks, max_unique):
    (result,) = results
    missing = NEEDS.get(name)
    if missing and importlib.util.find_spec(missing) is None:
        assert set(result.failed) == {t.name for t in tasks}
        assert all("pip install" in msg and missing in msg for msg in result.failed.values()), result.failed
        return
    assert result.failed == {}, result.failed
    assert [t.name for t in tasks] == list(result.per_task)
    assert all(math.isfinite(s.score) for s in result.per_task.values())
    assert all(1 <= n <= max_unique for n in result.unique_evals.values()), result.unique_evals


@pytest.mark.parametrize("name", builtin_names())
def test_builtin_runs_on_every_space(name, every_space):
    results = bench(
        every_space, [parse_strategy(name)], repeats=2, seed=3, workers=1, progress=False, max_fevals=FEVALS
    )
    _check(name, results, every_space, FEVALS)


@pytest.mark.slow
@pytest.mark.parametrize("name", builtin_names())
def test_builtin_runs_on_every_space_at_the_methodology_budget(name, every_space):
    results = bench(every_space, [parse_strategy(name)], repeats=3, seed=4, workers=2, progress=False)
    _check(name, results, every_space, max(t.space.valid.shape[0] for t in every_space))


def test_kernel_tuner_simulation_on_a_space_without_restrictions_that_has_holes(hub_dir, tmp_path):
    """A cache outside a hub layout has no restrictions: its space is what the cache holds, which here is not
    the whole Cartesian product, so Kernel Tuner must be told which configurations exist."""
    from generator.tasks.entries import load_tasks

    copy = tmp_path / "convolution_MI250X.json.gz"
    copy.write_bytes((hub_dir / "cachefiles" / "convolution_milo" / "MI250X.json.gz").read_bytes())
    (task,) = load_tasks(copy)
    product = int(np.prod([len(v) for v in task.space.tune_params.values()]))
    assert not task.space.restrictions and task.space.valid.shape[0] < product
    for name in ("diff_evo", "genetic_algorithm:engine=kerneltuner"):
        trace = run_once(task, parse_strategy(name), 5)
        assert trace.rows.size > 10, name  # each row is a configuration of the space (rows index it)


def test_a_crash_outside_the_strategy_does_not_blame_it(every_space, monkeypatch):
    """The old restriction, a lambda Kernel Tuner cannot read, crashed in python-constraint before diff_evo ran."""
    from generator.bench import kt_simulation

    pnpoly = next(t for t in every_space if t.name == "pnpoly/RTX_Titan")
    monkeypatch.setattr(kt_simulation, "kernel_tuner_restrictions", _the_old_restriction)
    (result,) = bench([pnpoly], [parse_strategy("diff_evo")], repeats=1, workers=1, progress=False, max_fevals=FEVALS)
    message = result.failed["pnpoly/RTX_Titan"]
    assert "TypeError" in message and "not in the strategy" in message and "fix the strategy" not in message


def _the_old_restriction(task, space):
    """What Tunesmith handed Kernel Tuner before issue 26 for a space without restrictions."""
    return [lambda p: space.is_param_config_valid(tuple(p.values()))]


def test_brute_force_goes_in_kernel_tuners_order_until_the_budget(hub_tasks):
    from kernel_tuner.searchspace import Searchspace

    from generator.tasks.space import SearchSpace

    task = next(t for t in hub_tasks if t.name == "convolution_milo/MI250X")
    kt_space = Searchspace(dict(task.space.tune_params), list(task.space.restrictions), 1_000_000_000)
    trace = run_once(task, parse_strategy("brute_force"), 0)
    ours = SearchSpace(task.space)
    assert 5 < trace.rows.size < ours.size  # the budget ends it
    assert [ours.config_of(r) for r in trace.rows] == kt_space.sorted_list()[: trace.rows.size]


@pytest.mark.parametrize("name", ["nsga2", "nsga3", "nsga2:engine=kerneltuner"])
def test_pymoo_strategies_follow_the_seed(name, every_space):
    """nsga2 and nsga3 run pymoo, whose generator only Kernel Tuner's `seed` option seeds (it was None)."""
    pnpoly = next(t for t in every_space if t.name == "pnpoly/RTX_Titan")
    spec = parse_strategy(name)
    budget = Budget(None, 60)
    first, again = (run_once(pnpoly, spec, 7, budget).rows.tolist() for _ in range(2))
    assert first == again and len(first) > 20


def test_latin_hypercube_sample_for_diff_evo_on_the_fast_space(hub_tasks, monkeypatch):
    """`diff_evo:engine=fast`: RunSpace's get_LHS_sample maps hypercube points to the closest valid configurations
    as Kernel Tuner's does, and a seeded run repeats (Kernel Tuner's own hypercube is drawn unseeded)."""
    import scipy.stats.qmc
    from kernel_tuner.searchspace import Searchspace

    from generator.bench.ktspace import RunSpace
    from generator.tasks.space import SearchSpace

    task = next(t for t in hub_tasks if t.name == "convolution_milo/MI250X")
    ours = RunSpace(SearchSpace(task.space))
    points = ours._space.valid[[3, 40, 41, 200]]  # valid points: each is its own closest configuration
    points = np.vstack([points, points[0] + 0])  # a duplicate: dropped, and the sample filled up at random

    class Fixed:
        def __init__(self, d, rng=None):
            pass

        def integers(self, l_bounds, u_bounds, n, endpoint):
            return points[:n]

    monkeypatch.setattr(scipy.stats.qmc, "LatinHypercube", Fixed)
    kt = Searchspace(dict(task.space.tune_params), list(task.space.restrictions), 1_000_000_000)
    np.random.seed(0)
    sample = ours.get_LHS_sample(5)
    assert len(set(sample)) == 5 and set(ours.get_LHS_sample(4)) == set(kt.get_LHS_sample(4))
    assert set(ours._space.config_of(r) for r in (3, 40, 41, 200)) < set(sample)
    monkeypatch.undo()
    runs = [run_once(task, parse_strategy("diff_evo:engine=fast"), 7).rows.tolist() for _ in range(2)]
    assert runs[0] == runs[1] and len(runs[0]) > 10
