"""Per space: a winner's P against the best Kernel Tuner strategy there, and whether it is more than 0.10 below
it outside noise (flagship_tables.py, target2_table.py)."""

import math


def gaps(data: dict, winner: str) -> dict:
    """Per space: the winner's P, the best Kernel Tuner strategy's, and how far below it the winner is."""
    per_task = {k: r["per_task"] for k, r in data["results"].items() if "per_task" in r}
    out = {}
    for task, mine in per_task[winner].items():
        kt = {k: v[task] for k, v in per_task.items() if not k.endswith(".py") and task in v}
        best = max(kt, key=lambda k: kt[k]["score"])
        below = kt[best]["score"] - mine["score"]
        se = math.sqrt(kt[best]["se"] ** 2 + mine["se"] ** 2)
        # "more than 0.10 below" counts only where noise cannot explain it: below - 0.10 > 2 SE
        out[task] = {
            "winner": mine["score"],
            "winner_se": mine["se"],
            "best_kt": best,
            "best_kt_p": kt[best]["score"],
            "best_kt_se": kt[best]["se"],
            "below_best_kt": below,
            "below_se": se,
            "more_than_0.10_below": below - 0.10 > 2 * se,
        }
    return out
