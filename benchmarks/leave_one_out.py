"""Leave-one-space-out estimate of overfitting, on every space we have (generator.bench.leave_one_out).

    python -m benchmarks.leave_one_out [--pool 12] [--repeats 4] [--seed 0] [--workers 2] \
        [--json benchmarks/results/leave_one_out.json]

A small campaign's candidate pool (compositions drawn by the offline synthesizer, without looking at
any space's statistics, so no fold sees the left-out space) and the shipped winners are scored on
the benchmark hub, ../shared/data/more_spaces and the problems' own caches, at the methodology's
budget, the same seeds per repeat for all. Each space is left out in turn: the pool's best on the
others is the winner, scored on it. The shipped winners (trained on convolution_milo/A100 and
dedispersion_milo/A100) get their own train vs held-out gap.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._lib.paths import ROOT
from generator.bench.command import bench
from generator.bench.leave_one_out import leave_one_out, split_gap
from generator.bench.runner import parse_strategy
from generator.config import TasksConfig
from generator.llm.synth.compose import render
from generator.llm.synth.profile import Profile
from generator.tasks.entries import load_task_set

SHARED = ROOT.parent / "shared" / "data"
PROBLEMS = [
    "conv2d/H200",
    "dedisp/H200",
    "gemm/H200",
    "hotspot/H200",
    "nbody/H100",
    "reduction/H100",
    "stencil3d/H100",
    "transpose/H100",
]
SHIPPED = ["knn_late_acceptance", "knn_annealing_ils", "knn_tabu_late_acceptance"]
SHIPPED_TRAIN = ["convolution_milo/A100", "dedispersion_milo/A100"]  # generated_algorithms/reports


def all_tasks() -> list:
    """Every space we have: hub, more_spaces, the problems' caches."""
    hub = os.environ.get("TUNESMITH_BENCHMARK_HUB") or str(SHARED / "benchmark_hub")
    cfg = TasksConfig(hub=hub, train=["hub:convolution_milo"])
    entries = [hub, str(SHARED / "more_spaces")] + [f"problem:{p}" for p in PROBLEMS]
    return load_task_set(entries, cfg)


def synth_pool(n: int, seed: int, folder: Path) -> list[Path]:
    """n distinct optimizers the synthesizer composes with no statistics (base weights only)."""
    rng, prof, seen, paths = random.Random(seed), Profile(), set(), []
    for _ in range(50 * n):
        if len(paths) == n:
            break
        comp, why = prof.draw(rng)
        if comp.key() in seen:
            continue
        seen.add(comp.key())
        name, _, source = render(comp, why)
        path = folder / f"s{len(paths):02d}_{name}.py"
        path.write_text(source)
        paths.append(path)
    return paths


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pool", type=int, default=12)
    p.add_argument("--repeats", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--json", default=str(ROOT / "benchmarks" / "results" / "leave_one_out.json"))
    args = p.parse_args(argv)
    tasks = all_tasks()
    start = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        pool = synth_pool(args.pool, args.seed, Path(tmp))
        specs = [parse_strategy(str(x)) for x in pool]
        specs += [parse_strategy(str(ROOT / "generated_algorithms" / "archive" / f"{m}.py")) for m in SHIPPED]
        results = bench(tasks, specs, repeats=args.repeats, seed=args.seed, workers=args.workers, progress=True)
    scores = {Path(r.label).stem: {t: s.score for t, s in r.per_task.items()} for r in results}
    pool_scores = {k: v for k, v in scores.items() if k not in SHIPPED}
    loo = leave_one_out(pool_scores)
    doc = {
        "command": "python -m benchmarks.leave_one_out " + " ".join(argv if argv is not None else sys.argv[1:]),
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "machine": f"{platform.node()} ({os.cpu_count()} cores, shared)",
        "wall_s": round(time.time() - start, 1),
        "repeats": args.repeats,
        "seed": args.seed,
        "spaces": [t.name for t in tasks],
        "pool": sorted(pool_scores),
        "leave_one_out": loo.to_dict(),
        "shipped": {m: split_gap(scores[m], SHIPPED_TRAIN) for m in SHIPPED if m in scores},
        "scores": scores,
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(doc, indent=1))
    s = loo.summary()
    print(
        f"pool of {len(pool_scores)}, {s['folds']} folds: winner's train P {s['mean_train']:.3f}, held-out P "
        f"{s['mean_held_out']:.3f} ± {s['held_out_se']:.3f}, gap {s['mean_gap']:.3f} ± {s['gap_se']:.3f}, "
        f"regret vs the pool's best on the held-out space {s['mean_regret']:.3f} ± {s['regret_se']:.3f}"
    )
    for m, g in doc["shipped"].items():
        print(
            f"{m}: train P {g['train']:.3f}, held-out P {g['held_out']:.3f} ± {g['held_out_se']:.3f} "
            f"({g['held_out_spaces']} spaces), gap {g['gap']:.3f}"
        )
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
