"""P per repeat, and how far the mean of a few repeats can be trusted: the standard error that racing,
`evaluate` and the fitness records report (repeat r of every task is seeded alike, so a repeat is a sample).
"""

from __future__ import annotations

import numpy as np


def standard_error(values) -> float | None:
    """Standard error of the mean of `values` (None below two values)."""
    v = np.asarray(list(values), dtype=float)
    if v.size < 2:
        return None
    return float(np.std(v, ddof=1) / np.sqrt(v.size))


def repeat_values(per_task: dict, how: str = "mean") -> np.ndarray:
    """P per repeat over tasks (repeat r of every task, aggregated `how`): the overall standard error's sample."""
    from generator.scoring.degenerate import aggregate

    rows = [list(t.get("per_repeat") or []) for t in per_task.values()]
    n = min((len(r) for r in rows), default=0)
    return np.array([aggregate([r[i] for r in rows], how) for i in range(n)], dtype=float)
