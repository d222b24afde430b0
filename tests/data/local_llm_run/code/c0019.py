import numpy as np
from typing import List, Tuple

class MyOptimizer:
    # Hyperparameters that may be tuned later: name -> {"type": "int"|"float"|"categorical", "low", "high" | "choices", "default"}
    hyperparameters = {
        "pop_size": {"type": "int", "low": 4, "high": 64, "default": 16},
        "temp": {"type": "float", "low": 0.5, "high": 2.0, "default": 1.0}
    }

    def __init__(self, budget=5000, pop_size=16, temp=1.0):
        self.budget = budget
        self.pop_size = pop_size
        self.temp = temp

    def __call__(self, func, searchspace):
        # func(config) -> cost to minimise (a huge value for failed configurations);
        #   func.budget_spent_fraction is in [0, 1]; func raises StopCriterionReached when the
        #   budget is spent (let it propagate or catch it and return).
        # searchspace.tune_params: dict parameter -> list of values
        # searchspace.get_random_sample(n) -> list of n distinct valid configurations (tuples)
        # searchspace.get_neighbors(config, neighbor_method="Hamming"|"adjacent"|"strictly-adjacent") -> list of valid configurations
        # searchspace.is_param_config_valid(config) -> bool
        best, best_cost = None, float("inf")
        while True:
            for config in searchspace.get_random_sample(self.pop_size):
                cost = func(config)
                if cost < best_cost:
                    best, best_cost = config, cost

            # Apply temperature to encourage exploration and avoid local optima
            temp_adjusted = self.temp ** (self.budget / 1000)

            for _ in range(int(self.pop_size * 0.2)):
                neighbor = searchspace.get_neighbors(config)
                for neighbor in neighbor:
                    if config != neighbor:
                        cost_neighbor = func(neighbor)
                        if cost_neighbor < cost:
                            best, best_cost = neighbor, cost_neighbor
