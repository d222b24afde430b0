# tunesmith-synth: {"hp":{"brood_size":4,"crossover_rate":0.8,"elite_count":2,"explore_rate":0.1,"kick_size":2,"knn_k":3,"max_step":2,"mutation_rate":0.2,"patience":37,"pop_size":6,"tournament_size":3},"scheme":"population","slots":{"brood":"screened","crossover":"leaders","init":"random","local_search":"none","replacement":"elitist","restart":"perturb","screening":"knn","step":"fixed"},"v":1}
"""PackBroodElitistIteratedKnnEvolution: population search with random initial sample, fixed-size index mutation, leader-guided recombination (grey-wolf-like), model-screened broods of children, generational replacement with elitism, perturbation restarts from the best (iterated local search), k-nearest-neighbour screening of moves.

Written by Tunesmith's offline synthesizer (a component composer, not an LLM).
Why these components:
    - population: budget_fevals 371: enough evaluations for several generations
    - perturb: fdc 0.456: good configurations cluster around the optimum, so restarts stay near the best
    - defaults of pop_size, patience scaled to budget_fevals 371
"""

import math

import numpy as np


class PackBroodElitistIteratedKnnEvolution:
    """Population search with random initial sample, fixed-size index mutation, leader-guided recombination (grey-wolf-like), model-screened broods of children, generational replacement with elitism, perturbation restarts from the best (iterated local search), k-nearest-neighbour screening of moves."""

    hyperparameters = {
        'pop_size': {'type': 'int', 'low': 4, 'high': 64, 'default': 6},
        'tournament_size': {'type': 'int', 'low': 2, 'high': 8, 'default': 3},
        'mutation_rate': {'type': 'float', 'low': 0.02, 'high': 0.6, 'default': 0.2},
        'max_step': {'type': 'int', 'low': 1, 'high': 8, 'default': 2},
        'crossover_rate': {'type': 'float', 'low': 0.2, 'high': 1.0, 'default': 0.8},
        'brood_size': {'type': 'int', 'low': 2, 'high': 16, 'default': 4},
        'elite_count': {'type': 'int', 'low': 1, 'high': 8, 'default': 2},
        'patience': {'type': 'int', 'low': 3, 'high': 200, 'default': 37},
        'kick_size': {'type': 'int', 'low': 1, 'high': 5, 'default': 2},
        'knn_k': {'type': 'int', 'low': 1, 'high': 10, 'default': 3},
        'explore_rate': {'type': 'float', 'low': 0.0, 'high': 0.5, 'default': 0.1},
    }

    def __init__(self, budget=5000, pop_size=6, tournament_size=3, mutation_rate=0.2, max_step=2, crossover_rate=0.8, brood_size=4, elite_count=2, patience=37, kick_size=2, knn_k=3, explore_rate=0.1):
        self.budget = int(budget)  # most unique evaluations, as in Kernel Tuner's custom strategies
        self.pop_size = int(pop_size)
        self.tournament_size = int(tournament_size)
        self.mutation_rate = float(mutation_rate)
        self.max_step = int(max_step)
        self.crossover_rate = float(crossover_rate)
        self.brood_size = int(brood_size)
        self.elite_count = int(elite_count)
        self.patience = int(patience)
        self.kick_size = int(kick_size)
        self.knn_k = int(knn_k)
        self.explore_rate = float(explore_rate)

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
        self.knn_x, self.knn_y = [], []  # the model: scaled value positions and values, in history order
        self.knn_scale = np.asarray([max(1, len(v) - 1) for v in self.values], dtype=np.float32)
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
            self.population = population  # where crossover finds the leaders
            for _ in range(self.pop_size):
                child, mother = self.breed(population)
                # breed a brood and let the model pick the most promising child
                brood = dict([(child, mother)] + [self.breed(population) for _ in range(self.brood_size - 1)])
                child = self.choose(list(brood))
                mother = brood[child]
                value = self.evaluate(child)
                children.append(child)
            population = self.replace(population, children)
            stall = 0 if self.best_value < best_before else stall + len(children)
            if stall >= self.patience:
                population, stall = self.restart_population(population), 0

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
        """Initialisation: n distinct random valid configurations."""
        return self.random_unvisited(n)

    def mutate(self, idx):
        """Variation: shift each value index with probability mutation_rate by 1..max_step positions."""
        child = list(idx)
        movable = [p for p in range(len(child)) if len(self.values[p]) > 1]
        if not movable:
            return child
        genes = [p for p in movable if self.rng.random() < self.mutation_rate]
        if not genes:  # always change at least one parameter
            genes = [movable[int(self.rng.integers(len(movable)))]]
        for p in genes:
            step = int(self.rng.integers(1, self.max_step + 1)) * (1 if self.rng.random() < 0.5 else -1)
            child[p] = self.shift(p, child[p], step)
        return child

    def shift(self, p, i, step):
        """Move value index i of parameter p by step, reflecting at the ends of its value list."""
        top = len(self.values[p]) - 1
        j = i + step if 0 <= i + step <= top else i - step
        return min(top, max(0, j))

    def crossover(self, a, b):
        """Variation: each value from one of the three best members or from the parent itself."""
        if self.rng.random() >= self.crossover_rate:
            return list(a)
        leaders = [self.indices(c) for c in sorted(self.population, key=self.cache.get)[:3]]
        return [leaders[int(self.rng.integers(len(leaders)))][p] if self.rng.random() < 0.75 else x
                for p, x in enumerate(a)]

    def replace(self, population, children):
        """Replacement: the children take over, except that the elite_count best parents survive."""
        elite = sorted(population, key=self.cache.get)[: self.elite_count]
        rest = [c for c in sorted(children, key=self.cache.get) if c not in elite]
        return sorted(elite + rest[: max(0, self.pop_size - len(elite))], key=self.cache.get)

    def restart(self, current):
        """Restart: kick the best configuration by changing kick_size random parameters, repaired."""
        idx = self.indices(self.best_config if self.best_config is not None else current)
        for p in self.rng.choice(len(idx), size=min(self.kick_size, len(idx)), replace=False):
            idx[int(p)] = int(self.rng.integers(len(self.values[int(p)])))
        config = self.repair(self.config_at(idx))
        self.evaluate(config)
        return config

    def choose(self, options):
        """Move selection: the option that a k-nearest-neighbour model of past measurements predicts best."""
        if len(self.history) < 3 or len(options) == 1 or self.rng.random() < self.explore_rate:
            return options[int(self.rng.integers(len(options)))]
        if len(options) > 32:  # large neighbourhoods: screen a random subset, keeping each step cheap
            options = [options[int(i)] for i in self.rng.choice(len(options), size=32, replace=False)]
        while len(self.knn_x) < len(self.history):  # extend the model with new measurements
            config = self.history[len(self.knn_x)]
            self.knn_x.append(np.asarray(self.indices(config), dtype=np.float32) / self.knn_scale)
            self.knn_y.append(self.cache[config])
        x, y = np.asarray(self.knn_x), np.asarray(self.knn_y)
        if len(y) > 128:  # the best and the most recent measurements say most about the options at hand
            keep = np.union1d(np.argsort(y)[:64], np.arange(len(y) - 64, len(y)))
            x, y = x[keep], y[keep]
        ranks = np.argsort(np.argsort(y)).astype(float)  # ranks: robust to scale; failures rank worst
        cand = np.asarray([self.indices(c) for c in options], dtype=np.float32) / self.knn_scale
        dist = np.abs(cand[:, None, :] - x[None, :, :]).sum(axis=2)
        k = min(self.knn_k, len(ranks))
        nearest = np.argpartition(dist, k - 1, axis=1)[:, :k]
        weights = 1.0 / (np.take_along_axis(dist, nearest, axis=1) + 1e-6)
        predicted = (weights * ranks[nearest]).sum(axis=1) / weights.sum(axis=1)
        return options[int(np.argmin(predicted))]

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
