"""llm_guided (offline synthesizer) against random search and a generated optimizer; hybrids against
their optimizer alone. Same tasks, budgets (the methodology's time budget) and seeds for all.

    python3 -m benchmarks.bench_guided [--hub ../shared/data/benchmark_hub] [--repeats 30] [--workers 2]
        [--tasks convolution_milo/A100,dedispersion_milo/A100] [--json out.json]
        [--strategies "random_sample,llm_guided,..."]

Per strategy and task: score P (mean over repeats), unique evaluations per run, and the best
configuration found as a share of the optimum (optimum / best time, 1 = the optimum; mean over
repeats). Prints a Markdown table. No LLM is reachable here: `llm_guided` is answered by the offline
synthesizer (generator/synth/proposals.py), so these numbers measure the machinery and the
synthesizer's proposals, not what a real LLM would propose.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks._lib.paths import ROOT
from generator.bench.command import run_seed
from generator.bench.runner import parse_strategy, run_once
from generator.guided.run import prepare_specs
from generator.scoring.score import budget_for, score_traces
from generator.tasks.entries import load_tasks

GENERATED = "benchmarks/strategies/quickstart_c0008.py"
DEFAULT = ",".join(
    [
        "random_sample",
        "llm_guided",
        "llm_guided:patience=1000:max_rounds=1000:show_evaluated=1000",
        GENERATED,
        f"llm_guided+{GENERATED}",
        f"llm_guided:seed_rounds=3+{GENERATED}",
        "genetic_algorithm",
        "llm_guided+genetic_algorithm",
        "llm_guided:seed_rounds=3+genetic_algorithm",
    ]
)

_TASKS: list = []


def _run(job):
    spec, ti, repeat, seed = job
    task = _TASKS[ti]
    start = time.perf_counter()
    trace = run_once(task, spec, run_seed(seed, repeat), budget_for(task))
    return spec.label, ti, repeat, trace, time.perf_counter() - start


def share_of_optimum(task, rows) -> float:
    """optimum / best found (objective minimised; 0 when nothing worked)."""
    v = np.asarray(task.key.values, dtype=float)
    v = -v if task.objective.higher_is_better else v
    found = v[rows][np.isfinite(v[rows])] if len(rows) else np.array([])
    best = np.nanmin(v)
    return float(best / found.min()) if found.size else 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--hub", default=os.environ.get("TUNESMITH_BENCHMARK_HUB", str(ROOT.parent / "shared/data/benchmark_hub"))
    )
    ap.add_argument("--tasks", default="convolution_milo/A100,dedispersion_milo/A100")
    ap.add_argument("--strategies", default=DEFAULT)
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json", dest="json_out")
    args = ap.parse_args()

    global _TASKS
    wanted = args.tasks.split(",")
    _TASKS = [t for t in load_tasks(args.hub) if t.name in wanted]
    specs = prepare_specs([parse_strategy(s) for s in args.strategies.split(",")], seed=args.seed)
    jobs = [(s, ti, r, args.seed) for s in specs for ti in range(len(_TASKS)) for r in range(args.repeats)]
    from tqdm import tqdm

    traces: dict = {}
    wall: dict = {}
    with mp.get_context("fork").Pool(args.workers) as pool:
        for label, ti, r, trace, secs in tqdm(pool.imap_unordered(_run, jobs), total=len(jobs), file=sys.stderr):
            traces.setdefault((label, ti), {})[r] = trace
            wall[label] = wall.get(label, 0.0) + secs
    rows, doc = [], {}
    for s in specs:
        per = {}
        for ti, task in enumerate(_TASKS):
            trs = [traces[(s.label, ti)][r] for r in range(args.repeats)]
            score = score_traces(task, trs).score
            per[task.name] = {
                "score": score,
                "evals": float(np.mean([t.rows.size for t in trs])),
                "share_of_optimum": float(np.mean([share_of_optimum(task, t.rows) for t in trs])),
            }
        mean = float(np.mean([p["score"] for p in per.values()]))
        doc[s.label] = {"score": mean, "per_task": per, "cpu_s_per_run": wall[s.label] / len(_TASKS) / args.repeats}
        cells = [f"{p['score']:.3f} / {p['evals']:.0f} / {p['share_of_optimum']:.3f}" for p in per.values()]
        rows.append(f"| `{s.label}` | " + " | ".join(cells) + f" | {mean:.3f} | {doc[s.label]['cpu_s_per_run']:.1f} |")
    head = "| strategy | " + " | ".join(f"{t.name}: P / evals / opt share" for t in _TASKS) + " | mean P | s/run |"
    print(head)
    print("|" + " --- |" * (len(_TASKS) + 3))
    print("\n".join(rows))
    print(f"\n{args.repeats} repeats, seed {args.seed}, {args.workers} workers")
    if args.json_out:
        Path(args.json_out).write_text(
            json.dumps(
                {"results": doc, "repeats": args.repeats, "seed": args.seed, "tasks": [t.name for t in _TASKS]},
                indent=1,
            )
            + "\n"
        )


if __name__ == "__main__":
    main()
