"""A search that stays wide: islands with migration, and a MAP-Elites grid over how candidates search.

`[evolution.niches]`:

- `islands = N` splits the population into N islands that evolve apart: offspring k of a
  generation belongs to island k mod N and takes its parents from that island only. Every
  `migration_interval` generations each island sends its best candidate to the next one (a ring);
  the migrant enters if it beats the destination's worst survivor. An island that has received no
  migrant after migrations were due "never exchanged" and is named in `status`, the report and the
  generation record (OpenEvolve #391/#441: islands that silently did nothing).
- `map_elites = true` keeps, per island, the best candidate of each cell of a grid over the
  behaviour descriptors (generator.scoring.behaviour: local search share, far jumps, spread; `bins`
  cells each). Each descriptor is scaled to the range the island's candidates span so far (as
  OpenEvolve scales its features): fixed bins over [0, 1] put every synthesizer candidate in two
  cells, since real runs use a narrow part of each range. A parent is drawn by choosing an occupied cell uniformly, so a niche with a mediocre
  elite is bred from as often as the best one; crossover's second parent comes from another cell.

Only working, non-duplicate candidates enter a population or a cell: a failed program is never a
parent (OpenEvolve #70); it is only fixed, by the loop's fix queue. Everything here is a function of
the seed and the candidates made, so a resumed run rebuilds the same niches by replay.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from generator.archive import Candidate
from generator.scoring.behaviour import DESCRIPTORS


def behaviour(c: Candidate) -> dict | None:
    """The behaviour descriptors the campaign measured from a candidate's traces (None if none)."""
    return ((c.fitness or {}).get("metadata") or {}).get("behaviour")


def cell_of(c: Candidate, bins: int, ranges: dict | None = None) -> str:
    """The grid cell of a candidate: one bin per descriptor, e.g. '2-0-1' ('-' without traces).

    `ranges`: descriptor -> (low, high) the bins span (default [0, 1])."""
    b = behaviour(c)
    if not b:
        return "-"
    cell = []
    for d in DESCRIPTORS:
        lo, hi = (ranges or {}).get(d, (0.0, 1.0))
        x = (float(b[d]) - lo) / (hi - lo) if hi > lo else 0.0
        cell.append(str(min(bins - 1, max(0, int(x * bins)))))
    return "-".join(cell)


def spans(cands: list[Candidate]) -> dict:
    """Descriptor -> (lowest, highest) value among candidates with a behaviour."""
    seen = [b for b in (behaviour(c) for c in cands) if b]
    return {d: (min(float(b[d]) for b in seen), max(float(b[d]) for b in seen)) for d in DESCRIPTORS} if seen else {}


def breedable(c: Candidate) -> bool:
    """A candidate may be a parent: it worked and is not a copy of another."""
    return c.ok and not c.duplicate_of


@dataclass
class Island:
    """One island: its survivors, its behaviour grid, the migrants it took."""

    population: list[Candidate] = field(default_factory=list)
    grid: dict[str, Candidate] = field(default_factory=dict)  # cell -> best candidate in it
    seen: list[Candidate] = field(default_factory=list)  # every breedable candidate it held, in order
    received: int = 0  # migrants that entered its population


class Niches:
    """The islands (one when there are none) and their grids, updated after every generation."""

    def __init__(self, cfg, n_parents: int):
        self.cfg = cfg  # generator.config.NichesConfig
        self.n = cfg.islands
        self.mu = max(1, n_parents // self.n)  # survivors per island
        self.islands = [Island() for _ in range(self.n)]
        self.migrations: list[dict] = []  # {"generation", "from", "to", "id", "entered"}

    @property
    def active(self) -> bool:
        return self.n > 1 or self.cfg.map_elites

    def island_for(self, k: int) -> int:
        """The island of the k-th candidate of a generation."""
        return k % self.n

    def population(self) -> list[Candidate]:
        """Every island's survivors, best first (the campaign's population)."""
        pop = {c.id: c for isl in self.islands for c in isl.population}
        return sorted(pop.values(), key=lambda c: -c.score)

    def pool(self, i: int) -> list[Candidate]:
        """The candidates island i may breed from."""
        isl = self.islands[i]
        if self.cfg.map_elites and isl.grid:
            return [isl.grid[cell] for cell in sorted(isl.grid)]
        return isl.population

    def select(self, i: int, select_parent, rng: np.random.Generator, exclude: Candidate | None = None) -> Candidate:
        """A parent for island i: a uniformly chosen cell's elite (MAP-Elites), else by the loop's selection."""
        pool = [c for c in self.pool(i) if c is not exclude] or [c for c in self.population() if c is not exclude]
        if self.cfg.map_elites:
            return pool[int(rng.integers(len(pool)))]
        return select_parent(pool)

    def settle(self, generation: int, made: list[tuple[int, Candidate]], survivors, strategy: str) -> None:
        """Survivors per island from its offspring, the grids, then migration when it is due."""
        for i, isl in enumerate(self.islands):
            mine = [c for j, c in made if j == i]
            isl.population = survivors(isl.population, mine, self.mu, strategy)
            for c in mine:
                self._place(isl, c)
            self._regrid(isl)
        if self.n > 1 and generation > 0 and generation % self.cfg.migration_interval == 0:
            self._migrate(generation, survivors)

    def _place(self, isl: Island, c: Candidate) -> None:
        if breedable(c) and all(o.id != c.id for o in isl.seen):
            isl.seen.append(c)

    def _regrid(self, isl: Island) -> None:
        """The best candidate per cell, the bins spanning what the island has seen (ties: the earliest)."""
        ranges = spans(isl.seen)
        isl.grid = {}
        for c in isl.seen:
            cell = cell_of(c, self.cfg.bins, ranges)
            if cell not in isl.grid or c.score > isl.grid[cell].score:
                isl.grid[cell] = c

    def _migrate(self, generation: int, survivors) -> None:
        """Each island's best goes to the next island (ring); all are chosen before any moves."""
        bests = [max(isl.population, key=lambda c: c.score) if isl.population else None for isl in self.islands]
        for i, best in enumerate(bests):
            dest = self.islands[(i + 1) % self.n]
            if best is None:
                continue
            entered = best.id not in {c.id for c in dest.population}
            if entered:
                dest.population = survivors(dest.population, [best], self.mu, "mu+lambda")
                entered = best.id in {c.id for c in dest.population}
            if entered:
                dest.received += 1
                self._place(dest, best)
                self._regrid(dest)
            self.migrations.append(
                {"generation": generation, "from": i, "to": (i + 1) % self.n, "id": best.id, "entered": entered}
            )

    def silent(self) -> list[int]:
        """Islands that took no migrant although migrations were due: they never exchanged."""
        if self.n < 2 or not self.migrations:
            return []
        return [i for i, isl in enumerate(self.islands) if isl.received == 0]

    def snapshot(self, generation: int) -> dict:
        """The niches after a generation, for the archive's generation record (status and report read it)."""
        return {
            "islands": [
                {
                    "population": [c.id for c in isl.population],
                    "received": isl.received,
                    "cells": {cell: isl.grid[cell].id for cell in sorted(isl.grid)},
                }
                for isl in self.islands
            ],
            "migrations": [m for m in self.migrations if m["generation"] == generation],
            "silent": self.silent(),
        }


def migration_generations(cfg, budget: int, n_parents: int, n_offspring: int) -> int:
    """How many migrations a run of this budget makes (0: its islands can never exchange)."""
    generations = -(-max(0, budget - n_parents) // n_offspring)  # generations after generation 0
    return generations // cfg.niches.migration_interval if cfg.niches.islands > 1 else 0


def never_exchange(cfg) -> str | None:
    """A one-line warning when the configured islands can never exchange a candidate, else None."""
    n = cfg.niches
    if n.islands < 2 or migration_generations(cfg, cfg.budget, cfg.n_parents, cfg.n_offspring):
        return None
    return (
        f"[evolution.niches] islands = {n.islands} never exchange: migration every {n.migration_interval} "
        f"generations but a budget of {cfg.budget} makes fewer; lower migration_interval or raise the budget"
    )


def niche_lines(record: dict | None) -> list[str]:
    """`status` lines for the niches of the last generation record (none when there are none)."""
    niches = (record or {}).get("niches")
    if not niches:
        return []
    islands = niches["islands"]
    cells = sorted({cell for isl in islands for cell in isl["cells"]})
    lines = [
        f"niches after generation {record['generation']}: {len(islands)} island"
        f"{'s' if len(islands) != 1 else ''}, {len(cells)} behaviour cells occupied "
        "(cell = bins of local-search share, far jumps, spread)"
    ]
    for i, isl in enumerate(islands):
        took = f", took {isl['received']} migrant{'s' if isl['received'] != 1 else ''}" if len(islands) > 1 else ""
        elites = " ".join(f"{cell}:{cid}" for cell, cid in isl["cells"].items())
        lines.append(f"  island {i}: population {' '.join(isl['population']) or '-'}{took}; elites {elites or '-'}")
    if niches.get("silent"):
        lines.append(
            f"  islands that never exchanged: {', '.join(map(str, niches['silent']))} (every migrant was "
            "refused: lower migration_interval or use fewer islands)"
        )
    return lines
