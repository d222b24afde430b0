import numpy as np
from scipy.optimize import minimize

class MyOptimizer:
    hyperparameters = {"pop_size": {"type": "int", "low": 4, "high": 64, "default": 16}}

    def __init__(self, budget=5000, pop_size=16):
        self.budget = budget
        self.pop_size = pop_size

    def __call__(self, func, searchspace):
        # func(config) -> cost to minimise (a huge value for failed configurations);
        #   func.budget_spent_fraction is in [0, 1]; func raises StopCriterionReached when the
        #   budget is spent (let it propagate or catch it and return).
        # searchspace.tune_params: dict parameter -> list of values
        # searchspace.get_random_sample(n) -> list of n distinct valid configurations (tuples)
        # searchspace.get_neighbors(config, neighbor_method="Hamming"|"adjacent"|"strictly-adjacent") -> list of valid configurations
        # searchspace.is_param_config_valid(config) -> bool
        best, best_cost = None, float("inf")
        for _ in range(self.pop_size):
            config = tuple(np.random.choice(searchspace.tune_params[param]) for param in searchspace.tune_params)
            cost = func(config)
            if cost < best_cost:
                best, best_cost = config, cost

        # Use simulated annealing or genetic algorithms
        bounds = [(param.min, param.max) for param in searchspace.tune_params.values()]
        result = minimize(func, best, method='simulated_annealing', bounds=bounds)

        return tuple(result.x)
