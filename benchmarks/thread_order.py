"""How far P of honest threaded code moves between identical evaluations (thread order alone).

    python3 -m benchmarks.thread_order [--hub ../shared/data/benchmark_hub] [--evaluations 8] [--repeats 10]
        [--json benchmarks/results/thread_order.json]

Evaluates tests/hostile/threaded_population.py (a population evaluated batch by batch through
ThreadPoolExecutor(8).map) several times with the same seed on every hub task, and the same code
with plain `map` (one thread) twice. The threads reach `func` in an order the scheduler decides, so
rows are charged in a different order and the run that crosses the budget mid-batch evaluates a
different last few rows; one thread gives the same P every time. Prints the spread per task.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from benchmarks._lib.paths import ROOT
from generator.evaluation.evaluate import evaluate_source
from generator.tasks.entries import load_tasks

THREADED = (ROOT / "tests" / "hostile" / "threaded_population.py").read_text()
ONE_THREAD = THREADED.replace("pool.map(func, batch)", "map(func, batch)")


def scores(source: str, tasks: list, evaluations: int, repeats: int) -> dict[str, list[float]]:
    out = {t.name: [] for t in tasks}
    for _ in range(evaluations):
        fit = evaluate_source(source, tasks, repeats=repeats, seed=0, timeout_s=60)
        if fit.error is not None:
            raise SystemExit(f"the evaluation failed: {fit.error}")
        for name, tf in fit.per_task.items():
            out[name].append(tf.score)
    return out


def spread(per_task: dict[str, list[float]]) -> dict:
    means = [sum(v[i] for v in per_task.values()) / len(per_task) for i in range(len(next(iter(per_task.values()))))]
    return {
        "per_task": {k: {"min": min(v), "max": max(v), "spread": max(v) - min(v)} for k, v in per_task.items()},
        "mean_over_tasks": {"min": min(means), "max": max(means), "spread": max(means) - min(means)},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--hub", default=os.environ.get("TUNESMITH_BENCHMARK_HUB", str(ROOT.parent / "shared/data/benchmark_hub"))
    )
    ap.add_argument("--evaluations", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    tasks = load_tasks(args.hub)
    doc = {
        "evaluations": args.evaluations,
        "repeats": args.repeats,
        "cpus": os.cpu_count(),
        "threaded": spread(scores(THREADED, tasks, args.evaluations, args.repeats)),
        "one_thread": spread(scores(ONE_THREAD, tasks, 2, args.repeats)),
    }
    print(f"{'task':<28} {'spread, 8 threads':>18} {'spread, 1 thread':>17}")
    for name, s in doc["threaded"]["per_task"].items():
        print(f"{name:<28} {s['spread']:18.4f} {doc['one_thread']['per_task'][name]['spread']:17.4f}")
    print(
        f"{'mean over tasks':<28} {doc['threaded']['mean_over_tasks']['spread']:18.4f} "
        f"{doc['one_thread']['mean_over_tasks']['spread']:17.4f}"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
