"""What `tunesmith hpo` found for a candidate: RUN_DIR/hpo/<id>.json, read by export and reports."""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

HPO_DIR = "hpo"
# The task sets a tuning result is scored on, in the order they are shown.
SPLITS = ("train", "validation", "test")


@dataclass
class SplitScores:
    """Scores of the default and the tuned hyperparameters on one task set."""

    tasks: list[str]
    before: float | None
    after: float | None
    per_task_before: dict[str, float | None] = field(default_factory=dict)
    per_task_after: dict[str, float | None] = field(default_factory=dict)
    se_before: float | None = None  # standard errors of before/after over their repeats
    se_after: float | None = None


@dataclass
class HpoResult:
    """What `tunesmith hpo` found for one candidate (RUN/hpo/<id>.json)."""

    candidate_id: str
    class_name: str
    study_name: str
    storage: str
    hyperparameters: dict
    defaults: dict
    best_params: dict
    best_value: float | None  # the objective of the best trial (training tasks, trial seed)
    trials: dict  # {"complete", "pruned", "failed", "interrupted", "requested"}
    train: SplitScores | None
    test: SplitScores | None
    repeats: int
    seed: int
    report_seed: int
    wall_s: float
    accepted: bool = True  # the tuned values beat the defaults with the fresh seed (training, and validation if any)
    report_repeats: int | None = None  # repeats of the train/test before/after scores
    validation: SplitScores | None = None  # the campaign's validation tasks: they decide `accepted` too
    date: str = field(default_factory=lambda: time.strftime("%Y-%m-%d %H:%M:%S"))

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def chosen_params(self) -> dict:
        """The values to use: the tuned ones if they held up on fresh random streams, else the defaults."""
        return dict(self.best_params if self.accepted else self.defaults)

    @classmethod
    def from_dict(cls, data: dict) -> HpoResult:
        data = dict(data)
        for split in SPLITS:
            if data.get(split):
                data[split] = SplitScores(**data[split])
        return cls(**data)


def write_result(run_dir: Path, result: HpoResult) -> Path:
    """RUN/hpo/<id>.json, replaced atomically (parallel workers may both write the same result)."""
    out = Path(run_dir) / HPO_DIR
    out.mkdir(exist_ok=True)
    path = out / f"{result.candidate_id}.json"
    tmp = out / f".{result.candidate_id}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(result.to_dict(), indent=1, default=_json_default))
    os.replace(tmp, path)
    return path


def _json_default(value):
    if hasattr(value, "item"):
        return value.item()
    return str(value)


def load_results(run_dir) -> dict[str, HpoResult]:
    """Every HPO result of a run, by candidate id."""
    out = Path(run_dir) / HPO_DIR
    results = {}
    for path in sorted(out.glob("*.json")) if out.is_dir() else []:
        try:
            result = HpoResult.from_dict(json.loads(path.read_text()))
        except (json.JSONDecodeError, TypeError, KeyError):
            continue
        results[result.candidate_id] = result
    return results


def _pm(se) -> str:
    """' ± 0.012', or nothing where the standard error is unknown."""
    return f" ± {se:.3f}" if isinstance(se, (int, float)) and not math.isnan(se) else ""


def format_result(r: HpoResult) -> str:
    """A few lines for the terminal."""

    def f(x):
        return "  n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:5.3f}"

    # interrupted trials (the process was killed or stopped) are not failures of the candidate: run again
    again = f", {r.trials['interrupted']} interrupted and run again" if r.trials.get("interrupted") else ""
    lines = [
        f"{r.candidate_id} ({r.class_name}): {r.trials.get('complete', 0)} complete, "
        f"{r.trials.get('pruned', 0)} pruned, {r.trials.get('failed', 0)} failed trials{again}; "
        f"study {r.study_name}"
    ]
    for label in SPLITS:
        s = getattr(r, label)
        if s is not None:
            lines.append(
                f"  {label[:5]:5s} P  default {f(s.before)}{_pm(s.se_before)}  ->  tuned {f(s.after)}"
                f"{_pm(s.se_after)}   ({', '.join(s.tasks)})"
            )
    changed = {k: v for k, v in r.best_params.items() if r.defaults.get(k) != v}
    if changed and not r.accepted:
        where = "training and validation tasks" if r.validation is not None else "training tasks"
        lines.append(
            f"  best trial {json.dumps(changed)} did not beat the defaults on the {where}' fresh seeds: defaults kept"
        )
    else:
        lines.append(f"  tuned values: {json.dumps(changed) if changed else 'defaults kept'}")
    return "\n".join(lines)
