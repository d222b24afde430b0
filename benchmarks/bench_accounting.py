"""Which part of the methodology package's time accounting moves a strategy's score?

    python3 -m benchmarks.bench_accounting [--strategy genetic_algorithm] [--repeats 25] [--seed 0]

Runs a built-in in Kernel Tuner's simulation on the six benchmark-hub spaces and scores the very
same runs four ways: Tunesmith's simulated clock (each configuration once, compile + verification +
runtimes); the package's accounting (every result on the time axis, revisits charged their
runtimes, plus the run's real framework and strategy time); revisit runtimes only; real time only.
"""

from __future__ import annotations

import argparse
import json
import os
import warnings
from multiprocessing import Pool
from pathlib import Path

import numpy as np

from benchmarks._lib.paths import ROOT
from generator.bench import kt_simulation, runner
from generator.bench.command import run_seed
from generator.scoring.score import Trace, budget_for, score_traces
from generator.tasks.entries import load_tasks
from generator.tasks.space import SearchSpace

HUB = Path(os.environ.get("TUNESMITH_BENCHMARK_HUB", ROOT.parent / "shared" / "data" / "benchmark_hub"))
KINDS = ("simulated", "package", "revisit runtimes only", "real time only")
TASKS = load_tasks(HUB)


def variants(task, space, results) -> dict[str, Trace]:
    """One Kernel Tuner result list as traces under the four accountings."""
    names = list(task.space.tune_params)
    out = {k: ([], []) for k in KINDS}
    seen = set()
    for r in results:
        row = space.row_of(tuple(r[n] for n in names))
        if row is None:
            continue
        runtimes = float(sum(r["times"])) if isinstance(r.get("times"), list) else 0.0
        cached = float(r.get("compile_time") or 0) + float(r.get("verification_time") or 0) + runtimes
        real = float(r.get("framework_time") or 0) + float(r.get("strategy_time") or 0)
        for kind, sec in (("package", (cached + real) / 1000), ("revisit runtimes only", cached / 1000)):
            out[kind][0].append(row)
            out[kind][1].append(sec)
        if row not in seen:
            seen.add(row)
            for kind, sec in (
                ("simulated", task.key.eval_seconds[row]),
                ("real time only", task.key.eval_seconds[row] + real / 1000),
            ):
                out[kind][0].append(row)
                out[kind][1].append(sec)
    return {k: Trace(np.array(v[0], dtype=np.int64), np.array(v[1]), len(results)) for k, v in out.items()}


def job(args):
    strategy, ti, seed = args
    task = TASKS[ti]
    captured = {}
    original = kt_simulation.trace_of_results

    def capture(task_, space_, results, accounting="simulated"):
        captured["results"] = results
        return original(task_, space_, results, accounting)

    kt_simulation.trace_of_results = capture
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            runner.run_kernel_tuner(task, strategy, {}, seed, budget_for(task))
    finally:
        kt_simulation.trace_of_results = original
    return ti, {k: t.to_dict() for k, t in variants(task, SearchSpace(task.space), captured["results"]).items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--strategy", default="genetic_algorithm")
    ap.add_argument("--repeats", type=int, default=25)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    jobs = [(args.strategy, ti, run_seed(args.seed, r)) for ti in range(len(TASKS)) for r in range(args.repeats)]
    with Pool(args.workers) as pool:
        done = pool.map(job, jobs, chunksize=5)
    report = {}
    for kind in KINDS:
        per = {
            t.name: score_traces(t, [Trace.from_dict(d[kind]) for ti, d in done if ti == i]).score
            for i, t in enumerate(TASKS)
        }
        report[kind] = {"score": float(np.mean(list(per.values()))), "per_task": per}
        print(f"{kind:24s} P = {report[kind]['score']:.3f}  " + "  ".join(f"{v:.3f}" for v in per.values()))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
