class SearchSpace:
    def __init__(self, tune_params: dict):
        self.tune_params = tune_params
        self.constraint_density = None
        self.n_params = None
        self.cardinality = None
        self.failed_fraction = 0
        self.objective_spread = None
        self.worst_over_optimum = None
        self.fdc = None
        self.local_optima_share = None
        self.budget_fevals = 0
        self.budget_seconds = None

    def tune_params(self):
        return self.tune_params

    def get_random_sample(self, n: int) -> List[Tuple]:
        # implementation of this function should be provided in the SearchSpace class
        pass

    def get_neighbors(self, config: Tuple, neighbor_method="Hamming"|"adjacent"|"strictly-adjacent") -> List[Tuple]:
        # implementation of this function should be provided in the SearchSpace class
        pass

    def is_param_config_valid(self, config: Tuple) -> bool:
        # implementation of this function should be provided in the SearchSpace class
        pass
