"""How a candidate searches, measured from its traces: the behaviour descriptors of its niche.

Three numbers in [0, 1], each averaged over the runs (tasks x repeats) of one evaluation. They are
computed in the campaign's process from the rows the oracle recorded, never by running the
candidate's code, so a candidate cannot choose its niche by what it reports:

- `local`: the share of evaluations that are Hamming neighbours (one parameter changed) of the
  incumbent, the best configuration found so far: how much of the budget goes to local search.
- `jumps`: the share of evaluations that differ from the incumbent in more than half of the
  parameters: restarts, random samples, far jumps.
- `spread`: the mean share of parameters in which an evaluation differs from the run's final best
  configuration: how far from where it ended its evaluations range (a converging search is low,
  a random search high). (The share of each parameter's values visited was tried first: nearly
  every run visits them all, so it told nothing apart.)

Unlike a code similarity these see what a program does: two rewrites of one hill climber fall in
the same cell, a hill climber with random restarts in another.
"""

from __future__ import annotations

import numpy as np

DESCRIPTORS = ("local", "jumps", "spread")


def run_behaviour(valid: np.ndarray, values: np.ndarray, rows: np.ndarray, minimise: bool = True) -> dict | None:
    """The descriptors of one run (rows of `valid` in evaluation order); None for a run of < 2 rows."""
    rows = np.asarray(rows, dtype=np.int64)
    if rows.size < 2:
        return None
    configs = np.asarray(valid)[rows]  # (n, params) value indices
    n_params = configs.shape[1] if configs.ndim == 2 else 0
    if n_params == 0:
        return None
    vals = np.asarray(values, dtype=float)[rows]
    vals = np.where(np.isnan(vals), np.inf if minimise else -np.inf, vals)
    if not minimise:
        vals = -vals
    # the incumbent before each step: the best row evaluated so far (the first row starts it)
    running = np.minimum.accumulate(vals)
    improved = np.r_[True, vals[1:] < running[:-1]]
    best_at = np.r_[0, np.maximum.accumulate(np.where(improved, np.arange(rows.size), 0))[:-1]]
    changed_incumbent = (configs[1:] != configs[best_at[1:]]).sum(axis=1)
    final = configs[int(np.argmin(vals))]  # the first evaluation of the best value found
    spread = float(np.mean((configs != final).sum(axis=1) / n_params))
    return {
        "local": float(np.mean(changed_incumbent == 1)),
        "jumps": float(np.mean(changed_incumbent > n_params / 2)),
        "spread": spread,
    }


def mean_behaviour(runs: list[dict | None]) -> dict | None:
    """The descriptors averaged over runs (None when no run had two evaluations)."""
    runs = [r for r in runs if r]
    if not runs:
        return None
    return {name: round(float(np.mean([r[name] for r in runs])), 4) for name in DESCRIPTORS}
