"""A portfolio rule: which generated optimizer to run on a space, learned under cross-validation by family.

The rule looks only at what a Kernel Tuner strategy knows before its first evaluation: the number of
valid configurations, the number of tuned parameters and the share of the Cartesian product the
restrictions leave (`SpaceFeatures`). It is a single member, or one threshold on one feature with a
member on each side (a decision stump): with a few dozen spaces from a dozen families, anything richer
fits the families it was learned on. A split needs at least MIN_FAMILIES_PER_SIDE families on each side.

`nested_estimate` scores the *procedure* that learns the rule: for each family, the rule is learned on
the others and applied to the left-out family's spaces. Because a static rule runs exactly one member on
a space, and bench gives every strategy the same seeds, the portfolio's P on a space is its member's P
there. That estimate is what to compare with the selection estimate of a single optimizer
(`crossval.CrossValidation.selection_estimate`): the portfolio ships only if it is ahead by more than
two standard errors of the paired difference.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from generator.bench.crossval import ScoreTable
from generator.bench.leave_one_out import standard_error_of_mean as _se
from generator.tasks.families import families_of

FEATURES = ("log2_size", "dims", "density")
MIN_FAMILIES_PER_SIDE = 3


@dataclass(frozen=True)
class SpaceFeatures:
    """What a strategy can see of a space before it evaluates anything."""

    log2_size: float  # log2 of the number of valid configurations
    dims: int  # tuned parameters (those with more than one value)
    density: float  # valid configurations / Cartesian product

    @classmethod
    def of(cls, tune_params: dict, size: int) -> SpaceFeatures:
        cartesian = int(np.prod([len(v) for v in tune_params.values()]))
        return cls(math.log2(max(1, size)), sum(len(v) > 1 for v in tune_params.values()), size / max(1, cartesian))

    @classmethod
    def of_task(cls, task) -> SpaceFeatures:
        return cls.of(task.space.tune_params, len(task.space.valid))


@dataclass(frozen=True)
class Rule:
    """`below` where feature <= threshold, else `above`; a single member when feature is None."""

    below: str
    feature: str | None = None
    threshold: float | None = None
    above: str | None = None

    def pick(self, features: SpaceFeatures) -> str:
        if self.feature is None:
            return self.below
        return self.below if getattr(features, self.feature) <= self.threshold else self.above

    def describe(self) -> str:
        if self.feature is None:
            return f"always {self.below}"
        return f"{self.feature} <= {self.threshold:.4g}: {self.below}; else {self.above}"


def _family_score(rule: Rule, table: ScoreTable, families: dict[str, list[str]], feats: dict) -> float:
    """Mean over families of the mean P of the member the rule picks on each space."""
    return float(
        np.mean([np.mean([table.scores[rule.pick(feats[t])][t] for t in tasks]) for tasks in families.values()])
    )


def candidate_rules(members: list[str], families: dict[str, list[str]], feats: dict) -> list[Rule]:
    """Every single member, and every stump whose both sides hold MIN_FAMILIES_PER_SIDE families or more."""
    rules = [Rule(m) for m in members]
    for feature in FEATURES:
        values = sorted({getattr(feats[t], feature) for tasks in families.values() for t in tasks})
        for lo, hi in zip(values, values[1:]):
            cut = (lo + hi) / 2
            below = sum(any(getattr(feats[t], feature) <= cut for t in ts) for ts in families.values())
            above = sum(any(getattr(feats[t], feature) > cut for t in ts) for ts in families.values())
            if min(below, above) < MIN_FAMILIES_PER_SIDE:
                continue
            rules += [Rule(a, feature, cut, b) for a in members for b in members if a != b]
    return rules


def learn_rule(table: ScoreTable, feats: dict, members: list[str]) -> Rule:
    """The rule with the best family-weighted mean on the table's tasks; ties go to the simpler rule."""
    families = families_of(table.tasks)
    best, best_score = None, -math.inf
    for rule in candidate_rules(members, families, feats):  # single members come first: they win ties
        score = _family_score(rule, table, families, feats)
        if score > best_score + 1e-12:
            best, best_score = rule, score
    return best


@dataclass
class PortfolioFold:
    family: str
    rule: str  # the rule learned without this family
    portfolio_p: float  # its mean P on the family
    single: str  # the single best member learned without this family
    single_p: float


@dataclass
class PortfolioCV:
    """The rule learned on every family, and the nested estimates of portfolio and single best."""

    rule: Rule
    folds: list[PortfolioFold]

    def estimates(self) -> dict:
        port = np.array([f.portfolio_p for f in self.folds])
        single = np.array([f.single_p for f in self.folds])
        diff = port - single
        return {
            "portfolio": float(port.mean()),
            "portfolio_se": _se(port),
            "single": float(single.mean()),
            "single_se": _se(single),
            "difference": float(diff.mean()),
            "difference_se": _se(diff),
        }

    @classmethod
    def from_dict(cls, doc: dict) -> PortfolioCV:
        """The result back from `to_dict` (the `portfolio` key of a `tunesmith crossval --json` file)."""
        return cls(Rule(**doc["rule"]), [PortfolioFold(**f) for f in doc["folds"]])

    def to_dict(self) -> dict:
        return {
            "rule": asdict(self.rule),
            "rule_text": self.rule.describe(),
            "estimates": self.estimates(),
            "folds": [asdict(f) for f in self.folds],
        }


def nested_estimate(table: ScoreTable, feats: dict, members: list[str]) -> PortfolioCV:
    """Learn the rule without each family in turn and score it on that family; also the single best member."""
    table = table.only(members)
    families = families_of(table.tasks)
    folds = []
    for fam, tasks in families.items():
        rest = table.without([fam])
        rule = learn_rule(rest, feats, members)
        single = _single_best(rest, feats, members)
        folds.append(
            PortfolioFold(
                fam,
                rule.describe(),
                float(np.mean([table.scores[rule.pick(feats[t])][t] for t in tasks])),
                single,
                float(np.mean([table.scores[single][t] for t in tasks])),
            )
        )
    return PortfolioCV(learn_rule(table, feats, members), folds)


def _single_best(table: ScoreTable, feats: dict, members: list[str]) -> str:
    families = families_of(table.tasks)
    return max(members, key=lambda m: _family_score(Rule(m), table, families, feats))
