"""Cross-validation over kernel families: how far a choice of optimizer holds on a kernel nobody tuned to.

A user's new kernel is a new *family*, not a new GPU for a kernel we have seen: the same GEMM on another
card shares most of its landscape. So every estimate here leaves out whole families. From one table of
P per strategy and space (one `tunesmith bench` run: the same seeds and budgets for every strategy):

- each strategy's score is the mean over families of the mean over that family's spaces (a family with
  five GPUs weighs as much as one with one), with two standard errors: `se_kernels`, from the spread over
  families (what a new kernel adds), and `se_noise`, from the repeats;
- leave-one-family-out: for each family, every strategy is ranked by its mean over the other families;
  the rank's spread over folds says how far the ranking can be trusted;
- the *selection* estimate: in each fold the protocol picks the best strategy on the other families and
  is scored on the left-out one. Its mean over folds predicts what the protocol's pick scores on a new
  kernel, which a strategy's own mean (the pick's in-sample score) overstates.

Families come from the task's kernel name (`gemm/H200` -> `gemm`) through generator.tasks.families, which joins
kernels that compute the same thing under other names. Sealed families (the test set,
benchmarks/protocol/families.toml) are refused unless a caller asks to open them.
"""

from __future__ import annotations

import json
import math
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from generator.bench.leave_one_out import standard_error_of_mean as _se
from generator.errors import TunesmithError
from generator.tasks.families import families_of, family_of


def sealed_families(protocol: Path | str | None) -> list[str]:
    """The families a protocol file seals as the test set (`sealed = [...]`); none without a file."""
    if protocol is None:
        return []
    try:
        doc = tomllib.loads(Path(protocol).read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise TunesmithError(
            f'{protocol}: cannot read the protocol file ({exc}); give a TOML file with sealed = ["family", ...]'
        ) from None
    sealed = doc.get("sealed", [])
    if not isinstance(sealed, list) or not all(isinstance(s, str) for s in sealed):
        raise TunesmithError(f"{protocol}: 'sealed' must be a list of family names, e.g. sealed = [\"spmv\"]")
    return sealed


def split_sealed(tasks: list, protocol, open_sealed: bool = False) -> list:
    """The tasks outside the protocol's sealed families, or, with `open_sealed`, only those inside them."""
    if protocol is None:
        raise TunesmithError("--open-sealed needs --protocol FILE: the file that names the sealed families")
    sealed = set(sealed_families(protocol))
    kept = [t for t in tasks if (family_of(t.name) in sealed) == open_sealed]
    if not kept:
        which = "in" if open_sealed else "outside"
        raise TunesmithError(
            f"--protocol {protocol}: no task {which} the sealed families {sorted(sealed)}; check --tasks"
        )
    return kept


@dataclass(frozen=True)
class ScoreTable:
    """P and its standard error per strategy and task (one bench run: paired seeds and budgets)."""

    scores: dict[str, dict[str, float]]  # strategy -> task -> P
    ses: dict[str, dict[str, float]]  # strategy -> task -> standard error of P over repeats

    @property
    def strategies(self) -> list[str]:
        return list(self.scores)

    @property
    def tasks(self) -> list[str]:
        """The tasks every strategy has a score on (a strategy that failed a task cannot be compared there)."""
        common = None
        for per in self.scores.values():
            common = set(per) if common is None else common & set(per)
        return sorted(common or [])

    @classmethod
    def from_bench_json(cls, docs: list[dict]) -> ScoreTable:
        """Merge `tunesmith bench --json` documents task by task: a strategy benched on some spaces in one
        document and on new spaces in another has both; where two documents score it on the same task, the
        later one counts (a rerun with more repeats replaces the first)."""
        scores, ses = {}, {}
        for doc in docs:
            for label, entry in doc.get("results", {}).items():
                per = {t: v for t, v in entry.get("per_task", {}).items() if v.get("score") is not None}
                scores.setdefault(label, {}).update({t: float(v["score"]) for t, v in per.items()})
                ses.setdefault(label, {}).update(
                    {t: float(v["se"]) if v.get("se") is not None else math.nan for t, v in per.items()}
                )
        return cls(scores, ses)

    def without(self, families: list[str]) -> ScoreTable:
        """The table without the tasks of these families."""
        drop = set(families)
        keep = lambda per: {t: v for t, v in per.items() if family_of(t) not in drop}  # noqa: E731 - local helper
        return ScoreTable({s: keep(p) for s, p in self.scores.items()}, {s: keep(p) for s, p in self.ses.items()})

    def only(self, strategies: list[str]) -> ScoreTable:
        missing = [s for s in strategies if s not in self.scores]
        if missing:
            raise TunesmithError(f"crossval: no results for {', '.join(missing)}; bench them first")
        return ScoreTable({s: self.scores[s] for s in strategies}, {s: self.ses[s] for s in strategies})


@dataclass
class StrategyCV:
    """One strategy under the protocol: family-weighted mean, its errors, its rank in every fold."""

    label: str
    mean: float  # mean over families of the mean over the family's spaces
    se_kernels: float  # standard error from the spread over families (a new kernel is one more draw)
    se_noise: float  # standard error from the repeats alone
    per_family: dict[str, float]
    fold_ranks: dict[str, int]  # left-out family -> rank by mean over the other families (1 = chosen)
    diff_to_best: float = 0.0  # mean minus the best strategy's mean (paired over families)
    diff_se: float = 0.0  # standard error of that difference over families

    @property
    def rank_spread(self) -> tuple[int, int, int]:
        """(best, median, worst) rank over the folds."""
        ranks = sorted(self.fold_ranks.values())
        return ranks[0], ranks[len(ranks) // 2], ranks[-1]


@dataclass
class SelectionFold:
    """One left-out family: what the protocol chose without it, and how that did on it."""

    family: str
    chosen: str
    chosen_p: float  # the chosen strategy's mean P over the left-out family's spaces
    best: str  # the best strategy on the left-out family (what an oracle would have picked)
    best_p: float


@dataclass
class CrossValidation:
    """The protocol's table: strategies best first, the folds, and the selection estimate."""

    families: dict[str, list[str]]
    strategies: list[StrategyCV]
    folds: list[SelectionFold]
    sealed: list[str] = field(default_factory=list)

    @property
    def selection_estimate(self) -> tuple[float, float]:
        """(mean, standard error) over folds of the P the protocol's pick gets on a family it never saw."""
        held = np.array([f.chosen_p for f in self.folds])
        return float(held.mean()), _se(held)

    @property
    def winner(self) -> str:
        return self.strategies[0].label

    @classmethod
    def from_dict(cls, doc: dict) -> CrossValidation:
        """The table back from `to_dict` (a `tunesmith crossval --json` file)."""
        rows = [StrategyCV(**{k: v for k, v in s.items() if k != "rank_spread"}) for s in doc["strategies"]]
        return cls(doc["families"], rows, [SelectionFold(**f) for f in doc["folds"]], doc.get("sealed", []))

    def to_dict(self) -> dict:
        mean, se = self.selection_estimate
        return {
            "families": self.families,
            "sealed": self.sealed,
            "winner": self.winner,
            "selection_estimate": {"mean": mean, "se": se},
            "strategies": [{**asdict(s), "rank_spread": list(s.rank_spread)} for s in self.strategies],
            "folds": [asdict(f) for f in self.folds],
        }


def family_matrix(table: ScoreTable, families: dict[str, list[str]]) -> tuple[np.ndarray, np.ndarray]:
    """Strategies x families: mean P over each family's spaces, and its noise standard error."""
    strategies = table.strategies
    means = np.array(
        [[np.mean([table.scores[s][t] for t in tasks]) for tasks in families.values()] for s in strategies]
    )
    noise = np.array(
        [
            [math.sqrt(sum(table.ses[s][t] ** 2 for t in tasks)) / len(tasks) for tasks in families.values()]
            for s in strategies
        ]
    )
    return means, noise


def _ranks(values: np.ndarray) -> np.ndarray:
    """1 for the highest value; ties share the better rank."""
    order = -values
    return np.array([1 + int(np.sum(order < o)) for o in order])


def cross_validate(table: ScoreTable, sealed: list[str] = ()) -> CrossValidation:
    """The protocol on a table: family-weighted means, leave-one-family-out ranks and the selection estimate."""
    table = table.without(list(sealed))
    families = families_of(table.tasks)
    if len(families) < 3:
        raise TunesmithError(
            f"crossval: {len(families)} kernel families in the table ({', '.join(families)}); "
            "cross-validation by family needs at least 3: bench on more kernels"
        )
    if not table.strategies:
        raise TunesmithError("crossval: no strategies in the table")
    labels, names = table.strategies, list(families)
    means, noise = family_matrix(table, families)
    overall = means.mean(axis=1)
    best = int(np.argmax(overall))
    rows = []
    fold_ranks = {}
    for j, fam in enumerate(names):
        fold_ranks[fam] = _ranks(np.delete(means, j, axis=1).mean(axis=1))
    for i, label in enumerate(labels):
        diff = means[i] - means[best]
        rows.append(
            StrategyCV(
                label,
                float(overall[i]),
                _se(means[i]),
                float(math.sqrt(np.sum(noise[i] ** 2)) / len(names)),
                {f: float(means[i, j]) for j, f in enumerate(names)},
                {f: int(fold_ranks[f][i]) for f in names},
                float(diff.mean()),
                _se(diff),
            )
        )
    rows.sort(key=lambda r: -r.mean)
    folds = []
    for j, fam in enumerate(names):
        chosen = int(np.argmin(fold_ranks[fam]))
        top = int(np.argmax(means[:, j]))
        folds.append(SelectionFold(fam, labels[chosen], float(means[chosen, j]), labels[top], float(means[top, j])))
    return CrossValidation(families, rows, folds, list(sealed))


def load_tables(paths: list[Path | str]) -> ScoreTable:
    """A ScoreTable from one or more `tunesmith bench --json` files."""
    docs = []
    for path in paths:
        try:
            docs.append(json.loads(Path(path).read_text()))
        except (OSError, json.JSONDecodeError) as exc:
            raise TunesmithError(
                f"{path}: not a bench result ({exc}); give files written by tunesmith bench --json"
            ) from None
    return ScoreTable.from_bench_json(docs)


def _short(label: str) -> str:
    """A strategy file by its module name, with the options it was run with: `x (patience=30, knn_k=5)`."""
    path, *options = label.split(":")
    if not path.endswith(".py"):
        return label
    return Path(path).stem + (f" ({', '.join(options)})" if options else "")


def markdown(cv: CrossValidation) -> str:
    """The table as Markdown: strategy, family-weighted P ± errors, difference to the best, rank spread, families."""
    names = list(cv.families)
    head = ["strategy", "P (families)", "± kernels", "± noise", "vs best", "rank best/median/worst"] + names
    lines = ["| " + " | ".join(head) + " |", "| --- " + "| ---: " * (len(head) - 1) + "|"]
    for s in cv.strategies:
        lo, mid, hi = s.rank_spread
        cells = [
            _short(s.label),
            f"{s.mean:.3f}",
            f"{s.se_kernels:.3f}",
            f"{s.se_noise:.3f}",
            "" if s.label == cv.winner else f"{s.diff_to_best:+.3f} ± {s.diff_se:.3f}",
            f"{lo}/{mid}/{hi}",
        ]
        lines.append("| " + " | ".join(cells + [f"{s.per_family[f]:.3f}" for f in names]) + " |")
    mean, se = cv.selection_estimate
    lines += [
        "",
        f"Selection estimate (leave one family out, {len(cv.folds)} folds): the pick scores "
        f"{mean:.3f} ± {se:.3f} on a family it never saw; in-sample the winner scores {cv.strategies[0].mean:.3f}.",
        "",
        "| left-out family | spaces | chosen without it | its P there | best there | best P |",
        "| --- | ---: | --- | ---: | --- | ---: |",
    ]
    for f in cv.folds:
        lines.append(
            f"| {f.family} | {len(cv.families[f.family])} | {_short(f.chosen)} | {f.chosen_p:.3f} | "
            f"{_short(f.best)} | {f.best_p:.3f} |"
        )
    return "\n".join(lines)
