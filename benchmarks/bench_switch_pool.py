"""The explore probes' pool (hyperparameter global_pool of jump "adaptive" and "random"): how many random
configurations the model screens to pick one probe away from the current point. It was a fixed 32 before
flagship6; P ± standard error at the methodology's budget.

    python -m benchmarks.bench_switch_pool [--repeats 20] [--seed 0] [--workers 2] \
        [--json benchmarks/results/switch_pool.json] [--space ENTRY ...]

The composition is flagship5's validation winner's (`generated_algorithms/archive/lcb_threshold_switching.py`, a
trajectory with adaptive switching, read from its marker line) with only global_pool set: 32 is the
module as shipped, 8 the synthesizer's default now.

Spaces: flagship5's training and validation spaces only (its test spaces stay blind for this change).
pnpoly on the RTX 3060 laptop GPU is the trap space among them, where the change was found.
"""

from __future__ import annotations

import sys

from benchmarks._lib import flagship_spaces as restart
from benchmarks._lib import small_spaces as small
from benchmarks._lib.paths import ROOT

BASE = ROOT / "generated_algorithms" / "archive" / "lcb_threshold_switching.py"
VARIANTS = {f"pool {n}": ({}, {"global_pool": n}) for n in (32, 16, 8, 4)}


if __name__ == "__main__":
    sys.exit(small.main_on_variants(BASE, VARIANTS, restart.SPACES, "switch_pool.json"))
