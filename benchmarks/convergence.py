"""Convergence curves for the docs: best-so-far objective vs simulated tuning time, per strategy and space.

    python -m benchmarks.convergence [--tasks problem:gemm/H200 ...] [--strategies genetic_algorithm,...]
        [--repeats 10] [--seed 0] [--json benchmarks/results/convergence.json]

Each strategy runs `repeats` times per task on the methodology's time budget (generator.bench.runner.run_once:
the same runs `tunesmith bench` scores); the JSON holds, per task and strategy, the median over runs of the
best value found so far on a common grid of 200 time points. docs/_ext/results_pages/speed.py draws it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import sys
import warnings
from datetime import date
from pathlib import Path

import numpy as np

TASKS = ["problem:gemm/H200", "problem:conv2d/H200", "problem:dedisp/H200"]
STRATEGIES = "random_sample,genetic_algorithm,simulated_annealing,generated_algorithms/archive/knn_late_acceptance.py"


def best_so_far(task, trace, grid: np.ndarray) -> np.ndarray:
    """The best objective found by each time of the grid (NaN before the first valid result)."""
    values = task.key.values[trace.rows]
    values = np.where(task.key.failed[trace.rows] | np.isnan(values), np.inf, values)
    if task.objective.higher_is_better:
        values = -values
    best = np.minimum.accumulate(values) if len(values) else np.array([])
    times = np.cumsum(trace.seconds)
    idx = np.searchsorted(times, grid, side="right") - 1
    out = np.where(idx >= 0, best[np.clip(idx, 0, None)] if len(best) else np.inf, np.inf)
    out = np.where(np.isinf(out), np.nan, out)
    return -out if task.objective.higher_is_better else out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", nargs="+", default=TASKS)
    p.add_argument("--strategies", default=STRATEGIES)
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default="benchmarks/results/convergence.json")
    args = p.parse_args(argv)

    from generator.bench.runner import parse_strategy, run_once
    from generator.config import TasksConfig
    from generator.scoring.score import budget_for
    from generator.tasks.entries import load_task_set

    tasks = load_task_set(args.tasks, TasksConfig(train=args.tasks))
    result = {
        "command": "python -m benchmarks.convergence " + shlex.join(sys.argv[1:] if argv is None else argv),
        "date": date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores (shared)",
        "repeats": args.repeats,
        "seed": args.seed,
        "tasks": {},
    }
    for task in tasks:
        budget = budget_for(task)
        grid = np.linspace(0, budget.seconds, 200)
        valid = task.key.values[~task.key.failed & ~np.isnan(task.key.values)]
        optimum = float(valid.max() if task.objective.higher_is_better else valid.min())
        entry = {"objective": task.objective.name, "optimum": optimum, "budget_s": budget.seconds, "strategies": {}}
        for text in args.strategies.split(","):
            spec = parse_strategy(text)
            curves = [
                best_so_far(task, run_once(task, spec, args.seed * 1000 + r, budget), grid) for r in range(args.repeats)
            ]
            with warnings.catch_warnings():  # before any run's first evaluation every value is NaN
                warnings.simplefilter("ignore", RuntimeWarning)
                median = np.nanmedian(np.array(curves), axis=0)
            name = Path(text).stem if text.endswith(".py") else text
            entry["strategies"][name] = {
                "time_s": grid.round(4).tolist(),
                "best_median": [None if np.isnan(v) else round(float(v), 6) for v in median],
            }
            print(f"{task.name}: {name} done", flush=True)
        result["tasks"][task.name] = entry
    Path(args.json).write_text(json.dumps(result, indent=1))
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
