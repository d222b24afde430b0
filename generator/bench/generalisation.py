"""Train vs test: exported winners beside Kernel Tuner's strategies on the same tasks and budgets.

Every strategy runs through `generator.bench.command` (trusted code, in-process): the same tasks, the same
time budget per task (the methodology's), the same seeds per repeat, scored with the same score P.
Exported modules are trusted (they were exported on purpose); candidates straight from a run are
not, and are compared through `tunesmith hpo` (sandboxed) instead.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from generator.errors import TunesmithError

# Kernel Tuner 1.5.0 strategies that finish on these budgets (bayes_opt and the pyATF ones need
# extra packages or hours), and the two generated strategies of the 2025 paper.
DEFAULT_BASELINES = (
    "random_sample",
    "genetic_algorithm",
    "simulated_annealing",
    "diff_evo",
    "pso",
    "firefly_algorithm",
    "dual_annealing",
    "greedy_ils",
    "mls",
    "basinhopping",
    "hybrid_vndx",
    "adaptive_tabu_greywolf",
)


@dataclass
class Row:
    """One strategy: mean P on the training and the test tasks, and P per task."""

    label: str
    generated: bool
    train: float | None
    test: float | None
    per_task: dict[str, float] = field(default_factory=dict)
    wall_s: float = 0.0
    extra: float | None = None  # mean P on further held-out tasks (neither train nor the run's test set)


@dataclass
class Generalisation:
    """The table and how it was made."""

    train: list[str]
    test: list[str]
    rows: list[Row]
    repeats: int
    seed: int
    date: str = field(default_factory=lambda: time.strftime("%Y-%m-%d"))
    note: str = ""
    extra: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Generalisation:
        data = dict(data)
        data["rows"] = [Row(**r) for r in data["rows"]]
        return cls(**data)

    def merged(self, other: Generalisation) -> Generalisation:
        """Both tables' rows (same tasks, repeats and seed: bench gives every strategy the same runs)."""
        if (self.train, self.test, self.extra, self.repeats, self.seed) != (
            other.train,
            other.test,
            other.extra,
            other.repeats,
            other.seed,
        ):
            raise TunesmithError("generalisation: tables differ in tasks, repeats or seed; they cannot be merged")
        rows = {r.label: r for r in self.rows + other.rows}
        return Generalisation(
            self.train,
            self.test,
            _sorted(list(rows.values())),
            self.repeats,
            self.seed,
            self.date,
            self.note,
            self.extra,
        )


def _mean(values: list[float | None]) -> float | None:
    """The mean, or None where there is nothing to average or a task failed (None): fewer tasks would not compare."""
    return sum(values) / len(values) if values and None not in values else None


def label_of(strategy: str) -> str:
    """generated_algorithms/x.py -> generated_algorithms.x; built-ins keep their names."""
    path = Path(strategy.split(":")[0])
    if path.suffix == ".py":
        return f"{path.parent.name}.{path.stem}" if path.parent.name else path.stem
    return strategy


def _sorted(rows: list[Row]) -> list[Row]:
    return sorted(rows, key=lambda row: -(row.test if row.test is not None else row.train or -9))


def compare(
    train: list,
    test: list,
    strategies: list[str],
    repeats: int = 10,
    seed: int = 0,
    workers: int | None = None,
    progress: bool = True,
    note: str = "",
    extra: list | None = None,
) -> Generalisation:
    """Run every strategy on train + test (+ extra) tasks (bench: same budgets and seeds) and tabulate."""
    from generator.bench.command import bench
    from generator.bench.runner import parse_strategy

    if not strategies:
        raise TunesmithError("generalisation: no strategies given; name exported modules and/or built-ins")
    extra = list(extra or [])
    tasks = list(train) + list(test) + extra
    results = bench(
        tasks, [parse_strategy(s) for s in strategies], repeats=repeats, seed=seed, workers=workers, progress=progress
    )
    rows = []
    for strategy, r in zip(strategies, results):
        per = {name: s.score for name, s in r.per_task.items()}
        rows.append(
            Row(
                label_of(strategy),
                strategy.split(":")[0].endswith(".py"),
                _mean([per.get(t.name) for t in train]),
                _mean([per.get(t.name) for t in test]),
                per,
                round(r.wall_s, 1),
                _mean([per.get(t.name) for t in extra]),
            )
        )
    return Generalisation(
        [t.name for t in train],
        [t.name for t in test],
        _sorted(rows),
        repeats,
        seed,
        note=note,
        extra=[t.name for t in extra],
    )


def _cell(x: float | None) -> str:
    return "" if x is None else f"{x:.3f}"


def _short(name: str) -> str:
    app, _, gpu = name.partition("/")
    return f"{app.removesuffix('_milo')}/{gpu}" if gpu else app


def markdown(g: Generalisation) -> str:
    """The table as Markdown: generated strategies in bold; train and test columns side by side."""
    tasks = g.train + g.test + g.extra
    kind = {**{t: "extra" for t in g.extra}, **{t: "test" for t in g.test}, **{t: "train" for t in g.train}}
    heads = (
        ["strategy", "train P", "test P"]
        + (["extra P"] if g.extra else [])
        + [f"{_short(t)} ({kind[t]})" for t in tasks]
    )
    lines = ["| " + " | ".join(heads) + " |", "| " + " | ".join(["---"] + ["---:"] * (len(heads) - 1)) + " |"]
    for row in g.rows:
        name = f"**{row.label}**" if row.generated else row.label
        means = [_cell(row.train), _cell(row.test)] + ([_cell(row.extra)] if g.extra else [])
        cells = [name, *means] + [_cell(row.per_task.get(t)) for t in tasks]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write(g: Generalisation, json_path=None, md_path=None) -> None:
    """Save the table as JSON and/or Markdown."""
    if json_path:
        Path(json_path).parent.mkdir(parents=True, exist_ok=True)
        Path(json_path).write_text(json.dumps(g.to_dict(), indent=1) + "\n")
    if md_path:
        Path(md_path).parent.mkdir(parents=True, exist_ok=True)
        Path(md_path).write_text(markdown(g) + "\n")
