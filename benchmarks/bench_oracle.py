"""What the sandbox costs: oracle round trip per func(cfg), start-up per job and per run, end to end.

    python3 -m benchmarks.bench_oracle [--hub ../shared/data/benchmark_hub] [--calls 20000] [--runs 20]

Prints a Markdown table (and writes --json). Numbers depend on the machine and its load: say
which machine, how many cores and how busy it was when you quote them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

from benchmarks._lib.paths import ROOT
from generator.evaluation.evaluate import evaluate_source
from generator.evaluation.runs import run_seed
from generator.sandbox.jobs import Job, SandboxConfig
from generator.sandbox.pool import run_job
from generator.scoring.oracle import Oracle
from generator.scoring.score import budget_for
from generator.tasks.entries import load_tasks
from generator.tasks.space import SearchSpace

PING = """
import json, time


class Ping:
    def __call__(self, func, searchspace):
        fresh = searchspace.get_random_sample(min(800, len(searchspace.valid)))
        done = 0
        t = time.perf_counter()
        try:
            for c in fresh:
                func(c)  # a configuration not seen before: a round trip to the oracle
                done += 1
        except StopCriterionReached:
            pass
        per_new = (time.perf_counter() - t) / max(done, 1)
        t = time.perf_counter()
        for _ in range({calls}):
            func(fresh[0])  # a revisit: answered in the run process, free in the budget
        per_revisit = (time.perf_counter() - t) / {calls}
        print("BENCH " + json.dumps({{"new_us": per_new * 1e6, "revisit_us": per_revisit * 1e6, "new_calls": done}}))
"""

NOOP = "class Noop:\n    def __call__(self, func, searchspace):\n        func(searchspace.get_random_sample(1)[0])\n"


def in_process_us(task, calls: int) -> dict:
    """The same calls on the Oracle directly, without a process boundary."""
    from generator.scoring.oracle import StopCriterionReached

    space = SearchSpace(task.space)
    oracle = Oracle(task, budget_for(task), space)
    space.seed(1)
    fresh = space.get_random_sample(min(800, space.size))
    done = 0
    t = time.perf_counter()
    try:
        for c in fresh:
            oracle(c)
            done += 1
    except StopCriterionReached:
        pass
    per_new = (time.perf_counter() - t) / max(done, 1)
    oracle = Oracle(task, budget_for(task), space)
    oracle(fresh[0])
    t = time.perf_counter()
    for _ in range(calls):
        oracle(fresh[0])
    return {"new_us": per_new * 1e6, "revisit_us": (time.perf_counter() - t) / calls * 1e6, "new_calls": done}


def sandbox_us(task, calls: int, isolate: bool, trials: int = 3) -> dict:
    """Median over a few jobs of the child-side time per func call."""
    found = []
    for i in range(trials):
        job = Job(
            PING.format(calls=calls),
            "Ping",
            {},
            [task],
            [budget_for(task)],
            [(0, 0, run_seed(i, 0))],
            SandboxConfig(isolate=isolate, timeout_s=120),
        )
        out = run_job(job)
        assert out.error is None, out.error
        line = next(ln for ln in out.output.splitlines() if ln.startswith("BENCH "))
        found.append(json.loads(line[6:]))
    return {k: statistics.median(f[k] for f in found) for k in found[0]}


def startup_s(task, runs: int, isolate: bool) -> dict:
    """Seconds: a job on a new host (Python + numpy start), a job on a pooled host, each further run."""
    from generator.sandbox.pool import close_pool

    def wall(n, cold):
        if cold:
            close_pool()
        job = Job(
            NOOP, "Noop", {}, [task], [budget_for(task)], [(0, r, r) for r in range(n)], SandboxConfig(isolate=isolate)
        )
        t = time.perf_counter()
        out = run_job(job)
        assert out.error is None, out.error
        return time.perf_counter() - t

    cold = statistics.median(wall(1, True) for _ in range(3))
    warm = statistics.median(wall(1, False) for _ in range(3))
    many = wall(runs + 1, False)
    return {"cold_job_s": cold, "pooled_job_s": warm, "per_run_s": (many - warm) / runs}


def end_to_end(task, repeats: int) -> dict:
    """An honest strategy: sandboxed evaluate vs bench's in-process runner, same seeds, same score."""
    from generator.bench.command import bench
    from generator.bench.runner import parse_strategy

    walk = ROOT / "benchmarks" / "strategies" / "random_walk.py"
    t = time.perf_counter()
    fit = evaluate_source(walk.read_text(), [task], repeats=repeats, seed=0, workers=1)
    sandbox_wall = time.perf_counter() - t
    t = time.perf_counter()
    [res] = bench([task], [parse_strategy(str(walk))], repeats=repeats, seed=0, workers=1, progress=False)
    bench_wall = time.perf_counter() - t
    return {
        "repeats": repeats,
        "evaluate_s": sandbox_wall,
        "bench_s": bench_wall,
        "evaluate_P": fit.score,
        "bench_P": res.score,
        "unique_per_run": fit.per_task[task.name].unique,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--hub", default=os.environ.get("TUNESMITH_BENCHMARK_HUB", str(ROOT.parent / "shared/data/benchmark_hub"))
    )
    ap.add_argument("--task", default="convolution_milo/A100")
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--json", dest="json_out")
    args = ap.parse_args()
    task = next(t for t in load_tasks(args.hub) if t.name == args.task)
    budget_for(task)  # build the score basis once, outside the timings
    from generator.scoring.score import Trace, score_traces

    score_traces(task, [Trace([0, 1, 2], [1.0, 1.0, 1.0])] * 2)  # imports sklearn (seconds) outside the timings
    res = {
        "machine": {
            "cpus": os.cpu_count(),
            "load_1min": os.getloadavg()[0],
            "python": platform.python_version(),
            "kernel": platform.release(),
            "root": os.geteuid() == 0,
        },
        "task": task.name,
        "in_process": in_process_us(task, args.calls),
        "sandbox_isolated": sandbox_us(task, args.calls, True),
        "sandbox_plain": sandbox_us(task, args.calls, False),
        "startup_isolated": startup_s(task, args.runs, True),
        "startup_plain": startup_s(task, args.runs, False),
        "end_to_end": end_to_end(task, args.repeats),
    }
    res["machine"]["load_1min_after"] = os.getloadavg()[0]
    m = res["machine"]
    print(
        f"machine: {m['cpus']} CPUs, load {m['load_1min']:.1f} -> {m['load_1min_after']:.1f}, "
        f"Python {m['python']}, Linux {m['kernel']}, root={m['root']}; task {task.name}\n"
    )
    print("| what | isolated sandbox | sandbox, isolate=False | in-process Oracle |")
    print("| --- | --- | --- | --- |")
    for key, label in (
        ("new_us", "func(cfg), new configuration: round trip (µs)"),
        ("revisit_us", "func(cfg), revisit: answered locally (µs)"),
    ):
        print(
            f"| {label} | {res['sandbox_isolated'][key]:.1f} | {res['sandbox_plain'][key]:.1f} | "
            f"{res['in_process'][key]:.1f} |"
        )
    for key, label in (
        ("cold_job_s", "job of 1 run on a new host (s)"),
        ("pooled_job_s", "job of 1 run on a pooled host (s)"),
        ("per_run_s", "each further run: fork + walls (s)"),
    ):
        print(f"| {label} | {res['startup_isolated'][key]:.3f} | {res['startup_plain'][key]:.3f} | - |")
    e = res["end_to_end"]
    print(
        f"\nrandom_walk.py, {e['repeats']} repeats, {e['unique_per_run']:.0f} unique evaluations per run: "
        f"evaluate {e['evaluate_s']:.2f} s (P={e['evaluate_P']:.4f}) vs bench in-process "
        f"{e['bench_s']:.2f} s (P={e['bench_P']:.4f})"
    )
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(res, indent=2) + "\n")


if __name__ == "__main__":
    main()
