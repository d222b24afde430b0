"""Screened global sampling before local search (init "screened"): does it free the shipped winner's design
from trap basins without giving up the fast spaces? P ± standard error at the methodology's budget.

    python -m benchmarks.bench_screened_init [--repeats 20] [--seed 0] [--workers 2] \
        [--json benchmarks/results/screened_init.json] [--space ENTRY ...]

The composition is `generated_algorithms/archive/lcb_annealing_ils.py`'s (read from its marker line), with only
the initialisation replaced, so the table isolates the initial phase:

- `spread` (as shipped): 6 spread samples, then local search;
- `design_0.2`: a maximin design of a fifth of the budget (init "design", init_share 0.2);
- `screened_0.2`: a few random samples, then each time the most promising of 8 random unvisited
  configurations by the confidence-bound model, until a fifth of the budget is spent.

Spaces: flagship3's training and validation spaces, and the two trap spaces the earlier winners fell
into: convolution on MI250X (training) and pnpoly on the RTX 3060 laptop GPU, which is a *test* space of
the flagship campaigns. It is here because that is where the trap was diagnosed (benchmarks/per_run.py),
so the component was designed with it in view: the test tables of flagship3 are not blind on it.
"""

from __future__ import annotations

import sys

from benchmarks._lib import small_spaces as small
from benchmarks._lib.paths import ROOT

MORE = "../shared/data/more_spaces/cachefiles/"
SPACES = [
    "problem:gemm/H200",
    "problem:hotspot/H200",
    "problem:gemv/H100",
    "problem:transpose/H100",
    "problem:nbody/H100",
    "hub:convolution_milo/A100",
    "hub:convolution_milo/MI250X",
    "hub:dedispersion_milo/A100",
    MORE + "pnpoly/RTX_2080_Ti.json.gz",
    "problem:conv2d/H200",
    "problem:stencil3d/H100",
    MORE + "pnpoly/RTX_Titan.json.gz",
    MORE + "gemm/RTX_2080_Ti.json.gz",
    MORE + "pnpoly/RTX_3060_laptop.json.gz",
]
BASE = ROOT / "generated_algorithms" / "archive" / "lcb_annealing_ils.py"
VARIANTS = {
    "spread": ({}, {}),
    "design_0.2": ({"init": "design"}, {"init_share": 0.2}),
    "screened_0.2": ({"init": "screened"}, {"global_share": 0.2, "global_pool": 8}),
}


if __name__ == "__main__":
    sys.exit(small.main_on_variants(BASE, VARIANTS, SPACES, "screened_init.json"))
