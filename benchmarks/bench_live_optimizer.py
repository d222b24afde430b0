# Provenance: candidate c0022 of an offline-synthesizer campaign (model synth/components, mu+lambda, 40
# candidates, seed 1) trained on problem:gemm/H200 and problem:hotspot/H200 (best training P 0.912);
# copied unchanged below. Used by benchmarks/bench_live.py for the live numbers in the README.
# tunesmith-synth: {"hp":{"explore_rate":0.1,"init_size":9,"jump_rate":0.05,"knn_k":3,"patience":31,"restart_sample":3,"start_temperature":0.1},"scheme":"trajectory","slots":{"acceptance":"annealing","init":"spread","jump":"random","memory":"visited","neighbourhood":"mixed","restart":"random","screening":"knn"},"v":1}
"""SpreadVariableNeighbourhoodKnnAnnealingJumpingRestartSearch: single-point local search with Latin-hypercube-like spread initial sample, adjacent-then-Hamming neighbours, k-nearest-neighbour screening of moves, simulated-annealing acceptance, random jumps, random restarts on stagnation.

Written by Tunesmith's offline synthesizer (a component composer, not an LLM).
Why these components:
    - mixed: fdc 0.355: good configurations cluster around the optimum, so small steps come first
    - defaults of init_size, patience scaled to budget_fevals 312
Note: refined c0011: default start_temperature 0.05 -> 0.1; jump none -> random
"""

import math

import numpy as np


class SpreadVariableNeighbourhoodKnnAnnealingJumpingRestartSearch:
    """Single-point local search with Latin-hypercube-like spread initial sample, adjacent-then-Hamming neighbours, k-nearest-neighbour screening of moves, simulated-annealing acceptance, random jumps, random restarts on stagnation."""

    hyperparameters = {
        "init_size": {"type": "int", "low": 1, "high": 64, "default": 9},
        "knn_k": {"type": "int", "low": 1, "high": 10, "default": 3},
        "explore_rate": {"type": "float", "low": 0.0, "high": 0.5, "default": 0.1},
        "start_temperature": {"type": "log", "low": 0.001, "high": 1.0, "default": 0.1},
        "jump_rate": {"type": "float", "low": 0.01, "high": 0.5, "default": 0.05},
        "patience": {"type": "int", "low": 3, "high": 200, "default": 31},
        "restart_sample": {"type": "int", "low": 1, "high": 16, "default": 3},
    }

    def __init__(
        self,
        budget=5000,
        init_size=9,
        knn_k=3,
        explore_rate=0.1,
        start_temperature=0.1,
        jump_rate=0.05,
        patience=31,
        restart_sample=3,
    ):
        self.budget = int(budget)  # most unique evaluations, as in Kernel Tuner's custom strategies
        self.init_size = int(init_size)
        self.knn_k = int(knn_k)
        self.explore_rate = float(explore_rate)
        self.start_temperature = float(start_temperature)
        self.jump_rate = float(jump_rate)
        self.patience = int(patience)
        self.restart_sample = int(restart_sample)

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
        """Up to n valid configurations not evaluated yet; StopIteration when none are left."""
        for attempt in range(7):
            fresh, seen = [], set()
            for config in self.space.get_random_sample(max(1, n) * 2**attempt):
                config = tuple(config)
                if config not in self.cache and config not in seen:
                    seen.add(config)
                    fresh.append(config)
            if fresh:
                return fresh[: max(1, n)]
        raise StopIteration  # every configuration drawn was visited: the space is (nearly) exhausted

    def repair(self, config):
        """A valid, unvisited configuration as close as possible to config (config itself if it is one)."""
        config = tuple(config)
        if config not in self.cache and self.space.is_param_config_valid(config):
            return config
        for method in ("Hamming", "adjacent"):
            near = [tuple(c) for c in self.space.get_neighbors(config, neighbor_method=method)]
            near = [c for c in near if c not in self.cache]
            if near:
                return near[int(self.rng.integers(len(near)))]
        return self.random_unvisited(1)[0]

    def search(self):
        """Single-point search: start from the best initial sample, move through the neighbourhood."""
        start = self.initial_configs(self.init_size)
        for config in start:
            self.evaluate(config)
        current = min(start, key=self.cache.get)
        stall = 0  # evaluations since the current point last improved
        while True:
            if self.rng.random() < self.jump_rate:  # a random probe; move there if it is better
                probe = self.random_unvisited(1)[0]
                if self.evaluate(probe) < self.cache[current]:
                    current, stall = probe, 0
                continue
            options = [c for c in self.neighbours(current) if c not in self.cache]
            if not options:  # a local optimum whose neighbourhood is fully explored
                current, stall = self.restart(current), 0
                continue
            candidate = self.choose(options)
            value = self.evaluate(candidate)
            if self.accept(value, self.cache[current]):
                stall = 0 if value < self.cache[current] else stall + 1
                current = candidate
            else:
                stall += 1
            if stall >= self.patience:
                current, stall = self.restart(current), 0

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

    def neighbours(self, config):
        """Neighbourhood: small adjacent steps first; Hamming neighbours once those are all visited."""
        near = [tuple(c) for c in self.space.get_neighbors(tuple(config), neighbor_method="strictly-adjacent")]
        if any(c not in self.cache for c in near):
            return near
        return [tuple(c) for c in self.space.get_neighbors(tuple(config), neighbor_method="Hamming")]

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

    def accept(self, value, current_value):
        """Acceptance: worse moves pass with probability exp(-relative loss / T); T cools with the budget."""
        if value >= 1e300:  # failed or invalid: never move there
            return False
        if value < current_value:
            return True
        temperature = self.start_temperature * max(1e-3, 1.0 - self.spent())
        loss = (value - current_value) / max(abs(current_value), 1e-12)
        return self.rng.random() < math.exp(-min(loss / temperature, 700.0))

    def restart(self, current):
        """Restart: continue from the best of restart_sample fresh random configurations."""
        fresh = self.random_unvisited(self.restart_sample)
        for config in fresh:
            self.evaluate(config)
        return min(fresh, key=self.cache.get)
