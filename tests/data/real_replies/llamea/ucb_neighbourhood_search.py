# Written by a Tunesmith engineer in the style of the LLaMEA-generated optimizers of the 2025 paper
# ("Automated Algorithm Design for Auto-Tuning Optimizers"): class X(OptAlg) without importing
# OptAlg, __init__(self, budget=5000, ...), a loop on self.budget, random/math/numpy/collections.
# It was NOT written by an LLM; it stands in for that family until real LLaMEA output is added.
import random
import math
import collections

import numpy as np


class UCBNeighbourhoodSearch(OptAlg):
    """
    Variable-neighbourhood local search whose move operator is chosen by a UCB1 bandit
    (strictly-adjacent, adjacent, Hamming, random jump), with a short tabu memory and restarts.
    """

    def __init__(self, budget=5000, c=1.4, tabu_size=50, patience=40):
        self.budget = budget
        self.c = c
        self.tabu_size = tabu_size
        self.patience = patience
        self.operators = ["strictly-adjacent", "adjacent", "Hamming", "jump"]

    def _move(self, op, x, searchspace):
        if op == "jump":
            return tuple(searchspace.get_random_sample(1)[0])
        nbrs = searchspace.get_neighbors(tuple(x), neighbor_method=op)
        if not nbrs:
            return tuple(searchspace.get_random_sample(1)[0])
        return tuple(random.choice(nbrs))

    def __call__(self, func, searchspace):
        counts = np.ones(len(self.operators))
        rewards = np.zeros(len(self.operators))
        tabu = collections.deque(maxlen=self.tabu_size)

        x = tuple(searchspace.get_random_sample(1)[0])
        fx = func(x)
        best, best_f = x, fx
        evals, stale = 1, 0

        while evals < self.budget:
            ucb = rewards / counts + self.c * np.sqrt(math.log(counts.sum()) / counts)
            k = int(np.argmax(ucb))
            y = self._move(self.operators[k], x, searchspace)
            if y in tabu:
                y = self._move("jump", x, searchspace)
            try:
                fy = func(y)
            except StopCriterionReached:
                break
            evals += 1
            tabu.append(y)
            counts[k] += 1
            if fy < fx:
                rewards[k] += 1.0
                x, fx = y, fy
                stale = 0
            else:
                stale += 1
            if fy < best_f:
                best, best_f = y, fy
            if stale >= self.patience:
                x = tuple(searchspace.get_random_sample(1)[0])
                try:
                    fx = func(x)
                except StopCriterionReached:
                    break
                evals += 1
                stale = 0
        return best, best_f
