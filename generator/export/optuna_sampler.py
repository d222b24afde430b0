"""`GeneratedSampler`: an Optuna sampler whose trials a generated optimizer proposes (through ask/tell).

What it supports: single-objective studies; categorical and integer parameters; float parameters,
discretised (by their `step`, else `float_steps` points, log-spaced for `log=True`); Kernel Tuner-
style restrictions, which every trial meets from the first; `PartialFixedSampler`; parallel trials
(`n_jobs > 1`: a trial that starts while the optimizer's proposal is pending gets a random valid
configuration, told to the optimizer once measured); pickling (the optimizer restarts in the
copy from the study's measured trials). What it refuses, at once and by name: multi-objective
studies, and a parameter with more than `MAX_VALUES` values.

The optimizer learns only what was measured: a trial is told against the parameters Optuna
recorded for it, and a proposal that was not measured as proposed (a fixed or enqueued value, a
range that changed) is answered as invalid, never with another configuration's value.
"""

from __future__ import annotations

import math
import threading
import weakref
from typing import Any

import numpy as np
import optuna

from generator.export.ask_tell import AskTellOptimizer
from generator.export.param_space import ParamSpace, as_list, partial_check

MAX_VALUES = 1_000_000  # per parameter; a wider integer range is refused (raise its step, or narrow it)


def values_of(distribution, float_steps: int = 64) -> list:
    """The values the optimizer searches for an Optuna distribution (floats discretised)."""
    d = distribution
    if isinstance(d, optuna.distributions.CategoricalDistribution):
        return list(d.choices)
    if isinstance(d, optuna.distributions.IntDistribution):
        _check_count((d.high - d.low) // d.step + 1)
        return list(range(d.low, d.high + 1, d.step))
    if isinstance(d, optuna.distributions.FloatDistribution):
        if d.step is not None:
            n = int(round((d.high - d.low) / d.step)) + 1
            _check_count(n)
            return [min(d.high, float(d.low + k * d.step)) for k in range(n)]
        grid = np.geomspace(d.low, d.high, float_steps) if d.log else np.linspace(d.low, d.high, float_steps)
        return sorted({min(d.high, max(d.low, float(v))) for v in grid})
    raise ValueError(f"GeneratedSampler does not support {type(d).__name__}; use categorical, int or float parameters")


def _check_count(n: int) -> None:
    if n > MAX_VALUES:
        raise ValueError(
            f"a parameter with {n} values is more than GeneratedSampler searches ({MAX_VALUES}); "
            "narrow its range or give it a step"
        )


def _plain(value):
    """numpy scalars as Python values (Optuna's storages and the suite expect int/float, not np types)."""
    return value.item() if isinstance(value, np.generic) else value


def _single_value(distribution):
    """The one value of a single-valued Optuna distribution (Optuna returns it without sampling)."""
    if isinstance(distribution, optuna.distributions.CategoricalDistribution):
        return distribution.choices[0]
    return distribution.low


def _single_objective(study) -> None:
    if len(study.directions) > 1:
        raise ValueError(
            "GeneratedSampler supports single-objective studies only; for several objectives use "
            "e.g. optuna.samplers.NSGAIISampler"
        )


class GeneratedSampler(optuna.samplers.BaseSampler):
    """An Optuna sampler that proposes what a generated optimizer asks for.

    `optimizer` is a generated optimizer class (or instance). The joint space is every parameter
    the study has used so far (the first trial is sampled parameter by parameter, like Optuna's
    CMA-ES sampler does, meeting the restrictions); `search_space` ({name: distribution}) fixes it up
    front instead. `restrictions` are Kernel Tuner-style constraints over those names; parameters
    with a single value are not searched (Optuna never samples them) but restrictions may name
    them: their value is substituted, as in Kernel Tuner. Float parameters are searched on a grid
    (their step, else `float_steps` points).
    """

    def __init__(
        self,
        optimizer,
        *,
        budget: int | None = None,
        search_space: dict | None = None,
        hyperparameters: dict | None = None,
        restrictions=None,
        seed: int | None = None,
        float_steps: int = 64,
    ):
        self._optimizer = optimizer
        self._budget = budget
        self._fixed_space = search_space
        self._hyperparameters = hyperparameters
        self._restrictions = as_list(restrictions)
        self._float_steps = int(float_steps)
        self._seed = seed
        self._rng = np.random.default_rng(seed)  # independent and fallback draws; never the global generators
        self._intersection = optuna.search_space.IntersectionSearchSpace()
        self._constants: dict[str, Any] = {}  # single-valued parameters: substituted into the restrictions
        self._restart()

    def _restart(self) -> None:
        """No optimizer yet: the next relative sample starts one (told every measured trial of the study)."""
        self._lock = threading.RLock()  # n_jobs > 1 calls the sampler from several threads
        self._adapter: AskTellOptimizer | None = None
        self._finalizer = None
        self._names: list[str] = []
        self._space_dists: dict = {}
        self._proposed: dict[int, tuple] = {}  # trial number -> the optimizer's proposal for it

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        for name in ("_lock", "_adapter", "_finalizer", "_names", "_space_dists", "_proposed"):
            state.pop(name)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._restart()

    def close(self) -> None:
        """Stop the optimizer's thread (done by itself when the budget is spent or the sampler is dropped)."""
        if self._finalizer is not None:
            self._finalizer()

    def before_trial(self, study, trial) -> None:
        _single_objective(study)

    def infer_relative_search_space(self, study, trial) -> dict:
        _single_objective(study)
        if self._adapter is not None:
            return dict(self._space_dists)
        space = self._fixed_space if self._fixed_space is not None else self._intersection.calculate(study)
        self._constants = {n: _single_value(d) for n, d in space.items() if d.single()}
        return {n: d for n, d in space.items() if not d.single()}

    def sample_relative(self, study, trial, search_space: dict) -> dict[str, Any]:
        _single_objective(study)
        if not search_space:
            return {}
        with self._lock:
            if self._adapter is None:
                self._start(study, search_space)
            config = None
            if self._adapter._pending is None and not self._adapter.done:  # else another trial holds it
                config = self._adapter.ask()
                if config is not None:
                    self._proposed[trial.number] = config
            if config is None:
                config = self._fallback()
            return {n: _plain(v) for n, v in zip(self._names, config) if n in search_space}

    def _fallback(self) -> tuple:
        """A random valid configuration, unseen if one turns up: restrictions hold after the budget, too."""
        sample = [tuple(c) for c in self._adapter.space.get_random_sample(16)]
        unseen = [c for c in sample if c not in self._adapter.history]
        return (unseen or sample)[0]

    def _start(self, study, search_space: dict) -> None:
        names = list(search_space)
        tune_params = {n: values_of(d, self._float_steps) for n, d in search_space.items()}
        space = ParamSpace(tune_params, self._restrictions, self._seed, constants=self._constants)
        adapter = AskTellOptimizer(
            self._optimizer, space, self._budget, hyperparameters=self._hyperparameters, seed=self._seed
        )
        self._names, self._space_dists, self._adapter = names, dict(search_space), adapter
        self._finalizer = weakref.finalize(self, adapter.close)  # its thread ends with the sampler at the latest
        for past in study.get_trials(deepcopy=False):  # what was measured before the optimizer started
            self._tell_measured(study, past, past.state, past.values)

    def sample_independent(self, study, trial, param_name, param_distribution):
        _single_objective(study)
        d = param_distribution
        with self._lock:
            if not self._restrictions and isinstance(d, optuna.distributions.IntDistribution):
                return self._random_int(d)  # without listing a range that may be wide
            values = values_of(d, self._float_steps)  # floats on the optimizer's grid: the trial can be told
            if self._restrictions:
                ok = partial_check(self._restrictions, self._constants)
                values = [v for v in values if ok({**trial.params, param_name: v})]
                if not values:
                    raise ValueError(
                        f"no value of {param_name} meets the restrictions with {trial.params}; pass "
                        "search_space={name: distribution} so that whole configurations are chosen"
                    )
            return _plain(values[self._rng.integers(len(values))])

    def _random_int(self, d) -> int:
        if d.log:  # log-uniform, as Optuna's samplers draw a log-scaled integer
            v = round(math.exp(self._rng.uniform(math.log(d.low - 0.5), math.log(d.high + 0.5))))
            return int(min(d.high, max(d.low, v)))
        return int(d.low + d.step * self._rng.integers((d.high - d.low) // d.step + 1))

    def after_trial(self, study, trial, state, values) -> None:
        with self._lock:
            if self._adapter is not None:
                self._tell_measured(study, trial, state, values)
                if self._adapter.done:
                    self.close()

    def _tell_measured(self, study, trial, state, values) -> None:
        """Tell the optimizer what this trial measured; a proposal measured otherwise is answered as invalid."""
        proposal = self._proposed.pop(trial.number, None)
        if state == optuna.trial.TrialState.COMPLETE and values:
            value = values[0] if study.direction == optuna.study.StudyDirection.MINIMIZE else -values[0]
        elif state in (optuna.trial.TrialState.FAIL, optuna.trial.TrialState.PRUNED):
            value = None
        else:
            return
        measured = None
        if all(n in trial.params for n in self._names):
            measured = tuple(trial.params[n] for n in self._names)
            if self._adapter.space.is_param_config_valid(measured):
                self._adapter.tell(measured, value)
        if proposal is not None and proposal != measured:
            self._adapter.skip(proposal)

    def reseed_rng(self) -> None:
        """New seeds from the operating system for the optimizer (restarted) and the random draws."""
        with self._lock:
            self._seed = int(np.random.SeedSequence().generate_state(1)[0])
            self._rng = np.random.default_rng(self._seed)
            self.close()
            self._restart()
