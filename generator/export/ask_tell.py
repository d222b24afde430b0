"""Ask/tell around a generated optimizer: the caller measures, the optimizer proposes.

A generated optimizer is written "the Kernel Tuner way": it owns the loop and calls `func(config)`.
Other tuners (Optuna, a hand-written measurement loop, a scheduler) want the opposite: they ask
for a configuration, measure it, and tell the value. `AskTellOptimizer` inverts control in the
standard way: the optimizer runs in a thread whose `func` blocks until `tell()` answers. The two
sides take turns, like a coroutine: the optimizer runs only while `ask()` or `tell()` waits for its
next request, and during its turn the global `random` and `numpy.random` generators hold the
optimizer's own states, so generated code that draws from them is seeded by `seed` and the
caller's generators are left exactly as they were.

Only trusted code belongs here (an exported module, or a class you wrote): it runs in this process.
"""

from __future__ import annotations

import math
import queue
import random
import sys
import threading
import warnings
from collections.abc import Callable

import numpy as np

from generator.export.param_space import ParamSpace

try:  # the exception generated optimizers (and Kernel Tuner's CostFunc) use to end a search
    from kernel_tuner.util import StopCriterionReached
except ImportError:  # pragma: no cover - Kernel Tuner is a dependency; keep the adapter usable without it

    class StopCriterionReached(Exception):
        """The evaluation budget is spent."""


FAILED = sys.float_info.max  # Kernel Tuner's value for an invalid or failed configuration


def _instantiate(optimizer, budget: int, hyperparameters: dict | None):
    if isinstance(optimizer, type):
        return optimizer(budget=budget, **(hyperparameters or {}))
    if hyperparameters:
        raise ValueError("hyperparameters apply to an optimizer class; pass the class, not an instance")
    return optimizer


def _global_states() -> tuple:
    return random.getstate(), np.random.get_state()


def _set_global_states(states: tuple) -> None:
    random.setstate(states[0])
    np.random.set_state(states[1])


def own_global_states(seed: int | None) -> tuple:
    """Fresh states for the global generators, from `seed` (or the operating system's entropy)."""
    return random.Random(seed).getstate(), np.random.RandomState(seed).get_state()


class _Func:
    """The `func` a generated optimizer calls: answers revisits at once, otherwise waits for tell()."""

    def __init__(self, owner: AskTellOptimizer):
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

    def __init__(
        self,
        optimizer,
        space,
        budget: int | None = None,
        *,
        hyperparameters: dict | None = None,
        restrictions=None,
        seed: int | None = None,
        start_timeout_s: float = 60.0,
    ):
        self.space = ParamSpace(space, restrictions, seed) if isinstance(space, dict) else space
        size = getattr(self.space, "size", None)
        self.budget = int(budget or size or 5000)
        if self.budget < 1:
            raise ValueError("budget must be at least 1")
        self.history: dict[tuple, float] = {}  # configuration -> value told, in order
        self.error: BaseException | None = None  # what the optimizer raised, if it failed
        self._optimizer, self._hyperparameters = optimizer, hyperparameters
        self._timeout = start_timeout_s
        self._own_states = own_global_states(seed)  # the optimizer's global generators, swapped in on its turns
        self._pending: tuple | None = None  # what ask() returned and tell() has not answered yet
        self._waiting: tuple | None = None  # the configuration the optimizer's thread waits on
        self._to_caller: queue.Queue = queue.Queue()  # ("ask", config) | ("done", None)
        self._to_optimizer: queue.Queue = queue.Queue()  # ("value", float) | ("stop", None)
        self._thread: threading.Thread | None = None  # started by the first ask()
        self._stopping = False
        self._finished = False

    # --- the optimizer's side (its own thread) ---
    def _run(self) -> None:
        try:
            _instantiate(self._optimizer, self.budget, self._hyperparameters)(_Func(self), self.space)
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

    # --- taking turns ---
    def _turn(self, message: tuple | None) -> None:
        """Give the optimizer its turn (start it, or answer it) and wait for its next request."""
        caller = _global_states()
        _set_global_states(self._own_states)
        try:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True, name="asktell-optimizer")
                self._thread.start()
            elif message is not None:
                self._to_optimizer.put(message)
            self._receive(self._timeout)
        finally:
            self._own_states = _global_states()
            _set_global_states(caller)

    def _receive(self, timeout: float | None) -> None:
        try:
            kind, config = self._to_caller.get(timeout=timeout) if timeout else self._to_caller.get_nowait()
        except queue.Empty:
            return
        if kind == "done":
            self._finished = True
        else:
            self._waiting = config

    def _answer(self, value: float) -> None:
        self._waiting = None
        self._turn(("value", value))

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
        if self._thread is None:
            self._turn(None)
        elif self._waiting is None and not self._finished:
            self._receive(None)  # a request that came after an earlier wait timed out
        while self._waiting is not None and self._waiting in self.history:  # told out of band meanwhile
            self._answer(self.history[self._waiting])
        if self._waiting is not None:
            self._pending = self._waiting
            return self._pending
        if not self._finished:
            warnings.warn(f"optimizer asked nothing for {self._timeout:.0f} s; drawing at random", stacklevel=2)
        elif self.error is not None:
            warnings.warn(f"optimizer failed ({self.error!r}); drawing unseen configurations at random", stacklevel=2)
        self._pending = self._random_unseen()
        return self._pending

    def _random_unseen(self) -> tuple | None:
        size = getattr(self.space, "size", 64)
        for n in (64, 64, 64, size):  # a last full draw finds the few unseen ones of a nearly spent space
            for config in self.space.get_random_sample(min(n, size, 100_000)):
                if tuple(config) not in self.history:
                    return tuple(config)
        return None

    def tell(self, config, value: float | None) -> None:
        """Report the measured value (lower is better; None, NaN or inf mean the configuration failed)."""
        config = tuple(config)
        if not self.space.is_param_config_valid(config):
            names = list(getattr(self.space, "tune_params", {}))
            raise ValueError(
                f"tell({config!r}): not a configuration of this space; give one value of each of "
                f"{names}, in that order, that passes the restrictions"
            )
        value = FAILED if value is None or not math.isfinite(float(value)) else float(value)
        if config in self.history:
            value = min(value, self.history[config])
        self.history[config] = value
        if config == self._pending:
            self._pending = None
        if config == self._waiting:
            self._answer(value)

    def skip(self, config) -> None:
        """The asked configuration will not be measured: the optimizer sees it as invalid; nothing is recorded."""
        config = tuple(config)
        if config == self._pending:
            self._pending = None
        if config == self._waiting and config not in self.history:
            self._answer(FAILED)

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
        if self._thread is not None and self._thread.is_alive():
            caller = _global_states()
            _set_global_states(self._own_states)
            try:
                self._to_optimizer.put(("stop", None))
                self._thread.join(timeout)
            finally:
                self._own_states = _global_states()
                _set_global_states(caller)

    def __enter__(self) -> AskTellOptimizer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def run_ask_tell(opt: AskTellOptimizer, objective: Callable[[tuple], float]) -> tuple[tuple | None, float]:
    """Drive `opt` with `objective` until it is done; returns the best configuration and value."""
    with opt:
        while (config := opt.ask()) is not None:
            opt.tell(config, objective(config))
    return opt.best
