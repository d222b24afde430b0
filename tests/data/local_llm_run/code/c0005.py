import numpy as np
from searchspace import KernelTuner, HammingNeighborMethod, StrictlyAdjacentNeighborMethod

class MyOptimizer:
    hyperparameters = {"pop_size": {"type": "int", "low": 4, "high": 64, "default": 16}, "mutation_rate": {"type": "float", "low": 0.01, "high": 0.2, "default": 0.1}}

    def __init__(self, budget=5000, pop_size=16, mutation_rate=0.1):
        self.budget = budget
        self.pop_size = pop_size
        self.mutation_rate = mutation_rate

    def __call__(self, func, searchspace):
        tuner = KernelTuner(func, searchspace, "gpop", HammingNeighborMethod(), StrictlyAdjacentNeighborMethod())

        best, best_cost = None, float("inf")
        while True:
            for config in tuner.get_random_sample(self.pop_size):
                cost = func(config)
                if cost < best_cost:
                    best, best_cost = config, cost

            if tuner.budget_spent_fraction > 1:
                raise StopCriterionReached()

            new_pop = []
            for config in tuner.population:
                for neighbor in tuner.get_neighbors(config, method="strictly-adjacent"):
                    new_config = tuple(np.clip(config + np.random.normal(0, self.mutation_rate * 2), searchspace.min_bounds[config], searchspace.max_bounds[config]) for config in zip(config, neighbor))
                    if tuner.is_param_config_valid(new_config):
                        new_pop.append(new_config)
                        cost = func(new_config)
                        if cost < best_cost:
                            best, best_cost = new_config, cost

            tuner.update_population(new_pop)

        return best
