"""The final choice of winners on the validation tasks (`[tasks] validation`).

Selection during evolution, the leaderboard and HPO all rank candidates by their training score, so
the best of them is partly the one that fits the training spaces best by luck. The validation tasks
are never shown to the loop: once evolution (and HPO) is done, the `finalists` best candidates (and
every tuned one) are scored on them, with fresh random streams, and the best validation score picks
the winner that `status`, the summary and `export` name. The test tasks stay for the report only.
The choice is written to RUN/validation.json; resume reuses it when nothing it depends on changed.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from generator.archive import Archive

CHOICE_FILE = "validation.json"
SEED_OFFSET = 7919  # validation runs use streams that neither selection nor HPO trials saw


@dataclass
class Finalist:
    """One candidate scored on the validation tasks (with its tuned values when HPO kept them)."""

    id: str
    train: float | None  # its training score (what selection saw)
    validation: float | None  # mean P over the validation tasks; None when it failed there
    per_task: dict[str, float | None] = field(default_factory=dict)
    params: dict | None = None  # tuned hyperparameters, None for the declared defaults
    error: str | None = None


@dataclass
class FinalChoice:
    """The validation scores of the finalists, best first, and the winner they pick."""

    tasks: list[str]
    repeats: int
    seed: int
    finalists: list[Finalist]

    @property
    def winner(self) -> str | None:
        ok = [f for f in self.finalists if f.validation is not None]
        return max(ok, key=lambda f: f.validation).id if ok else None

    def to_dict(self) -> dict:
        return {**asdict(self), "winner": self.winner,
                "note": "validation tasks are used only for this final choice, never by selection"}

    @staticmethod
    def from_dict(doc: dict) -> FinalChoice:
        return FinalChoice(list(doc["tasks"]), int(doc["repeats"]), int(doc["seed"]),
                           [Finalist(**f) for f in doc["finalists"]])


def load_choice(run_dir) -> FinalChoice | None:
    """The recorded final choice of a run, or None when it has no validation tasks (or none was made)."""
    path = Path(run_dir) / CHOICE_FILE
    try:
        return FinalChoice.from_dict(json.loads(path.read_text()))
    except (OSError, json.JSONDecodeError, KeyError, TypeError):
        return None


def finalists(archive: Archive, k: int) -> list[tuple]:
    """(candidate, tuned values or None): every tuned candidate and the k best by training score."""
    from generator.tuning.results import load_results

    tuned = load_results(archive.run_dir)
    chosen = {c.id: c for c in archive.best(k)}
    for cid in tuned:
        chosen.setdefault(cid, archive.candidate(cid))
    out = []
    for cand in sorted(chosen.values(), key=lambda c: -(c.score if c.score is not None else -9)):
        result = tuned.get(cand.id)
        params = result.best_params if result is not None and result.accepted else None
        out.append((cand, params or None))
    return out


def choose(archive: Archive, tasks: list, k: int, repeats: int, seed: int, evaluate) -> FinalChoice:
    """Score the finalists on the validation tasks (`evaluate(code, tasks, repeats, seed, params)` -> Fitness)
    and record the choice; a recorded choice of the same finalists, tasks, repeats and seed is reused."""
    seed = seed + SEED_OFFSET
    picks = finalists(archive, k)
    names = [t.name for t in tasks]
    old = load_choice(archive.run_dir)
    if old is not None and (old.tasks, old.repeats, old.seed) == (names, repeats, seed) and \
            sorted((f.id, json.dumps(f.params, sort_keys=True)) for f in old.finalists) == \
            sorted((c.id, json.dumps(p, sort_keys=True)) for c, p in picks):
        return old
    scored = []
    for cand, params in picks:
        code = archive.code(cand) or ""
        fit = evaluate(code, tasks, repeats, seed, params)
        per = {name: getattr(tf, "score", None) for name, tf in (fit.per_task or {}).items()}
        error = None if fit.error is None else f"{fit.error.kind}: {fit.error.message}"[:300]
        scored.append(Finalist(cand.id, cand.score, fit.score if fit.error is None else None, per, params, error))
    choice = FinalChoice(names, repeats, seed, sorted(scored, key=_rank))
    _write(archive.run_dir, choice)
    return choice


def _rank(f: Finalist) -> tuple:
    return (f.validation is None, -(f.validation or 0.0), -(f.train or 0.0))


def _write(run_dir: Path, choice: FinalChoice) -> None:
    path = Path(run_dir) / CHOICE_FILE
    tmp = path.with_name(f".{CHOICE_FILE}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(choice.to_dict(), indent=1))
    os.replace(tmp, path)  # whole or not at all: a crash leaves the old choice or none


def format_choice(choice: FinalChoice | None) -> list[str]:
    """Lines for `status` and the summary: the finalists' training and validation P, and the winner."""
    if choice is None:
        return []
    lines = [f"final choice on {len(choice.tasks)} validation task(s) (used only for this choice, never by "
             f"selection; {choice.repeats} repeats): {', '.join(choice.tasks)}",
             f"  {'id':6} {'train P':>8} {'valid. P':>8}  tuned"]
    for f in choice.finalists:
        val = f"{f.validation:8.3f}" if f.validation is not None else f"{'failed':>8}"
        train = f"{f.train:8.3f}" if f.train is not None else f"{'-':>8}"
        lines.append(f"  {f.id:6} {train} {val}  {'yes' if f.params else 'no'}")
    lines.append(f"winner (best validation P): {choice.winner or 'none: every finalist failed on validation'}")
    return lines
