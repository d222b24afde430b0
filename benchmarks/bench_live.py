"""Live tuning on the GPU: evaluations that Kernel Tuner's genetic_algorithm and a generated optimizer
need to come within 5% of the brute-force optimum, each run tuning the real kernel.

Both optimizers run inside one Kernel Tuner `tune_kernel` session per problem (same runner, same
CostFunc semantics, same Searchspace; each run starts with an empty cache, so every configuration
is compiled, verified and timed anew). A run stops at the first configuration whose brute-force
time (the shipped cache of this GPU) is within 5% of the cache's optimum, or at --max-fevals.
Optionally (--sandbox-demo) the generated optimizer is also evaluated through the sandbox on a live
task (generator.live.evaluate), the path campaigns use, and scored with P against the cache.

    python3 -m benchmarks.bench_live OPTIMIZER.py --problems conv2d dedisp --repeats 5 --out live.json
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks._lib.paths import ROOT
from generator.live.kernel import config_key, device_label, device_name, patch_cupy_uuid, require_device
from generator.tasks.problems import load_problem, load_problem_tasks


class _TargetRunner:
    """Kernel Tuner's runner, measuring one new configuration at a time; stops at the target."""

    def __init__(self, runner, targets: set[str], cached: dict[str, float], max_fevals: int):
        self.runner, self.targets, self.cached, self.max_fevals = runner, targets, cached, max_fevals
        self.seen: dict[str, dict] = {}
        self.log: list[dict] = []
        self.hit: int | None = None

    def __getattr__(self, name):
        return getattr(self.runner, name)

    def run(self, configs, tuning_options):
        from kernel_tuner.util import StopCriterionReached

        out = []
        for config in configs:
            key = config_key(config)
            if key not in self.seen:
                if self.hit is not None or len(self.log) >= self.max_fevals:
                    raise StopCriterionReached("target reached" if self.hit else "max_fevals reached")
                result = self.runner.run([tuple(config)], tuning_options)[0]
                self.seen[key] = result
                self.log.append(
                    {"config": key, "live": result.get(tuning_options.objective[0]), "cached": self.cached.get(key)}
                )
                if key in self.targets:
                    self.hit = len(self.log)
            out.append(self.seen[key])
        return out


class _Measure:
    """A Kernel Tuner strategy that runs every (optimizer, repeat) of one problem in one session."""

    def __init__(self, plans, targets, cached, max_fevals, deadline):
        self.plans, self.targets, self.cached = plans, targets, cached
        self.max_fevals, self.deadline, self.runs = max_fevals, deadline, []

    def tune(self, searchspace, runner, tuning_options):
        from kernel_tuner.util import TuningBudget

        for name, make_strategy, seed in self.plans:
            if time.monotonic() > self.deadline:
                print(f"  deadline: skipping {name} seed {seed}", flush=True)
                continue
            random.seed(seed)
            np.random.seed(seed)
            tuning_options.budget = TuningBudget(max_fevals=self.max_fevals * 10)
            tuning_options.cache, tuning_options.cachefile = {}, None  # measure everything anew
            proxy = _TargetRunner(runner, self.targets, self.cached, self.max_fevals)
            t0 = time.monotonic()
            make_strategy().tune(searchspace, proxy, tuning_options)
            best = min((e["cached"] for e in proxy.log if e["cached"] is not None), default=None)
            run = {
                "optimizer": name,
                "seed": seed,
                "fevals_to_target": proxy.hit,
                "evaluations": len(proxy.log),
                "best_cached": best,
                "wall_s": round(time.monotonic() - t0, 1),
            }
            print(
                f"  {name:>22} seed {seed}: within 5% after {proxy.hit} evaluations "
                f"({len(proxy.log)} measured, {run['wall_s']} s)",
                flush=True,
            )
            self.runs.append(run)
        return []


def load_optimizer(path: Path):
    """The optimizer class of a generated module (the one class with __call__(func, searchspace))."""
    namespace: dict = {"__name__": "tunesmith_generated"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    classes = [
        v
        for v in namespace.values()
        if isinstance(v, type) and "__call__" in vars(v) and v.__module__ == namespace.get("__name__")
    ]
    if not classes:
        raise SystemExit(f"{path}: no optimizer class with __call__ found")
    return classes[-1]


def median_fevals(runs: list[dict], max_fevals: int) -> str:
    """Median evaluations to the target; a run that never reached it (cap hit, or the optimizer
    stopped by itself) counts as infinitely many, so a median among those reads "not reached"."""
    vals = sorted(r["fevals_to_target"] if r["fevals_to_target"] is not None else np.inf for r in runs)
    if not vals:
        return "n/a"
    med = float(np.median(vals))
    return "not reached" if not np.isfinite(med) else f"{med:g}"


def measure_problem(name: str, optimizer_cls, repeats: int, max_fevals: int, deadline: float) -> dict:
    """All runs of one problem; returns its summary and runs."""
    import kernel_tuner
    from kernel_tuner.strategies import genetic_algorithm
    from kernel_tuner.strategies.wrapper import OptAlgWrapper

    problem = load_problem(ROOT / "problems" / name / "problem.toml")
    require_device(problem)
    if problem.lang == "cupy":
        patch_cupy_uuid()
    gpu = device_label(device_name(problem))
    [task] = load_problem_tasks(problem.path, [gpu])
    values = np.where(task.key.failed, np.inf, task.key.values)
    optimum = float(values.min())
    keys = [config_key(task.space.config_of(r)) for r in range(len(values))]
    targets = {k for k, v in zip(keys, values) if v <= 1.05 * optimum}
    cached = {k: float(v) for k, v in zip(keys, values)}
    plans = []  # interleaved, so that a deadline leaves both optimizers with as many runs
    for r in range(repeats):
        plans.append(("genetic_algorithm", lambda: genetic_algorithm, 1000 + r))
        plans.append((optimizer_cls.__name__, lambda: OptAlgWrapper(optimizer_cls(budget=max_fevals)), 2000 + r))
    measure = _Measure(plans, targets, cached, max_fevals, deadline)
    arguments = problem.make_arguments()
    answer = problem.answer(arguments)
    print(
        f"{name}/{gpu}: optimum {optimum:.4f} ms, {len(targets)} of {len(values)} configurations within 5%", flush=True
    )
    kernel_tuner.tune_kernel(arguments=arguments, answer=answer, strategy=measure, quiet=True, **problem.tune_kwargs())
    summary = {}
    for opt in ("genetic_algorithm", optimizer_cls.__name__):
        runs = [r for r in measure.runs if r["optimizer"] == opt]
        summary[opt] = {
            "median_fevals_to_5pct": median_fevals(runs, max_fevals),
            "runs": len(runs),
            "reached": sum(r["fevals_to_target"] is not None for r in runs),
        }
    return {
        "problem": name,
        "gpu": gpu,
        "optimum": optimum,
        "n_valid": len(values),
        "n_within_5pct": len(targets),
        "max_fevals": max_fevals,
        "summary": summary,
        "runs": measure.runs,
    }


def sandbox_demo(path: Path, name: str, repeats: int, max_fevals: int) -> dict:
    """The generated optimizer through the sandbox on a live task, scored with P against the cache."""
    from generator.live.evaluate import evaluate_live
    from generator.live.tasks import load_live_task

    task = load_live_task(ROOT / "problems" / name / "problem.toml")
    result = evaluate_live(path.read_text(), task, repeats=repeats, max_fevals=max_fevals, timeout_s=300)
    print("sandbox:", result.summary(), flush=True)
    return {
        "task": task.name,
        "score": result.score,
        "basis": result.basis,
        "per_repeat": result.per_repeat,
        "best": result.best,
        "fevals": result.fevals,
        "wall_s": round(result.wall_s, 1),
        "error": None if result.error is None else f"{result.error.kind}: {result.error.message}",
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("optimizer", type=Path, help="generated optimizer module (one class)")
    ap.add_argument("--problems", nargs="+", default=["conv2d", "dedisp"])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument(
        "--max-fevals", type=int, nargs="+", default=[300], help="cap per run (one value, or one per problem)"
    )
    ap.add_argument("--time-limit", type=float, default=480, help="seconds for all runs; later runs are skipped")
    ap.add_argument("--sandbox-demo", default=None, help="problem for a sandboxed live evaluation afterwards")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    deadline = time.monotonic() + args.time_limit
    optimizer_cls = load_optimizer(args.optimizer)
    caps = args.max_fevals * len(args.problems) if len(args.max_fevals) == 1 else args.max_fevals
    report = {
        "optimizer": str(args.optimizer),
        "class": optimizer_cls.__name__,
        "repeats": args.repeats,
        "date": time.strftime("%Y-%m-%d"),
        "problems": [],
    }
    for name, cap in zip(args.problems, caps):
        report["problems"].append(measure_problem(name, optimizer_cls, args.repeats, cap, deadline))
        if args.out:
            args.out.write_text(json.dumps(report, indent=1))
    if args.sandbox_demo:
        try:
            report["sandbox_demo"] = sandbox_demo(args.optimizer, args.sandbox_demo, 2, 60)
        except Exception as exc:  # noqa: BLE001 - the measurement above is what counts; say why the demo failed
            report["sandbox_demo"] = {"error": f"{type(exc).__name__}: {exc}"}
            print("sandbox demo failed:", report["sandbox_demo"]["error"], flush=True)
    for p in report["problems"]:
        for opt, s in p["summary"].items():
            print(
                f"{p['problem']}/{p['gpu']} {opt}: median evaluations to within 5% = {s['median_fevals_to_5pct']} "
                f"({s['reached']}/{s['runs']} runs reached it, cap {p['max_fevals']})"
            )
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
