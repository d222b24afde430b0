"""A random walk with restarts: the simplest honest custom strategy (OptAlg interface of DESIGN.md).

Start at a random valid configuration; move to a random Hamming neighbour when it is no worse,
otherwise stay; after `patience` moves without improvement, restart at a random configuration.
Run it with:  tunesmith bench --tasks ../shared/data/benchmark_hub --strategies benchmarks/strategies/random_walk.py
"""

import random


class RandomWalk:
    hyperparameters = {"patience": {"type": "int", "low": 1, "high": 100, "default": 20}}

    def __init__(self, budget=5000, patience=20):
        self.budget = budget
        self.patience = patience

    def __call__(self, func, searchspace):
        # func raises StopCriterionReached when the tuning budget is spent; the caller catches it
        best_cfg, best = None, float("inf")
        current = searchspace.get_random_sample(1)[0]
        cost = func(current)
        stale = 0
        for _ in range(self.budget):
            neighbours = searchspace.get_neighbors(current, neighbor_method="Hamming")
            if not neighbours or stale >= self.patience:
                current, stale = searchspace.get_random_sample(1)[0], 0
                cost = func(current)
                continue
            candidate = random.choice(neighbours)
            c = func(candidate)
            if c <= cost:
                stale = 0 if c < cost else stale + 1
                current, cost = candidate, c
            else:
                stale += 1
            if cost < best:
                best_cfg, best = current, cost
        return best_cfg, best
