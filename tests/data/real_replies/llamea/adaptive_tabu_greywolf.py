# Source: Kernel Tuner 1.5.0, kernel_tuner/strategies/gen_adaptive_tabu_greywolf.py
# (https://github.com/KernelTuner/kernel_tuner), licensed under the Apache License, Version 2.0
# (http://www.apache.org/licenses/LICENSE-2.0); distributed on an "AS IS" BASIS, WITHOUT WARRANTIES
# OR CONDITIONS OF ANY KIND. Its docstring: "Adaptive Tabu-Guided Grey Wolf Optimization. Algorithm
# generated as part of the paper 'Automated Algorithm Design For Auto-Tuning Optimizers'" (LLaMEA
# with o4-mini, arXiv 2510.17899), where the LLM wrote it as a `class ...(OptAlg)` with
# `__init__(self, budget=5000, ...)` and `__call__(self, func, searchspace)`.
#
# Modified by Tunesmith (Apache-2.0, section 4(b)): put back into that OptAlg form. The module's
# tune() entry point, its _options dict, the verbose printing and its Kernel Tuner imports are
# removed (OptAlg and StopCriterionReached are names a candidate may assume); the option defaults
# became __init__ defaults; run() became __call__(func, searchspace), with self.cost_func -> func
# and self.searchspace -> searchspace; costfunc_kwargs as an OptAlg sets them. The search itself
# (pack, leaders, recombination, shaking, jumps, repair, tabu, annealing acceptance, restarts, the
# `num_evals < self.budget` loop) is unchanged; __call__ returns (best, best_val) as OptAlg asks.
import random
import math
from collections import deque


class AdaptiveTabuGreyWolf(OptAlg):

    def __init__(self, budget=5000, pack_size=8, tabu_factor=3, shake_rate=0.2, jump_rate=0.15,
                 stagn_limit=80, restart_ratio=0.3, t0=1.0, t_decay=5.0, t_min=1e-4, constraint_aware=True):
        self.budget = budget
        self.pack_size = pack_size
        self.tabu = deque(maxlen=pack_size * tabu_factor)
        self.shake_rate = shake_rate
        self.jump_rate = jump_rate
        self.stagn_limit = stagn_limit
        self.restart_ratio = restart_ratio
        self.t0 = t0
        self.t_decay = t_decay
        self.t_min = t_min
        self.constraint_aware = constraint_aware
        self.costfunc_kwargs = {"scaling": False, "snap": False}

    def evaluate(self, dna):
        return self.cost_func(dna, check_restrictions=not self.constraint_aware)

    def sample_valid(self):
        while True:
            x = list(self.searchspace.get_random_sample(1)[0])
            if not self.constraint_aware or self.searchspace.is_param_config_valid(tuple(x)):
                return x

    def repair(self, sol):
        if not self.constraint_aware or self.searchspace.is_param_config_valid(tuple(sol)):
            return sol

        # try neighbors
        for m in ("adjacent", "Hamming", "strictly-adjacent"):
            for nb in self.searchspace.get_neighbors(tuple(sol), neighbor_method=m):
                if self.searchspace.is_param_config_valid(nb):
                    return list(nb)

        return self.sample_valid()

    def __call__(self, func, searchspace):
        self.cost_func = func
        self.searchspace = searchspace

        # initialize pack
        pack = []
        num_evals = 0

        for cfg in self.searchspace.get_random_sample(self.pack_size):
            sol = list(cfg)

            try:
                val = self.evaluate(sol)
                num_evals += 1
            except StopCriterionReached:
                raise

            pack.append((sol, val))
            self.tabu.append(tuple(sol))

        pack.sort(key=lambda x: x[1])

        best_sol, best_val = pack[0]
        stagn = 0
        iteration = 0

        while num_evals < self.budget:

            iteration += 1
            frac = num_evals / self.budget

            # temperature schedule
            T = max(self.t_min, self.t0 * math.exp(-self.t_decay * frac))

            # reheating
            if stagn and stagn % max(1, (self.stagn_limit // 2)) == 0:
                T += self.t0 * 0.2

            # adaptive shaking
            shake_p = min(0.5, self.shake_rate * (1 + stagn / self.stagn_limit))

            pack.sort(key=lambda x: x[1])
            alpha, beta, delta = pack[0][0], pack[1][0], pack[2][0]

            new_pack = []

            for sol, sol_val in pack:

                # leaders survive
                if sol in (alpha, beta, delta):
                    new_pack.append((sol, sol_val))
                    continue

                D = len(sol)

                # recombination
                child = [
                    random.choice((alpha[i], beta[i], delta[i], sol[i]))
                    for i in range(D)
                ]

                # shaking
                if random.random() < shake_p:
                    if random.random() < self.jump_rate:
                        idx = random.randrange(D)
                        rnd = random.choice(self.searchspace.get_random_sample(1))
                        child[idx] = rnd[idx]
                    else:
                        method = "adjacent" if frac < 0.5 else "strictly-adjacent"
                        nbrs = list(self.searchspace.get_neighbors(tuple(child), neighbor_method=method))
                        if nbrs:
                            child = list(random.choice(nbrs))

                # repair
                child = self.repair(child)
                tchild = tuple(child)

                # tabu handling
                if tchild in self.tabu:
                    nbrs = list(self.searchspace.get_neighbors(tchild, neighbor_method="Hamming"))
                    if nbrs:
                        child = list(random.choice(nbrs))

                try:
                    fch = self.evaluate(child)
                    num_evals += 1
                except StopCriterionReached:
                    raise

                self.tabu.append(tuple(child))

                # SA acceptance
                dE = fch - sol_val
                if dE <= 0 or random.random() < math.exp(-dE / T):
                    new_pack.append((child, fch))
                else:
                    new_pack.append((sol, sol_val))

                if num_evals >= self.budget:
                    break

            pack = new_pack
            pack.sort(key=lambda x: x[1])

            # update best
            if pack[0][1] < best_val:
                best_sol, best_val = pack[0]
                stagn = 0
            else:
                stagn += 1

            # restart
            if stagn >= self.stagn_limit:
                nr = int(math.ceil(self.pack_size * self.restart_ratio))

                for i in range(self.pack_size - nr, self.pack_size):
                    sol = self.sample_valid()

                    try:
                        val = self.evaluate(sol)
                        num_evals += 1
                    except StopCriterionReached:
                        raise

                    pack[i] = (sol, val)
                    self.tabu.append(tuple(sol))

                pack.sort(key=lambda x: x[1])
                best_sol, best_val = pack[0]
                stagn = 0

        return tuple(best_sol), best_val
