"""Generated optimizers for tuners that drive the search themselves: ask/tell, and an Optuna sampler.

The code lives in one module per concern: `param_space` (the search space from `tune_params` and
restrictions), `ask_tell` (`AskTellOptimizer`) and `optuna_sampler` (`GeneratedSampler`). This module
is the import path the README documents (also as `generator.adapters`).
"""

from generator.export.ask_tell import FAILED, AskTellOptimizer, StopCriterionReached, run_ask_tell
from generator.export.optuna_sampler import MAX_VALUES, GeneratedSampler, values_of
from generator.export.param_space import ENUMERATE_LIMIT, ParamSpace

__all__ = [
    "ENUMERATE_LIMIT",
    "FAILED",
    "MAX_VALUES",
    "AskTellOptimizer",
    "GeneratedSampler",
    "ParamSpace",
    "StopCriterionReached",
    "run_ask_tell",
    "values_of",
]
