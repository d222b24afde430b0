"""Runs to score in the score tests: random draws and a hill climber on a task's space, as traces."""

import numpy as np

from generator.scoring.oracle import Oracle, StopCriterionReached
from generator.scoring.score import budget_for
from generator.tasks.space import SearchSpace


def _random_traces(task, repeats, seed=0):
    space = SearchSpace(task.space)
    traces = []
    for r in range(repeats):
        space.seed(seed + r)
        oracle = Oracle(task, budget_for(task), space)
        try:
            for cfg in space.get_random_sample(space.size):
                oracle(cfg)
        except StopCriterionReached:
            pass
        traces.append(oracle.trace())
    return traces


def _hillclimb_traces(task, repeats, seed=0):
    """A first-improvement local search: curves unlike random search's, with revisits."""
    space = SearchSpace(task.space)
    traces = []
    for r in range(repeats):
        space.seed(seed + r)
        rng = np.random.default_rng(seed + r)
        oracle = Oracle(task, budget_for(task), space)
        try:
            while True:
                cur = space.get_random_sample(1)[0]
                cost = oracle(cur)
                improved = True
                while improved:
                    improved = False
                    nbrs = space.get_neighbors(cur, "Hamming")
                    for i in rng.permutation(len(nbrs)):
                        c = oracle(nbrs[i])
                        if c < cost:
                            cur, cost, improved = nbrs[i], c, True
                            break
        except StopCriterionReached:
            pass
        traces.append(oracle.trace())
    return traces
