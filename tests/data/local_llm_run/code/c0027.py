import numpy as np

class MyOptimizer:
    hyperparameters = {"pop_size": {"type": "int", "low": 4, "high": 64, "default": 16}}

    def __init__(self, budget=5000, pop_size=16):
        self.budget = budget
        self.pop_size = pop_size

    def __call__(self, func, searchspace):
        # Hill climbing with slight modification to avoid local optima and consider global optima
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

            self.budget -= 1

            # try to move down one step in the search space and consider global optima
            for neighbor in searchspace.get_neighbors(best):
                new_cost = func(neighbor)
                if new_cost > cost:
                    best, best_cost = neighbor, new_cost

            # check for improvement from local to global optima
            for config in neighbors:
                new_cost = func(config)
                if new_cost < best_cost:
                    best, best_cost = config, new_cost

            self.budget -= 1
