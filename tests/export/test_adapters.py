"""Ask/tell adapter and Optuna sampler around generated optimizers (trusted classes, in-process)."""

import math

import optuna
import pytest

from generator.export.ask_tell import FAILED, AskTellOptimizer, run_ask_tell
from generator.export.optuna_sampler import GeneratedSampler
from generator.export.param_space import ParamSpace

# Optuna's warnings are errors here (issue 40, item 16): see tests/export/test_optuna_suite.py.
pytestmark = pytest.mark.filterwarnings(
    "error::optuna.exceptions.ExperimentalWarning", "error::FutureWarning", "error::DeprecationWarning"
)

TUNE_PARAMS = {"x": list(range(16)), "y": list(range(16)), "z": ["a", "b", "c"]}


def objective(c):
    return (c[0] - 11) ** 2 + (c[1] - 4) ** 2 + {"a": 3, "b": 0, "c": 1}[c[2]]


class Descent:
    """Steepest descent with random restarts: the shape of a generated optimizer."""

    hyperparameters = {"sample": {"type": "int", "low": 1, "high": 8, "default": 2}}

    def __init__(self, budget=5000, sample=2):
        self.budget, self.sample = budget, sample

    def __call__(self, func, searchspace):
        while func.budget_spent_fraction < 1:
            x = min(searchspace.get_random_sample(self.sample), key=func)
            fx = func(x)
            while True:
                best = min(searchspace.get_neighbors(x, neighbor_method="Hamming"), key=func, default=None)
                if best is None or func(best) >= fx:
                    break
                x, fx = best, func(best)


class Revisitor:
    """Evaluates the same configuration again and again: revisits must not cost budget."""

    def __init__(self, budget=5000):
        self.budget = budget

    def __call__(self, func, searchspace):
        for x in searchspace.get_random_sample(3):
            for _ in range(5):
                func(x)


class Broken:
    def __init__(self, budget=5000):
        pass

    def __call__(self, func, searchspace):
        func(searchspace.get_random_sample(1)[0])
        raise ZeroDivisionError("bug in generated code")


def test_ask_tell_respects_budget_restrictions_and_uniqueness():
    opt = AskTellOptimizer(Descent, TUNE_PARAMS, budget=40, restrictions=["x + y < 20"], seed=3)
    asked = []
    while (config := opt.ask()) is not None:
        assert opt.ask() == config  # asking again before telling returns the same configuration
        asked.append(config)
        opt.tell(config, objective(config))
    assert len(asked) == 40 == len(set(asked))
    assert all(c[0] + c[1] < 20 for c in asked)
    assert opt.best[1] == min(objective(c) for c in asked)
    assert not opt._thread.is_alive()  # the optimizer thread ended cleanly
    assert opt.error is None


def test_descent_beats_its_own_first_sample():
    best, value = run_ask_tell(AskTellOptimizer(Descent, TUNE_PARAMS, budget=60, seed=0), objective)
    assert value <= 1 and objective(best) == value


def test_revisits_are_free_and_early_return_falls_back_to_random():
    opt = AskTellOptimizer(Revisitor, TUNE_PARAMS, budget=10, seed=1)
    asked = []
    while (config := opt.ask()) is not None:
        asked.append(config)
        opt.tell(config, objective(config))
    assert len(asked) == 10 == len(set(asked))  # 3 from the optimizer, then 7 unseen at random


def test_failures_and_optimizer_errors():
    with pytest.warns(UserWarning, match="bug in generated code"):
        opt = AskTellOptimizer(Broken, {"a": [1, 2, 3]}, budget=3, seed=0)
        first = opt.ask()
        opt.tell(first, float("nan"))  # a failed measurement
        assert opt.history[first] == FAILED
        rest = [opt.ask() for _ in range(1)]
    assert isinstance(opt.error, ZeroDivisionError)
    opt.tell(rest[0], 1.0)
    last = opt.ask()
    opt.tell(last, 2.0)
    assert opt.ask() is None and opt.done and opt.best == (rest[0], 1.0)


def test_close_stops_a_waiting_optimizer():
    opt = AskTellOptimizer(Descent, TUNE_PARAMS, budget=100, seed=0)
    opt.tell(opt.ask(), 5.0)
    opt.ask()
    opt.close()
    assert not opt._thread.is_alive()


def test_param_space_matches_kernel_tuner_neighbours():
    space = ParamSpace({"a": [1, 2, 4], "b": [0, 1]}, restrictions=[lambda p: p["a"] * (p["b"] + 1) <= 4])
    assert space.size == 5 and not space.is_param_config_valid((4, 1))
    assert sorted(space.get_neighbors((2, 0), "Hamming")) == [(1, 0), (2, 1), (4, 0)]
    assert sorted(space.get_neighbors((1, 0), "adjacent")) == [(1, 1), (2, 0), (2, 1)]


def _suggest(trial):
    return (
        trial.suggest_int("x", 0, 15),
        trial.suggest_int("y", 0, 15),
        trial.suggest_categorical("z", ["a", "b", "c"]),
    )


def test_generated_sampler_drives_an_optuna_study():
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sampler = GeneratedSampler(Descent, budget=50, seed=0)
    study = optuna.create_study(sampler=sampler)
    study.optimize(lambda t: objective(_suggest(t)), n_trials=50)
    seen = [tuple(t.params.values()) for t in study.trials]
    assert len(set(seen)) == 50  # the optimizer never asks twice; trial 0 was random and told to it
    assert study.best_value <= 2
    assert len(sampler._adapter.history) == 50


def test_generated_sampler_maximises_and_falls_back_for_floats():
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    space = {
        "x": optuna.distributions.IntDistribution(0, 15),
        "y": optuna.distributions.IntDistribution(0, 15),
        "z": optuna.distributions.CategoricalDistribution(["a", "b", "c"]),
    }
    study = optuna.create_study(direction="maximize", sampler=GeneratedSampler(Descent, search_space=space, seed=1))

    def score(trial):
        noise = trial.suggest_float("noise", 0.0, 1e-3)  # not in the optimizer's space: sampled at random
        return -objective(_suggest(trial)) - noise

    study.optimize(score, n_trials=40)
    assert study.best_value > -2
    assert math.isfinite(study.best_value)
