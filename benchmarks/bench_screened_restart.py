"""Screened restarts (restart "screened"): global samples spent only once the search stalls, against the
screened init that spends a fifth of the budget on them up front. P ± standard error at the methodology's budget.

    python -m benchmarks.bench_screened_restart [--repeats 20] [--seed 0] [--workers 2] \
        [--json benchmarks/results/screened_restart.json] [--space ENTRY ...]

The composition is flagship4's winner's (`generated_algorithms/archive/screened_memetic_annealing.py`, a memetic
population, read from its marker line), with only the initialisation and the restart replaced:

- `screened+perturb` (as shipped): screened init, restarts that kick the best member;
- `spread+perturb`: a spread initial population instead of the screened init;
- `spread+screened`: a spread initial population, and on stagnation the population is refilled with
  model-screened global samples (restart "screened");
- `screened+screened`: both.

Spaces: flagship4's training and validation spaces only (its test spaces stay blind for this component).
pnpoly on the RTX 3060 laptop GPU is the trap space among them.
"""

from __future__ import annotations

import sys

from benchmarks._lib import small_spaces as small
from benchmarks._lib.flagship_spaces import SPACES
from benchmarks._lib.paths import ROOT

BASE = ROOT / "generated_algorithms" / "archive" / "screened_memetic_annealing.py"
VARIANTS = {
    "screened+perturb": ({}, {}),
    "spread+perturb": ({"init": "spread"}, {}),
    "spread+screened": ({"init": "spread", "restart": "screened"}, {"restart_sample": 4, "global_pool": 8}),
    "screened+screened": ({"restart": "screened"}, {"restart_sample": 4, "global_pool": 8}),
}


if __name__ == "__main__":
    sys.exit(small.main_on_variants(BASE, VARIANTS, SPACES, "screened_restart.json"))
