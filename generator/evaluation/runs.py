"""What one sandboxed run of a candidate is given: its seed and its constructor arguments."""

from __future__ import annotations

import numpy as np

from generator.candidate.checks import OptimizerInterface
from generator.errors import TunesmithError


def run_seed(seed: int, repeat: int) -> int:
    """The seed of one repeat (random, numpy's global RNG and the search space are seeded with it).

    The same formula as `generator.bench.command.run_seed`, so that `evaluate` and `bench` run a strategy
    with identical seeds and get identical traces.
    """
    return int(np.random.SeedSequence([int(seed), int(repeat)]).generate_state(1)[0])


def init_kwargs(iface: OptimizerInterface, hyperparameters: dict | None, max_fevals: int | None) -> dict:
    """Constructor arguments: declared defaults overridden by `hyperparameters` (+ budget if capped)."""
    kwargs = iface.defaults()
    for name, value in (hyperparameters or {}).items():
        if name not in iface.hyperparameters:
            raise TunesmithError(
                f"hyperparameter {name!r} is not declared by {iface.class_name} "
                f"(declared: {sorted(iface.hyperparameters)}); pass only declared names"
            )
        kwargs[name] = value
    if max_fevals is not None and ("budget" in iface.init_params or iface.init_varkw):
        kwargs.setdefault("budget", int(max_fevals))
    return kwargs
