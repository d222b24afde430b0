import numpy as np

class MyOptimizer:
    hyperparameters = {"pop_size": {"type": "int", "low": 4, "high": 64, "default": 16}}

    def __init__(self, budget=5000, pop_size=16):
        self.budget = budget
        self.pop_size = pop_size

    def __call__(self, func, searchspace):
        # Implement your algorithm here
        
        best, best_cost = None, float("inf")
        
        while True:
            for config in searchspace.get_random_sample(self.pop_size):
                cost = func(config)
                if cost < best_cost:
                    best, best_cost = config, cost

        return best
