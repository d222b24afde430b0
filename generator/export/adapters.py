"""Generated optimizers for tuners that drive the search themselves: ask/tell, and an Optuna sampler.

A generated optimizer is written "the Kernel Tuner way": it owns the loop and calls `func(config)`.
Other tuners (Optuna, a hand-written measurement loop, a scheduler) want the opposite: they ask
for a configuration, measure it, and tell the value. `AskTellOptimizer` inverts control in the
standard way: the optimizer runs in a thread whose `func` blocks on a queue until `tell()` answers.

Only trusted code belongs here (an exported module, or a class you wrote): it runs in this process.
"""

from __future__ import annotations

from generator import parsing

import itertools
import math
import queue
import sys
import threading
import warnings
from typing import Any, Callable, Iterable

import numpy as np
import optuna

try:  # the exception generated optimizers (and Kernel Tuner's CostFunc) use to end a search
    from kernel_tuner.util import StopCriterionReached
except ImportError:  # pragma: no cover - Kernel Tuner is a dependency; keep the adapter usable without it
    class StopCriterionReached(Exception):
        """The evaluation budget is spent."""

FAILED = sys.float_info.max  # Kernel Tuner's value for an invalid or failed configuration
_SAFE_BUILTINS = {"min": min, "max": max, "abs": abs, "int": int, "float": float, "round": round, "len": len}


class ParamSpace:
    """A search space built from Kernel Tuner-style `tune_params` and restrictions, with the optimizer API.

    `constants` ({name: value}) are parameters with a single value that are not searched (Optuna
    never samples them); restrictions that name them see their value, as in Kernel Tuner.
    """

    def __init__(self, tune_params: dict[str, Iterable], restrictions=None, seed: int | None = None,
                 constants: dict | None = None):
        self.tune_params = {k: list(v) for k, v in tune_params.items()}
        self.param_names = list(self.tune_params)
        self.rng = np.random.default_rng(seed)
        checks = [_restriction(r, self.param_names, constants or {}) for r in _as_list(restrictions)]
        values = list(self.tune_params.values())
        rows = [idx for idx in itertools.product(*[range(len(v)) for v in values])
                if all(ok(dict(zip(self.param_names, (v[i] for v, i in zip(values, idx))))) for ok in checks)]
        if not rows:
            raise ValueError("no configuration passes the restrictions; loosen them or widen tune_params")
        self.valid = np.asarray(rows, dtype=np.int32)
        self._value_index = [{v: i for i, v in enumerate(vals)} for vals in values]
        self._row_of = {tuple(int(i) for i in r): n for n, r in enumerate(self.valid)}

    @property
    def size(self) -> int:
        return len(self.valid)

    def config_of(self, row: int) -> tuple:
        return tuple(vals[i] for vals, i in zip(self.tune_params.values(), self.valid[row]))

    def row_of(self, config) -> int | None:
        """Row of a valid configuration, or None."""
        try:
            idx = tuple(lk[v] for lk, v in zip(self._value_index, config, strict=True))
        except (KeyError, TypeError, ValueError):
            return None
        return self._row_of.get(idx)

    def is_param_config_valid(self, config) -> bool:
        return self.row_of(tuple(config)) is not None

    def get_random_sample(self, num_samples: int) -> list[tuple]:
        """Distinct valid configurations drawn uniformly."""
        rows = self.rng.choice(self.size, size=min(int(num_samples), self.size), replace=False)
        return [self.config_of(int(r)) for r in rows]

    def get_neighbors(self, param_config, neighbor_method: str = "Hamming") -> list[tuple]:
        """Valid neighbours with Kernel Tuner's meaning of "Hamming", "adjacent" and "strictly-adjacent"."""
        try:
            idx = np.asarray([lk[v] for lk, v in zip(self._value_index, param_config, strict=True)])
        except (KeyError, TypeError, ValueError):
            return []
        diff = np.abs(self.valid - idx)
        if neighbor_method == "Hamming":
            mask = (diff != 0).sum(axis=1) == 1
        elif neighbor_method in ("adjacent", "strictly-adjacent"):
            mask = (diff.max(axis=1) <= 1) & (diff.sum(axis=1) > 0)
        else:
            raise ValueError(f"unknown neighbor_method {neighbor_method!r}; use Hamming, adjacent or strictly-adjacent")
        return [self.config_of(int(r)) for r in np.flatnonzero(mask)]


def _as_list(restrictions) -> list:
    if restrictions is None:
        return []
    return [restrictions] if isinstance(restrictions, str) or callable(restrictions) else list(restrictions)


def _restriction(r, names, constants=None) -> Callable[[dict], bool]:
    """A restriction as Kernel Tuner takes it: an expression string, or a callable on the parameter dict.

    Constant parameters (`constants`, not searched) are substituted: the restriction sees their value."""
    constants = dict(constants or {})
    if callable(r):
        return (lambda p: bool(r({**constants, **p}))) if constants else (lambda p: bool(r(p)))
    code = parsing.compile_code(str(r), "<restriction>", "eval")
    unknown = set(code.co_names) - set(names) - set(constants) - set(_SAFE_BUILTINS)
    if unknown:
        raise ValueError(f"restriction {r!r} names unknown parameters {sorted(unknown)}; use names from tune_params")
    if constants:
        return lambda p: bool(eval(code, {"__builtins__": _SAFE_BUILTINS}, {**constants, **p}))  # noqa: S307
    return lambda p: bool(eval(code, {"__builtins__": _SAFE_BUILTINS}, p))  # noqa: S307 - the user's own expression


def _instantiate(optimizer, budget: int, hyperparameters: dict | None):
    if isinstance(optimizer, type):
        return optimizer(budget=budget, **(hyperparameters or {}))
    if hyperparameters:
        raise ValueError("hyperparameters apply to an optimizer class; pass the class, not an instance")
    return optimizer


class _Func:
    """The `func` a generated optimizer calls: answers revisits at once, otherwise waits for tell()."""

    def __init__(self, owner: "AskTellOptimizer"):
        self._owner = owner

    @property
    def budget_spent_fraction(self) -> float:
        return min(1.0, len(self._owner.history) / self._owner.budget)

    def __call__(self, config) -> float:
        return self._owner._evaluate_from_thread(tuple(config))


class AskTellOptimizer:
    """Drive a generated optimizer with `ask()` -> configuration and `tell(config, value)` (minimised).

    `optimizer` is an optimizer class (built with `budget` and `hyperparameters`) or an instance;
    `space` is an object with Kernel Tuner's search-space API, or a `tune_params` dict (then
    `restrictions` apply). The budget counts unique configurations told; revisits are free, as in
    Kernel Tuner. `ask()` returns None once the budget is spent or every configuration was seen. If
    the optimizer returns (or fails) early, unseen configurations are drawn at random.
    """

    def __init__(self, optimizer, space, budget: int | None = None, *, hyperparameters: dict | None = None,
                 restrictions=None, seed: int | None = None, start_timeout_s: float = 60.0):
        self.space = ParamSpace(space, restrictions, seed) if isinstance(space, dict) else space
        size = getattr(self.space, "size", None)
        self.budget = int(budget or size or 5000)
        if self.budget < 1:
            raise ValueError("budget must be at least 1")
        self.history: dict[tuple, float] = {}  # configuration -> value told, in order
        self.error: BaseException | None = None  # what the optimizer raised, if it failed
        self._rng = np.random.default_rng(seed)
        self._timeout = start_timeout_s
        self._pending: tuple | None = None
        self._to_caller: queue.Queue = queue.Queue()  # ("ask", config) | ("done", None)
        self._to_optimizer: queue.Queue = queue.Queue()  # ("value", float) | ("stop", None)
        self._stopping = False
        self._finished = False
        if seed is not None:  # generated code often draws from the global generators
            np.random.seed(seed)
            __import__("random").seed(seed)
        algorithm = _instantiate(optimizer, self.budget, hyperparameters)
        self._thread = threading.Thread(target=self._run, args=(algorithm,), daemon=True,
                                        name=f"asktell-{type(algorithm).__name__}")
        self._thread.start()

    # --- the optimizer's side (its own thread) ---
    def _run(self, algorithm) -> None:
        try:
            algorithm(_Func(self), self.space)
        except StopCriterionReached:
            pass
        except BaseException as exc:  # noqa: BLE001 - reported to the caller through .error
            self.error = exc
        finally:
            self._to_caller.put(("done", None))

    def _evaluate_from_thread(self, config: tuple) -> float:
        if self._stopping or len(self.history) >= self.budget:
            raise StopCriterionReached("budget spent")
        if config in self.history:
            return self.history[config]
        if not self.space.is_param_config_valid(config):
            return FAILED
        self._to_caller.put(("ask", config))
        kind, value = self._to_optimizer.get()
        if kind == "stop":
            raise StopCriterionReached("ask/tell optimizer closed")
        return value

    # --- the caller's side ---
    @property
    def done(self) -> bool:
        """True when the budget is spent (or the space exhausted)."""
        return len(self.history) >= min(self.budget, getattr(self.space, "size", self.budget))

    def ask(self) -> tuple | None:
        """The next configuration to evaluate (the same one again until it is told), or None when done."""
        if self._pending is not None:
            return self._pending
        if self.done:
            self.close()
            return None
        while not self._finished:
            try:
                kind, config = self._to_caller.get(timeout=self._timeout)
            except queue.Empty:
                warnings.warn(f"optimizer asked nothing for {self._timeout:.0f} s; drawing at random", stacklevel=2)
                break
            if kind == "done":
                self._finished = True
                if self.error is not None:
                    warnings.warn(f"optimizer failed ({self.error!r}); drawing unseen configurations at random",
                                  stacklevel=2)
                break
            if config not in self.history:  # told out of band meanwhile: answer it without asking
                self._pending = config
                return config
            self._to_optimizer.put(("value", self.history[config]))
        self._pending = self._random_unseen()
        return self._pending

    def _random_unseen(self) -> tuple | None:
        size = getattr(self.space, "size", 64)
        for n in (64, 64, 64, size):  # a last full draw finds the few unseen ones of a nearly spent space
            for config in self.space.get_random_sample(min(n, size)):
                if tuple(config) not in self.history:
                    return tuple(config)
        return None

    def tell(self, config, value: float | None) -> None:
        """Report the measured value (lower is better; None, NaN or inf mean the configuration failed)."""
        config = tuple(config)
        value = FAILED if value is None or not math.isfinite(float(value)) else float(value)
        if config in self.history:
            value = min(value, self.history[config])
        self.history[config] = value
        if config == self._pending:
            self._pending = None
            if not self._finished:
                self._to_optimizer.put(("value", value))

    @property
    def best(self) -> tuple[tuple | None, float]:
        """The best configuration told so far and its value."""
        if not self.history:
            return None, math.inf
        config = min(self.history, key=self.history.get)
        return config, self.history[config]

    def close(self, timeout: float = 5.0) -> None:
        """Stop the optimizer thread; it sees StopCriterionReached on its next evaluation."""
        self._stopping = True
        if self._thread.is_alive():
            self._to_optimizer.put(("stop", None))
            self._thread.join(timeout)

    def __enter__(self) -> "AskTellOptimizer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def run_ask_tell(opt: AskTellOptimizer, objective: Callable[[tuple], float]) -> tuple[tuple | None, float]:
    """Drive `opt` with `objective` until it is done; returns the best configuration and value."""
    with opt:
        while (config := opt.ask()) is not None:
            opt.tell(config, objective(config))
    return opt.best


def _values_of(distribution) -> list | None:
    """The finite list of values of a categorical or integer Optuna distribution, else None."""
    if isinstance(distribution, optuna.distributions.CategoricalDistribution):
        return list(distribution.choices)
    if isinstance(distribution, optuna.distributions.IntDistribution):
        return list(range(distribution.low, distribution.high + 1, distribution.step))
    return None


def _single_value(distribution):
    """The one value of a single-valued Optuna distribution (Optuna returns it without sampling)."""
    if isinstance(distribution, optuna.distributions.CategoricalDistribution):
        return distribution.choices[0]
    return distribution.low


class GeneratedSampler(optuna.samplers.BaseSampler):
    """An Optuna sampler that proposes what a generated optimizer asks for (categorical/integer params).

    `optimizer` is a generated optimizer class (or instance). The joint space is every categorical
    and integer parameter the study has used so far (the first trial is sampled at random, like
    Optuna's CMA-ES sampler does); `search_space` ({name: distribution}) fixes it up front instead.
    `restrictions` are Kernel Tuner-style constraints over those names; parameters with a single
    value are not searched (Optuna never samples them) but restrictions may name them: their value
    is substituted, as in Kernel Tuner. Float parameters, and trials run while another one is still
    pending (n_jobs > 1), fall back to Optuna's RandomSampler.
    """

    def __init__(self, optimizer, *, budget: int | None = None, search_space: dict | None = None,
                 hyperparameters: dict | None = None, restrictions=None, seed: int | None = None):
        self._optimizer = optimizer
        self._budget = budget
        self._fixed_space = search_space
        self._hyperparameters = hyperparameters
        self._restrictions = restrictions
        self._seed = seed
        self._random = optuna.samplers.RandomSampler(seed=seed)
        self._intersection = optuna.search_space.IntersectionSearchSpace()
        self._adapter: AskTellOptimizer | None = None
        self._names: list[str] = []
        self._constants: dict[str, Any] = {}  # single-valued parameters: substituted into the restrictions
        self._proposed: dict[int, tuple] = {}  # trial number -> configuration it was given

    def infer_relative_search_space(self, study, trial) -> dict:
        if self._adapter is not None:
            return {n: self._space_dists[n] for n in self._names}
        space = self._fixed_space if self._fixed_space is not None else self._intersection.calculate(study)
        self._constants = {n: _single_value(d) for n, d in space.items() if d.single()}
        return {n: d for n, d in space.items() if _values_of(d) is not None and not d.single()}

    def sample_relative(self, study, trial, search_space: dict) -> dict[str, Any]:
        if not search_space:
            return {}
        if len(study.directions) > 1:
            raise ValueError("GeneratedSampler supports single-objective studies only")
        if self._adapter is None:
            self._start(study, search_space)
        if self._adapter._pending is not None or self._adapter.done:
            return {}  # a parallel trial holds the optimizer, or the budget is spent: sample at random
        config = self._adapter.ask()
        if config is None:
            return {}
        self._proposed[trial.number] = config
        return dict(zip(self._names, config))

    def _start(self, study, search_space: dict) -> None:
        self._names = list(search_space)
        self._space_dists = dict(search_space)
        tune_params = {n: _values_of(d) for n, d in search_space.items()}
        space = ParamSpace(tune_params, self._restrictions, self._seed, constants=self._constants)
        self._adapter = AskTellOptimizer(self._optimizer, space, self._budget,
                                         hyperparameters=self._hyperparameters, seed=self._seed)
        for past in study.get_trials(deepcopy=False):  # what was measured before the optimizer started
            self._tell_trial(study, past, past.state, past.values)

    def sample_independent(self, study, trial, param_name, param_distribution):
        return self._random.sample_independent(study, trial, param_name, param_distribution)

    def after_trial(self, study, trial, state, values) -> None:
        if self._adapter is not None:
            self._tell_trial(study, trial, state, values)

    def _tell_trial(self, study, trial, state, values) -> None:
        config = self._proposed.pop(trial.number, None)
        if config is None:
            if not all(n in trial.params for n in self._names):
                return
            config = tuple(trial.params[n] for n in self._names)
        if state == optuna.trial.TrialState.COMPLETE and values:
            value = values[0] if study.direction == optuna.study.StudyDirection.MINIMIZE else -values[0]
        elif state in (optuna.trial.TrialState.FAIL, optuna.trial.TrialState.PRUNED):
            value = None
        else:
            return
        self._adapter.tell(config, value)

    def reseed_rng(self) -> None:
        self._random.reseed_rng()
