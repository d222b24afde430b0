"""Hyperparameter variants of four shipped optimizers, for the protocol's table (issue 38).

Prints a comma-separated strategy list for `tunesmith bench --strategies`: each of the four modules with its
defaults and with N random draws near its defaults, within its declared ranges (seeded: the same list every time).
The four are the ones that led a first 20-repeat look at the training families (knn_vns_annealing,
knn_late_acceptance) and the two lcb modules that led on unseen kernels in issue 38's report. The variants
enter the cross-validated table like any other strategy, so the selection estimate (a pick made without the
family it is scored on) pays for the choice among them: picking the luckiest of many variants shows up there.

Usage: python3 -m benchmarks.protocol.variants [N]   (default 8)
"""

import random
import sys

from benchmarks._lib.paths import ROOT
from generator.export.upstream import read_exported

MODULES = ("knn_vns_annealing", "knn_late_acceptance", "lcb_greedy_switching", "lcb_annealing_ils")


def declared(module: str) -> dict:
    """The module's declared hyperparameters (read as text, not imported)."""
    return read_exported(ROOT / "generated_algorithms" / "archive" / f"{module}.py").hyperparameters


def draw(spec: dict, rng: random.Random):
    """A value near the default: the default times 2**u, u uniform in [-1, 1] (a zero default: low + a tenth of the
    range times 2**u), clipped to the declared range. The defaults were tuned for the campaigns' budgets; values
    across the whole range (init_size 49 with a budget of 30 evaluations) would only fill the table with losers."""
    kind, low, high, default = spec["type"], spec["low"], spec["high"], spec["default"]
    base = default if default else low + (high - low) / 10
    value = min(high, max(low, base * 2 ** rng.uniform(-1, 1)))
    return int(round(value)) if kind == "int" else float(f"{value:.4g}")


def variants(n: int) -> list[str]:
    rng = random.Random(38)
    out = []
    for module in MODULES:
        path = f"generated_algorithms/archive/{module}.py"
        out.append(path)
        hp = declared(module)
        for _ in range(n):
            out.append(path + "".join(f":{k}={draw(v, rng)}" for k, v in hp.items()))
    return out


if __name__ == "__main__":
    print(",".join(variants(int(sys.argv[1]) if len(sys.argv) > 1 else 8)))
