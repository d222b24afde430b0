"""The final choice of winners on the validation tasks (`[tasks] validation`), by kernel family.

Selection during evolution, the leaderboard and HPO all rank candidates by their training score, so
the best of them is partly the one that fits the training spaces best by luck. The validation tasks
are never shown to the loop: once evolution (and HPO) is done, the `finalists` best candidates (and
every tuned one) are scored on them, with fresh random streams. A user's next kernel is a new kernel
family, so the choice weighs families, not spaces: each finalist's validation score is the mean over
families of its mean P over the family's spaces (`generator.tasks.families.family_of`: the same
kernel on three GPUs counts once), and its standard error comes from the spread over families. With
two or more validation families, each finalist is also ranked with each family left out in turn: the
spread of those ranks says how far the choice can be trusted. The best family-weighted score picks
the winner that `status`, the summary and `export` name. The test tasks are sealed
(generator.campaign.sealed_test): scored once, after this choice, and never used by it.
The choice is written to RUN/validation.json; resume reuses it when nothing it depends on changed.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from generator.archive import Archive, write_atomic
from generator.tasks.families import families_of

CHOICE_FILE = "validation.json"
WEIGHTING = "families"  # how the validation score averages: a recorded choice made otherwise is made again
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
    se_families: float | None = None  # standard error of `validation` from the spread over kernel families
    fold_ranks: dict[str, int] = field(default_factory=dict)  # left-out family -> rank among the finalists


@dataclass
class FinalChoice:
    """The validation scores of the finalists, best first, and the winner they pick."""

    tasks: list[str]
    repeats: int
    seed: int
    finalists: list[Finalist]
    weighting: str = WEIGHTING  # "families" (this release); "spaces" in choices recorded before it

    @property
    def winner(self) -> str | None:
        ok = [f for f in self.finalists if f.validation is not None]
        return max(ok, key=lambda f: f.validation).id if ok else None

    def to_dict(self) -> dict:
        return {
            **asdict(self),
            "winner": self.winner,
            "note": "validation tasks are used only for this final choice, never by selection",
        }

    @staticmethod
    def from_dict(doc: dict) -> FinalChoice:
        return FinalChoice(
            list(doc["tasks"]),
            int(doc["repeats"]),
            int(doc["seed"]),
            [Finalist(**f) for f in doc["finalists"]],
            doc.get("weighting", "spaces"),
        )


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
    if (
        old is not None
        and (old.tasks, old.repeats, old.seed, old.weighting) == (names, repeats, seed, WEIGHTING)
        and sorted((f.id, json.dumps(f.params, sort_keys=True)) for f in old.finalists)
        == sorted((c.id, json.dumps(p, sort_keys=True)) for c, p in picks)
    ):
        return old
    scored = []
    for cand, params in picks:
        code = archive.code(cand) or ""
        fit = evaluate(code, tasks, repeats, seed, params)
        per, score, se, error = fitness_scores(fit, names)
        scored.append(Finalist(cand.id, cand.score, score, per, params, error, se))
    _rank_folds(scored, names)
    choice = FinalChoice(names, repeats, seed, sorted(scored, key=_rank))
    _write(archive.run_dir, choice)
    return choice


def fitness_scores(fit, tasks: list[str]) -> tuple[dict, float | None, float | None, str | None]:
    """A Fitness on tasks selection never saw: P per task, the family-weighted mean and its standard error over
    families (None when it failed), and the one-line error that ended it (None when it ran)."""
    per = {name: getattr(tf, "score", None) for name, tf in (fit.per_task or {}).items()}
    if fit.error is not None:
        return per, None, None, f"{fit.error.kind}: {fit.error.message}"[:300]
    return (per, *family_score(per, tasks), None)


def family_score(per_task: dict[str, float | None], tasks: list[str]) -> tuple[float | None, float | None]:
    """Mean over kernel families of the mean P over each family's tasks, and its standard error over families."""
    if any(per_task.get(t) is None for t in tasks):
        return None, None
    means = [sum(per_task[t] for t in ts) / len(ts) for ts in families_of(tasks).values()]
    mean = sum(means) / len(means)
    if len(means) < 2:
        return mean, None
    var = sum((m - mean) ** 2 for m in means) / (len(means) - 1)
    return mean, (var / len(means)) ** 0.5


def _rank_folds(finalists: list[Finalist], tasks: list[str]) -> None:
    """Each finalist's rank among those that ran everywhere, by its score with each family left out."""
    families = families_of(tasks)
    ok = [f for f in finalists if f.validation is not None]
    if len(families) < 2 or not ok:
        return
    for left_out in families:
        rest = [t for fam, ts in families.items() if fam != left_out for t in ts]
        scores = {f.id: family_score(f.per_task, rest)[0] for f in ok}
        for f in ok:
            f.fold_ranks[left_out] = 1 + sum(v > scores[f.id] for v in scores.values())


def _rank(f: Finalist) -> tuple:
    return (f.validation is None, -(f.validation or 0.0), -(f.train or 0.0))


def _write(run_dir: Path, choice: FinalChoice) -> None:
    write_atomic(Path(run_dir) / CHOICE_FILE, json.dumps(choice.to_dict(), indent=1))  # a crash leaves the old one


def format_choice(choice: FinalChoice | None) -> list[str]:
    """Lines for `status` and the summary: the finalists' training and validation P, and the winner."""
    if choice is None:
        return []
    by_family = choice.weighting == "families"
    lines = [
        f"final choice on {len(choice.tasks)} validation task(s) (used only for this choice, never by "
        f"selection; {choice.repeats} repeats): {', '.join(choice.tasks)}",
        f"  {'id':6} {'train P':>8} {'valid. P':>8} {'± fam.':>7} {'ranks w/o a family':>18}  tuned",
    ]
    for f in choice.finalists:
        val = f"{f.validation:8.3f}" if f.validation is not None else f"{'failed':>8}"
        train = f"{f.train:8.3f}" if f.train is not None else f"{'-':>8}"
        se = f"{f.se_families:7.3f}" if f.se_families is not None else f"{'-':>7}"
        ranks = sorted(f.fold_ranks.values())
        spread = f"{ranks[0]}..{ranks[-1]}" if ranks else "-"
        lines.append(f"  {f.id:6} {train} {val} {se} {spread:>18}  {'yes' if f.params else 'no'}")
    if by_family:
        n = len(families_of(choice.tasks))
        lines.append(
            f"  valid. P weighs each kernel family once ({n} famil{'y' if n == 1 else 'ies'}); ± fam. is "
            "its standard error over families; ranks w/o a family: best..worst rank with one left out"
        )
    lines.append(f"winner (best validation P): {choice.winner or 'none: every finalist failed on validation'}")
    return lines
