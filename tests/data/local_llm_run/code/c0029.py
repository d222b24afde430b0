class MyOptimizer:
    hyperparameters = {"pop_size": {"type": "int", "low": 4, "high": 64, "default": 16}, "temp": {"type": "float", "low": 0.1, "high": 0.9, "default": 0.5}}

    def __init__(self, budget=5000, pop_size=16, temp=0.5):
        self.budget = budget
        self.pop_size = pop_size
        self.temp = temp

    def __call__(self, func, searchspace):
        # Simulated annealing with more sophisticated cooling schedule and considering global optima
        best, best_cost = None, float("inf")
        while True:
            for config in searchspace.get_random_sample(self.pop_size):
                cost = func(config)
                if cost < best_cost:
                    best, best_cost = config, cost

            # check if we have reached the budget
            if self.budget <= 0:
                return best, best_cost

            # try to move up one step in the search space and consider global optima
            neighbors_up = searchspace.get_neighbors(best)
            for neighbor in neighbors_up:
                new_cost = func(neighbor)
                if new_cost < cost:
                    best, best_cost = neighbor, new_cost

            # try to move down one step in the search space and consider global optima
            neighbors_down = searchspace.get_neighbors(best)
            for neighbor in neighbors_down:
                new_cost = func(neighbor)
                if new_cost > cost:
                    best, best_cost = neighbor, new_cost

            # update temperature based on more sophisticated cooling schedule
            self.temp *= 0.95

            # try to move up one step in the search space and consider global optima in different directions
            neighbors_up2 = searchspace.get_neighbors(best)
            for neighbor in neighbors_up2:
                new_cost = func(neighbor)
                if new_cost < cost:
                    best, best_cost = neighbor, new_cost

            # try to move down one step in the search space and consider global optima in different directions
            neighbors_down2 = searchspace.get_neighbors(best)
            for neighbor in neighbors_down2:
                new_cost = func(neighbor)
                if new_cost > cost:
                    best, best_cost = neighbor, new_cost

            # update temperature based on more sophisticated cooling schedule
            self.temp *= 0.95
