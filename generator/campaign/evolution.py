"""The evolutionary loop: which operator, which parents, who survives, when to stop. Nothing else.

Generation 0 asks for `n_parents` new algorithms. Every later generation makes `n_offspring`
candidates, each by one operator chosen by weight among those that apply (refine and simplify
need a working parent, crossover two different working parents, fix needs a failed candidate with
code; a failed candidate is a parent only of its fix), then keeps the best `n_parents`:
from parents and offspring together for "mu+lambda" (elitist), from the offspring alone for
"mu,lambda". The budget counts generated candidates, failures and duplicates included.

Making candidates (prompt, LLM, extraction, evaluation, archive) is the `produce_generation`
callable's job: it gets a generation's plans and returns their candidates in plan order, however
it overlaps the work. The loop is deterministic given the seed and what it returns, which is what
lets a run be resumed by replaying it: recorded candidates come back from the archive instead of
the LLM. Plans are drawn before the generation is made, so a failure is fixed in a later
generation, never in its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from generator.archive import Candidate

# A failed fix of a failed fix is not fixed again: three tries at one idea is enough.
MAX_FIX_CHAIN = 2
# Error kinds that leave no code to fix.
UNFIXABLE = ("llm", "no_code")


@dataclass(frozen=True)
class Plan:
    """What to make next: candidate id, generation, operator and parents."""

    id: str
    generation: int
    operator: str
    parents: tuple[Candidate, ...] = ()


def select_parent(population: list[Candidate], how: str, rng: np.random.Generator, tournament_size: int = 2) -> Candidate:
    """Pick one working parent by tournament, roulette (score-proportional) or best."""
    if how == "best":
        return max(population, key=lambda c: c.score)
    if how == "tournament":
        k = min(tournament_size, len(population))
        picks = rng.choice(len(population), size=k, replace=False)
        return max((population[int(i)] for i in picks), key=lambda c: c.score)
    if how == "roulette":
        scores = np.array([c.score for c in population], dtype=float)
        # P can be negative (worse than random search): shift so the worst still has a small chance.
        weights = scores - scores.min() + 1e-3
        return population[int(rng.choice(len(population), p=weights / weights.sum()))]
    raise ValueError(f"unknown parent selection {how!r}")


def choose_operator(weights: dict[str, float], applicable: set[str], rng: np.random.Generator) -> str:
    """An operator drawn by weight among the applicable ones ('new' if none has weight)."""
    # crossover last: with its weight 0 (the default) the draws are those of runs made before it existed
    names = [op for op in ("new", "refine", "simplify", "fix", "crossover")
             if op in applicable and weights.get(op, 0) > 0]
    if not names:
        return "new"
    w = np.array([weights[op] for op in names], dtype=float)
    return names[int(rng.choice(len(names), p=w / w.sum()))]


def survivors(parents: list[Candidate], offspring: list[Candidate], mu: int, strategy: str) -> list[Candidate]:
    """The next population: the mu best working, non-duplicate candidates."""
    fresh = [c for c in offspring if c.ok and not c.duplicate_of]
    pool = fresh + [c for c in parents if c.ok] if strategy == "mu+lambda" else fresh
    ranked = sorted(pool, key=lambda c: -c.score)
    if strategy == "mu,lambda" and len(ranked) < mu:
        # Too few offspring worked: the best parents fill the gap, so one bad generation cannot
        # wipe out the population.
        ranked += sorted((c for c in parents if c.ok and c not in ranked), key=lambda c: -c.score)
    return ranked[:mu]


class Evolution:
    """(mu+lambda) or (mu,lambda) evolution of candidates made by `produce_generation(plans)`.

    With `planning = "generation"` every generation's plans (ids, operators, parents) are drawn
    before any of its candidates is made, from the state the previous generation left, so the
    maker may have them all in flight at once; `"serial"` plans one candidate after the other was
    made (the loop of earlier versions). Either way the plans depend only on the seed and on the
    candidates made, never on the order in which the maker finished them.
    """

    def __init__(self, cfg, produce: Callable[[Plan], Candidate] | None = None,
                 on_generation: Callable[[int, list[Candidate]], None] | None = None,
                 produce_generation: Callable[[list[Plan]], list[Candidate]] | None = None,
                 race: Callable[[list[Candidate], int], None] | None = None):
        self.cfg = cfg  # generator.config.EvolutionConfig
        self.race = race  # racing: gives more runs to the pool's contenders before survivors are chosen
        if produce_generation is None:
            produce_generation = lambda plans: [produce(p) for p in plans]  # noqa: E731
        self.produce_generation = produce_generation
        self.on_generation = on_generation
        self.rng = np.random.default_rng(cfg.seed)
        self.made: list[Candidate] = []
        self.population: list[Candidate] = []
        self._fix_queue: list[Candidate] = []
        self._by_id: dict[str, Candidate] = {}

    def _next_id(self, ahead: int = 0) -> str:
        return f"c{len(self.made) + ahead + 1:04d}"

    def _fix_chain(self, c: Candidate) -> int:
        n = 0
        while c.operator == "fix" and c.parent_ids and c.parent_ids[0] in self._by_id:
            n += 1
            c = self._by_id[c.parent_ids[0]]
        return n

    def _produce(self, plans: list[Plan]) -> list[Candidate]:
        made = self.produce_generation(plans)
        for cand in made:
            self.made.append(cand)
            self._by_id[cand.id] = cand
            kind = (cand.error or {}).get("kind")
            if kind and kind not in UNFIXABLE and cand.code_path and not cand.duplicate_of \
                    and self._fix_chain(cand) < MAX_FIX_CHAIN:
                self._fix_queue.append(cand)
        return made

    def _plan_offspring(self) -> tuple[str, tuple[Candidate, ...]]:
        cfg = self.cfg
        applicable = {"new"}
        if self.population:
            applicable |= {"refine", "simplify"}
        if len(self.population) >= 2:
            applicable.add("crossover")
        if self._fix_queue:
            applicable.add("fix")
        op = choose_operator(cfg.operators.model_dump(), applicable, self.rng)
        if op == "fix":
            return op, (self._fix_queue.pop(),)  # the most recent failure: its context is freshest
        if op in ("refine", "simplify"):
            return op, (select_parent(self.population, cfg.selection, self.rng, cfg.tournament_size),)
        if op == "crossover":
            first = select_parent(self.population, cfg.selection, self.rng, cfg.tournament_size)
            others = [c for c in self.population if c is not first]
            return op, (first, select_parent(others, cfg.selection, self.rng, cfg.tournament_size))
        return op, ()

    def _generation(self, generation: int, n: int, planned=None) -> list[Candidate]:
        """Make n candidates of one generation (planned up front, or one after another)."""
        draw = planned or self._plan_offspring
        if getattr(self.cfg, "planning", "generation") == "serial":
            return [c for _ in range(n) for c in self._produce([Plan(self._next_id(), generation, *draw())])]
        return self._produce([Plan(self._next_id(k), generation, *draw()) for k in range(n)])

    def run(self) -> list[Candidate]:
        """Evolve until the budget of generated candidates is spent; returns the final population."""
        cfg = self.cfg
        first = self._generation(0, min(cfg.n_parents, cfg.budget), planned=lambda: ("new", ()))
        self.population = self._survivors([], first, "mu+lambda")
        self._generation_done(0)
        generation = 0
        while len(self.made) < cfg.budget:
            generation += 1
            offspring = self._generation(generation, min(cfg.n_offspring, cfg.budget - len(self.made)))
            self.population = self._survivors(self.population, offspring, cfg.strategy)
            self._generation_done(generation)
        return self.population

    def _survivors(self, parents: list[Candidate], offspring: list[Candidate], strategy: str) -> list[Candidate]:
        if self.race is not None:  # the pool survivors() draws from (parents too: mu,lambda may fall back)
            self.race(offspring + parents, self.cfg.n_parents)
        return survivors(parents, offspring, self.cfg.n_parents, strategy)

    def _generation_done(self, generation: int) -> None:
        if self.on_generation:
            self.on_generation(generation, self.population)
