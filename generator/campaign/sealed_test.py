"""The sealed test set (`[tasks] test`): scored once, after the final choice, and never used to choose.

A test set that is looked at after every decision stops being a test set: the six test spaces of
flagships 2 to 6 became training data that way (issue 38). So a campaign opens its test set exactly
once, for the candidate it finally chose (with the hyperparameters HPO kept), and records the scores
with the date and time of that look in RUN/test.json. Nothing reads the test scores to choose,
tune or accept anything: selection, HPO and the final choice never see them. A resume finds the
record and does not score again; if the choice has changed since (a longer budget, say), the new
winner is not scored on the test set: the record says which candidate was scored and when, and
`status` says that the new winner has no sealed test score.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from generator.archive import write_atomic
from generator.campaign.final_choice import fitness_scores

TEST_FILE = "test.json"
SEED_OFFSET = 104729  # the test runs' random streams: neither selection, HPO nor the final choice used them


@dataclass
class SealedTest:
    """The one look at the test set: who was scored, when, and what it scored."""

    candidate: str
    params: dict | None  # the hyperparameters it ran with (None: its declared defaults)
    tasks: list[str]
    repeats: int
    seed: int
    opened: str  # UTC date and time of the look
    score: float | None  # mean P over the test tasks, each kernel family weighted once; None if it failed
    se_families: float | None = None
    per_task: dict[str, float | None] = field(default_factory=dict)
    error: str | None = None

    def to_dict(self) -> dict:
        return {**asdict(self), "note": "scored once, after the final choice; never used to choose, tune or accept"}

    @staticmethod
    def from_dict(doc: dict) -> SealedTest:
        return SealedTest(**{k: v for k, v in doc.items() if k != "note"})


def load_test(run_dir) -> SealedTest | None:
    """The run's sealed test record, or None when its test set has not been opened."""
    try:
        return SealedTest.from_dict(json.loads((Path(run_dir) / TEST_FILE).read_text()))
    except (OSError, json.JSONDecodeError, KeyError, TypeError):
        return None


def open_test(
    run_dir, candidate: str, params: dict | None, tasks: list, repeats: int, seed: int, evaluate
) -> SealedTest:
    """Score the chosen candidate on the test tasks once (`evaluate(tasks, repeats, seed)` -> Fitness);
    a recorded look is returned as it is, whoever it scored."""
    old = load_test(run_dir)
    if old is not None:
        return old
    seed = seed + SEED_OFFSET
    names = [t.name for t in tasks]
    per, score, se, error = fitness_scores(evaluate(tasks, repeats, seed), names)
    record = SealedTest(
        candidate,
        params,
        names,
        repeats,
        seed,
        time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        score,
        se,
        per,
        error,
    )
    write_atomic(Path(run_dir) / TEST_FILE, json.dumps(record.to_dict(), indent=1))  # whole or not at all
    return record


def format_test(record: SealedTest | None, winner: str | None) -> list[str]:
    """Lines for `status` and the summary."""
    if record is None:
        return []
    if record.score is None:
        result = f"failed ({record.error})"
    else:
        result = f"P {record.score:.3f}" + (f" ± {record.se_families:.3f} over families" if record.se_families else "")
    lines = [
        f"sealed test set ({len(record.tasks)} task(s), opened once on {record.opened}): {record.candidate} "
        f"scored {result}"
    ]
    if winner is not None and winner != record.candidate:
        lines.append(
            f"  the winner is now {winner}; it has no sealed test score (the test set was opened for "
            f"{record.candidate} and is not opened twice)"
        )
    return lines
