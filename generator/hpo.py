"""Documented import path (Optuna HPO); the code lives in `generator.tuning.hpo`."""

from generator.tuning.hpo import *  # noqa: F403
