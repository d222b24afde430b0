"""One run directory as the numbers a comparison needs: its settings and its best-so-far curve.

Read through the project's own readers (`review.lineage.Lineage` over `archive.Archive`), so a run
still being written, or cut short, reads as far as it got. Nothing is written into the run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from generator.review.lineage import Lineage

# Settings that differ between seeds of one arm, or between copies of one run, and so never split arms.
NOT_ARM = (
    "name",
    "description",
    "output",
    "evolution.seed",
    "evolution.budget",
    "llm.seed",
    "llm.caps",
    "llm.timeout",
    "llm.concurrency",
    "evaluation.seed",
    "evaluation.workers",
    "evaluation.executor",
    "evaluation.worker_wait",
    "tasks.hub",
    "hpo",
    "record",
)


@dataclass
class RunCurve:
    """A run's best training P after each candidate, with what had been spent by then."""

    run_dir: str
    name: str  # the campaign's name
    model: str
    seed: int | None
    settings: dict  # the stored configuration without the NOT_ARM keys: what makes the arm
    state: str
    candidates: list[str] = field(default_factory=list)  # ids, in generation order
    best: list[float | None] = field(default_factory=list)  # best P so far after each candidate
    tokens: list[int] = field(default_factory=list)  # cumulative LLM tokens after each candidate
    cost: list[float] = field(default_factory=list)  # cumulative USD
    wall: list[float] = field(default_factory=list)  # seconds since the run was created
    failed: int = 0

    @property
    def final(self) -> float | None:
        """The best P the run reached (its winner's training P)."""
        return self.best[-1] if self.best else None


def read_run(run_dir) -> RunCurve:
    """The curve of one run directory (finished, running or interrupted)."""
    lineage = Lineage.load(run_dir)
    stored = lineage.archive.stored
    created = _created(Path(run_dir))
    points = lineage.convergence()
    cands = list(lineage.candidates.values())
    start = created if created is not None else min((c.created for c in cands if c.created), default=0.0)
    return RunCurve(
        run_dir=str(run_dir),
        name=stored.name,
        model=stored.header.llm.model or stored.header.model,
        seed=stored.header.evolution.seed,
        settings=arm_settings(stored.as_dict()),
        state=lineage.status().get("state", "running or stopped"),
        candidates=[p.id for p in points],
        best=[p.best for p in points],
        tokens=[p.tokens for p in points],
        cost=[p.cost_usd for p in points],
        wall=[max(0.0, (c.created or start) - start) for c in cands],
        failed=sum(1 for c in cands if c.error),
    )


def _created(run_dir: Path) -> float | None:
    try:
        return float(json.loads((run_dir / "run.json").read_text()).get("created"))
    except (OSError, ValueError, TypeError):
        return None  # a run made before run.json was written: its first candidate's time stands in


def arm_settings(config: dict) -> dict:
    """The configuration as flat dotted keys, without the keys that do not make an arm (NOT_ARM)."""
    flat: dict = {}

    def walk(node: dict, prefix: str) -> None:
        for key, value in node.items():
            dotted = f"{prefix}{key}"
            if any(dotted == k or dotted.startswith(k + ".") for k in NOT_ARM):
                continue
            if isinstance(value, dict):
                walk(value, dotted + ".")
            else:
                flat[dotted] = value

    walk(config, "")
    return flat
