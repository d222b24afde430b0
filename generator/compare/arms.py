"""Runs grouped into arms, their curves aggregated over seeds, and the test that tells arms apart.

An arm is a set of runs with the same settings (`runs.arm_settings`: the configuration less seeds,
budget, output and other keys that decide nothing about the method), or with the same label given
on the command line. Per arm: the mean best-so-far P against candidates, tokens, cost and wall time
with a 95% confidence band (Student's t over the runs), and the final P (each run's best) as mean
± standard error. Arms are told apart pairwise by Mann-Whitney's U test (two-sided, no assumption
of normality) and Welch's t test, with Holm's correction over the pairs; with 3 runs per arm the
smallest U p-value possible is 0.1, so few seeds can show a difference only through Welch's test.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from itertools import combinations

from generator.compare.runs import RunCurve
from generator.errors import TunesmithError

AXES = ("candidates", "tokens", "cost", "wall")  # x axes of the curves
GRID = 40  # points per aggregated curve on the tokens, cost and wall-time axes


@dataclass
class Arm:
    """One arm: its label, its runs and what the runs share."""

    label: str
    runs: list[RunCurve]
    settings: dict = field(default_factory=dict)  # the settings every run of the arm has

    @property
    def finals(self) -> list[float]:
        return [r.final for r in self.runs if r.final is not None]


def group(runs: list[RunCurve], labels: list[str] | None = None) -> list[Arm]:
    """Runs into arms: by label when given (one per run), else by settings, named after the campaign."""
    if labels is not None and len(labels) != len(runs):
        raise TunesmithError(
            f"--label given {len(labels)} times for {len(runs)} run directories; give one label per run "
            "directory, in the same order, or none (arms by settings)"
        )
    keys: dict[str, list[RunCurve]] = {}
    for i, run in enumerate(runs):
        key = labels[i] if labels is not None else _settings_key(run.settings)
        keys.setdefault(key, []).append(run)
    arms = [Arm(key if labels is not None else "", members, _shared(members)) for key, members in keys.items()]
    if labels is None:
        _name_arms(arms)
    return arms


def _settings_key(settings: dict) -> str:
    return repr(sorted((k, repr(v)) for k, v in settings.items()))


def _shared(runs: list[RunCurve]) -> dict:
    first = runs[0].settings
    return {k: v for k, v in first.items() if all(r.settings.get(k) == v for r in runs)}


def _name_arms(arms: list[Arm]) -> None:
    """An arm is called after its campaign's name; arms that share a name get the settings they differ in."""
    for arm in arms:
        arm.label = "/".join(sorted({r.name or "campaign" for r in arm.runs}))
    by_label: dict[str, list[Arm]] = {}
    for arm in arms:
        by_label.setdefault(arm.label, []).append(arm)
    for same in (a for a in by_label.values() if len(a) > 1):
        differ = sorted(
            {k for arm in same for k in arm.settings if any(o.settings.get(k) != arm.settings.get(k) for o in same)}
        )
        for arm in same:
            arm.label += " (" + ", ".join(f"{k}={arm.settings.get(k)}" for k in differ[:3]) + ")"


# -- statistics ------------------------------------------------------------------------------
def mean_se(values: list[float]) -> tuple[float | None, float | None]:
    """Mean and standard error of the mean (None for the SE of one value)."""
    if not values:
        return None, None
    mean = statistics.fmean(values)
    se = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else None
    return mean, se


def band(values: list[float]) -> tuple[float | None, float | None, float | None]:
    """Mean with the low and high ends of its 95% confidence interval (Student's t); no band for one value."""
    from scipy import stats

    mean, se = mean_se(values)
    if se is None:
        return mean, None, None
    half = float(stats.t.ppf(0.975, len(values) - 1)) * se
    return mean, mean - half, mean + half


def step_at(xs: list[float], ys: list[float | None], x: float) -> float | None:
    """The value of a best-so-far step curve at x: the last y whose x is at most x."""
    value = None
    for xi, yi in zip(xs, ys):
        if xi > x:
            break
        value = yi
    return value


def curve(arm: Arm, axis: str) -> dict:
    """The arm's mean best P with its 95% band against one axis, on points every run of the arm reaches."""
    series = [(_axis(run, axis), run.best) for run in arm.runs if run.best]
    if not series:
        return {"x": [], "mean": [], "low": [], "high": []}
    if axis == "candidates":
        grid = list(range(1, min(len(xs) for xs, _ in series) + 1))
    else:
        end = min(xs[-1] for xs, _ in series)  # beyond it some run has no value: no mean there
        grid = [end * i / (GRID - 1) for i in range(GRID)] if end > 0 else [0.0]
    out = {"x": grid, "mean": [], "low": [], "high": []}
    for x in grid:
        values = [v for xs, ys in series if (v := step_at(xs, ys, x)) is not None]
        mean, low, high = band(values) if len(values) == len(series) else (None, None, None)
        out["mean"].append(mean)
        out["low"].append(low)
        out["high"].append(high)
    return out


def _axis(run: RunCurve, axis: str) -> list[float]:
    if axis == "candidates":
        return list(range(1, len(run.best) + 1))
    return {"tokens": run.tokens, "cost": run.cost, "wall": run.wall}[axis]


def pairwise_tests(arms: list[Arm]) -> list[dict]:
    """Each pair of arms: Mann-Whitney U and Welch's t on the final P, with Holm-adjusted p-values."""
    from scipy import stats

    rows = []
    for a, b in combinations(arms, 2):
        x, y = a.finals, b.finals
        row = {"a": a.label, "b": b.label, "n_a": len(x), "n_b": len(y), "mann_whitney_p": None, "welch_p": None}
        if len(x) >= 1 and len(y) >= 1 and (len(x) + len(y)) > 2:
            row["mann_whitney_p"] = float(stats.mannwhitneyu(x, y, alternative="two-sided").pvalue)
        if len(x) >= 2 and len(y) >= 2 and (statistics.pvariance(x) + statistics.pvariance(y)) > 0:
            row["welch_p"] = float(stats.ttest_ind(x, y, equal_var=False).pvalue)
        rows.append(row)
    for key in ("mann_whitney_p", "welch_p"):
        _holm(rows, key)
    return rows


def _holm(rows: list[dict], key: str) -> None:
    """Holm's step-down correction of the p-values in `key`, written to `key`_holm."""
    tested = sorted((r for r in rows if r[key] is not None), key=lambda r: r[key])
    running = 0.0
    for rank, row in enumerate(tested):
        running = max(running, min(1.0, (len(tested) - rank) * row[key]))
        row[key + "_holm"] = running
    for row in rows:
        row.setdefault(key + "_holm", None)


def summary_row(arm: Arm) -> dict:
    """One row of the table: runs, final P mean ± SE (min, max), and what the runs spent on average."""
    mean, se = mean_se(arm.finals)
    last = [r for r in arm.runs if r.best]
    return {
        "arm": arm.label,
        "runs": len(arm.runs),
        "seeds": [r.seed for r in arm.runs],
        "model": "/".join(sorted({r.model for r in arm.runs})),
        "final_p": mean,
        "final_p_se": se,
        "final_p_min": min(arm.finals, default=None),
        "final_p_max": max(arm.finals, default=None),
        "candidates": statistics.fmean(len(r.best) for r in last) if last else 0,
        "failed": statistics.fmean(r.failed for r in arm.runs),
        "tokens": statistics.fmean(r.tokens[-1] for r in last) if last else 0,
        "cost_usd": statistics.fmean(r.cost[-1] for r in last) if last else 0.0,
        "wall_s": statistics.fmean(r.wall[-1] for r in last) if last else 0.0,
    }
