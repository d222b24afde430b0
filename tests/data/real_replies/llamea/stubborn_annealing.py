# Written by a Tunesmith engineer in the style of the LLaMEA-generated optimizers of the 2025 paper
# ("Automated Algorithm Design for Auto-Tuning Optimizers"): class X(OptAlg) without importing
# OptAlg, __init__(self, budget=5000, ...), a loop on self.budget, random/math.
# It was NOT written by an LLM. It reproduces a real failure mode: it catches StopCriterionReached,
# ignores it and keeps looping (its counter only grows on a successful call), so only the sandbox
# or the runner can end it once the task's budget is spent.
import random
import math


class StubbornAnnealing(OptAlg):
    """Simulated annealing over adjacent neighbours that swallows the stop signal."""

    def __init__(self, budget=5000, t0=1.0, cooling=0.99):
        self.budget = budget
        self.t0 = t0
        self.cooling = cooling

    def __call__(self, func, searchspace):
        x = tuple(searchspace.get_random_sample(1)[0])
        fx = func(x)
        best, best_f = x, fx
        t = self.t0
        evals = 1
        while evals < self.budget:
            nbrs = searchspace.get_neighbors(x, neighbor_method="adjacent")
            y = tuple(random.choice(nbrs)) if nbrs else tuple(searchspace.get_random_sample(1)[0])
            try:
                fy = func(y)
            except StopCriterionReached:
                continue  # "keep going until our own budget is used"
            evals += 1
            scale = abs(fx) if fx not in (0.0, float("inf")) and fx < 1e300 else 1.0
            if fy < fx or random.random() < math.exp(-(fy - fx) / (scale * max(t, 1e-9))):
                x, fx = y, fy
            if fy < best_f:
                best, best_f = y, fy
            t *= self.cooling
        return best, best_f
