"""Optuna's own sampler tests (`optuna.testing.pytest_samplers`, shipped with optuna) run against GeneratedSampler.

The shared cases a sampler must pass (float, int and categorical parameters, conditional and dynamic
ranges, NaN objectives, PartialFixedSampler, relative sampling, parallel trials) and the refusal of
multi-objective studies that Optuna's single-objective samplers owe (`SingleOnlySamplerTestCase`).
Run with the first shipped winner; TUNESMITH_SUITE_ALL_WINNERS=1 adds the other two (3x the time).
"""

from __future__ import annotations

import importlib
import os

import optuna
import pytest
from optuna.testing.pytest_samplers import (BasicSamplerTestCase, RelativeSamplerTestCase,
                                            SingleOnlySamplerTestCase)

from generator.export.adapters import GeneratedSampler

WINNERS = ["knn_late_acceptance", "knn_annealing_ils", "knn_tabu_late_acceptance"]


@pytest.fixture(autouse=True)
def _quiet():
    optuna.logging.set_verbosity(optuna.logging.WARNING)


class TestGeneratedSamplerAgainstOptunasSuite(BasicSamplerTestCase, RelativeSamplerTestCase,
                                              SingleOnlySamplerTestCase):
    @pytest.fixture(params=WINNERS if os.environ.get("TUNESMITH_SUITE_ALL_WINNERS") else WINNERS[:1])
    def sampler(self, request):
        optimizer = importlib.import_module(f"generated_algorithms.{request.param}").OPTIMIZER
        return lambda: GeneratedSampler(optimizer, seed=0)
