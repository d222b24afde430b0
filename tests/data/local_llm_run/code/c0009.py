import numpy as np
from typing import List, Tuple

class MyOptimizer:
    hyperparameters = {"pop_size": {"type": "int", "low": 4, "high": 64, "default": 16}, "temperature": {"type": "float", "low": 0.01, "high": 2, "default": 1}}

    def __init__(self, budget=5000, pop_size=16, temperature=1):
        self.budget = budget
        self.pop_size = pop_size
        self.temperature = temperature

    def __call__(self, func, searchspace):
        # simulated annealing with slight modification to avoid local optima
        best, best_cost = None, float("inf")
        while True:
            for config in searchspace.get_random_sample(self.pop_size):
                cost = func(config)
                if cost < best_cost:
                    best, best_cost = config, cost

            # check if we have reached the budget
            if self.budget <= 0:
                return best, best_cost

            # try to move up one step in the search space
            neighbors = searchspace.get_neighbors(best)
            for neighbor in neighbors:
                new_cost = func(neighbor)
                if new_cost < cost:
                    best, best_cost = neighbor, new_cost

            # decrease temperature
            self.temperature *= 0.99

            # check if we should stop the algorithm
            if np.random.rand() > np.exp((best_cost - cost) / self.temperature):
                return best, best_cost

            self.budget -= 1
