import numpy as np

class SimulatedAnnealingOptimizer:
    def __init__(self, budget=5000):
        self.budget = budget
        self.current_config = None
        self.best_config = None
        self.best_cost = float("inf")

    def __call__(self, func, searchspace):
        # Initialize the current configuration randomly within the valid range.
        self.current_config = searchspace.get_random_sample(1)[0]
        self.best_config = self.current_config
        self.best_cost = func(self.current_config)

        for _ in range(self.budget):
            new_config = searchspace.get_neighbors(self.current_config, neighbor_method="Hamming")[0]
            cost_new = func(new_config)
            delta_cost = cost_new - self.best_cost

            if delta_cost < 0 or np.random.rand() <= np.exp(-delta_cost / self.temperature):
                self.current_config = new_config
                self.best_config = new_config
                self.best_cost = cost_new

            # Decrease the temperature over time to allow exploration of more costly configurations.
            self.temperature *= self.decay_rate

        return self.best_config, self.best_cost

    def set_temperature(self, initial_temp=1000, decay_rate=0.99):
        self.temperature = initial_temp
        self.decay_rate = decay_rate
