"""The Kernel Tuner entry point every exported module ends with: `tune()` and what it needs.

It does what `kernel_tuner.strategies.wrapper.OptAlgWrapper` does, and keeps the contract Kernel
Tuner's strategy tests hold the built-in strategies to: `strategy_options["x0"]` is the first
configuration evaluated (and the first of the optimizer's first random sample), an invalid `x0`
or an unknown option is a `ValueError` naming what is allowed. It also ends a run whose
optimizer catches StopCriterionReached and calls again. `{cls}` and `{provenance}` are filled in
by `module_text.module_source`; `module_text.rewrapped` puts today's version into an older export.
"""

TUNE_TEMPLATE = """

# --- Kernel Tuner entry point (written by `tunesmith export`) ---------------------------------

OPTIMIZER = {cls}
HYPERPARAMETERS = {cls}.hyperparameters if hasattr({cls}, "hyperparameters") else {{}}
PROVENANCE = {provenance}

# Kernel Tuner's convention for documenting strategy options: name -> (description, default).
_options = {{name: (str(spec.get("type", "")), spec.get("default")) for name, spec in HYPERPARAMETERS.items()}}
_options["budget"] = ("evaluations the optimizer plans for (its own stop; max_fevals still applies)", None)
_options["seed"] = ("seed for numpy's and random's global generators (None: leave them alone)", None)
_options["x0"] = ("first configuration to evaluate, one value per tune parameter (None: the optimizer's own)", None)
# What every Kernel Tuner strategy takes besides its own options (kernel_tuner.strategies.common.get_options).
KNOWN_OPTIONS = list(_options) + ["max_fevals", "time_limit", "searchspace_construction_options"]


def tune(searchspace, runner, tuning_options):
    \"\"\"Kernel Tuner strategy entry point: `strategy=<this module>`; hyperparameters via strategy_options.\"\"\"
    from kernel_tuner.strategies.common import CostFunc
    from kernel_tuner.util import StopCriterionReached

    options = dict(tuning_options.strategy_options or {{}})
    unknown = [key for key in options if key not in KNOWN_OPTIONS]
    if unknown:  # as Kernel Tuner's built-ins: a misspelt option is an error, not a silent default
        raise ValueError(f"Unrecognized option {{unknown[0]}} in strategy_options (allowed: {{KNOWN_OPTIONS}})")
    x0 = _start_point(options.get("x0"), searchspace)
    kwargs = {{k: options[k] for k in HYPERPARAMETERS if k in options}}
    if options.get("budget") is not None:
        kwargs["budget"] = int(options["budget"])
    if options.get("seed") is not None and "seed" not in HYPERPARAMETERS:
        import random

        import numpy

        random.seed(options["seed"])
        numpy.random.seed(options["seed"])
    optimizer = OPTIMIZER(**kwargs)
    # As OptAlgWrapper: configurations are passed as they are, no scaling and no snapping.
    costfunc_kwargs = getattr(optimizer, "costfunc_kwargs", {{"scaling": False, "snap": False}})
    cost_func = CostFunc(searchspace, tuning_options, runner, **costfunc_kwargs)
    if costfunc_kwargs.get("scaling"):
        cost_func.get_bounds_x0_eps()
    func = _ends_after_stop(cost_func, StopCriterionReached)
    try:
        if x0 is not None:  # Kernel Tuner's contract: x0 is the first configuration evaluated
            func(list(x0))
        optimizer(func, _StartsAt(searchspace, x0))
    except (StopCriterionReached, _RunEnded) as exc:
        if tuning_options.verbose:
            print(exc)
    return cost_func.results


def _start_point(x0, searchspace):
    \"\"\"strategy_options["x0"] as a configuration tuple, or None; ValueError when it is not in the space.\"\"\"
    if x0 is None:
        return None
    names = list(searchspace.tune_params)
    config = tuple(x0) if isinstance(x0, (list, tuple)) else None
    if config is None or len(config) != len(names) or not searchspace.is_param_config_valid(config):
        raise ValueError(f"x0 {{x0!r}} is not a valid configuration: give one value per tune parameter {{names}}, "
                         "in that order, that passes the restrictions")
    return config


class _RunEnded(BaseException):
    \"\"\"The optimizer called func again after StopCriterionReached: the budget is spent, the run ends.\"\"\"


class _StartsAt:
    \"\"\"The search space, except that its first random sample begins with x0: the optimizer starts there.\"\"\"

    def __init__(self, searchspace, x0):
        self._space, self._x0 = searchspace, x0

    def __getattr__(self, name):
        return getattr(self._space, name)

    def get_random_sample(self, num_samples):
        sample = self._space.get_random_sample(num_samples)
        if self._x0 is None or num_samples < 1:
            return sample
        x0, self._x0 = self._x0, None
        return [x0] + [c for c in sample if tuple(c) != x0][:num_samples - 1]


def _ends_after_stop(cost_func, stop):
    \"\"\"Kernel Tuner's CostFunc, except that a call after StopCriterionReached ends the run (an optimizer
    that catches the stop and keeps calling would otherwise loop for ever).\"\"\"

    # Defined in here, not at module level, so that the optimizer stays the module's only class
    # with a __call__ method (`tunesmith evaluate` and the sandbox's checks look for exactly one).
    class EndsAfterStop:
        stopped = False

        def __getattr__(self, name):
            return getattr(cost_func, name)

        def __call__(self, *args, **kwargs):
            if self.stopped:
                raise _RunEnded("func called again after StopCriterionReached")
            try:
                return cost_func(*args, **kwargs)
            except stop:
                self.stopped = True
                raise

    return EndsAfterStop()
"""
