# Written by a Tunesmith engineer in the style of the LLaMEA-generated optimizers of the 2025 paper
# ("Automated Algorithm Design for Auto-Tuning Optimizers"): class X(OptAlg) without importing
# OptAlg, __init__(self, budget=5000, ...), generations counted from self.budget, random/numpy.
# It was NOT written by an LLM; it stands in for that family until real LLaMEA output is added.
import random

import numpy as np


class EliteGeneticSearch(OptAlg):
    """
    Steady elitist genetic algorithm: tournament selection, uniform crossover repaired through
    is_param_config_valid, neighbour mutation, and an elite that always survives.
    """

    def __init__(self, budget=5000, pop_size=20, elite=4, mutation_rate=0.3):
        self.budget = budget
        self.pop_size = pop_size
        self.elite = elite
        self.mutation_rate = mutation_rate

    def _tournament(self, pop, fit):
        i, j = np.random.randint(len(pop), size=2)
        return pop[i] if fit[i] <= fit[j] else pop[j]

    def __call__(self, func, searchspace):
        pop = [tuple(c) for c in searchspace.get_random_sample(self.pop_size)]
        fit = [func(c) for c in pop]
        for generation in range(self.budget // self.pop_size):
            order = np.argsort(fit)
            new_pop = [pop[i] for i in order[:self.elite]]
            new_fit = [fit[i] for i in order[:self.elite]]
            while len(new_pop) < self.pop_size:
                a, b = self._tournament(pop, fit), self._tournament(pop, fit)
                child = tuple(random.choice((u, v)) for u, v in zip(a, b))
                if not searchspace.is_param_config_valid(child):
                    child = a
                if random.random() < self.mutation_rate:
                    nbrs = searchspace.get_neighbors(child, neighbor_method="Hamming")
                    if nbrs:
                        child = tuple(random.choice(nbrs))
                new_pop.append(child)
                new_fit.append(func(child))
            pop, fit = new_pop, new_fit
        i = int(np.argmin(fit))
        return pop[i], fit[i]
