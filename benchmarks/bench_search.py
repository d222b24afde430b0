"""Niches, the bandit and all together, with the offline synthesizer (issue 28, items 1 and 4).

    python -m benchmarks.bench_search [--config campaigns/quickstart.toml] [--budget 24] [--offspring 5]
        [--seeds 1 2 3] [--repeats 2] [--test-repeats 3] [--out /tmp/bench-search]
        [--json benchmarks/results/search.json]

Arms, each the same campaign at the same number of candidates (so of sandbox runs: training tasks x
repeats per evaluated candidate), one run per seed ([evolution] seed and [llm] seed):

- plain:   the defaults (one population, operators by weight)
- niches:  [evolution.niches] islands = 2, migration_interval = 2, map_elites = true
- bandit:  [evolution.bandit] enabled = true
- all:     niches + bandit + crossover 0.3 + diff edits

Per arm: the winner's P (the run's best candidate by mean P on the training tasks) on the held-out
test tasks (`[tasks] test`, scored here with --test-repeats runs each), and its training P; mean
and standard error over seeds. The campaign's generations are made smaller (--offspring) so that a
short budget still has generations enough for islands to exchange.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import statistics
import sys
import time
from pathlib import Path

from benchmarks._lib.paths import ROOT

NICHES = "[evolution.niches]\nislands = 2\nmigration_interval = 2\nmap_elites = true\n"
BANDIT = "[evolution.bandit]\nenabled = true\n"
ARMS = {"plain": "", "niches": NICHES, "bandit": BANDIT, "all": NICHES + BANDIT}


def write_config(base: Path, arm: str, seed: int, repeats: int, offspring: int, out: Path) -> Path:
    """The base campaign with the arm's sections, the seed, fewer repeats and smaller generations."""
    text = base.read_text()
    text = re.sub(r"^seed\s*=.*$", f"seed = {seed}", text, flags=re.M)  # [llm] seed and [evolution] seed
    text = re.sub(r"^repeats\s*=.*$", f"repeats = {repeats}", text, count=1, flags=re.M)
    text = re.sub(r"^n_offspring\s*=.*$", f"n_offspring = {offspring}", text, count=1, flags=re.M)
    if arm == "all":
        text = re.sub(r"^\[evolution\]\s*$", '[evolution]\nedit = "diff"', text, count=1, flags=re.M)
        text = re.sub(
            r"^\[evolution\.operators\]\s*$", "[evolution.operators]\ncrossover = 0.3", text, count=1, flags=re.M
        )
    path = out / f"{arm}-{seed}.toml"
    path.write_text(text + "\n" + ARMS[arm])
    return path


def measure(run_dir: Path, test_repeats: int, seed: int) -> dict:
    """The winner's training and test P, and what the run's niches and bandit did."""
    from generator.archive import Archive
    from generator.evaluation.evaluate import evaluate_source
    from generator.tuning.hpo import task_sets

    archive = Archive.open(run_dir)
    cands = archive.candidates()
    best = archive.best(1)[0]
    _, test = task_sets(archive)
    fit = evaluate_source(archive.code(best), test, repeats=test_repeats, seed=seed + 1000, timeout_s=30)
    last = archive.generations()[-1]
    niches = last.get("niches") or {}
    return {
        "winner": best.id,
        "train_p": best.score,
        "test_p": fit.score,
        "test_error": str(fit.error) if fit.error else None,
        "candidates": len(cands),
        "failed": sum(1 for c in cands if c.error),
        "evaluated": sum(1 for c in cands if c.fitness),
        "operators": {op: sum(1 for c in cands if c.operator == op) for op in sorted({c.operator for c in cands})},
        "cells": len({cell for isl in niches.get("islands", []) for cell in isl["cells"]}),
        "migrants_taken": [isl["received"] for isl in niches.get("islands", [])],
        "silent_islands": niches.get("silent"),
    }


def mean_se(values: list[float]) -> tuple[float, float]:
    """Mean and standard error (nan where undefined)."""
    if not values:
        return float("nan"), float("nan")
    se = statistics.stdev(values) / len(values) ** 0.5 if len(values) > 1 else float("nan")
    return statistics.fmean(values), se


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=str(ROOT / "campaigns" / "quickstart.toml"))
    ap.add_argument("--budget", type=int, default=24)
    ap.add_argument("--offspring", type=int, default=5)
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--test-repeats", type=int, default=3)
    ap.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    ap.add_argument("--out", default="/tmp/bench-search")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    from generator.campaign.run import run_campaign

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows: dict[str, list[dict]] = {arm: [] for arm in args.arms}
    for seed in args.seeds:
        for arm in args.arms:
            cfg = write_config(Path(args.config), arm, seed, args.repeats, args.offspring, out)
            run_dir = out / f"{arm}-{seed}"
            start = time.monotonic()
            run_campaign(cfg, run_dir=str(run_dir), budget=args.budget, progress=False)
            row = {
                "seed": seed,
                "wall_s": round(time.monotonic() - start, 1),
                **measure(run_dir, args.test_repeats, seed),
            }
            rows[arm].append(row)
            print(f"{arm:7} seed {seed}: {json.dumps(row)}", file=sys.stderr)
    summary = {}
    print(
        f"\n{args.budget} candidates per run (generations of {args.offspring}), seeds {args.seeds}, "
        f"training repeats {args.repeats}, test repeats {args.test_repeats}, {Path(args.config).name}"
    )
    print(f"{'arm':7} {'winner test P':>16} {'winner train P':>16} {'failed':>7}")
    for arm, runs in rows.items():
        test = mean_se([r["test_p"] for r in runs if r["test_p"] is not None])
        train = mean_se([r["train_p"] for r in runs])
        summary[arm] = {"test_p": test[0], "test_se": test[1], "train_p": train[0], "train_se": train[1]}
        print(
            f"{arm:7} {test[0]:>9.3f} ± {test[1]:<5.3f} {train[0]:>9.3f} ± {train[1]:<5.3f} "
            f"{statistics.fmean(r['failed'] for r in runs):>7.1f}"
        )
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "date": time.strftime("%Y-%m-%d", time.gmtime()),
                    "machine": f"{platform.machine()}, 2 cores (shared)",
                    "command": "python -m benchmarks.bench_search "
                    + " ".join(argv if argv is not None else sys.argv[1:]),
                    "budget": args.budget,
                    "offspring": args.offspring,
                    "seeds": args.seeds,
                    "repeats": args.repeats,
                    "test_repeats": args.test_repeats,
                    "config": Path(args.config).name,
                    "arms": ARMS,
                    "summary": summary,
                    "runs": rows,
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
