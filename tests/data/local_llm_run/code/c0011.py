import numpy as np
from typing import List, Tuple

class MyOptimizer:
    hyperparameters = {"pop_size": {"type": "int", "low": 4, "high": 64, "default": 16}}

    def __init__(self, budget=5000, pop_size=16):
        self.budget = budget
        self.pop_size = pop_size

    def __call__(self, func, searchspace):
        # simulated annealing with slight modification to avoid local optima and improve performance on both tasks
        best, best_cost = None, float("inf")
        temperature = self.budget  # initialize the temperature to the budget
        
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

                # calculate the acceptance probability
                delta_cost = new_cost - cost
                if delta_cost < 0 or np.exp(delta_cost / temperature) > np.random.rand():
                    best, best_cost = neighbor, new_cost

            self.budget -= 1
            
            # adjust temperature based on objective spread and fdc
            if best_cost < searchspace.objective_spread * best_cost:
                temperature *= 2
            elif searchspace.fdc < 0.85:
                temperature /= 2
