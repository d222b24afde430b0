"""The explore probes' pool and the model's exploration bonus together (global_pool x explore_weight) on
flagship5's winner. P ± standard error at the methodology's budget.

    python -m benchmarks.bench_switch_explore [--repeats 20] [--seed 0] [--workers 2] \
        [--json benchmarks/results/switch_explore.json] [--space ENTRY ...]

The composition is `generated_algorithms/archive/lcb_threshold_switching.py`'s (read from its marker line) with only
global_pool and explore_weight set. explore_weight scales the confidence bound's bonus for distance from
what was measured; a larger one sends the probes (and moves) further from the model's favourite basin.

The rule for shipping one, fixed before this ran: among the variants whose P on pnpoly/RTX_3060_laptop
(the trap, a training space) is at least 0.50 at 100 repeats (`--space` that file, `--repeats 100`), the one
with the highest mean over the 13 training and validation spaces at 20 repeats; none if none reaches 0.50.
The test spaces are not run here.
"""

from __future__ import annotations

import sys

from benchmarks._lib import flagship_spaces as restart
from benchmarks._lib import small_spaces as small
from benchmarks._lib.paths import ROOT

BASE = ROOT / "generated_algorithms" / "archive" / "lcb_threshold_switching.py"
VARIANTS = {
    f"pool {pool}, explore {weight}": ({}, {"global_pool": pool, "explore_weight": weight})
    for pool, weight in ((8, 0.5), (8, 1.0), (8, 1.5), (8, 2.0), (4, 1.0), (4, 2.0))
}


if __name__ == "__main__":
    sys.exit(small.main_on_variants(BASE, VARIANTS, restart.SPACES, "switch_explore.json"))
