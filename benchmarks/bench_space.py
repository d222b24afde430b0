"""Benchmark (b): per-evaluation overhead of Tunesmith's SearchSpace + Oracle vs Kernel Tuner's simulation.

    python3 -m benchmarks.bench_space [--strategy benchmarks/strategies/random_walk.py] [--repeats 10]

The same custom strategy (an OptAlg-style class) runs R times per task (a) in-process on the fast
SearchSpace and Oracle, and (b) in Kernel Tuner 1.5.0's simulation mode (`tune_kernel` with the
strategy wrapped by OptAlgWrapper, the cache file already unpacked and read once, as
Tunesmith's kerneltuner engine does). Reported: microseconds per objective call (revisits
included) for each, and micro-benchmarks of the search-space calls themselves.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
import warnings
from datetime import date
from pathlib import Path

import numpy as np

from benchmarks._lib.paths import ROOT
from generator.bench.kt_simulation import run_kernel_tuner
from generator.bench.runner import load_module, optimizer_class, parse_strategy, run_once
from generator.scoring.score import budget_for
from generator.tasks.entries import load_tasks
from generator.tasks.space import NEIGHBOR_METHODS, SearchSpace

HUB = Path(os.environ.get("TUNESMITH_BENCHMARK_HUB", ROOT.parent / "shared" / "data" / "benchmark_hub"))


def per_call(task, spec, repeats: int) -> dict:
    """Microseconds per objective call: fast space + oracle vs Kernel Tuner simulation."""
    from kernel_tuner.strategies.wrapper import OptAlgWrapper

    cls = optimizer_class(spec)
    space = SearchSpace(task.space)
    out = {}
    run_kernel_tuner(task, OptAlgWrapper(cls()), {}, 0, budget_for(task))  # warm-up: unpack + read the cache once
    for engine in ("tunesmith", "kerneltuner"):
        calls, start = 0, time.perf_counter()
        for r in range(repeats):
            if engine == "tunesmith":
                trace = run_once(task, spec, r, space=space)
            else:
                trace = run_kernel_tuner(task, OptAlgWrapper(cls()), {}, r, budget_for(task))
            calls += trace.fevals
        wall = time.perf_counter() - start
        out[engine] = {"wall_s": wall, "calls": calls, "us_per_call": 1e6 * wall / calls}
    out["speedup"] = out["kerneltuner"]["us_per_call"] / out["tunesmith"]["us_per_call"]
    return out


def space_calls(task, n: int = 300, trials: int = 3) -> dict:
    """Microseconds per search-space call, ours vs kernel_tuner.searchspace.Searchspace (best of `trials`,
    each on freshly built spaces so that "first" really is the first query of a configuration)."""
    from kernel_tuner.searchspace import Searchspace

    configs = [
        task.space.config_of(int(r)) for r in np.random.default_rng(0).choice(len(task.space.valid), n, replace=False)
    ]

    def timed(fn):
        start = time.perf_counter()
        for c in configs:
            fn(c)
        return 1e6 * (time.perf_counter() - start) / n

    best: dict[str, dict[str, float]] = {}
    for _ in range(trials):
        spaces = (
            ("tunesmith", SearchSpace(task.space)),
            ("kerneltuner", Searchspace(task.space.tune_params, list(task.space.restrictions), 1024)),
        )
        for name, space in spaces:
            row = {"is_param_config_valid": timed(space.is_param_config_valid)}
            for m in NEIGHBOR_METHODS:
                row[f"{m} first"] = timed(lambda c, m=m, space=space: space.get_neighbors(c, m))
                row[f"{m} again"] = timed(lambda c, m=m, space=space: space.get_neighbors(c, m))
            np.random.seed(0)
            row["get_random_sample(10)"] = timed(lambda c, space=space: space.get_random_sample(10))
            prev = best.setdefault(name, row)
            for k, v in row.items():
                prev[k] = min(prev[k], v)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--strategy", default=str(ROOT / "benchmarks" / "strategies" / "random_walk.py"))
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--tasks", nargs="+", default=["convolution_milo/A100", "dedispersion_milo/A100"])
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    spec = parse_strategy(args.strategy)
    load_module(spec.target)
    tasks = {t.name: t for t in load_tasks(HUB)}
    report = {
        "strategy": args.strategy,
        "repeats": args.repeats,
        "date": date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "tasks": {},
    }
    for name in args.tasks:
        task = tasks[name]
        report["tasks"][name] = {"per_call": per_call(task, spec, args.repeats), "space_calls_us": space_calls(task)}
        pc = report["tasks"][name]["per_call"]
        print(
            f"{name}: {pc['tunesmith']['us_per_call']:.1f} us/call (Tunesmith) vs "
            f"{pc['kerneltuner']['us_per_call']:.1f} us/call (Kernel Tuner simulation): {pc['speedup']:.1f}x",
            flush=True,
        )
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
