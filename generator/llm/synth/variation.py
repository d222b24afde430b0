"""Building blocks of population search: selection, mutation steps, crossover, replacement, restarts.

Same conventions as `components.py`: methods at class level, composed into one class.
"""

from __future__ import annotations

from generator.llm.synth.components import Component

SELECT = '''
def breed(self, population):
    """One child of two tournament winners: crossover, mutation, repair; returns (child, mother)."""
    mother, father = self.select(population), self.select(population)
    idx = self.crossover(self.indices(mother), self.indices(father))
    return self.repair(self.config_at(self.mutate(idx))), mother

def select(self, population):
    """Selection: the best of tournament_size random members."""
    size = min(self.tournament_size, len(population))
    picks = self.rng.choice(len(population), size=size, replace=False)
    return min((population[int(i)] for i in picks), key=self.cache.get)
'''

# Mutation over value indices; also the move generator of the index-step neighbourhood.
_PICK_GENES = """    child = list(idx)
    movable = [p for p in range(len(child)) if len(self.values[p]) > 1]
    if not movable:
        return child
    genes = [p for p in movable if self.rng.random() < self.mutation_rate]
    if not genes:  # always change at least one parameter
        genes = [movable[int(self.rng.integers(len(movable)))]]
"""
_SHIFT = '''
def shift(self, p, i, step):
    """Move value index i of parameter p by step, reflecting at the ends of its value list."""
    top = len(self.values[p]) - 1
    j = i + step if 0 <= i + step <= top else i - step
    return min(top, max(0, j))
'''
STEPS = {
    c.name: c
    for c in (
        Component(
            "step",
            "fixed",
            "fixed-size index mutation",
            '''
def mutate(self, idx):
    """Variation: shift each value index with probability mutation_rate by 1..max_step positions."""
'''
            + _PICK_GENES
            + """    for p in genes:
        step = int(self.rng.integers(1, self.max_step + 1)) * (1 if self.rng.random() < 0.5 else -1)
        child[p] = self.shift(p, child[p], step)
    return child
"""
            + _SHIFT,
            ("mutation_rate", "max_step"),
        ),
        Component(
            "step",
            "adaptive",
            "adaptive-step index mutation",
            '''
def mutate(self, idx):
    """Variation: Gaussian steps over value indices, with a step size that adapts to success."""
'''
            + _PICK_GENES
            + '''    for p in genes:
        size = max(1, int(round(abs(self.rng.normal(0.0, self.step)))))
        child[p] = self.shift(p, child[p], size * (1 if self.rng.random() < 0.5 else -1))
    return child

def adapt_step(self, improved):
    """Adaptive step size (1/5th success rule): grow after a success, shrink slowly after a failure."""
    self.step = min(self.step_cap, max(0.5, self.step * (1.5 if improved else 0.9)))
'''
            + _SHIFT,
            ("mutation_rate", "step_size"),
            tag="adapt",
            state="self.step = float(self.step_size)  # adaptive mutation step, in value positions\n"
            "self.step_cap = max(1.0, max(len(v) for v in self.values) / 2.0)\n",
        ),
    )
}

CROSSOVERS = {
    c.name: c
    for c in (
        Component(
            "crossover",
            "none",
            "mutation only",
            '''
def crossover(self, a, b):
    """Variation: no crossover; a child is a mutant of its first parent."""
    return list(a)
''',
        ),
        Component(
            "crossover",
            "uniform",
            "uniform crossover",
            '''
def crossover(self, a, b):
    """Variation: uniform crossover (each value from either parent), with probability crossover_rate."""
    if self.rng.random() >= self.crossover_rate:
        return list(a)
    return [x if self.rng.random() < 0.5 else y for x, y in zip(a, b)]
''',
            ("crossover_rate",),
        ),
        Component(
            "crossover",
            "leaders",
            "leader-guided recombination (grey-wolf-like)",
            '''
def crossover(self, a, b):
    """Variation: each value from one of the three best members or from the parent itself."""
    if self.rng.random() >= self.crossover_rate:
        return list(a)
    leaders = [self.indices(c) for c in sorted(self.population, key=self.cache.get)[:3]]
    return [leaders[int(self.rng.integers(len(leaders)))][p] if self.rng.random() < 0.75 else x
            for p, x in enumerate(a)]
''',
            ("crossover_rate",),
            tag="leaders",
        ),
        Component(
            "crossover",
            "one-point",
            "one-point crossover",
            '''
def crossover(self, a, b):
    """Variation: one-point crossover (head of one parent, tail of the other), with probability crossover_rate."""
    if len(a) < 2 or self.rng.random() >= self.crossover_rate:
        return list(a)
    cut = int(self.rng.integers(1, len(a)))
    return list(a[:cut]) + list(b[cut:])
''',
            ("crossover_rate",),
        ),
    )
}

REPLACEMENTS = {
    c.name: c
    for c in (
        Component(
            "replacement",
            "plus",
            "(mu+lambda) truncation",
            '''
def replace(self, population, children):
    """Replacement (mu+lambda): the best pop_size of parents and children together."""
    return sorted(dict.fromkeys(population + children), key=self.cache.get)[: self.pop_size]
''',
        ),
        Component(
            "replacement",
            "elitist",
            "generational replacement with elitism",
            '''
def replace(self, population, children):
    """Replacement: the children take over, except that the elite_count best parents survive."""
    elite = sorted(population, key=self.cache.get)[: self.elite_count]
    rest = [c for c in sorted(children, key=self.cache.get) if c not in elite]
    return sorted(elite + rest[: max(0, self.pop_size - len(elite))], key=self.cache.get)
''',
            ("elite_count",),
        ),
    )
}

# Population restarts keep the best member and refill the rest.
POPULATION_RESTARTS = {
    "random": '''
def restart_population(self, population):
    """Restart: keep the best member, refill the population with fresh random configurations."""
    fresh = self.random_unvisited(len(population) - 1)
    for config in fresh:
        self.evaluate(config)
    return sorted(population[:1] + fresh, key=self.cache.get)
''',
    "perturb": '''
def restart_population(self, population):
    """Restart: keep the best member, refill with kicked copies of it (kick_size parameters each)."""
    fresh = []
    for _ in range(len(population) - 1):
        idx = self.indices(population[0])
        for p in self.rng.choice(len(idx), size=min(self.kick_size, len(idx)), replace=False):
            idx[int(p)] = int(self.rng.integers(len(self.values[int(p)])))
        config = self.repair(self.config_at(idx))
        self.evaluate(config)
        fresh.append(config)
    return sorted(population[:1] + fresh, key=self.cache.get)
''',
}

LOCAL_SEARCHES = {
    c.name: c
    for c in (
        Component("local_search", "none", "no local search"),
        Component(
            "local_search",
            "memetic",
            "local search of the best member each generation",
            hyperparameters=("ls_steps",),
            tag="memetic",
            needs=("local_search",),
        ),
    )
}

BROODS = {
    c.name: c
    for c in (
        Component("brood", "single", "one child per breeding"),
        Component(
            "brood", "screened", "model-screened broods of children", hyperparameters=("brood_size",), tag="screen"
        ),
    )
}
