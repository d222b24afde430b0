"""Benchmark (a): wall time to score one strategy on the benchmark-hub spaces, Tunesmith vs the package.

    python3 -m benchmarks.bench_scoring --strategy genetic_algorithm --repeats 25 [--apps ...] [--gpus ...]

Runs `autotuning_methodology.report_experiments.get_strategy_scores` (which runs Kernel Tuner in
simulation mode, repeat after repeat, then scores) and `tunesmith bench`'s library call for the
same strategy, spaces and repeats, with both of Tunesmith's engines (`fast`: Kernel Tuner's strategy
code on Tunesmith's search space and oracle; `kerneltuner`: Kernel Tuner's own simulation). Prints
wall times, the speed-up, the overall P of each and P per space, and writes them as JSON.
The package needs plain (not gzipped) T4 and cache files: they are unpacked into a temporary folder.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from benchmarks._lib.paths import ROOT
from generator.bench.command import bench
from generator.bench.runner import parse_strategy
from generator.tasks.entries import load_tasks

# Tunesmith engines timed: the built-in's code on the fast space and oracle; Kernel Tuner's own
# simulation; the same with the package's time accounting (real framework/strategy time, revisits
# charged their runtimes), which should reproduce the package's score within noise.
ENGINES = {
    "fast": "",
    "kerneltuner": "engine=kerneltuner",
    "kerneltuner-package": "engine=kerneltuner:accounting=package",
}
HUB = Path(os.environ.get("TUNESMITH_BENCHMARK_HUB", ROOT.parent / "shared" / "data" / "benchmark_hub"))


def prepare_hub(tmp: Path, apps, gpus) -> Path:
    """Unpacked copies of the hub's T1, cache and T4 files, laid out as the package expects."""
    for app in apps:
        (tmp / "kernels").mkdir(parents=True, exist_ok=True)
        shutil.copy(HUB / "kernels" / f"{app}.json", tmp / "kernels" / f"{app}.json")
        # Kernel Tuner's T1 reader insists the kernel source exists; simulation never compiles it
        kernel_file = json.loads((HUB / "kernels" / f"{app}.json").read_text())["KernelSpecification"]["KernelFile"]
        (tmp / "kernels" / kernel_file).parent.mkdir(parents=True, exist_ok=True)
        (tmp / "kernels" / kernel_file).write_text("// placeholder: simulation mode does not compile\n")
        out = tmp / "cachefiles" / app
        out.mkdir(parents=True, exist_ok=True)
        for gpu in gpus:
            for suffix in ("", "_T4"):
                raw = gzip.decompress((HUB / "cachefiles" / app / f"{gpu}{suffix}.json.gz").read_bytes())
                (out / f"{gpu}{suffix}.json").write_bytes(raw)
    return tmp


def experiment_file(tmp: Path, hub: Path, strategy: str, apps, gpus, repeats: int) -> Path:
    """An experiments file in the package's defaults, for one strategy on the given spaces."""
    defaults = json.loads(
        (Path(__import__("autotuning_methodology").__file__).parent / "experiments_defaults.json").read_text()
    )
    exp = defaults
    exp["name"] = "tunesmith_bench"
    exp["parent_folder"] = str(tmp / "experiment")
    groups = exp["experimental_groups_defaults"]
    groups["applications"] = [
        {"name": a, "folder": str(hub / "kernels"), "input_file": f"{a}.json", "objective_performance_keys": ["time"]}
        for a in apps
    ]
    groups["gpus"] = list(gpus)
    groups["pattern_for_full_search_space_filenames"] = {
        "regex": str(hub / "cachefiles" / "${applications}" / "${gpus}_T4.json")
    }
    groups["repeats"] = repeats
    groups["ignore_cache"] = True
    exp["search_strategies"] = [
        {"name": strategy, "search_method": strategy, "display_name": strategy, "autotuner": "KernelTuner"}
    ]
    exp["visualization_settings"]["plots"] = []
    (tmp / "experiment").mkdir(exist_ok=True)
    path = tmp / "experiment" / "experiment.json"
    path.write_text(json.dumps(exp, indent=1))
    return path


def package_per_space(path: Path) -> dict:
    """P per space from the package's cached results (no re-run)."""
    from autotuning_methodology.experiments import execute_experiment
    from autotuning_methodology.report_experiments import get_aggregation_data, get_strategies_aggregated_performance

    doc = json.loads(path.read_text())
    doc["experimental_groups_defaults"]["ignore_cache"] = False
    path.write_text(json.dumps(doc))
    experiment, strategies, stats, descriptions = execute_experiment(str(path), profiling=False)
    s = experiment["statistics_settings"]
    agg = get_aggregation_data(
        experiment["parent_folder_absolute_path"],
        experiment,
        stats,
        strategies,
        descriptions,
        s["cutoff_percentile"],
        s["cutoff_percentile_start"],
        0.95,
        1000,
    )
    out = {}
    for key, data in agg.items():
        gpu, app = key.split("+")
        perf, _, _, _ = get_strategies_aggregated_performance([data], 0.95)
        out[f"{app}/{gpu}"] = float(np.mean(perf[0]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--strategy", default="genetic_algorithm")
    ap.add_argument("--repeats", type=int, default=25)
    ap.add_argument("--apps", nargs="+", default=["convolution_milo", "dedispersion_milo"])
    ap.add_argument("--gpus", nargs="+", default=["A100", "A4000", "MI250X"])
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--only", choices=("both", "tunesmith", "package"), default="both")
    ap.add_argument(
        "--engines", nargs="+", default=list(ENGINES), choices=list(ENGINES), help="Tunesmith engines to time"
    )
    ap.add_argument("--json", default=None, help="write the numbers here")
    args = ap.parse_args()
    report = {"strategy": args.strategy, "repeats": args.repeats, "apps": args.apps, "gpus": args.gpus}

    tasks = [t for t in load_tasks(HUB) if t.name.split("/")[0] in args.apps and t.name.split("/")[1] in args.gpus]
    for engine in args.engines if args.only != "package" else ():
        spec = parse_strategy(f"{args.strategy}:{ENGINES[engine]}" if ENGINES[engine] else args.strategy)
        start = time.perf_counter()
        res = bench(tasks, [spec], repeats=args.repeats, seed=0, workers=args.workers, progress=True)[0]
        wall = time.perf_counter() - start
        report[f"tunesmith_{engine}"] = {
            "wall_s": wall,
            "score": res.score,
            "per_task": {k: v.score for k, v in res.per_task.items()},
        }
        print(f"tunesmith ({engine}): {wall:.1f} s, P = {res.score:.3f}", flush=True)

    if args.only != "tunesmith":
        from autotuning_methodology.report_experiments import get_strategy_scores

        with tempfile.TemporaryDirectory() as tmp_name:
            tmp = Path(tmp_name)
            hub = prepare_hub(tmp / "hub", args.apps, args.gpus)
            path = experiment_file(tmp, hub, args.strategy, args.apps, args.gpus, args.repeats)
            cwd = os.getcwd()
            os.chdir(tmp / "experiment")
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    start = time.perf_counter()
                    scores = get_strategy_scores(str(path))
                    wall = time.perf_counter() - start
                    per_space = package_per_space(path)
            finally:
                os.chdir(cwd)
        report["package"] = {"wall_s": wall, "score": scores[args.strategy]["score"], "per_task": per_space}
        print(f"autotuning_methodology: {wall:.1f} s, P = {scores[args.strategy]['score']:.3f}")
        for engine in args.engines if args.only == "both" else ():
            report[f"speedup_{engine}"] = wall / report[f"tunesmith_{engine}"]["wall_s"]
            print(f"speed-up ({engine}): {report[f'speedup_{engine}']:.1f}x")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
