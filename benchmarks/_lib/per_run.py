"""Runs of one strategy on one task at `tunesmith bench`'s seeds and budget (per_run.py, first_evaluations.py)."""

from generator.bench.command import run_seed
from generator.bench.runner import parse_strategy, run_once
from generator.scoring.score import budget_for


def traces_of(task, strategy: str, repeats: int, seed: int) -> list:
    """`repeats` runs of one strategy at `tunesmith bench`'s seeds and budget."""
    spec = parse_strategy(strategy)
    return [run_once(task, spec, run_seed(seed, r), budget_for(task), None) for r in range(repeats)]
