"""Issue 29's second target at the issue's own 100 repeats: on every space we have, the winner against the
Kernel Tuner strategies that led there, P ± standard error.

    python -m benchmarks.target2_table --winner generated_algorithms/archive/lcb_wide_switching_nearest.py \
        [--reference benchmarks/results/flagship5/all_spaces.json] [--top 3] [--repeats 100] [--workers 2] \
        [--json benchmarks/results/target2_100.json]

`flagship_tables.py` measures every space at a few repeats (8), with all of Kernel Tuner's strategies; at that
many repeats a space's P moves by several tenths from one draw to the next, so its "more than 0.10 below"
only counts a shortfall that noise cannot explain. Here, on each space, the `--top` Kernel Tuner strategies
of that reference table (the ones that could be best there) and the winner run 100 times each, at the same
seeds. A space is written down as "more than 0.10 below" when the best of them is ahead of the winner by more
than 0.10 outside two standard errors, and as "behind by more than 0.10" when it is by the point estimate.

The JSON is written after each space, and a run started again with the same arguments goes on from there.
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

from benchmarks._lib.gaps import gaps
from benchmarks._lib.paths import ROOT
from generator.bench.command import bench
from generator.bench.results import standard_error
from generator.bench.runner import parse_strategy
from generator.tasks.entries import load_tasks

SHARED = ROOT.parent / "shared" / "data"


def leaders(reference: dict, task: str, top: int) -> list[str]:
    """The `top` Kernel Tuner strategies with the highest P on `task` in the reference table."""
    kt = [
        (r["per_task"][task]["score"], name)
        for name, r in reference["results"].items()
        if not name.endswith(".py") and task in r.get("per_task", {})
    ]
    return [name for _, name in sorted(kt, reverse=True)[:top]]


def every_task() -> dict:
    """Every space we have (the benchmark hub, more_spaces, the problems' caches), by name."""
    hub = os.environ.setdefault("TUNESMITH_BENCHMARK_HUB", str(SHARED / "benchmark_hub"))
    tasks = {}
    for folder in (Path(hub), SHARED / "more_spaces", ROOT / "problems"):
        tasks.update({t.name: t for t in load_tasks(folder)})
    return tasks


def measure(task, strategies: list[str], repeats: int, workers: int) -> dict:
    """P ± SE of each strategy on one task (bench's seeds: repeat r of every strategy has the same seed)."""
    results = bench(
        [task], [parse_strategy(s) for s in strategies], repeats=repeats, seed=0, workers=workers, progress=False
    )
    return {
        r.label: {"score": r.per_task[task.name].score, "se": standard_error(r.per_task[task.name])}
        for r in results
        if task.name in r.per_task
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--winner", required=True)
    ap.add_argument("--reference", default="benchmarks/results/flagship5/all_spaces.json")
    ap.add_argument("--top", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=100)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json", default="benchmarks/results/target2_100.json")
    args = ap.parse_args()
    warnings.simplefilter("ignore")  # the task warnings bench prints; the table is printed at the end
    reference = json.loads((ROOT / args.reference).read_text())
    out = ROOT / args.json
    doc = json.loads(out.read_text()) if out.exists() else {}
    settings = {"winner": args.winner, "reference": args.reference, "top": args.top, "repeats": args.repeats}
    if doc and doc.get("settings") != settings:
        raise SystemExit(
            f"target2_table: {args.json} holds a run with other settings ({doc.get('settings')}); "
            "pass another --json, or delete it to start again"
        )
    doc = doc or {
        "command": " ".join(["python", "-m", "benchmarks.target2_table", *sys.argv[1:]]),
        "settings": settings,
        "results": {},
    }
    tasks = every_task()
    for name in reference["tasks"]:
        if name in doc["results"].get(args.winner, {}).get("per_task", {}):
            continue  # measured by an earlier, interrupted run
        strategies = [args.winner, *leaders(reference, name, args.top)]
        for strategy, row in measure(tasks[name], strategies, args.repeats, args.workers).items():
            doc["results"].setdefault(strategy, {"per_task": {}})["per_task"][name] = row
        doc.update(
            date=datetime.date.today().isoformat(), machine=f"{platform.machine()}, {os.cpu_count()} cores (shared)"
        )
        out.write_text(json.dumps(doc, indent=1) + "\n")
        print(f"{name}: done", flush=True)
    doc["gaps"] = gaps(doc, args.winner)
    doc["spaces_more_than_0.10_below"] = sorted(t for t, g in doc["gaps"].items() if g["more_than_0.10_below"])
    doc["spaces_behind_by_more_than_0.10"] = sorted(t for t, g in doc["gaps"].items() if g["below_best_kt"] > 0.10)
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"{'space':28}{'winner':>16}{'best Kernel Tuner strategy':>30}{'':>16}{'below':>16}")
    for task, g in sorted(doc["gaps"].items(), key=lambda kv: -kv[1]["below_best_kt"]):
        print(
            f"{task:28}{g['winner']:>9.3f} ± {g['winner_se']:.3f}{g['best_kt']:>30}{g['best_kt_p']:>9.3f} ± "
            f"{g['best_kt_se']:.3f}{g['below_best_kt']:>9.3f} ± {g['below_se']:.3f}"
        )
    print(
        f"more than 0.10 below, outside 2 SE: {doc['spaces_more_than_0.10_below'] or 'none'}; "
        f"behind by more than 0.10: {doc['spaces_behind_by_more_than_0.10'] or 'none'}"
    )


if __name__ == "__main__":
    main()
