"""GeneratedSampler on wide integer spaces: time per trial against Optuna's TPE, and memory against space size.

    python3 -m benchmarks.bench_sampler_wide_space [--trials 100] [--winner knn_late_acceptance] [--json out.json]

The study minimises |x - 400| + |y - 9| over x, y in [0, W - 1]. Time: mean wall time per trial,
sampler included, GeneratedSampler (driving a shipped winner) and TPESampler, W = 1000 (a million
configurations). Memory: tracemalloc's peak during the study for W = 100, 1000 and 10000 (10^4 to
10^8 configurations); it should not grow with the space (only with the values per parameter).
"""

from __future__ import annotations

import argparse
import importlib
import json
import time
import tracemalloc
from pathlib import Path

import optuna

from generator.export.optuna_sampler import GeneratedSampler


def _study(sampler, width: int, trials: int) -> float:
    """Seconds per trial of one study."""
    study = optuna.create_study(sampler=sampler)
    start = time.perf_counter()
    study.optimize(
        lambda t: abs(t.suggest_int("x", 0, width - 1) - 400) + abs(t.suggest_int("y", 0, width - 1) - 9),
        n_trials=trials,
    )
    return (time.perf_counter() - start) / trials


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--winner", default="knn_late_acceptance")
    ap.add_argument("--json", help="write the numbers here")
    args = ap.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    optimizer = importlib.import_module(f"generated_algorithms.archive.{args.winner}").OPTIMIZER

    generated = GeneratedSampler(optimizer, seed=0)
    per_trial = {
        "GeneratedSampler": _study(generated, 1000, args.trials),
        "TPESampler": _study(optuna.samplers.TPESampler(seed=0), 1000, args.trials),
    }
    generated.close()
    peak = {}
    for width in (100, 1000, 10000):
        sampler = GeneratedSampler(optimizer, seed=0)
        tracemalloc.start()
        _study(sampler, width, min(args.trials, 30))
        peak[width**2] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        sampler.close()

    ratio = per_trial["GeneratedSampler"] / per_trial["TPESampler"]
    print(f"time per trial, 10^6 configurations, {args.trials} trials:")
    for name, seconds in per_trial.items():
        print(f"  {name:17} {1e3 * seconds:8.2f} ms")
    print(f"  ratio             {ratio:8.2f} x TPE")
    print("peak memory (tracemalloc) per space size:")
    for size, bytes_ in peak.items():
        print(f"  {size:>12,} configurations  {bytes_ / 1e6:7.2f} MB")
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "trials": args.trials,
                    "winner": args.winner,
                    "seconds_per_trial": per_trial,
                    "ratio_to_tpe": ratio,
                    "peak_bytes": peak,
                },
                indent=1,
            )
            + "\n"
        )


if __name__ == "__main__":
    main()
