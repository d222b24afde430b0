"""Seeds for a hybrid run: configurations evaluated before an optimizer starts, handed to it first.

A hybrid run (`llm_guided+OPTIMIZER`) first lets the LLM propose configurations for a round or
two (generator.guided.run); those evaluations are charged to the run's oracle like any other. The
optimizer then continues on the rest of the same budget, on a search space whose
`get_random_sample` returns the seeds first, best first, and random configurations after them,
so any optimizer that starts from random samples starts from the LLM's proposals without knowing
about it.

This module is light on purpose: the sandbox host imports it before the walls go up, and the
candidate's search space wraps itself in `SeededSpace` inside the sandbox.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SeedRun:
    """The seeding stage of one run: rows in the order they were evaluated, and best first."""

    rows: tuple[int, ...]  # valid rows, in evaluation order (the oracle charges them in this order)
    ranked: tuple[int, ...]  # the same rows, best first, failed ones last (what sampling hands out)

    def charge(self, oracle) -> None:
        """Record the seeds in a fresh oracle, as if the optimizer had evaluated them first."""
        for row in self.rows:
            oracle.record(int(row))

    def to_dict(self) -> dict:
        return {"rows": list(self.rows), "ranked": list(self.ranked)}

    @classmethod
    def from_dict(cls, data: dict) -> SeedRun:
        return cls(tuple(int(r) for r in data["rows"]), tuple(int(r) for r in data["ranked"]))


def _seeded_rows(pending: list[int], num_samples: int, size: int, draw) -> np.ndarray:
    """The next pending seeds (taken off `pending`), then distinct rows from `draw(n)`."""
    n = min(int(num_samples), size)
    take = pending[:n]
    del pending[:n]
    if len(take) == n:
        return np.asarray(take, dtype=np.int64)
    chosen = set(take)
    # more draws than needed, so that the seeds already taken can be skipped
    extra = [int(r) for r in draw(min(n + len(take), size)) if int(r) not in chosen]
    return np.asarray(take + extra[: n - len(take)], dtype=np.int64)


class SeededSpace:
    """A search space whose random samples start with the seeds (best first); all else delegates.

    Each call of `get_random_sample(n)` hands out the next seeds not handed out yet and fills the
    rest with distinct random configurations from the wrapped space; once the seeds are used up it
    is the wrapped space's sampler.

    In the sandbox the seeds arrive in the order they were evaluated, and `cost` (the run's own
    func) ranks them on first use: each seed was charged to this run already, so asking for it is a
    free revisit, and the ranking comes from the run's own answers, not from anything handed to it.
    """

    def __init__(self, space, rows, cost=None):
        self._space = space
        self._pending = [int(r) for r in rows]
        self._cost = cost  # None: `rows` are ranked already (trusted in-process runs)

    def __getattr__(self, name):
        return getattr(self._space, name)

    def _rank(self) -> None:
        cost, self._cost = self._cost, None
        configs = self._space.configs
        values = [cost(configs[r]) for r in self._pending]  # best first; ties in evaluation order
        self._pending = [r for _, _, r in sorted(zip(values, range(len(values)), self._pending))]

    def get_random_sample_rows(self, num_samples: int) -> np.ndarray:
        """Distinct rows: the pending seeds first, then uniform draws (all rows if fewer exist)."""
        if self._cost is not None:
            self._rank()
        return _seeded_rows(self._pending, num_samples, self._space.size, self._space.get_random_sample_rows)

    def get_random_sample(self, num_samples: int) -> list[tuple]:
        """Distinct valid configurations: the pending seeds (best first), then random ones."""
        configs = self._space.configs
        return [configs[r] for r in self.get_random_sample_rows(num_samples).tolist()]


def seed_run_space(run_space, ranked_rows) -> None:
    """Make a per-run Kernel Tuner-style space (generator.bench.ktspace.RunSpace) hand out the seeds first;
    after them it draws as before (numpy's global generator, as Kernel Tuner does)."""
    pending = [int(r) for r in ranked_rows]
    draw = run_space.get_random_sample_indices

    def get_random_sample_indices(num_samples):
        return _seeded_rows(pending, num_samples, run_space.size, draw)

    run_space.get_random_sample_indices = get_random_sample_indices
