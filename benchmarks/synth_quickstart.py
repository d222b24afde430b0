"""The offline synthesizer's quickstart campaign: wall time, share of candidates that run, and how
its best candidate compares with Kernel Tuner's strategies (issue 5's targets).

    python -m benchmarks.synth_quickstart [--config campaigns/quickstart.toml] [--run-dir DIR]
        [--skip-run] [--repeats 20] [--seed 0] [--workers N] [--md out.md] [--json out.json]

1. runs `tunesmith run CONFIG --run-dir DIR` in a fresh process and times it (skip with --skip-run
   to analyse an existing run directory);
2. records the summary the campaign ends with (leaderboard, best candidate, calls and tokens), rendered
   from the run directory by the campaign's own formatter, naming the campaign file's own run directory
   (what `tunesmith run CONFIG` prints); the README's quickstart block is this text
   (tests/project/test_readme.py checks that they agree);
3. counts the synthesized candidates that ran without error (failures of any kind count against
   it; duplicates are not candidates of their own);
4. scores the best candidate and Kernel Tuner's genetic_algorithm, simulated_annealing,
   hybrid_vndx, adaptive_tabu_greywolf and random_sample on the campaign's training and test tasks
   with `generator.bench.command` (same time budgets, same seeds per repeat, methodology score P), at more
   repeats than the campaign used, so that the winner's score is not just its lucky draw.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

from benchmarks._lib.paths import ROOT

BASELINES = ("genetic_algorithm", "simulated_annealing", "hybrid_vndx", "adaptive_tabu_greywolf", "random_sample")


def run_campaign(config: str, run_dir: str) -> float:
    """Run the campaign in a fresh process; its wall time in seconds."""
    start = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "generator.cli", "run", config, "--run-dir", run_dir, "--no-progress"],
        cwd=ROOT,
        check=True,
    )
    return time.monotonic() - start


def candidate_counts(archive) -> dict:
    """How many candidates were synthesized, ran, failed (by kind) or repeated an earlier one."""
    made = archive.candidates()
    own = [c for c in made if not c.duplicate_of]
    failed: dict[str, int] = {}
    for c in own:
        if c.error:
            kind = c.error.get("kind", "unknown")
            failed[kind] = failed.get(kind, 0) + 1
    ran = sum(1 for c in own if not c.error)
    return {
        "generated": len(made),
        "duplicates": len(made) - len(own),
        "distinct": len(own),
        "ran": ran,
        "failed": failed,
        "success_rate": ran / len(own) if own else 0.0,
    }


def campaign_summary(archive, shown_dir: Path) -> str:
    """The end-of-campaign summary of the run directory, as `tunesmith run` prints it when the run ends in
    `shown_dir` (the campaign file's output.run_dir: what a user of the README's command sees)."""
    from generator.campaign.final_choice import load_choice
    from generator.campaign.printing import Summary, format_summary
    from generator.campaign.sealed_test import load_test
    from generator.llm.records import Usage

    usage = Usage()
    for exchange in archive.exchanges():
        usage.add(exchange)
    status, board = archive.status(), archive.best(10)
    summary = Summary(
        shown_dir,
        status.get("state", "stopped"),
        status.get("reason", ""),
        len(archive.candidates()),
        archive.config["evolution"]["budget"],
        usage.to_dict(),
        board,
        shown_dir / board[0].code_path if board else None,
        archive.config["llm"]["model"],
        load_choice(archive.run_dir) if archive.config["tasks"].get("validation") else None,
        load_test(archive.run_dir),
    )
    return format_summary(summary)


def compare(run_dir: Path, archive, repeats: int, seed: int, workers: int | None) -> dict:
    """Best candidate vs the baselines on the run's training and test tasks."""
    from generator.bench.command import bench
    from generator.bench.runner import parse_strategy
    from generator.config import TasksConfig
    from generator.tasks.entries import load_task_set

    tasks_cfg = TasksConfig.model_validate(archive.config["tasks"])
    train = load_task_set(tasks_cfg.train, tasks_cfg)
    test = load_task_set(list(tasks_cfg.test), tasks_cfg)
    best = archive.best(1)[0]
    specs = [parse_strategy(str(run_dir / best.code_path))] + [parse_strategy(b) for b in BASELINES]
    results = bench(train + test, specs, repeats=repeats, seed=seed, workers=workers, progress=True)
    names = {t.name for t in train}
    rows = []
    for label, r in zip([f"best candidate {best.id}"] + list(BASELINES), results):
        tr = [s.score for n, s in r.per_task.items() if n in names]
        te = [s.score for n, s in r.per_task.items() if n not in names]
        rows.append(
            {
                "strategy": label,
                "train": sum(tr) / len(tr),
                "test": sum(te) / len(te) if te else None,
                "per_task": {n: s.score for n, s in r.per_task.items()},
                "wall_s": r.wall_s,
            }
        )
    return {
        "best": {"id": best.id, "description": best.description, "campaign_score": best.score, "code": best.code_path},
        "train": [t.name for t in train],
        "test": [t.name for t in test],
        "rows": rows,
    }


def markdown(result: dict) -> str:
    """The README table: one row per strategy, mean P on training and test tasks, P per task."""
    tasks = result["compare"]["train"] + result["compare"]["test"]
    head = "| strategy | train mean P | test mean P | " + " | ".join(tasks) + " |"
    lines = [head, "|" + " --- |" * (3 + len(tasks))]
    for row in result["compare"]["rows"]:
        test = f"{row['test']:.3f}" if row["test"] is not None else "-"
        cells = " | ".join(f"{row['per_task'][t]:.3f}" for t in tasks)
        lines.append(f"| {row['strategy']} | {row['train']:.3f} | {test} | {cells} |")
    c = result["counts"]
    lines.append("")
    lines.append(
        f"Campaign: {c['generated']} candidates ({c['duplicates']} duplicates) in "
        f"{result['campaign_wall_s'] / 60:.1f} min; {c['ran']} of {c['distinct']} distinct candidates "
        f"ran without error ({100 * c['success_rate']:.0f}%); failures by kind: {c['failed'] or 'none'}."
    )
    lines.append(
        f"Scores: {result['repeats']} repeats per task, seed {result['seed']}; {result['machine']}; {result['date']}."
    )
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default="campaigns/quickstart.toml")
    p.add_argument("--run-dir", default="results/quickstart-bench")
    p.add_argument("--skip-run", action="store_true", help="analyse an existing run directory")
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=None)
    p.add_argument("--md", help="write the Markdown table here")
    p.add_argument("--json", help="write the full result here")
    args = p.parse_args(argv)

    from generator.archive import Archive

    run_dir = (ROOT / args.run_dir) if not Path(args.run_dir).is_absolute() else Path(args.run_dir)
    wall = None if args.skip_run else run_campaign(args.config, str(run_dir))
    archive = Archive.open(run_dir)
    if wall is None:  # an existing run: its own record of start and end
        made = archive.candidates()
        wall = max(c.created for c in made) - min(c.created for c in made) if made else 0.0
    result = {
        "config": args.config,
        "run_dir": str(run_dir),
        "campaign_wall_s": wall,
        "summary": campaign_summary(archive, _own_run_dir(args.config)),
        "counts": candidate_counts(archive),
        "repeats": args.repeats,
        "seed": args.seed,
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip() + f", {_cpus()} CPUs",
        "date": date.today().isoformat(),
    }
    result["compare"] = compare(run_dir, archive, args.repeats, args.seed, args.workers)
    table = markdown(result)
    print(table)
    if args.md:
        Path(args.md).write_text(table)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    return 0


def _own_run_dir(config: str) -> Path:
    """The run directory the campaign file names (output.run_dir), as `tunesmith run CONFIG` uses it."""
    from generator.config import campaign_file, load_config

    return Path(load_config(campaign_file(config)).output.run_dir)


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


if __name__ == "__main__":
    sys.exit(main())
