"""Leave-one-space-out: how much a winner chosen on training spaces overfits them.

A campaign picks the candidate with the best mean P over its training spaces; part of that lead is
luck and fit to those spaces. Here a pool of candidates is scored once on every space (the same
seeds per repeat for all, so comparisons are paired); then, for each space in turn, the winner is
chosen on all the others and scored on the one left out. The gap between the winner's training
mean and its held-out P, averaged over the folds, estimates the overfitting of that choice; the
held-out P of the chosen winners estimates what a user gets on a space the campaign never saw.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np


@dataclass
class Fold:
    """One left-out space: the winner chosen on the other spaces and its scores."""

    held_out: str
    winner: str
    train: float  # the winner's mean P over the training spaces (what chose it)
    held_out_p: float  # its P on the left-out space
    best_held_out: str  # the pool's best candidate on the left-out space (the oracle's choice)
    best_held_out_p: float

    @property
    def gap(self) -> float:
        return self.train - self.held_out_p


@dataclass
class LeaveOneOut:
    """All folds, and their summary: mean gap and mean held-out P, with standard errors over folds."""

    folds: list[Fold]

    def summary(self) -> dict:
        gaps = np.array([f.gap for f in self.folds])
        held = np.array([f.held_out_p for f in self.folds])
        regret = np.array([f.best_held_out_p - f.held_out_p for f in self.folds])
        return {
            "folds": len(self.folds),
            "mean_gap": _mean(gaps),
            "gap_se": standard_error_of_mean(gaps),
            "mean_train": _mean([f.train for f in self.folds]),
            "mean_held_out": _mean(held),
            "held_out_se": standard_error_of_mean(held),
            "mean_regret": _mean(regret),
            "regret_se": standard_error_of_mean(regret),
            # robust to a fold where P is noise (a space with a budget of a handful of evaluations)
            "median_gap": float(np.median(gaps)),
            "median_held_out": float(np.median(held)),
        }

    def to_dict(self) -> dict:
        return {"summary": self.summary(), "folds": [{**asdict(f), "gap": f.gap} for f in self.folds]}


def _mean(x) -> float:
    return float(np.mean(x)) if len(x) else math.nan


def standard_error_of_mean(x) -> float:
    """Standard deviation / sqrt(n) of the values (NaN for fewer than two)."""
    x = np.asarray(x, dtype=float)
    return float(np.std(x, ddof=1) / math.sqrt(len(x))) if len(x) > 1 else math.nan


def leave_one_out(scores: dict[str, dict[str, float]]) -> LeaveOneOut:
    """Folds from P per candidate and space (`scores[candidate][space]`); a candidate missing a space
    (it failed there) counts as failing there (P -inf), so it can neither win on it nor be chosen."""
    candidates = sorted(scores)
    spaces = sorted({s for per in scores.values() for s in per})
    if len(spaces) < 2 or not candidates:
        raise ValueError("leave-one-out needs at least two spaces and one candidate")
    matrix = np.array([[scores[c].get(s, -math.inf) for s in spaces] for c in candidates], dtype=float)
    matrix = np.where(np.isnan(matrix), -math.inf, matrix)
    folds = []
    for j, space in enumerate(spaces):
        train = np.delete(matrix, j, axis=1).mean(axis=1)  # -inf where a candidate failed anywhere
        w = int(np.argmax(train))
        b = int(np.argmax(matrix[:, j]))
        folds.append(
            Fold(space, candidates[w], float(train[w]), float(matrix[w, j]), candidates[b], float(matrix[b, j]))
        )
    return LeaveOneOut(folds)


def split_gap(scores: dict[str, float], train_spaces: list[str]) -> dict:
    """A shipped winner's mean P on the spaces it was trained on vs on every other space."""
    train = [v for s, v in scores.items() if s in train_spaces]
    rest = [v for s, v in scores.items() if s not in train_spaces]
    return {
        "train": _mean(train),
        "train_se": standard_error_of_mean(train),
        "held_out": _mean(rest),
        "held_out_se": standard_error_of_mean(rest),
        "gap": _mean(train) - _mean(rest),
        "train_spaces": sorted(train_spaces),
        "held_out_spaces": len(rest),
    }
