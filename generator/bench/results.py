"""What `tunesmith bench` reports: one StrategyResult per strategy, as a table and as the `--json` document.

A strategy that failed on a task has no P there: the table says "failed" and lists the error
below, the JSON holds the error under "failed", and the strategy's mean over tasks is undefined
(null), because a mean over fewer tasks would not compare with the others'. Task names are the
ones campaigns, `stats` and `prompt` use (convolution_milo/A100), so JSON keys join across commands.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from generator.errors import TunesmithError
from generator.scoring.score import TaskScore


@dataclass(frozen=True)
class StrategyResult:
    """One strategy's bench result: mean P over tasks, P per task, wall seconds, errors per failed task."""

    label: str
    score: float  # NaN when the strategy failed on a task
    per_task: dict[str, TaskScore]  # the tasks it finished
    wall_s: float
    unique_evals: dict[str, float]  # mean unique evaluations per run, per finished task
    failed: dict[str, str] = field(default_factory=dict)  # task name -> the error that ended it there


def standard_error(score: TaskScore) -> float:
    """Standard error of P over repeats: std of the single-repeat scores / sqrt(repeats).

    P itself comes from one curve fitted over all repeats, so this is an estimate; checked against
    20 seeds x 100 repeats of random search (hotspot H200, convolution A100) it is on the safe side
    (0.046 and 0.044 vs a between-seed spread of 0.038 and 0.028).
    """
    n = len(score.per_repeat)
    return float(score.std / np.sqrt(n)) if n > 1 else float("nan")


def mean_standard_error(result: StrategyResult) -> float:
    """Standard error of the mean over tasks (tasks are run independently: errors add in quadrature)."""
    if result.failed:
        return float("nan")
    ses = [standard_error(s) for s in result.per_task.values()]
    return float(np.sqrt(np.sum(np.square(ses))) / len(ses)) if ses else float("nan")


# ------------------------------------------------------------------------ JSON


def results_json(results: list[StrategyResult], **meta) -> dict:
    """The `--json` document: {"results": {STRATEGY: {"score", "se", "per_task", "wall_s"[, "failed"]}}, ...meta}."""
    doc = {"results": {r.label: _strategy_json(r) for r in results}}
    doc.update(meta)
    return doc


def _strategy_json(r: StrategyResult) -> dict:
    per_task = {
        name: {
            "score": s.score,
            "std": s.std,
            "se": _finite(standard_error(s)),
            "error": s.error,
            "unique_evals": r.unique_evals[name],
        }
        for name, s in r.per_task.items()
    }
    per_task.update({name: {"score": None, "failed": message} for name, message in r.failed.items()})
    entry = {"score": _finite(r.score), "se": _finite(mean_standard_error(r)), "wall_s": r.wall_s, "per_task": per_task}
    if r.failed:
        entry["failed"] = list(r.failed)  # the tasks; each one's error is under per_task
    return entry


def _finite(x: float) -> float | None:
    """JSON has no NaN: an undefined number (one repeat's standard error, a failed mean) is null."""
    return x if np.isfinite(x) else None


def write_json(path, results: list[StrategyResult], **meta) -> None:
    """Write the `--json` document atomically: a reader (or a crash) never sees half a file."""
    text = json.dumps(results_json(results, **meta), indent=2) + "\n"
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, _file_mode(path))  # mkstemp makes it private (0600); the result is an ordinary file
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _file_mode(path: Path) -> int:
    """The mode `open(path, "w")` would give: the existing file's, else 0666 less the umask."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def check_writable(path) -> None:
    """Refuse an output path that cannot be written, before anything runs (one line naming it and the fix)."""
    from generator.export.output import OutputError, check_output_file

    path = Path(path)
    if not path.parent.is_dir():  # the results are written beside it and renamed: no folder is made for them
        raise TunesmithError(
            f"--json {path}: folder {path.parent} does not exist (or is not a folder); create it first"
        )
    try:
        check_output_file(path, "give --json a file where you may write", example="bench.json")
    except OutputError as exc:
        raise TunesmithError(f"--json {exc}") from None


# ------------------------------------------------------------------------ table


def table(results: list[StrategyResult], se: bool = False) -> str:
    """Rows: strategies; columns: tasks, mean P, wall seconds; `se` adds "± standard error" to each P.

    Failed cells say "failed"; the errors follow the table, one line per strategy and task.
    """
    if not results:
        return ""
    names = list(dict.fromkeys(n for r in results for n in [*r.per_task, *r.failed]))
    label_w = max(8, *(len(r.label) for r in results))
    cell_w = 15 if se else 7  # "-0.236 ± 0.062"
    widths = [max(cell_w, len(n)) for n in names]
    lines = [
        "  ".join(
            [f"{'strategy':<{label_w}}"]
            + [f"{n:>{w}}" for n, w in zip(names, widths)]
            + [f"{'mean':>{cell_w}}", f"{'wall s':>8}"]
        )
    ]

    def cell(p: float, err: float, w: int) -> str:
        if not np.isfinite(p):
            return f"{'failed':>{w}}"
        return f"{f'{p:.3f} ± {err:.3f}' if se else f'{p:.3f}':>{w}}"

    for r in results:
        cells = [
            cell(r.per_task[n].score, standard_error(r.per_task[n]), w)
            if n in r.per_task
            else cell(float("nan"), 0.0, w)
            if n in r.failed
            else f"{'':>{w}}"
            for n, w in zip(names, widths)
        ]
        lines.append(
            "  ".join(
                [f"{r.label:<{label_w}}"] + cells + [cell(r.score, mean_standard_error(r), cell_w), f"{r.wall_s:>8.1f}"]
            )
        )
    lines += [line for r in results for line in _failure_lines(r)]
    return "\n".join(lines)


def _failure_lines(result: StrategyResult) -> list[str]:
    """One line per distinct error of a strategy; one that names no task says on how many it happened."""
    by_message: dict[str, list[str]] = {}
    for name, message in result.failed.items():
        by_message.setdefault(message, []).append(name)
    return [
        message if name in message else f"{message} (on {len(names)} task{'s' * (len(names) > 1)})"
        for message, names in by_message.items()
        for name in names[:1]
    ]


class BenchRecord:
    """The results of a benchmark as they come: its `--json` file (if any; the caller checks it with
    `check_writable` before anything runs) is rewritten after each strategy, and written once more at the
    end, whatever ended it."""

    def __init__(self, path, strategies: list[str], **meta):
        self.path, self.strategies, self.meta = path, list(strategies), meta
        self.results: list[StrategyResult] = []

    def add(self, result: StrategyResult) -> None:
        """One more strategy finished: keep it, and save what is finished so far."""
        self.results.append(result)
        self.save(complete=False)

    def save(self, complete: bool) -> None:
        """Write the JSON ("complete": false and the strategies still "pending" while or if it did not finish)."""
        if self.path is None:
            return
        done = {r.label for r in self.results}
        write_json(
            self.path,
            self.results,
            complete=complete,
            pending=[s for s in self.strategies if s not in done],
            **self.meta,
        )
