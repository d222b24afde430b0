"""The search space a candidate declares (`hyperparameters`), as Optuna distributions."""

from __future__ import annotations

import optuna

from generator.tuning.storage import HpoError


def distributions(hyperparameters: dict, origin: str = "candidate") -> dict:
    """Optuna distributions for a `hyperparameters` declaration (int / float / log / categorical).

    "log" is a float searched on a log scale; int and float also take `"log": true` and `"step"`.
    """
    dists = {}
    from generator.candidate.checks import hyperparameter_values_problem

    for name, spec in hyperparameters.items():
        problem = hyperparameter_values_problem(name, spec) if isinstance(spec, dict) else None
        if problem:  # a study, its storage and the run directory keep values as JSON (issue 39)
            raise HpoError(f"{origin}: {problem}")
        try:
            dists[name] = _distribution(spec)
        except (KeyError, TypeError, ValueError) as exc:
            raise HpoError(
                f"{origin}: hyperparameter {name!r} {spec!r} is not usable ({exc}); declare "
                "{'type': 'int'|'float'|'log'|'categorical', 'low', 'high' | 'choices', 'default'}"
            ) from None
    return dists


def _distribution(spec: dict):
    kind = spec.get("type") or ("categorical" if "choices" in spec else "float")
    log = bool(spec.get("log", False)) or kind == "log"  # "log" is a float on a log scale
    if kind in ("categorical", "bool"):
        choices = spec.get("choices", [False, True] if kind == "bool" else None)
        return optuna.distributions.CategoricalDistribution(list(choices))
    if kind == "int":
        step = 1 if log else int(spec.get("step", 1))
        return optuna.distributions.IntDistribution(int(spec["low"]), int(spec["high"]), log=log, step=step)
    if kind in ("float", "log"):
        step = spec.get("step")
        return optuna.distributions.FloatDistribution(
            float(spec["low"]), float(spec["high"]), log=log, step=None if log or step is None else float(step)
        )
    raise ValueError(f"unknown type {kind!r}")


def suggest(trial: optuna.Trial, name: str, dist):
    """Ask the trial for one value of a distribution made by `distributions`."""
    if isinstance(dist, optuna.distributions.CategoricalDistribution):
        return trial.suggest_categorical(name, dist.choices)
    if isinstance(dist, optuna.distributions.IntDistribution):
        return trial.suggest_int(name, dist.low, dist.high, step=dist.step, log=dist.log)
    return trial.suggest_float(name, dist.low, dist.high, step=dist.step, log=dist.log)


def defaults(hyperparameters: dict) -> dict:
    """The declared default of every hyperparameter that has one."""
    return {name: spec["default"] for name, spec in hyperparameters.items() if "default" in spec}
