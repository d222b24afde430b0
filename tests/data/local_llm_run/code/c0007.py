class GeneticAlgorithm(MyOptimizer):
    def __init__(self, budget=5000, pop_size=16):
        super().__init__(budget, pop_size)
        self.hyperparameters = {"mutation_rate": {"type": "float", "low": 0.001, "high": 0.2, "default": 0.1}}

    def __call__(self, func, searchspace):
        # Implement the genetic algorithm with a custom fitness function
        pass
