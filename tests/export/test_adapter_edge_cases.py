"""GeneratedSampler and AskTellOptimizer at their edges: defects that gave wrong results without a word
(issue 25)."""

from __future__ import annotations

import gc
import math
import pickle
import random
import threading
import time
import tracemalloc
import warnings

import numpy as np
import optuna
import pytest

from generated_algorithms.archive import knn_late_acceptance
from generator.export.ask_tell import FAILED, AskTellOptimizer
from generator.export.optuna_sampler import GeneratedSampler

# Optuna's warnings are errors here (issue 40, item 16): see tests/export/test_optuna_suite.py.
pytestmark = pytest.mark.filterwarnings(
    "error::optuna.exceptions.ExperimentalWarning", "error::FutureWarning", "error::DeprecationWarning"
)

IntD, CatD = optuna.distributions.IntDistribution, optuna.distributions.CategoricalDistribution


@pytest.fixture(autouse=True)
def _quiet():
    optuna.logging.set_verbosity(optuna.logging.WARNING)


class Recorder:
    """Evaluates random samples for ever, recording every (configuration, value) it is told."""

    told: list = []

    def __init__(self, budget=5000):
        self.budget = budget

    def __call__(self, func, searchspace):
        while True:
            for config in searchspace.get_random_sample(3):
                Recorder.told.append((tuple(config), func(config)))


def _told_only_measured(study, sampler):
    """Every value the optimizer was told belongs to a trial that measured exactly that configuration."""
    measured = {}
    for t in study.trials:
        if t.state == optuna.trial.TrialState.COMPLETE and all(n in t.params for n in sampler._names):
            measured.setdefault(tuple(t.params[n] for n in sampler._names), []).append(t.value)
    wrong = [(c, v) for c, v in Recorder.told if v != FAILED and v not in measured.get(c, [])]
    assert not wrong, f"told values of configurations never measured: {wrong[:5]}"


# --- 1. the optimizer learns only from measured configurations ---


def test_dynamic_range_tells_measured_values():
    Recorder.told = []
    sampler = GeneratedSampler(Recorder, seed=0)
    study = optuna.create_study(sampler=sampler)
    study.optimize(lambda t: t.suggest_int("y", 0, 10) + 0.01 * t.suggest_int("z", 0, 3), n_trials=10)
    study.optimize(lambda t: t.suggest_int("y", 20, 30) + 0.01 * t.suggest_int("z", 0, 3), n_trials=10)
    assert len(study.trials) == 20 and Recorder.told
    _told_only_measured(study, sampler)


def test_partial_enqueue_tells_measured_values():
    Recorder.told = []
    sampler = GeneratedSampler(Recorder, seed=0)
    study = optuna.create_study(sampler=sampler)
    study.optimize(lambda t: 10 * t.suggest_int("x", 0, 9) + t.suggest_int("y", 0, 9), n_trials=3)
    for x in (9, 8, 7):
        study.enqueue_trial({"x": x})
    study.optimize(lambda t: 10 * t.suggest_int("x", 0, 9) + t.suggest_int("y", 0, 9), n_trials=6)
    assert [t.params["x"] for t in study.trials[3:6]] == [9, 8, 7]
    _told_only_measured(study, sampler)


def test_conditional_parameters_tell_nothing_unmeasured():
    Recorder.told = []
    space = {"c": CatD([0, 1]), "a": IntD(0, 9), "b": IntD(0, 9)}
    sampler = GeneratedSampler(Recorder, search_space=space, seed=0)
    study = optuna.create_study(sampler=sampler)

    def objective(t):
        return t.suggest_int("a", 0, 9) if t.suggest_categorical("c", [0, 1]) else 10 + t.suggest_int("b", 0, 9)

    study.optimize(objective, n_trials=20)
    assert len(Recorder.told) >= 19
    _told_only_measured(study, sampler)


# --- 2. restrictions hold on every trial, from the first ---


def _readme_objective(trial):
    block = trial.suggest_categorical("block_size_x", [16, 32, 64, 128, 256])
    tile = trial.suggest_int("tile_size_x", 1, 8)
    return abs(block * tile - 700) + tile


@pytest.mark.parametrize("budget", [100, 30], ids=["readme", "budget_spent"])
def test_readme_example_keeps_its_restriction_on_every_trial(budget):
    for seed in range(10):
        sampler = GeneratedSampler(
            knn_late_acceptance.OPTIMIZER, budget=budget, seed=seed, restrictions=["block_size_x * tile_size_x <= 1024"]
        )
        study = optuna.create_study(sampler=sampler)
        study.optimize(_readme_objective, n_trials=100)
        broken = [t.number for t in study.trials if t.params["block_size_x"] * t.params["tile_size_x"] > 1024]
        assert not broken, f"seed {seed}: trials {broken} break the restriction"


def test_tell_refuses_configurations_outside_the_space():
    tune_params = {"block_size_x": [16, 32, 64, 128, 256], "tile_size_x": [1, 2, 4, 8]}
    with AskTellOptimizer(
        knn_late_acceptance.OPTIMIZER,
        tune_params,
        budget=10,
        seed=1,
        restrictions=["block_size_x * tile_size_x <= 1024"],
    ) as opt:
        opt.tell(opt.ask(), 5.0)
        for outside in [(256, 8), (48, 1), (16,), (16, 1, 1)]:
            with pytest.raises(ValueError, match="not a configuration of this space"):
                opt.tell(outside, 0.0)
        assert opt.best[1] == 5.0 and len(opt.history) == 1


# --- 3. PartialFixedSampler around a started sampler ---


def test_partial_fixed_sampler_around_a_started_sampler():
    sampler = GeneratedSampler(knn_late_acceptance.OPTIMIZER, seed=0)
    study = optuna.create_study(sampler=sampler)
    objective = lambda t: t.suggest_int("x", 0, 9) + 3 * t.suggest_int("y", 0, 9)  # noqa: E731 - one line
    study.optimize(objective, n_trials=5)
    assert sampler._adapter is not None  # started
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        study.sampler = optuna.samplers.PartialFixedSampler({"y": 4}, sampler)
    study.optimize(objective, n_trials=5)
    assert [t.params["y"] for t in study.trials[5:]] == [4] * 5


# --- 4. seeds, global generators, threads, pickling ---


def _numbers(seed, reseed=False, n=15):
    sampler = GeneratedSampler(knn_late_acceptance.OPTIMIZER, seed=seed)
    if reseed:
        sampler.reseed_rng()
    study = optuna.create_study(sampler=sampler)
    study.optimize(lambda t: (t.suggest_int("x", 0, 40) - 17) ** 2 + t.suggest_int("y", 0, 40), n_trials=n)
    return [(t.params["x"], t.params["y"]) for t in study.trials]


def test_seed_repeats_and_reseed_rng_reseeds_the_optimizer():
    assert _numbers(1) == _numbers(1)
    assert _numbers(1)[1:] != _numbers(1, reseed=True)[1:]


def test_global_generators_are_left_alone():
    random.seed(5)
    np.random.seed(5)
    before = random.getstate(), np.random.get_state()
    _numbers(1, n=20)
    after = random.getstate(), np.random.get_state()
    assert after[0] == before[0]
    assert all(np.array_equal(a, b) for a, b in zip(after[1], before[1]))


def test_no_thread_outlives_its_study():
    baseline = threading.active_count()
    for seed in range(20):
        _numbers(seed, n=5)
    gc.collect()
    deadline = time.monotonic() + 10
    while threading.active_count() > baseline and time.monotonic() < deadline:
        time.sleep(0.05)
    assert threading.active_count() == baseline


def test_started_sampler_pickles_and_goes_on():
    sampler = GeneratedSampler(knn_late_acceptance.OPTIMIZER, seed=0, restrictions=["x + y <= 30"])
    study = optuna.create_study(sampler=sampler)
    objective = lambda t: (t.suggest_int("x", 0, 20) - 7) ** 2 + t.suggest_int("y", 0, 20)  # noqa: E731 - one line
    study.optimize(objective, n_trials=6)
    study.sampler = pickle.loads(pickle.dumps(sampler))
    study.optimize(objective, n_trials=6)
    assert len(study.trials) == 12 and all(t.params["x"] + t.params["y"] <= 30 for t in study.trials)
    assert len(study.sampler._adapter.history) == 12  # the copy's optimizer was told every measured trial
    sampler.close()


# --- 5. wide integer ranges ---


def test_million_configurations_are_never_listed():
    """x, y in [0, 999]: the space is searched without listing it; memory stays far below its size."""
    sampler = GeneratedSampler(knn_late_acceptance.OPTIMIZER, seed=0)
    study = optuna.create_study(sampler=sampler)
    tracemalloc.start()
    try:
        study.optimize(
            lambda t: abs(t.suggest_int("x", 0, 999) - 400) + abs(t.suggest_int("y", 0, 999) - 9), n_trials=8
        )
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert sampler._adapter.space.size == 1_000_000 and sampler._adapter.space.valid is None
    assert peak < 20e6, f"{peak / 1e6:.0f} MB for 8 trials"
    sampler.close()


def test_wider_than_supported_range_is_refused_by_name():
    study = optuna.create_study(
        sampler=GeneratedSampler(
            knn_late_acceptance.OPTIMIZER, seed=0, search_space={"x": IntD(0, 10**7), "y": IntD(0, 3)}
        )
    )
    with pytest.raises(ValueError, match="10000001 values is more than GeneratedSampler searches"):
        study.optimize(lambda t: t.suggest_int("x", 0, 10**7) + t.suggest_int("y", 0, 3), n_trials=1)


# --- refused at once, supported by discretising ---


def test_multi_objective_is_refused_at_the_first_trial():
    study = optuna.create_study(
        directions=["minimize", "minimize"], sampler=GeneratedSampler(knn_late_acceptance.OPTIMIZER, seed=0)
    )
    with pytest.raises(ValueError, match="single-objective studies only"):
        study.optimize(lambda t: (t.suggest_int("x", 0, 3), t.suggest_int("y", 0, 3)), n_trials=3)
    assert len(study.trials) == 1


def test_float_parameters_are_searched_by_the_optimizer_on_a_grid():
    sampler = GeneratedSampler(knn_late_acceptance.OPTIMIZER, seed=0, float_steps=11)
    study = optuna.create_study(sampler=sampler)
    study.optimize(lambda t: (t.suggest_float("x", 0.0, 1.0) - 0.3) ** 2 + t.suggest_int("y", 0, 5), n_trials=20)
    grid = {round(0.1 * k, 10) for k in range(11)}
    assert all(round(t.params["x"], 10) in grid for t in study.trials)
    assert len(sampler._adapter.history) == 20  # every trial, the first one included, was told to the optimizer
    assert math.isclose(study.best_params["x"], 0.3) or study.best_value < 0.1
    sampler.close()


def test_true_and_1_are_two_values_numpy_bools_included():
    """Kernel Tuner's spaces mix them (test_mixed = ["test", 1, True, 2.45]); numpy's bool is Python's."""
    from generator.export.param_space import ParamSpace

    space = ParamSpace({"x": list(range(3)), "y": [True, False, 1]}, seed=1)
    assert space.size == 9
    assert space.get_neighbors((2, 1)) != space.get_neighbors((2, True))
    assert space.get_neighbors((2, np.bool_(True))) == space.get_neighbors((2, True))


def test_parallel_trials_keep_the_restriction_and_tell_every_measurement():
    sampler = GeneratedSampler(
        knn_late_acceptance.OPTIMIZER, budget=100, seed=3, restrictions=["block_size_x * tile_size_x <= 1024"]
    )
    study = optuna.create_study(sampler=sampler)
    study.optimize(_readme_objective, n_trials=40, n_jobs=2)
    assert all(t.params["block_size_x"] * t.params["tile_size_x"] <= 1024 for t in study.trials)
    measured = {(t.params["block_size_x"], t.params["tile_size_x"]) for t in study.trials}
    assert set(sampler._adapter.history) == measured
    sampler.close()
