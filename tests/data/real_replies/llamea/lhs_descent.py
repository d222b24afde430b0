# Written by a Tunesmith engineer in the style of the LLaMEA-generated optimizers of the 2025 paper
# ("Automated Algorithm Design for Auto-Tuning Optimizers"): class X(OptAlg) without importing
# OptAlg, __init__(self, budget=5000, ...), a loop on self.budget, numpy and scipy.
# It was NOT written by an LLM; it checks that scipy imports wherever a candidate runs.
import numpy as np
from scipy.stats import qmc


class LHSDescent(OptAlg):
    """
    A Latin-hypercube design over the parameter indices (scipy.stats.qmc), snapped to valid
    configurations, then first-improvement descent over Hamming neighbours from the best points.
    """

    def __init__(self, budget=5000, n_init=16):
        self.budget = budget
        self.n_init = n_init

    def __call__(self, func, searchspace):
        names = list(searchspace.tune_params)
        values = [searchspace.tune_params[n] for n in names]
        sampler = qmc.LatinHypercube(d=len(names), seed=np.random.randint(2**31))
        design = []
        for u in sampler.random(self.n_init):
            cfg = tuple(v[min(int(ui * len(v)), len(v) - 1)] for ui, v in zip(u, values))
            if not searchspace.is_param_config_valid(cfg):
                cfg = tuple(searchspace.get_random_sample(1)[0])
            design.append(cfg)
        scored = sorted((func(c), c) for c in design)
        best_f, best = scored[0]
        evals = len(design)
        starts = [c for _, c in scored]
        while evals < self.budget:
            x = starts.pop(0) if starts else tuple(searchspace.get_random_sample(1)[0])
            fx = func(x)
            evals += 1
            improved = True
            while improved and evals < self.budget:
                improved = False
                nbrs = searchspace.get_neighbors(x, neighbor_method="Hamming")
                np.random.shuffle(nbrs)
                for y in nbrs:
                    fy = func(tuple(y))
                    evals += 1
                    if fy < fx:
                        x, fx, improved = tuple(y), fy, True
                        break
            if fx < best_f:
                best, best_f = x, fx
        return best, best_f
