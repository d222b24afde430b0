"""Benchmark: candidate evaluations per minute, local pool (1 and 2 workers) vs a Dask LocalCluster of 2.

    python3 -m benchmarks.bench_throughput [--evals 6] [--repeats 5] [--json out.json]

One evaluation = `evaluate_source` of one honest candidate on the quickstart campaign's training
tasks (convolution_milo/A100 + dedispersion_milo/A100) x `--repeats` runs, in the sandbox, as the
campaign does it (one candidate at a time). Three candidates take turns. For each executor it
reports wall time per evaluation and evaluations per minute, and it measures the pieces of the
overhead model in the README ("Scaling out"): scoring time in the parent (serial), the wall time
of the runs themselves, the fixed cost of a sandbox job (host start-up), and Dask's dispatch cost
per task (a no-op round trip and a round trip carrying a sandbox job's payload). Then it predicts
throughput for N workers. The machine's load average is printed: other people's work skews it.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import math
import os
import pickle
import platform
import sys
import time
from datetime import date
from pathlib import Path

from tqdm import tqdm

import generator.scoring.score as scoring
from benchmarks._lib.paths import ROOT
from generator.evaluation.evaluate import evaluate_source
from generator.evaluation.executors import get_executor
from generator.tasks.entries import load_tasks

TASKS = ("convolution_milo/A100", "dedispersion_milo/A100")  # campaigns/quickstart.toml [tasks] train

CANDIDATES = {
    "random_walk": """
import random


class RandomWalk:
    hyperparameters = {"patience": {"type": "int", "low": 1, "high": 100, "default": 20}}

    def __init__(self, budget=5000, patience=20):
        self.patience = patience

    def __call__(self, func, searchspace):
        current = searchspace.get_random_sample(1)[0]
        cost, stale = func(current), 0
        while True:
            neighbours = searchspace.get_neighbors(current, neighbor_method="Hamming")
            if not neighbours or stale >= self.patience:
                current, stale = searchspace.get_random_sample(1)[0], 0
                cost = func(current)
                continue
            candidate = random.choice(neighbours)
            c = func(candidate)
            stale = 0 if c < cost else stale + 1
            if c <= cost:
                current, cost = candidate, c
""",
    "sampler": """
class UniqueSampler:
    hyperparameters = {"batch": {"type": "int", "low": 1, "high": 64, "default": 16}}

    def __init__(self, budget=5000, batch=16):
        self.batch = batch

    def __call__(self, func, searchspace):
        seen = set()
        while True:
            for cfg in searchspace.get_random_sample(self.batch):
                key = tuple(cfg)
                if key not in seen:
                    seen.add(key)
                    func(list(cfg))
""",
    "genetic": """
import random


class TinyGA:
    hyperparameters = {"pop": {"type": "int", "low": 4, "high": 40, "default": 12},
                       "mutation": {"type": "float", "low": 0.0, "high": 1.0, "default": 0.2}}

    def __init__(self, budget=5000, pop=12, mutation=0.2):
        self.pop, self.mutation = pop, mutation

    def __call__(self, func, searchspace):
        names = list(searchspace.tune_params)
        pop = [list(c) for c in searchspace.get_random_sample(self.pop)]
        seen = {tuple(c) for c in pop}
        scored = sorted(((func(c), c) for c in pop), key=lambda e: e[0])
        while True:
            parents = [c for _, c in scored[: max(2, self.pop // 2)]]
            a, b = random.sample(parents, 2)
            child = [random.choice(pair) for pair in zip(a, b)]
            if random.random() < self.mutation:
                i = random.randrange(len(names))
                child[i] = random.choice(searchspace.tune_params[names[i]])
            # revisits are free, so a converged population must be pushed to new configurations
            while tuple(child) in seen or not searchspace.is_param_config_valid(tuple(child)):
                child = list(searchspace.get_random_sample(1)[0])
            seen.add(tuple(child))
            scored = sorted(scored + [(func(child), child)], key=lambda e: e[0])[: self.pop]
""",
}


class ScoringClock:
    """Adds up the time `score_traces` takes in this process (the serial part of an evaluation)."""

    def __init__(self):
        self.seconds, self._orig = 0.0, scoring.score_traces

    def __enter__(self):
        def timed(*a, **kw):
            t = time.perf_counter()
            try:
                return self._orig(*a, **kw)
            finally:
                self.seconds += time.perf_counter() - t

        scoring.score_traces = timed
        return self

    def __exit__(self, *exc):
        scoring.score_traces = self._orig


def run_modes(executors: dict, tasks, evals: int, repeats: int) -> list[dict]:
    """Evaluate `evals` candidates, one after another, on each executor in turn (round-robin, so that
    the load other people put on the machine hits every executor alike); wall, runs' wall, scoring."""
    sources = list(CANDIDATES.values())
    rec = {name: {"walls": [], "runs": [], "scoring": 0.0, "scores": []} for name in executors}
    bar = tqdm(total=evals * len(executors), desc="evaluations", file=sys.stderr, leave=False)
    for i in range(evals):
        for name, (workers, ex) in executors.items():
            with ScoringClock() as clock:
                t = time.perf_counter()
                fit = evaluate_source(
                    sources[i % len(sources)],
                    tasks,
                    repeats=repeats,
                    seed=i // len(sources),
                    timeout_s=120,
                    workers=workers,
                    executor=ex,
                )
                wall = time.perf_counter() - t
            if fit.error is not None:
                raise SystemExit(f"{name}: candidate {i} failed: {fit.error}")
            r = rec[name]
            r["walls"].append(wall)
            r["runs"].append(sum(tf.wall_s for tf in fit.per_task.values()))
            r["scoring"] += clock.seconds
            r["scores"].append(round(fit.score, 6))
            bar.update(1)
    bar.close()
    out = []
    for name, r in rec.items():
        total = sum(r["walls"])
        out.append(
            {
                "mode": name,
                "evals": evals,
                "wall_s": round(total, 2),
                "per_eval_s": round(total / evals, 3),
                "evals_per_min": round(60 * evals / total, 2),
                "runs_wall_s": round(sum(r["runs"]) / evals, 3),
                "scoring_s": round(r["scoring"] / evals, 3),
                "scores": r["scores"],
            }
        )
    return out


def dask_dispatch(ex, tasks, n: int = 100) -> dict:
    """Round trip of one Dask task: a no-op, and one carrying a sandbox job's pickled tasks."""
    client = ex.client
    client.submit(int, 0, pure=False).result()  # warm
    t = time.perf_counter()
    for i in range(n):
        client.submit(int, i, pure=False).result()
    noop = (time.perf_counter() - t) / n
    payload = pickle.dumps(tasks, protocol=pickle.HIGHEST_PROTOCOL)
    t = time.perf_counter()
    for _ in range(10):
        client.submit(len, payload, pure=False).result()
    carry = (time.perf_counter() - t) / 10
    t = time.perf_counter()
    client.gather(client.map(int, range(2000), pure=False))  # many in flight: the scheduler's own rate
    rate = 2000 / (time.perf_counter() - t)
    return {
        "noop_roundtrip_ms": round(noop * 1e3, 2),
        "job_roundtrip_ms": round(carry * 1e3, 2),
        "job_payload_mb": round(len(payload) / 1e6, 2),
        "tasks_per_s": round(rate, 1),
    }


class OneJob(cf.Executor):
    """Hides the cluster's slot count, so evaluate_source sends each candidate as one job."""

    def __init__(self, ex):
        self.ex = ex

    def submit(self, fn, /, *args, **kwargs):
        return self.ex.submit(fn, *args, **kwargs)


def run_generation(name: str, workers: int, ex, tasks, evals: int, repeats: int) -> dict:
    """A generation at once: `evals` candidates in flight together, each one job (as a campaign could
    evaluate its lambda offspring); local: `workers` threads in this process serve all oracles."""
    sources = list(CANDIDATES.values())

    def one(i):
        return evaluate_source(
            sources[i % len(sources)],
            tasks,
            repeats=repeats,
            seed=i // len(sources),
            timeout_s=120,
            workers=1,
            executor=OneJob(ex) if ex is not None else None,
        )

    t = time.perf_counter()
    with cf.ThreadPoolExecutor(max_workers=evals if ex is not None else workers) as pool:
        fits = list(pool.map(one, range(evals)))
    wall = time.perf_counter() - t
    if any(f.error is not None for f in fits):
        raise SystemExit(f"{name}: a candidate failed: {next(f.error for f in fits if f.error)}")
    return {
        "mode": name,
        "evals": evals,
        "wall_s": round(wall, 2),
        "evals_per_min": round(60 * evals / wall, 2),
        "scores": [round(f.score, 6) for f in fits],
    }


def model(
    runs: int,
    run_s: float,
    fixed_s: float,
    scoring_s: float,
    dispatch_s: float,
    tasks_per_s: float,
    ns=(1, 2, 4, 8, 16, 32, 64),
) -> list[dict]:
    """Evaluations/min with N workers, one candidate at a time and a generation of candidates at once.

    One at a time: W(N) = scoring + fixed + ceil(runs/N) * run + dispatch (Amdahl: scoring and the
    job's start-up do not shrink; runs are whole, so N > runs gains nothing).
    A generation at once (lambda candidates in flight): N workers each run whole jobs, so the rate is
    N / (fixed + runs * run) per second, until the driver's serial scoring (1/scoring) or the
    scheduler's task rate is the bottleneck.
    """
    out = []
    job = fixed_s + runs * run_s
    for n in ns:
        one = scoring_s + fixed_s + math.ceil(runs / min(n, runs)) * run_s + (dispatch_s if n > 1 else 0.0)
        many = min(n / job, 1 / max(scoring_s, 1e-9), tasks_per_s or float("inf"))
        out.append(
            {"workers": n, "one_at_a_time_per_min": round(60 / one, 1), "generation_per_min": round(60 * many, 1)}
        )
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--hub", default=os.environ.get("TUNESMITH_BENCHMARK_HUB", str(ROOT.parent / "shared/data/benchmark_hub"))
    )
    ap.add_argument("--evals", type=int, default=6, help="candidate evaluations per executor (default 6)")
    ap.add_argument("--repeats", type=int, default=5, help="runs per task (default 5, as quickstart)")
    ap.add_argument("--modes", default="local1,local2,dask2", help="comma-separated: local1, local2, dask2")
    ap.add_argument(
        "--generation",
        action="store_true",
        help="also evaluate --evals candidates at once on each executor (one job each)",
    )
    ap.add_argument("--json", dest="json_out", help="write the results as JSON")
    args = ap.parse_args(argv)

    tasks = [t for t in load_tasks(args.hub) if t.name in TASKS]
    load_before = os.getloadavg()
    executors, dispatch, startup, clusters = {}, None, {}, []
    for mode in args.modes.split(","):
        if mode.startswith("local"):
            executors[mode] = (int(mode[5:]), None)  # evaluate_source's own local pool
        elif mode.startswith("dask"):
            t = time.perf_counter()
            clusters.append(get_executor("dask-local", int(mode[4:])))
            startup[mode] = round(time.perf_counter() - t, 2)
            executors[mode] = (1, clusters[-1])  # chunks: one per Dask worker
    try:
        for workers, ex in executors.values():  # warm-up, not timed: imports, score bases, Dask workers
            evaluate_source(CANDIDATES["sampler"], tasks, repeats=1, workers=max(workers, 2), executor=ex)
        results = run_modes(executors, tasks, args.evals, args.repeats)
        generation = [
            run_generation(f"{name}-gen", workers, ex, tasks, args.evals, args.repeats)
            for name, (workers, ex) in executors.items()
            if args.generation and (ex is not None or workers > 1)
        ]
        if clusters:
            dispatch = dask_dispatch(clusters[0], tasks)
    finally:
        for ex in clusters:
            ex.shutdown()
    load_after = os.getloadavg()

    base = results[0]
    runs = len(tasks) * args.repeats
    run_s = base["runs_wall_s"] / runs
    fixed_s = max(0.0, base["per_eval_s"] - base["runs_wall_s"] - base["scoring_s"])
    disp_s = (dispatch or {}).get("job_roundtrip_ms", 0.0) / 1e3
    doc = {
        "date": date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
        f"{platform.python_implementation()} {platform.python_version()}",
        "loadavg_before": load_before,
        "loadavg_after": load_after,
        "tasks": list(TASKS),
        "repeats": args.repeats,
        "results": results,
        "generation": generation,
        "dask_cluster_startup_s": startup,
        "dask_dispatch": dispatch,
        "model_inputs": {
            "runs_per_eval": runs,
            "run_s": round(run_s, 3),
            "fixed_s": round(fixed_s, 3),
            "scoring_s": base["scoring_s"],
            "dispatch_s": disp_s,
        },
        "model": model(runs, run_s, fixed_s, base["scoring_s"], disp_s, (dispatch or {}).get("tasks_per_s", 0)),
    }

    print(f"{doc['date']}  {doc['machine']}  load avg before {load_before[0]:.2f}, after {load_after[0]:.2f}")
    print(f"{len(tasks)} tasks x {args.repeats} repeats per evaluation, {args.evals} evaluations per executor")
    print(f"{'executor':<10}{'s/eval':>9}{'evals/min':>11}{'runs s':>9}{'scoring s':>11}")
    for r in results:
        print(
            f"{r['mode']:<10}{r['per_eval_s']:>9.2f}{r['evals_per_min']:>11.2f}{r['runs_wall_s']:>9.2f}{r['scoring_s']:>11.3f}"
        )
    for g in generation:
        print(f"{g['mode']:<10}{'':>9}{g['evals_per_min']:>11.2f}   ({args.evals} candidates in flight at once)")
    same = len({tuple(r["scores"]) for r in results + generation}) == 1
    print(f"scores identical across executors: {same}")
    if dispatch:
        print(
            f"dask: cluster start {startup} s; round trip no-op {dispatch['noop_roundtrip_ms']} ms, "
            f"with a job's {dispatch['job_payload_mb']} MB of tasks {dispatch['job_roundtrip_ms']} ms; "
            f"{dispatch['tasks_per_s']:.0f} no-op tasks/s with many in flight"
        )
    mi = doc["model_inputs"]
    print(
        f"model inputs: {runs} runs x {mi['run_s']:.3f} s, fixed {mi['fixed_s']:.3f} s/eval, "
        f"scoring {mi['scoring_s']:.3f} s/eval, dispatch {mi['dispatch_s'] * 1e3:.1f} ms"
    )
    print(f"{'N':>4}{'one-at-a-time/min':>19}{'generation/min':>16}")
    for m in doc["model"]:
        print(f"{m['workers']:>4}{m['one_at_a_time_per_min']:>19}{m['generation_per_min']:>16}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(doc, indent=1))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
