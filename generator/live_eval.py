"""Documented import path (live evaluation); the code lives in `generator.evaluation.live_eval`."""

from generator.evaluation.live_eval import *  # noqa: F403
