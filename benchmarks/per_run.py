"""Run by run on one space: each run's P, the best value it ended with, and how many configurations it measured.

A mean P hides a bimodal strategy: one that finds the optimum in half of its runs and stays in a worse
basin in the other half scores like a mediocre one. This prints and writes each run, and per strategy
how often each final best value was reached (the basins it ends in).

    python -m benchmarks.per_run --task ../shared/data/more_spaces/cachefiles/pnpoly/RTX_3060_laptop.json.gz \
        --strategies generated_algorithms/archive/knn_late_acceptance.py,firefly_algorithm --repeats 20 \
        --json benchmarks/results/pnpoly_3060_per_run.json

Runs use `tunesmith bench`'s seeds (repeat r of every strategy gets the same seed) and its budget.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import os
import platform
import sys
import warnings
from pathlib import Path

import numpy as np

from benchmarks._lib.per_run import traces_of
from generator.evaluation.evaluate import load_task_paths
from generator.scoring.score import score_traces


def runs_of(task, strategy: str, repeats: int, seed: int) -> list[dict]:
    """Each run of one strategy: its P (the score's own per-repeat P, as racing and `evaluate` use it),
    final best value, configurations measured."""
    values = np.asarray(task.key.values, dtype=float)
    sign = -1.0 if task.objective.higher_is_better else 1.0
    traces = traces_of(task, strategy, repeats, seed)
    out = []
    for r, (trace, p) in enumerate(zip(traces, score_traces(task, traces).per_repeat)):
        found = values[trace.rows]
        best = float(found[np.nanargmin(sign * found)]) if np.isfinite(found).any() else None
        out.append({"repeat": r, "p": p, "best": best, "evaluations": int(trace.rows.size)})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", required=True, help="a cache file, hub:NAME/GPU or problem:NAME/GPU")
    ap.add_argument("--strategies", required=True, help="comma-separated, as for tunesmith bench")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json")
    args = ap.parse_args()
    warnings.simplefilter("ignore")  # the task warnings bench prints; this script prints its own table
    task = load_task_paths([args.task])[0]
    doc = {
        "command": " ".join(["python", "-m", "benchmarks.per_run", *sys.argv[1:]]),
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "task": task.name,
        "repeats": args.repeats,
        "strategies": {},
    }
    for strategy in args.strategies.split(","):
        runs = runs_of(task, strategy, args.repeats, args.seed)
        ends = collections.Counter(round(r["best"], 2) if r["best"] is not None else None for r in runs)
        doc["strategies"][strategy] = {
            "mean_p": float(np.mean([r["p"] for r in runs])),
            "final_best_counts": {str(k): v for k, v in ends.most_common()},
            "runs": runs,
        }
        print(
            f"{strategy}: mean P {doc['strategies'][strategy]['mean_p']:.3f}; runs ended at "
            + ", ".join(f"{k} ({v}x)" for k, v in ends.most_common(5))
        )
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
