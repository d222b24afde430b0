# tunesmith-synth: {"hp":{"brood_size":4,"crossover_rate":0.8,"explore_rate":0.1,"ls_steps":6,"mutation_rate":0.2,"pop_size":6,"ridge":1.0,"step_size":1.5,"threshold":0.05,"tournament_size":3},"scheme":"population","slots":{"acceptance":"threshold","brood":"screened","crossover":"one-point","init":"spread","local_search":"memetic","neighbourhood":"Hamming","replacement":"plus","restart":"none","screening":"additive","step":"adaptive"},"v":1}
"""SpreadAdaptiveOnePointBroodMemeticHammingAdditiveThresholdEvolution: population search with Latin-hypercube-like spread initial sample, adaptive-step index mutation, one-point crossover, model-screened broods of children, (mu+lambda) truncation, local search of the best member each generation, Hamming neighbours, additive-model screening of moves, threshold acceptance.

Written by Tunesmith's offline synthesizer (a component composer, not an LLM).
Why these components:
    - population: budget_fevals 371: enough evaluations for several generations
    - memetic: budget_fevals 371: room for local search inside a population
    - defaults of pop_size scaled to budget_fevals 371
"""

import math

import numpy as np


class SpreadAdaptiveOnePointBroodMemeticHammingAdditiveThresholdEvolution:
    """Population search with Latin-hypercube-like spread initial sample, adaptive-step index mutation, one-point crossover, model-screened broods of children, (mu+lambda) truncation, local search of the best member each generation, Hamming neighbours, additive-model screening of moves, threshold acceptance."""

    hyperparameters = {
        'pop_size': {'type': 'int', 'low': 4, 'high': 64, 'default': 6},
        'tournament_size': {'type': 'int', 'low': 2, 'high': 8, 'default': 3},
        'mutation_rate': {'type': 'float', 'low': 0.02, 'high': 0.6, 'default': 0.2},
        'step_size': {'type': 'float', 'low': 0.5, 'high': 8.0, 'default': 1.5},
        'crossover_rate': {'type': 'float', 'low': 0.2, 'high': 1.0, 'default': 0.8},
        'brood_size': {'type': 'int', 'low': 2, 'high': 16, 'default': 4},
        'ls_steps': {'type': 'int', 'low': 1, 'high': 50, 'default': 6},
        'explore_rate': {'type': 'float', 'low': 0.0, 'high': 0.5, 'default': 0.1},
        'ridge': {'type': 'log', 'low': 0.01, 'high': 10.0, 'default': 1.0},
        'threshold': {'type': 'log', 'low': 0.001, 'high': 0.5, 'default': 0.05},
    }

    def __init__(self, budget=5000, pop_size=6, tournament_size=3, mutation_rate=0.2, step_size=1.5, crossover_rate=0.8, brood_size=4, ls_steps=6, explore_rate=0.1, ridge=1.0, threshold=0.05):
        self.budget = int(budget)  # most unique evaluations, as in Kernel Tuner's custom strategies
        self.pop_size = int(pop_size)
        self.tournament_size = int(tournament_size)
        self.mutation_rate = float(mutation_rate)
        self.step_size = float(step_size)
        self.crossover_rate = float(crossover_rate)
        self.brood_size = int(brood_size)
        self.ls_steps = int(ls_steps)
        self.explore_rate = float(explore_rate)
        self.ridge = float(ridge)
        self.threshold = float(threshold)

    def __call__(self, func, searchspace):
        """Minimise func over searchspace until the budget is spent; return (best config, best value)."""
        self.func = func
        self.space = searchspace
        # Seeded from numpy's global generator, which tuners seed per run: runs are reproducible there.
        self.rng = np.random.default_rng(np.random.randint(0, 2**31 - 1))
        self.values = [list(v) for v in searchspace.tune_params.values()]
        self.positions = [{v: i for i, v in enumerate(vals)} for vals in self.values]
        self.cache = {}  # config -> value; revisits are free in the budget but cost wall time
        self.history = []  # configs in the order they were evaluated
        self.best_config, self.best_value = None, math.inf
        self.step = float(self.step_size)  # adaptive mutation step, in value positions
        self.step_cap = max(1.0, max(len(v) for v in self.values) / 2.0)
        self.model_rows, self.model_y = [], []  # one-hot columns and value of each measurement
        self.model_offsets = np.cumsum([0] + [len(v) for v in self.values[:-1]])
        self.model_width = sum(len(v) for v in self.values)
        self.model_gram = np.zeros((self.model_width, self.model_width))  # X^T X of the one-hot features
        try:
            self.search()
        except StopIteration:
            pass  # our own budget is spent, or every configuration has been visited
        except Exception as e:  # Kernel Tuner's StopCriterionReached, matched by name: kernel_tuner is optional
            if type(e).__name__ != "StopCriterionReached":
                raise
        return self.best_config, self.best_value

    def spent(self):
        """Fraction of the budget spent: the tuner's own measure when it reports one."""
        own = len(self.cache) / max(1, self.budget)
        reported = getattr(self.func, "budget_spent_fraction", None)
        return own if reported is None else max(own, float(reported))

    def evaluate(self, config):
        """The objective of a configuration, measured once; invalid or failed ones come back huge."""
        config = tuple(config)
        if config in self.cache:
            return self.cache[config]
        if len(self.cache) >= self.budget:
            raise StopIteration
        value = float(self.func(config))
        if value != value:  # NaN: treat as failed
            value = math.inf
        self.cache[config] = value
        self.history.append(config)
        if value < self.best_value:
            self.best_config, self.best_value = config, value
        return value

    def indices(self, config):
        """Positions of a configuration's values in each parameter's value list."""
        return [self.positions[p][v] for p, v in enumerate(config)]

    def config_at(self, idx):
        """The configuration at the given value positions."""
        return tuple(self.values[p][int(i)] for p, i in enumerate(idx))

    def random_unvisited(self, n=1):
        """n valid configurations not evaluated yet (fewer only when nearly every one is); StopIteration when none
        are left. Draws again until it has n, so a pool of global_pool probes has global_pool options."""
        n = max(1, n)
        fresh, seen = [], set()
        # never ask for more than the space holds: Kernel Tuner would warn "Too many samples requested" and draw
        # the whole space anyway, so the cap changes no draw (a space without `size` is asked as before)
        size = getattr(self.space, "size", None)
        for attempt in range(7):
            wanted = n * 2**attempt
            for config in self.space.get_random_sample(min(wanted, size) if isinstance(size, int) and size > 0 else wanted):
                config = tuple(config)
                if config not in self.cache and config not in seen:
                    seen.add(config)
                    fresh.append(config)
            if len(fresh) >= n:
                break
        if not fresh:
            raise StopIteration  # every configuration drawn was visited: the space is (nearly) exhausted
        return fresh[:n]

    def repair(self, config):
        """A valid, unvisited configuration as close as possible to config (config itself if it is one): of its
        valid neighbours, one the fewest value-index steps away, as Kernel Tuner's Latin hypercube sample repairs.
        A random neighbour lands as often in a small region the restrictions carve out as in the large one next to
        it: on histogram/H100 a spread initial sample put 17% of its points in the slowest tenth of the space (no
        shared memory), where a random sample puts 10%."""
        config = tuple(config)
        if config not in self.cache and self.space.is_param_config_valid(config):
            return config
        target = np.asarray(self.indices(config))
        for method in ("Hamming", "adjacent"):
            near = [tuple(c) for c in self.space.get_neighbors(config, neighbor_method=method)]
            near = [c for c in near if c not in self.cache]
            if near:
                steps = np.abs(np.asarray([self.indices(c) for c in near]) - target).sum(axis=1)
                closest = np.flatnonzero(steps == steps.min())
                return near[int(closest[self.rng.integers(len(closest))])]
        return self.random_unvisited(1)[0]

    def search(self):
        """Population search: tournament selection, variation, repair to valid unvisited configurations."""
        population = list(self.initial_configs(self.pop_size))
        for config in population:
            self.evaluate(config)
        stall = 0  # evaluations since the last new best
        while True:
            best_before = self.best_value
            children = []
            for _ in range(self.pop_size):
                child, mother = self.breed(population)
                # breed a brood and let the model pick the most promising child
                brood = dict([(child, mother)] + [self.breed(population) for _ in range(self.brood_size - 1)])
                child = self.choose(list(brood))
                mother = brood[child]
                value = self.evaluate(child)
                self.adapt_step(value < self.cache[mother])
                children.append(child)
            population = self.replace(population, children)
            # refine the best member by local search, replacing the worst member
            improved = self.local_search(population[0], self.ls_steps)
            if improved not in population:
                population = sorted(population[:-1] + [improved], key=self.cache.get)
            stall = 0 if self.best_value < best_before else stall + len(children)

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

    def initial_configs(self, n):
        """Initialisation: a Latin-hypercube-like spread over each parameter's value indices, repaired."""
        n = max(1, int(n))
        columns = []
        for vals in self.values:
            # one stratum per point, so every part of each parameter's range gets a sample
            strata = ((np.arange(n) + self.rng.random(n)) / n * len(vals)).astype(int)
            columns.append(self.rng.permutation(np.minimum(strata, len(vals) - 1)))
        configs = []
        for row in zip(*columns):
            config = self.repair(self.config_at(row))
            if config not in configs:
                configs.append(config)
        return configs

    def mutate(self, idx):
        """Variation: Gaussian steps over value indices, with a step size that adapts to success."""
        child = list(idx)
        movable = [p for p in range(len(child)) if len(self.values[p]) > 1]
        if not movable:
            return child
        genes = [p for p in movable if self.rng.random() < self.mutation_rate]
        if not genes:  # always change at least one parameter
            genes = [movable[int(self.rng.integers(len(movable)))]]
        for p in genes:
            size = max(1, int(round(abs(self.rng.normal(0.0, self.step)))))
            child[p] = self.shift(p, child[p], size * (1 if self.rng.random() < 0.5 else -1))
        return child

    def adapt_step(self, improved):
        """Adaptive step size (1/5th success rule): grow after a success, shrink slowly after a failure."""
        self.step = min(self.step_cap, max(0.5, self.step * (1.5 if improved else 0.9)))

    def shift(self, p, i, step):
        """Move value index i of parameter p by step, reflecting at the ends of its value list."""
        top = len(self.values[p]) - 1
        j = i + step if 0 <= i + step <= top else i - step
        return min(top, max(0, j))

    def crossover(self, a, b):
        """Variation: one-point crossover (head of one parent, tail of the other), with probability crossover_rate."""
        if len(a) < 2 or self.rng.random() >= self.crossover_rate:
            return list(a)
        cut = int(self.rng.integers(1, len(a)))
        return list(a[:cut]) + list(b[cut:])

    def replace(self, population, children):
        """Replacement (mu+lambda): the best pop_size of parents and children together."""
        return sorted(dict.fromkeys(population + children), key=self.cache.get)[: self.pop_size]

    def restart(self, current):
        """Escape: continue from a random unvisited configuration."""
        config = self.random_unvisited(1)[0]
        self.evaluate(config)
        return config

    def neighbours(self, config):
        """Neighbourhood: configurations that differ in exactly one parameter (Kernel Tuner's "Hamming" neighbours)."""
        return [tuple(c) for c in self.space.get_neighbors(tuple(config), neighbor_method="Hamming")]

    def choose(self, options):
        """Move selection: the option an additive model of log-cost (one weight per parameter value) predicts best."""
        if len(self.history) < 4 or len(options) == 1 or self.rng.random() < self.explore_rate:
            return options[int(self.rng.integers(len(options)))]
        while len(self.model_rows) < len(self.history):  # add each new measurement to the normal equations
            config = self.history[len(self.model_rows)]
            columns = self.model_offsets + np.asarray(self.indices(config))
            self.model_gram[np.ix_(columns, columns)] += 1.0
            self.model_rows.append(columns)
            self.model_y.append(self.cache[config])
        values = np.asarray(self.model_y)
        ok = values < 1e300
        if ok.sum() < 2:
            return options[int(self.rng.integers(len(options)))]
        y = np.log(np.where(ok, np.maximum(values, 1e-12), 1.0))
        y = np.where(ok, y, y[ok].max() + 1.0)  # failures: clearly worse than anything measured
        rows = np.asarray(self.model_rows)
        moments = np.zeros(self.model_width)
        np.add.at(moments, rows, np.broadcast_to((y - y.mean())[:, None], rows.shape))
        # ridge regression: a few measurements per value are enough, and unseen values stay at the mean
        weights = np.linalg.solve(self.model_gram + self.ridge * np.eye(self.model_width), moments)
        cand = self.model_offsets + np.asarray([self.indices(c) for c in options])
        return options[int(np.argmin(weights[cand].sum(axis=1)))]

    def accept(self, value, current_value):
        """Acceptance: anything within a relative threshold of the current value; it shrinks with the budget."""
        if value >= 1e300:  # failed or invalid: never move there
            return False
        return value - current_value <= self.threshold * (1.0 - self.spent()) * abs(current_value)

    def local_search(self, start, steps):
        """Up to `steps` moves from start through the neighbourhood, by the acceptance rule."""
        current = start
        for _ in range(steps):
            options = [c for c in self.neighbours(current) if c not in self.cache]
            if not options:
                break  # a local optimum whose neighbourhood is fully explored
            candidate = self.choose(options)
            if self.accept(self.evaluate(candidate), self.cache[current]):
                current = candidate
        return current
