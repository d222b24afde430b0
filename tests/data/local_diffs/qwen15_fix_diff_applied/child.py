from typing import *
import numpy as np
from random import choice, sample

class GemmH200Optimizer(OptAlg):
    def __init__(self, budget=5000, pop_size=16):
        super(GemmH200Optimizer, self).__init__(budget=budget, pop_size=pop_size)
    
    def __call__(self, func, searchspace):
        best, best_cost = None, float("inf")
        
        while True:
            for config in sample(searchspace.get_random_sample(self.pop_size), self.pop_size):
                cost = func(config)
                
                # Custom heuristic to select the best configuration
                if cost < best_cost or (cost == best_cost and choice(["best", "random"]) == "best"):
                    best, best_cost = config, cost
