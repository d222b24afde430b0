"""Where strategies spend their first evaluations on one space: how good the best of them is (in multiples of
the optimum; for maximisation, as a fraction of it), the share in the slowest tenth, the share that meets a
condition on the parameters, and P.

    python -m benchmarks.first_evaluations --task problem:histogram/H100 \
        --strategies generated_algorithms/archive/lcb_wide_switching.py,generated_algorithms/archive/lcb_wide_switching_nearest.py,diff_evo,diff_evo:engine=fast,random_sample \
        --repeats 300 --first 5 --where "block_size_x >= 512" --json benchmarks/results/first_evaluations_histogram.json

On a space with a budget of a few dozen evaluations the first ones decide much of P (the methodology
integrates the best-so-far over time, and a slow configuration costs time as well as a bad value).
`docs/results/histogram-repair.md` uses this to show why the synthesizer's old random-neighbour repair
hurt on histogram, and that diff_evo's lead there comes from the order of Kernel Tuner's configuration
list: `diff_evo` (Kernel Tuner's own simulation, its list order) against `diff_evo:engine=fast` (the same
code on Tunesmith's space, which lists the configurations in another order).

Runs use `tunesmith bench`'s seeds and budget, as benchmarks/per_run.py does.
"""

from __future__ import annotations

import argparse
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
from generator.tasks.space import SearchSpace


def matching_rows(task, where: str | None) -> np.ndarray:
    """Per row of the space: whether its configuration meets `where` (a Python expression over parameter names)."""
    space = SearchSpace(task.space)
    if not where:
        return np.zeros(space.size, dtype=bool)
    names = list(task.space.tune_params)
    code = compile(where, "--where", "eval")
    return np.array([bool(eval(code, {}, dict(zip(names, config)))) for config in space.configs])


def first_evaluations(task, strategy: str, repeats: int, first: int, seed: int, matching: np.ndarray) -> dict:
    """One strategy's P and where its first `first` evaluations fell, over `repeats` runs."""
    values = np.asarray(task.key.values, dtype=float)
    sign = -1.0 if task.objective.higher_is_better else 1.0
    slow = sign * values >= np.nanpercentile(sign * values, 90)  # the slowest tenth (worst, for maximisation)
    traces = traces_of(task, strategy, repeats, seed)
    heads = [t.rows[:first] for t in traces]
    optimum = np.nanmin(sign * values)
    start = [np.nanmin(sign * values[h]) / optimum for h in heads if np.isfinite(values[h]).any()]
    return {
        "p": score_traces(task, traces).score,
        "start_vs_optimum_median": float(np.median(start)),  # best of the first evaluations, in optima
        "start_vs_optimum_q3": float(np.percentile(start, 75)),
        "slowest_tenth_share": float(np.mean(np.concatenate([slow[h] for h in heads]))),
        "where_share": float(np.mean(np.concatenate([matching[h] for h in heads]))),
        "evaluations": float(np.mean([t.rows.size for t in traces])),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", required=True, help="a cache file, hub:NAME/GPU or problem:NAME/GPU")
    ap.add_argument("--strategies", required=True, help="comma-separated, as for tunesmith bench")
    ap.add_argument("--repeats", type=int, default=100)
    ap.add_argument("--first", type=int, default=5, help="how many first evaluations of each run to look at")
    ap.add_argument("--where", help='a condition on the parameters, e.g. "block_size_x >= 512"')
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json")
    args = ap.parse_args()
    warnings.simplefilter("ignore")  # the task warnings bench prints; this script prints its own table
    task = load_task_paths([args.task])[0]
    matching = matching_rows(task, args.where)
    doc = {
        "command": " ".join(["python", "-m", "benchmarks.first_evaluations", *sys.argv[1:]]),
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "task": task.name,
        "repeats": args.repeats,
        "first": args.first,
        "where": args.where,
        "strategies": {},
    }
    print(
        f"{'strategy':56}{'P':>8}{'start/optimum':>15}{'(q3)':>8}{'slowest tenth':>15}{(args.where or '')[:22]:>24}"
        f"{'evaluations':>13}"
    )
    for strategy in args.strategies.split(","):
        row = first_evaluations(task, strategy, args.repeats, args.first, args.seed, matching)
        doc["strategies"][strategy] = row
        print(
            f"{strategy[-56:]:56}{row['p']:>8.3f}{row['start_vs_optimum_median']:>15.2f}{row['start_vs_optimum_q3']:>8.2f}"
            f"{row['slowest_tenth_share']:>15.2f}{row['where_share']:>24.2f}{row['evaluations']:>13.1f}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
