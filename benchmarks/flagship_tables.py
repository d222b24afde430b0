"""The flagship campaign's tables (issue 29): the new shipped winner against the old one and Kernel Tuner.

    python -m benchmarks.flagship_tables --winner generated_algorithms/NAME.py [--test-repeats 100]
        [--all-repeats 10] [--out benchmarks/results/flagship] [--also generated_algorithms/OTHER.py,...]
        [--reuse benchmarks/results/EARLIER]

Two `tunesmith bench` runs, each writing its JSON, then one summary:

1. the campaign's test spaces (never seen by evolution, HPO or the validation choice), at the
   methodology's 100 repeats: the winner, `knn_late_acceptance` (the best shipped optimizer before)
   and Kernel Tuner's strategies; the difference winner - knn_late_acceptance with its standard
   error, the per-task SEs combined (the repeats share seeds, so this is conservative);
2. every space we have (hub, more_spaces, the problems' caches), fewer repeats: on each space, how far
   the winner is below the best Kernel Tuner strategy there (the issue asks for never more than 0.10),
   with the standard error of that difference; a space counts as "more than 0.10 below" only when the
   shortfall minus 0.10 exceeds two standard errors (some spaces spread one run's P by several units).

With `--reuse DIR` (a second winner of the same campaign), only the winner runs: the other rows come from
DIR's test.json and all_spaces.json, which must have the same tasks, repeats and seed. bench gives every
strategy the same seed per repeat, so the reused rows are what a full run would measure again.

Kernel Tuner's slowest strategies (hybrid_vndx, bayes_opt) are left out of the second run: they
take most of its time, and neither led on any space in the earlier 21-strategy run.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import subprocess
import sys
from pathlib import Path

from benchmarks._lib.gaps import gaps
from benchmarks._lib.paths import ROOT

SHARED = ROOT.parent / "shared" / "data"
OLD_BEST = "generated_algorithms/archive/knn_late_acceptance.py"
MACHINE = f"{platform.machine()}, {os.cpu_count()} cores (shared)"
KT_TEST = [
    "dual_annealing",
    "diff_evo",
    "genetic_algorithm",
    "firefly_algorithm",
    "simulated_annealing",
    "random_sample",
]
KT_ALL = [
    "basinhopping",
    "diff_evo",
    "dual_annealing",
    "firefly_algorithm",
    "genetic_algorithm",
    "greedy_ils",
    "greedy_mls",
    "minimize",
    "mls",
    "ordered_greedy_mls",
    "pso",
    "random_sample",
    "simulated_annealing",
    "adaptive_tabu_greywolf",
]


def test_tasks(campaign: Path) -> list[str]:
    """The campaign's test entries, as bench --tasks arguments (its `extends` chain merged)."""
    from generator.config import load_config

    return load_config(campaign).tasks.test


def bench(tasks: list[str], strategies: list[str], repeats: int, out: Path) -> dict:
    """Run `tunesmith bench` in its own process; its JSON."""
    argv = [
        sys.executable,
        "-m",
        "generator.cli",
        "bench",
        "--strategies",
        ",".join(strategies),
        "--repeats",
        str(repeats),
        "--se",
        "--no-progress",
        "--json",
        str(out),
    ]
    for task in tasks:
        argv += ["--tasks", task]
    subprocess.run(argv, cwd=ROOT, check=True)
    data = json.loads(out.read_text())
    data.update(date=datetime.date.today().isoformat(), machine=MACHINE)  # for the docs' source lines
    out.write_text(json.dumps(data, indent=1) + "\n")
    return data


def with_reused(fresh: dict, earlier: Path, winner: str) -> dict:
    """`fresh` (the winner's rows) merged into the rows of an earlier run of the same tasks, repeats and seed."""
    old = json.loads(earlier.read_text())
    for key in ("tasks", "repeats", "seed"):
        if old.get(key) != fresh.get(key):
            raise SystemExit(
                f"--reuse: {earlier} has {key} {old.get(key)!r}, this run {fresh.get(key)!r}; "
                "reuse a run of the same campaign and repeats, or run without --reuse"
            )
    old["results"] = {**{k: v for k, v in old["results"].items() if k != winner}, **fresh["results"]}
    old.update(date=fresh["date"], machine=fresh["machine"], reused_from=str(earlier.relative_to(ROOT)))
    return old


def run_or_reuse(tasks: list[str], winner: str, others: list[str], repeats: int, out: Path, reuse: Path | None) -> dict:
    """bench the winner and the others; with `reuse`, bench the winner only and take the others from there."""
    if reuse is None:
        return bench(tasks, [winner, *others], repeats, out)
    data = with_reused(bench(tasks, [winner], repeats, out), reuse / out.name, winner)
    out.write_text(json.dumps(data, indent=1) + "\n")
    return data


def test_table(data: dict, winner: str) -> dict:
    # bench's mean over tasks and its standard error (generator.bench.results.mean_standard_error)
    rows = {name: (r["score"], r["se"]) for name, r in data["results"].items() if "per_task" in r}
    (w, w_se), (o, o_se) = rows[winner], rows[OLD_BEST]
    diff_se = math.sqrt(w_se**2 + o_se**2)
    return {
        "mean_p": {k: {"p": p, "se": se} for k, (p, se) in rows.items()},
        "winner_minus_old": {"diff": w - o, "se": diff_se, "outside_2se": abs(w - o) > 2 * diff_se},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--winner", required=True)
    ap.add_argument("--campaign", default="benchmarks/campaigns/flagship.toml")
    ap.add_argument("--test-repeats", type=int, default=100)
    ap.add_argument("--all-repeats", type=int, default=10)
    ap.add_argument("--out", default="benchmarks/results/flagship")
    ap.add_argument(
        "--also", default="", help="comma-separated strategies for the test table only (e.g. earlier winners)"
    )
    ap.add_argument(
        "--reuse",
        help="an earlier --out folder of the same campaign and repeats: run only the winner, "
        "take every other row from there",
    )
    args = ap.parse_args()
    os.environ.setdefault("TUNESMITH_BENCHMARK_HUB", str(SHARED / "benchmark_hub"))
    out = ROOT / args.out
    out.mkdir(parents=True, exist_ok=True)
    also = [a for a in args.also.split(",") if a and a not in (args.winner, OLD_BEST)]
    reuse = ROOT / args.reuse if args.reuse else None
    test = run_or_reuse(
        test_tasks(ROOT / args.campaign),
        args.winner,
        [OLD_BEST, *also, *KT_TEST],
        args.test_repeats,
        out / "test.json",
        reuse,
    )
    every = run_or_reuse(
        [str(SHARED / "benchmark_hub"), str(SHARED / "more_spaces"), "problems"],
        args.winner,
        KT_ALL,
        args.all_repeats,
        out / "all_spaces.json",
        reuse,
    )
    summary = {
        "command": " ".join(["python", "-m", "benchmarks.flagship_tables", *sys.argv[1:]]),
        "date": datetime.date.today().isoformat(),
        "machine": MACHINE,
        "winner": args.winner,
        "test_repeats": args.test_repeats,
        "all_repeats": args.all_repeats,
        "test": test_table(test, args.winner),
        "gaps": gaps(every, args.winner),
    }
    worst = max(summary["gaps"].items(), key=lambda kv: kv[1]["below_best_kt"])
    summary["worst_gap"] = {"task": worst[0], **worst[1]}
    summary["spaces_more_than_0.10_below"] = sorted(t for t, g in summary["gaps"].items() if g["more_than_0.10_below"])
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps({k: summary[k] for k in ("test", "worst_gap", "spaces_more_than_0.10_below")}, indent=1))


if __name__ == "__main__":
    main()
