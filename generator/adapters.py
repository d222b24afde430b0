"""Documented import path (the ask/tell optimizer and the Optuna sampler); the code lives in `generator.export.adapters`."""

from generator.export.adapters import *  # noqa: F403
