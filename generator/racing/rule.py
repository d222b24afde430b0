"""Racing: more runs only for candidates whose place is still open (irace-style paired t-tests).

A candidate is first scored on `min_repeats` repeats per task. Between generations the pool that
survivors are chosen from is raced for `mu` places. Each candidate is compared, paired block by
block, with its rival across the boundary of the places: one inside with the best one outside
(rank mu+1), one outside with the last one inside (rank mu). It is decided, and gets no more runs,
once the one-sided confidence bound on that difference leaves no real doubt about its side:

- inside: lower bound above -delta (delta: the indifference zone, `indifference`);
- outside: upper bound below +delta.

With delta = 0 these are plain one-sided t-tests (in: significantly better than the best one
outside; out: significantly worse than the last one inside). With delta > 0 a pair whose difference
is known to within delta of the boundary is decided by the mean: swapping the two would change P by
less than delta, the ranking-and-selection notion of a correct choice (Bechhofer's indifference
zone). Undecided candidates go to the next stage (min, 2 min, 4 min, ... up to the cap); rounds
repeat until nobody is undecided below the cap. Repeat r of every candidate uses the same seed
(common random numbers), so the difference of two candidates at repeat r is paired and most of the
noise of the search space's draw cancels.

Why a paired t-test against the boundary and not Friedman or successive halving: the loop only
needs "is this candidate among the top mu", candidates arrive one generation at a time (a race is
against a moving boundary, not a fixed field), and P per repeat is a bounded, roughly normal mean of
a curve, which is the case irace's `t-test` option is made for. Successive halving would cut a
fixed fraction whatever the gaps are.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from generator.scoring.repeats import repeat_values, standard_error


@dataclass(frozen=True)
class RaceSettings:
    """When a candidate gets more runs: first stage, cap, one-sided confidence and the indifference zone (P)."""

    min_repeats: int
    max_repeats: int
    confidence: float = 0.9
    indifference: float = 0.0  # delta: a difference known to lie within it does not need deciding

    def stages(self) -> list[int]:
        """Repeats per task at each stage: min, 2 min, 4 min, ..., the cap."""
        out, n = [], max(1, min(self.min_repeats, self.max_repeats))
        while n < self.max_repeats:
            out.append(n)
            n *= 2
        return out + [self.max_repeats]

    def next_stage(self, repeats: int) -> int:
        """The repeats a candidate that has `repeats` runs per task goes to next (the cap at most)."""
        return next((s for s in self.stages() if s > repeats), self.max_repeats)


def repeat_blocks(per_task: dict) -> tuple[tuple[float, ...], ...]:
    """P per (repeat, task) block, repeat by repeat: what the paired test compares (irace's instances)."""
    rows = [list(per_task[name].get("per_repeat") or []) for name in sorted(per_task)]
    n = min((len(r) for r in rows), default=0)
    return tuple(tuple(float(r[i]) for r in rows) for i in range(n))


def paired_bounds(values, rival, confidence: float) -> tuple[float, float] | None:
    """One-sided confidence bounds (lower, upper) on the mean of `values` - `rival`, block against block.

    `values` and `rival`: per repeat, a number or a tuple of per-task P (each (repeat, task) a block, as an
    irace instance is a (problem, seed) pair); only the repeats both have are compared. None below two blocks."""
    from scipy.stats import t as student

    m = min(len(values), len(rival))
    diff = (np.asarray(values[:m], dtype=float) - np.asarray(rival[:m], dtype=float)).ravel()
    if diff.size < 2:
        return None
    se = standard_error(diff)  # 0 when the difference is the same every block: its sign decides
    half = float(student.ppf(confidence, diff.size - 1) * se) if se else 0.0
    mean = float(np.mean(diff))
    return mean - half, mean + half


def significantly_worse(values, bar, confidence: float) -> bool:
    """True when a one-sided paired t-test says `values` is below `bar` (its upper bound below zero)."""
    bounds = paired_bounds(values, bar, confidence)
    return bounds is not None and bounds[1] < 0


@dataclass(frozen=True)
class Entrant:
    """One candidate in a race: its mean P, its P per (repeat, task) block (paired by seed), runs per task."""

    id: str
    score: float
    values: tuple[tuple[float, ...], ...]
    repeats: int


def race_round(entrants: list[Entrant], mu: int, settings: RaceSettings) -> dict[str, int]:
    """Who gets more runs this round, and how many repeats per task each reaches (empty: decided)."""
    ranked = sorted(entrants, key=lambda e: (-e.score, e.id))
    if len(ranked) <= mu:  # every one of them survives: nothing to decide yet (the next generation's race will)
        return {}
    last_in, first_out = ranked[mu - 1], ranked[mu]
    more = {}
    for rank, e in enumerate(ranked):
        inside = rank < mu
        rival = first_out if inside else last_in
        if e.repeats >= settings.max_repeats or decided(e, rival, inside, settings):
            continue
        # only the repeats both have are compared: the one with fewer runs is the one to measure further
        runner = e if e.repeats <= rival.repeats else rival
        if runner.repeats < settings.max_repeats:
            more[runner.id] = settings.next_stage(runner.repeats)
    return more


def decided(e: Entrant, rival: Entrant, inside: bool, settings: RaceSettings) -> bool:
    """Whether `e`'s side of the boundary is settled against its rival on the other side.

    Inside: the lower bound on e - rival is above -delta (it is better, or worse by less than delta, so
    keeping it costs less than delta); outside: the upper bound is below +delta (mirrored)."""
    bounds = paired_bounds(e.values, rival.values, settings.confidence)
    if bounds is None:
        return False
    lower, upper = bounds
    return lower > -settings.indifference if inside else upper < settings.indifference


def merge_fitness(old: dict, more: dict, how: str = "mean") -> dict:
    """A candidate's Fitness dict with the runs of `more` (later repeats, same seeds scheme) added.

    P per task is the run-weighted mean of the two blocks' P (each block is scored by the methodology
    on its own traces; the traces themselves are not kept), the per-repeat P are concatenated."""
    from generator.scoring.degenerate import aggregate

    per_task = {}
    for name, a in old["per_task"].items():
        b = more["per_task"][name]
        na, nb = len(a.get("per_repeat") or ()), len(b.get("per_repeat") or ())
        w = nb / (na + nb)
        per_repeat = list(a.get("per_repeat") or ()) + list(b.get("per_repeat") or ())
        per_task[name] = {
            **a,
            "score": (1 - w) * a["score"] + w * b["score"],
            "std": float(np.std(per_repeat)),
            "per_repeat": per_repeat,
            "fevals": (1 - w) * a["fevals"] + w * b["fevals"],
            "unique": (1 - w) * a.get("unique", 0.0) + w * b.get("unique", 0.0),
            "wall_s": a.get("wall_s", 0.0) + b.get("wall_s", 0.0),
            "runs": na + nb,
            "se": standard_error(per_repeat),
        }
    repeats = min(t["runs"] for t in per_task.values())
    meta = {
        **old.get("metadata", {}),
        "repeats": repeats,
        "runs": sum(t["runs"] for t in per_task.values()),
        "se": standard_error(repeat_values(per_task, how)),
    }
    return {
        **old,
        "score": aggregate((t["score"] for t in per_task.values()), how),
        "per_task": per_task,
        "wall_s": old.get("wall_s", 0.0) + more.get("wall_s", 0.0),
        "metadata": meta,
    }
