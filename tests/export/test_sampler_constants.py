"""GeneratedSampler on spaces with constant parameters (issue 15, item 4).

The benchmark hub's convolution space has parameters with a single value (filter_height = 15,
filter_width = 15, use_cmem = 1) that its restrictions name. Optuna never samples a single-valued
distribution, so the sampler's space leaves them out; their value is substituted into the
restrictions, as Kernel Tuner evaluates them with the constant. Tested on every hub space.
"""

from __future__ import annotations

import optuna
import pytest

from generator.export.optuna_sampler import GeneratedSampler
from generator.export.param_space import ParamSpace


class Descent:
    """A generated optimizer's shape: random samples, then Hamming descent."""

    def __init__(self, budget=5000):
        self.budget = budget

    def __call__(self, func, searchspace):
        while func.budget_spent_fraction < 1:
            x = min(searchspace.get_random_sample(2), key=func)
            fx = func(x)
            while True:
                best = min(searchspace.get_neighbors(x, neighbor_method="Hamming"), key=func, default=None)
                if best is None or func(best) >= fx:
                    break
                x, fx = best, func(best)


def _study(task, with_search_space: bool, n_trials: int = 12):
    names = task.space.param_names
    dists = {n: optuna.distributions.CategoricalDistribution(v) for n, v in task.space.tune_params.items()}
    valid = {task.space.config_of(r): r for r in range(len(task.space.valid))}
    value = {cfg: (float(task.key.values[r]) if not task.key.failed[r] else 1e20) for cfg, r in valid.items()}
    sampler = GeneratedSampler(
        Descent,
        budget=n_trials,
        seed=0,
        restrictions=list(task.space.restrictions),
        search_space=dists if with_search_space else None,
    )
    study = optuna.create_study(sampler=sampler)
    proposed = []

    def objective(trial):
        cfg = tuple(trial.suggest_categorical(n, task.space.tune_params[n]) for n in names)
        proposed.append((trial.number, cfg))
        return value.get(cfg, 1e30)  # outside the restrictions: the worst

    study.optimize(objective, n_trials=n_trials)
    return study, sampler, proposed, valid


@pytest.mark.parametrize("with_search_space", [True, False], ids=["search_space", "inferred"])
def test_generated_sampler_runs_on_every_hub_space(hub_tasks, with_search_space):
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    for task in hub_tasks:
        constants = {n: v[0] for n, v in task.space.tune_params.items() if len(v) == 1}
        study, sampler, proposed, valid = _study(task, with_search_space)
        assert len(study.trials) == 12, task.name
        assert sampler._adapter is not None, task.name  # the optimizer drove the study
        assert not set(sampler._names) & set(constants), task.name  # constants are not searched
        # the optimizer's space is exactly the task's: constants substituted into the restrictions
        assert sampler._adapter.space.size == len(task.space.valid), task.name
        driven = [cfg for number, cfg in proposed if number > 0]  # trial 0 is random when inferred
        assert all(cfg in valid for cfg in driven), task.name


def test_constant_that_fails_a_restriction_says_so():
    """A constant for which no configuration passes: the space's own one-line message, not 'unknown'."""
    with pytest.raises(ValueError, match="no configuration passes the restrictions"):
        ParamSpace({"x": [1, 2]}, ["x * w > 100"], constants={"w": 3})
    with pytest.raises(ValueError, match=r"unknown parameters \['v'\]"):
        ParamSpace({"x": [1, 2]}, ["x * v > 1"], constants={"w": 3})
    space = ParamSpace({"x": [1, 2, 3]}, ["x * w > 4", lambda p: p["w"] == 2], constants={"w": 2})
    assert space.size == 1 and space.config_of(0) == (3,)
