"""Oracle and runner semantics against Kernel Tuner's own simulation, and the `tunesmith bench` command."""

import json
import sys
import textwrap

import numpy as np
import pytest

from generator.bench.command import bench, run_seed
from generator.bench.kt_simulation import StrategyError, run_kernel_tuner
from generator.bench.results import table
from generator.bench.runner import parse_strategy, run_once
from generator.cli import main
from generator.scoring.oracle import Oracle, StopCriterionReached
from generator.scoring.score import Budget, budget_for
from generator.tasks.space import SearchSpace

# A deterministic walk: its only randomness is a seeded random.Random over *sorted* neighbour lists,
# so it takes the same path on Kernel Tuner's Searchspace and on ours. It revisits configurations
# and asks for invalid ones on purpose.
WALKER = textwrap.dedent("""
    import random

    class Walker:
        def __init__(self, budget=5000, start=None, seed=0):
            self.start, self.seed = tuple(start), seed

        def __call__(self, func, searchspace):
            rng = random.Random(self.seed)
            current = self.start
            func(current)
            while True:
                params = list(searchspace.tune_params.values())
                if rng.random() < 0.1:  # a configuration that may fail the restrictions
                    func(tuple(rng.choice(v) for v in params))
                neighbours = sorted(searchspace.get_neighbors(current, neighbor_method="Hamming"))
                current = rng.choice(neighbours)
                func(current)
                if rng.random() < 0.2:
                    func(self.start)  # a revisit
""")

TUNE_MODULE = textwrap.dedent("""
    from kernel_tuner.strategies.common import CostFunc
    from kernel_tuner.util import StopCriterionReached
    from walker import Walker

    def tune(searchspace, runner, tuning_options):
        opts = dict(tuning_options.strategy_options)
        cost_func = CostFunc(searchspace, tuning_options, runner, scaling=False, snap=False)
        try:
            Walker(start=opts["start"], seed=opts["seed"])(cost_func, searchspace)
        except StopCriterionReached:
            pass
        return cost_func.results
""")


@pytest.fixture(scope="module")
def small_task(hub_tasks):
    """convolution MI250X: its budget allows only ~40 evaluations, so runs are quick."""
    return next(t for t in hub_tasks if t.name == "convolution_milo/MI250X")


@pytest.fixture()
def walker_files(tmp_path, monkeypatch):
    (tmp_path / "walker.py").write_text(WALKER)
    (tmp_path / "walker_tune.py").write_text(TUNE_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


# ------------------------------------------------------------------ the oracle


def test_oracle_follows_costfunc_rules(conv_task):
    small_task = conv_task  # (the A100 space has failed configurations)
    space = SearchSpace(small_task.space)
    key = small_task.key
    good = int(np.flatnonzero(~key.failed)[0])
    bad = int(np.flatnonzero(key.failed)[0])
    oracle = Oracle(small_task, Budget(seconds=1e9, max_fevals=3), space)
    assert oracle(space.config_of(good)) == pytest.approx(key.values[good])
    assert oracle(space.config_of(good)) == pytest.approx(key.values[good])  # revisit: free
    assert oracle(space.config_of(bad)) == sys.float_info.max  # failed: counted, worst cost
    invalid = tuple(v[-1] for v in space.tune_params.values())
    if not space.is_param_config_valid(invalid):
        assert oracle(invalid) == sys.float_info.max  # invalid: not counted
    assert oracle.fevals == 2 and oracle.budget_spent_fraction == pytest.approx(2 / 3)
    third = int(np.flatnonzero(~key.failed)[1])
    with pytest.raises(StopCriterionReached):  # the call that spends the budget is recorded, then stops
        oracle(space.config_of(third))
    with pytest.raises(StopCriterionReached):
        oracle(space.config_of(good))
    trace = oracle.trace()
    assert trace.rows.tolist() == [good, bad, third]
    np.testing.assert_allclose(trace.seconds, key.eval_seconds[[good, bad, third]])


def test_oracle_time_budget(small_task):
    oracle = Oracle(small_task, budget_for(small_task))
    space = oracle.space
    space.seed(0)
    with pytest.raises(StopCriterionReached):
        for cfg in space.get_random_sample(space.size):
            oracle(cfg)
    trace = oracle.trace()
    spent = trace.seconds.sum()
    assert spent > oracle.budget.seconds and spent - trace.seconds[-1] <= oracle.budget.seconds


# ------------------------------------------------------------------ runner vs Kernel Tuner


def test_custom_class_and_module_match_kernel_tuner_simulation(small_task, walker_files):
    import walker
    from kernel_tuner.strategies.wrapper import OptAlgWrapper

    space = SearchSpace(small_task.space)
    start = space.config_of(0)
    budget = Budget(seconds=1e9, max_fevals=60)
    kt = run_kernel_tuner(small_task, OptAlgWrapper(walker.Walker(start=start, seed=4)), {}, 1, budget)
    ours = run_once(
        small_task, parse_strategy(f"{walker_files / 'walker.py'}:Walker:start={start!r}:seed=4"), 1, budget, space
    )
    module = run_once(
        small_task, parse_strategy(f"{walker_files / 'walker_tune.py'}:start={start!r}:seed=4"), 1, budget, space
    )
    assert kt.rows.size == 60
    assert ours.rows.tolist() == kt.rows.tolist() == module.rows.tolist()
    assert module.fevals == kt.fevals  # Kernel Tuner's results: revisits in, invalid configurations out


def test_builtin_runs_with_seeds_and_budget(small_task):
    spec = parse_strategy("genetic_algorithm:popsize=6:maxiter=5")
    assert spec.kind == "builtin" and spec.options == {"popsize": 6, "maxiter": 5}
    a = run_once(small_task, spec, 3)
    b = run_once(small_task, spec, 3)
    assert a.rows.tolist() == b.rows.tolist() and a.rows.size > 5
    assert len(set(a.rows.tolist())) == a.rows.size
    assert run_seed(0, 1) != run_seed(0, 2) and run_seed(0, 1) != run_seed(1, 0)


def test_strategy_errors_are_one_line(tmp_path):
    with pytest.raises(StrategyError, match="not a Kernel Tuner built-in"):
        parse_strategy("no_such_strategy")
    with pytest.raises(StrategyError, match="not found"):
        parse_strategy(str(tmp_path / "missing.py"))
    (tmp_path / "two.py").write_text(
        "class A:\n    def __call__(self, f, s): pass\nclass B(A):\n    def __call__(self, f, s): pass\n"
    )
    from generator.bench.runner import optimizer_class

    with pytest.raises(StrategyError, match="several classes"):
        optimizer_class(parse_strategy(str(tmp_path / "two.py")))


# ------------------------------------------------------------------ bench and its CLI


def test_bench_parallel_equals_serial_and_is_deterministic(small_task, conv_task):
    specs = [parse_strategy("tests/data/strategies/random_walk.py")]
    serial = bench([small_task, conv_task], specs, repeats=3, seed=5, workers=1, progress=False)
    pooled = bench([small_task, conv_task], specs, repeats=3, seed=5, workers=2, progress=False)
    assert serial[0].per_task == pooled[0].per_task
    assert list(serial[0].per_task) == [small_task.name, conv_task.name]
    assert np.isfinite(serial[0].score)
    assert "random_walk.py" in table(serial) and "mean" in table(serial)


def test_bench_cli_table_and_json(hub_dir, tmp_path, capsys):
    out = tmp_path / "bench.json"
    cache = hub_dir / "cachefiles" / "convolution_milo" / "MI250X.json.gz"
    rc = main(
        [
            "bench",
            "--tasks",
            str(cache),
            "--strategies",
            "random_sample,tests/data/strategies/random_walk.py",
            "--repeats",
            "3",
            "--seed",
            "0",
            "--workers",
            "2",
            "--json",
            str(out),
            "--no-progress",
            "--se",
        ]
    )
    assert rc == 0
    printed = capsys.readouterr().out
    assert "convolution_milo/MI250X" in printed and "random_sample" in printed and "wall s" in printed
    assert printed.count(" ± ") == 4  # --se: P ± standard error, per task and for the mean
    doc = json.loads(out.read_text())
    for name in ("random_sample", "tests/data/strategies/random_walk.py"):
        entry = doc["results"][name]
        assert set(entry) >= {"score", "per_task", "wall_s"}
        task = entry["per_task"]["convolution_milo/MI250X"]
        assert set(task) >= {"score", "std", "se"} and task["se"] == pytest.approx(task["std"] / np.sqrt(3))
        assert entry["score"] == pytest.approx(entry["per_task"]["convolution_milo/MI250X"]["score"])
        assert entry["se"] == pytest.approx(task["se"])  # the mean's, over one task: that task's


def test_bench_cli_errors_exit_nonzero_with_one_line(tmp_path, capsys):
    bad = tmp_path / "broken.json"
    bad.write_text("{not json")
    assert main(["bench", "--tasks", str(bad), "--strategies", "random_sample", "--repeats", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("tunesmith: error:") and "broken.json" in err and "\n" not in err
    assert main(["bench", "--tasks", str(bad), "--strategies", "nonsense", "--repeats", "1"]) == 2
    assert "not a Kernel Tuner built-in" in capsys.readouterr().err


def test_fast_engine_runs_every_listed_builtin(small_task):
    """Kernel Tuner's own strategy code runs unchanged on the fast space and oracle."""
    from generator.bench.runner import FAST_BUILTINS, engine_of

    space = SearchSpace(small_task.space)
    for name in FAST_BUILTINS:
        spec = parse_strategy(name)
        assert engine_of(spec) == "fast"
        trace = run_once(small_task, spec, 1, space=space)
        assert trace.rows.size >= 2, name
        assert len(set(trace.rows.tolist())) == trace.rows.size
    assert engine_of(parse_strategy("genetic_algorithm:engine=kerneltuner")) == "kerneltuner"
    with pytest.raises(StrategyError, match="engine"):
        engine_of(parse_strategy("genetic_algorithm:engine=warp"))


def test_package_accounting_keeps_revisits_with_their_runtimes(small_task):
    spec = parse_strategy("genetic_algorithm:engine=kerneltuner:accounting=package:popsize=6:maxiter=4")
    trace = run_once(small_task, spec, 2)
    assert trace.fevals == trace.rows.size  # every Kernel Tuner result is a point on the time axis
    assert (trace.seconds > 0).all()
    simulated = run_once(small_task, parse_strategy("genetic_algorithm:engine=kerneltuner:popsize=6:maxiter=4"), 2)
    assert set(trace.rows.tolist()) == set(simulated.rows.tolist())
    with pytest.raises(StrategyError, match="accounting"):
        run_once(small_task, parse_strategy("genetic_algorithm:engine=kerneltuner:accounting=wall"), 2)
