import numpy as np

class GAWithLocalSearch(MyOptimizer):
    hyperparameters = {"pop_size": {"type": "int", "low": 4, "high": 64, "default": 16},
                      "mutation_rate": {"type": "float", "low": 0.05, "high": 0.2, "default": 0.1}}

    def __init__(self, budget=5000, pop_size=16, mutation_rate=0.1):
        super().__init__(budget, pop_size)
        self.mutation_rate = mutation_rate

    def __call__(self, func, searchspace):
        best, best_cost = None, float("inf")
        while True:
            for config in searchspace.get_random_sample(self.pop_size):
                cost = func(config)
                if cost < best_cost:
                    best, best_cost = config, cost
            # Perform local search
            for _ in range(10):  # Adjust the number of iterations based on analysis
                neighbors = searchspace.get_neighbors(best, neighbor_method="Hamming")
                for neighbor in neighbors:
                    new_cost = func(neighbor)
                    if new_cost < best_cost:
                        best, best_cost = neighbor, new_cost

            # Check if budget is spent
            if self.budget_spent_fraction >= 1.0:
                break
