"""Tuning a written template problem with the recommended optimizer, on its measured space.

The optimizer is `generated_algorithms.recommended`, the one the generalisation protocol picked and the
README recommends: every command that picks an optimizer for the user picks that one. It is trusted
code (shipped with Tunesmith) and runs on the cached space, so no kernel runs here.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from generator.bench.runner import parse_strategy, run_once
from generator.scoring.score import Budget
from generator.tasks.problems import load_problem_tasks


def recommended_optimizer() -> Path:
    """The recommended optimizer module (generated_algorithms/recommended.py)."""
    import generated_algorithms

    return generated_algorithms.recommended_path()


def tune_problem(
    problem: Path,
    original_ms: float,
    fevals: int | None = None,
    seed: int = 0,
    optimizer: Path | None = None,
    device: str = "CPU",
) -> dict:
    """Run the optimizer once on the problem's cache of `device` with `fevals` evaluations; best time, speed-up."""
    task = load_problem_tasks(problem, gpus=[device])[0]
    n = len(task.space.valid)
    fevals = fevals or max(5, n // 4)  # a quarter of the space: tuning, not brute force
    optimizer = optimizer or recommended_optimizer()
    trace = run_once(task, parse_strategy(str(optimizer)), seed, Budget(float("inf"), fevals))
    values = task.key.values[trace.rows]
    found = np.isfinite(values)
    best = float(values[found].min()) if found.any() else float("nan")
    config = None
    if found.any():
        row = int(trace.rows[found][np.argmin(values[found])])
        params = list(task.space.tune_params.values())
        config = {k: params[j][int(i)] for j, (k, i) in enumerate(zip(task.space.tune_params, task.space.valid[row]))}
    return {
        "optimizer": optimizer.stem,
        "fevals": int(min(fevals, n)),
        "space": n,
        "best_ms": best,
        "best_config": config,
        "speedup": original_ms / best if best > 0 else float("nan"),
        "seed": seed,
    }
