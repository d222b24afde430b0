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

Two optional parts, both off by default: `[evolution.niches]` (islands, a MAP-Elites grid over
behaviour; generator.campaign.niches) decides where parents come from and who survives, and
`[evolution.bandit]` (discounted UCB; generator.campaign.bandit) picks operators and models
instead of their weights. Both are functions of the seed and the candidates made, like the rest.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from generator.archive import Candidate
from generator.campaign.bandit import DiscountedUCB, improvement
from generator.campaign.niches import Niches, breedable

# A failed fix of a failed fix is not fixed again: three tries at one idea is enough.
MAX_FIX_CHAIN = 2
# crossover last: with its weight 0 (the default) the draws are those of runs made before it existed
OPERATORS = ("new", "refine", "simplify", "fix", "crossover")
# Error kinds that leave no code to fix.
UNFIXABLE = ("llm", "no_code")


@dataclass(frozen=True)
class Plan:
    """What to make next: candidate id, generation, operator and parents."""

    id: str
    generation: int
    operator: str
    parents: tuple[Candidate, ...] = ()
    model: str | None = None  # one of [llm] models; None: [llm] model


def select_parent(
    population: list[Candidate], how: str, rng: np.random.Generator, tournament_size: int = 2
) -> Candidate:
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
    names = [op for op in OPERATORS if op in applicable and weights.get(op, 0) > 0]
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

    def __init__(
        self,
        cfg,
        produce: Callable[[Plan], Candidate] | None = None,
        on_generation: Callable[[int, list[Candidate]], None] | None = None,
        produce_generation: Callable[[list[Plan]], list[Candidate]] | None = None,
        models=(),
        cost_of: Callable[[Candidate], float] | None = None,
        race: Callable[[list[Candidate], int], None] | None = None,
    ):
        self.cfg = cfg  # generator.config.EvolutionConfig
        self.race = race  # racing: gives more runs to the pool's contenders before survivors are chosen
        if produce_generation is None:
            produce_generation = lambda plans: [produce(p) for p in plans]  # noqa: E731 - the serial default, one line
        self.produce_generation = produce_generation
        self.on_generation = on_generation
        self.rng = np.random.default_rng(cfg.seed)
        self.made: list[Candidate] = []
        self.population: list[Candidate] = []
        self._fix_queue: list[Candidate] = []
        self._by_id: dict[str, Candidate] = {}
        niches = getattr(cfg, "niches", None)
        self.niches = (
            Niches(niches, cfg.n_parents) if niches is not None and (niches.islands > 1 or niches.map_elites) else None
        )
        self._island_of: dict[str, int] = {}  # candidate id -> island it was made for
        self._choices(cfg, list(models), cost_of)

    def _choices(self, cfg, models, cost_of) -> None:
        """Operators and models: by weight, or by the bandit ([evolution.bandit])."""
        self.models = {m.model: m for m in models}
        self._model_rng = np.random.default_rng([cfg.seed, 1])  # its own stream: the loop's draws stay as they were
        self.cost_of = cost_of or (lambda c: 1000.0)  # tokens of a candidate's exchange
        self._baseline: dict[str, tuple] = {}  # plan id -> (the score it had to beat, its model)
        bandit = getattr(cfg, "bandit", None)
        self.op_bandit = self.model_bandit = None
        if bandit is not None and bandit.enabled:
            weights = cfg.operators.model_dump()
            self.op_bandit = DiscountedUCB(
                [op for op in OPERATORS if weights.get(op, 0) > 0 or op == "new"], bandit.discount, bandit.exploration
            )
            if len(self.models) > 1:
                self.model_bandit = DiscountedUCB(list(self.models), bandit.discount, bandit.exploration)

    def _model(self) -> str | None:
        if not self.models:
            return None
        if self.model_bandit is not None:
            return self.model_bandit.choose(list(self.models))
        w = np.array([m.weight for m in self.models.values()], dtype=float)
        names = list(self.models)
        return names[int(self._model_rng.choice(len(names), p=w / w.sum()))] if w.sum() > 0 else names[0]

    def _reward(self, cand: Candidate) -> None:
        """Settle the bandits' pull for a made candidate: its gain per cost."""
        baseline, model = self._baseline.get(cand.id, (None, None))
        if self.op_bandit is None or baseline is None:
            return  # nothing to improve on yet (generation 0): no evidence for or against an arm
        score = None if cand.duplicate_of else cand.score
        price = self.models[model].price if model in self.models else 1.0
        cost = max(1.0, float(self.cost_of(cand))) / 1000 * price
        reward = improvement(score, baseline) / cost
        if cand.operator in self.op_bandit.arms:
            self.op_bandit.settle(cand.operator, reward)
        if self.model_bandit is not None and model in self.models:
            self.model_bandit.settle(model, reward)

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
            self._reward(cand)
            self.made.append(cand)
            self._by_id[cand.id] = cand
            kind = (cand.error or {}).get("kind")
            if (
                kind
                and kind not in UNFIXABLE
                and cand.code_path
                and not cand.duplicate_of
                and self._fix_chain(cand) < MAX_FIX_CHAIN
            ):
                self._fix_queue.append(cand)
        return made

    def _plan_offspring(self, k: int = 0) -> tuple[str, tuple[Candidate, ...]]:
        cfg = self.cfg
        island = self.niches.island_for(k) if self.niches else 0
        pool = self.niches.pool(island) if self.niches else self.population
        applicable = {"new"}
        if pool:
            applicable |= {"refine", "simplify"}
        if len(pool) >= 2 or (self.niches and pool and len(self.population) >= 2):
            applicable.add("crossover")
        if self._fix_queue:
            applicable.add("fix")
        if self.op_bandit is not None:
            op = self.op_bandit.choose(sorted(applicable))
        else:
            op = choose_operator(cfg.operators.model_dump(), applicable, self.rng)
        if op == "fix":
            return op, (self._fix_queue.pop(),)  # the most recent failure: its context is freshest
        if op in ("refine", "simplify"):
            return op, (self._parent(pool, island),)
        if op == "crossover":  # with MAP-Elites the second parent is another cell's elite
            first = self._parent(pool, island)
            return op, (first, self._parent(pool, island, exclude=first))
        return op, ()

    def _parent(self, pool: list[Candidate], island: int, exclude: Candidate | None = None) -> Candidate:
        """A working parent from the pool (an island's, or the population), never `exclude`."""
        cfg = self.cfg
        draw = lambda among: select_parent(among, cfg.selection, self.rng, cfg.tournament_size)  # noqa: E731 - binds cfg once
        parent = (
            self.niches.select(island, draw, self.rng, exclude)
            if self.niches
            else draw([c for c in pool if c is not exclude])
        )
        if not breedable(parent):  # OpenEvolve #70: a failed program bred from; a failure is only ever fixed
            raise AssertionError(
                f"internal: {parent.id} failed or is a copy but was drawn as a parent; please report this"
            )
        return parent

    def _generation(self, generation: int, n: int, planned=None) -> list[Candidate]:
        """Make n candidates of one generation (planned up front, or one after another)."""
        draw = planned or self._plan_offspring

        def plan(k: int, ahead: int) -> Plan:
            p = Plan(self._next_id(ahead), generation, *draw(k), model=self._model())
            if self.niches:
                self._island_of[p.id] = self.niches.island_for(k)
            scored = [q.score for q in p.parents if q.ok]  # a fix's parent failed: it must beat the best
            best = max((c.score for c in self.population), default=None)
            self._baseline[p.id] = (max(scored) if scored else best, p.model)
            return p

        if getattr(self.cfg, "planning", "generation") == "serial":
            return [c for k in range(n) for c in self._produce([plan(k, 0)])]
        return self._produce([plan(k, k) for k in range(n)])

    def _settle(self, generation: int, offspring: list[Candidate], strategy: str) -> None:
        """The next population: per island and grid with niches, else the mu best."""
        if self.race is not None:  # the pool survivors are drawn from (parents too: mu,lambda may fall back)
            self.race(offspring + self.population, self.cfg.n_parents)
        if self.niches is None:
            self.population = survivors(self.population, offspring, self.cfg.n_parents, strategy)
            return
        self.niches.settle(generation, [(self._island_of[c.id], c) for c in offspring], survivors, strategy)
        self.population = self.niches.population()

    def run(self) -> list[Candidate]:
        """Evolve until the budget of generated candidates is spent; returns the final population."""
        cfg = self.cfg
        first = self._generation(0, min(cfg.n_parents, cfg.budget), planned=lambda k: ("new", ()))
        self._settle(0, first, "mu+lambda")
        self._generation_done(0)
        generation = 0
        while len(self.made) < cfg.budget:
            generation += 1
            offspring = self._generation(generation, min(cfg.n_offspring, cfg.budget - len(self.made)))
            self._settle(generation, offspring, cfg.strategy)
            self._generation_done(generation)
        return self.population

    def state(self, generation: int) -> dict:
        """What the generation record keeps besides the population: the niches and the bandit, when on."""
        out = {"niches": self.niches.snapshot(generation)} if self.niches else {}
        if self.op_bandit is not None:
            out["bandit"] = {
                "operators": self.op_bandit.state(),
                "models": self.model_bandit.state() if self.model_bandit else {},
            }
        return out

    def _generation_done(self, generation: int) -> None:
        if self.on_generation:
            self.on_generation(generation, self.population)
