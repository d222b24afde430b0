class MyOptimizer:
    hyperparameters = {
        "pop_size": {"type": "int", "low": 4, "high": 64, "default": 16},
        "temp_param": {"type": "float", "low": 0.5, "high": 2.0, "default": 1.0}
    }

    def __init__(self, budget=5000, pop_size=16, temp_param=1.0):
        self.budget = budget
        self.pop_size = pop_size
        self.temp_param = temp_param

    def __call__(self, func, searchspace):
        best, best_cost = None, float("inf")
        while True:
            for config in searchspace.get_random_sample(self.pop_size):
                cost = func(config)
                if cost < best_cost:
                    best, best_cost = config, cost
            # Apply temperature parameter to the cost function
            cost_with_temp = cost * self.temp_param
            # Hill Climbing with a slight modification to avoid local optima
            current_config = best
            for _ in range(10):
                neighbors = searchspace.get_neighbors(current_config)
                if not neighbors:
                    break
                neighbor = max(neighbors, key=lambda x: func(x))
                if func(neighbor) < cost_with_temp:
                    current_config = neighbor
            cost_with_temp = current_config[0] * self.temp_param  # Update cost with temperature parameter for the next iteration
