"""Components for small budgets and rugged spaces, where plain local search is weakest.

With a few dozen evaluations the first samples and the choice between exploring and descending
decide most of P; on rugged spaces (convolution-like: many local optima, low fitness-distance
correlation) a fixed jump rate either wastes evaluations or never leaves a basin. Three parts, in
the conventions of `components.py` (methods at class level, optional scheme lines by tag):

- init "screened": a few random samples, then model-screened global sampling (each time the most
  promising of `global_pool` random unvisited configurations, by the move-screening model) until
  `global_share` of the budget is spent; a trap basin next to a strong but narrow optimum (pnpoly on the
  RTX 3060, the `use_method = 2` basin) is left behind only by samples from the whole space, and the
  model keeps them from costing as much as pure random draws on fast spaces
  (`benchmarks/results/screened_init.json`);
- init "design": a space-filling design (the best of several Latin hypercubes by maximin distance,
  repaired to *valid* configurations; plain farthest-point sampling picks the extremes of every
  parameter, which are mostly poor kernels) whose size follows
  the budget the run actually has (estimated from the share of the budget the first evaluation
  cost), instead of a fixed `init_size`;
- screening "lcb": a k-nearest-neighbour surrogate ranks the options and a lower confidence bound
  (predicted rank minus a bonus for options far from every measurement, shrinking as the budget is
  spent) picks one: model-based screening that also explores;
- restart "screened": on stagnation, restart_sample model-screened global probes (as the screened init draws
  them) and the search goes on from the best; the population version refills all but the best member that way.
  It spends global samples only once local search has stalled, where the screened init spends them up front
  whether the space needs them or not (that costs 0.1-0.15 P on fast spaces);
- jump "adaptive": switching between exploration (a model-screened global probe) and local search,
  with the share of each set by how often each has improved lately, and exploration forced when
  local search stalls.
"""

from __future__ import annotations

from generator.llm.synth.components import Component

INITS = {
    c.name: c
    for c in (
        Component(
            "init",
            "design",
            "budget-sized space-filling initial design",
            '''
def initial_configs(self, n):
    """Initialisation: a maximin Latin hypercube repaired to valid configurations, init_share of the evaluations
    the budget allows (estimated from what the first evaluation cost), at least n."""
    first = self.random_unvisited(1)[0]
    self.evaluate(first)
    spent = self.spent()
    total = len(self.cache) / spent if spent > 0 else float(self.budget)  # evaluations this run can afford
    size = int(max(n, min(self.init_share * total, 0.5 * total)))
    scale = np.asarray([max(1, len(v) - 1) for v in self.values], dtype=float)
    best, best_gap = [first], -1.0
    for _ in range(8):  # several Latin hypercubes; keep the one whose closest pair is farthest apart (maximin)
        design = [first]
        columns = []
        for vals in self.values:  # one stratum per point: every part of each parameter's range is sampled
            strata = ((np.arange(size) + self.rng.random(size)) / size * len(vals)).astype(int)
            columns.append(self.rng.permutation(np.minimum(strata, len(vals) - 1)))
        try:
            for row in list(zip(*columns))[: size - 1]:
                config = self.repair(self.config_at(row))
                if config not in design:
                    design.append(config)
            # repairs that met: fill up with random valid configurations, so the design keeps its size
            design += [c for c in self.random_unvisited(size - len(design)) if c not in design][: size - len(design)]
        except StopIteration:  # (nearly) every configuration is visited: keep what was found
            pass
        x = np.asarray([self.indices(c) for c in design], dtype=float) / scale
        d = np.abs(x[:, None, :] - x[None, :, :]).sum(axis=2) + np.eye(len(design)) * 1e9
        gap = float(d.min()) if len(design) > 1 else 0.0
        if len(design) > len(best) or (len(design) == len(best) and gap > best_gap):
            best, best_gap = design, gap
    return best
''',
            ("init_share",),
        ),
        Component(
            "init",
            "screened",
            "model-screened global sampling of a budget share",
            '''
def initial_configs(self, n):
    """Initialisation: n random configurations, then model-screened global sampling (the most promising of
    global_pool random unvisited configurations) until global_share of the budget is spent."""
    configs = self.random_unvisited(n)
    for config in configs:
        self.evaluate(config)
    while self.spent() < self.global_share:  # the share follows the budget this run actually has
        config = self.choose(self.random_unvisited(self.global_pool))
        self.evaluate(config)
        configs.append(config)
    return configs
''',
            ("global_share", "global_pool"),
        ),
    )
}

SCREENINGS = {
    c.name: c
    for c in (
        Component(
            "screening",
            "lcb",
            "confidence-bound surrogate screening of moves",
            '''
def choose(self, options):
    """Move selection: the lowest confidence bound of a k-nearest-neighbour model (predicted rank minus a
    bonus for options far from every measurement; the bonus shrinks as the budget is spent)."""
    if len(self.history) < 3 or len(options) == 1:
        return options[int(self.rng.integers(len(options)))]
    if len(options) > 64:  # large neighbourhoods: screen a random subset, keeping each step cheap
        options = [options[int(i)] for i in self.rng.choice(len(options), size=64, replace=False)]
    while len(self.lcb_x) < len(self.history):  # extend the model with new measurements
        config = self.history[len(self.lcb_x)]
        self.lcb_x.append(np.asarray(self.indices(config), dtype=np.float32) / self.lcb_scale)
        self.lcb_y.append(self.cache[config])
    x, y = np.asarray(self.lcb_x), np.asarray(self.lcb_y)
    if len(y) > 128:  # the best and the most recent measurements say most about the options at hand
        keep = np.union1d(np.argsort(y)[:64], np.arange(len(y) - 64, len(y)))
        x, y = x[keep], y[keep]
    ranks = np.argsort(np.argsort(y)) / max(1, len(y) - 1)  # 0 best .. 1 worst; failures rank worst
    cand = np.asarray([self.indices(c) for c in options], dtype=np.float32) / self.lcb_scale
    dist = np.abs(cand[:, None, :] - x[None, :, :]).sum(axis=2)
    k = min(self.knn_k, len(ranks))
    nearest = np.argpartition(dist, k - 1, axis=1)[:, :k]
    weights = 1.0 / (np.take_along_axis(dist, nearest, axis=1) + 1e-6)
    predicted = (weights * ranks[nearest]).sum(axis=1) / weights.sum(axis=1)
    novelty = dist.min(axis=1) / len(self.values)  # 0 at a measured point, 1 across the whole space
    bound = predicted - self.explore_weight * (1.0 - self.spent()) * novelty
    return options[int(np.argmin(bound))]
''',
            ("knn_k", "explore_weight"),
            state="self.lcb_x, self.lcb_y = [], []  # the surrogate: scaled value positions and values\n"
            "self.lcb_scale = np.asarray([max(1, len(v) - 1) for v in self.values], dtype=np.float32)\n",
        ),
    )
}

# The explore probe is a global probe (helper global_probes: the model's pick of global_pool random
# configurations; it was a fixed 32). The pool sets how greedy exploring is, and 32 drew nearly every probe into
# the model's favourite basin (pnpoly on the RTX 3060: P 0.26 at 32, 0.45 at 8, c0016 of flagship5 over 100
# repeats), so it is a hyperparameter now.
JUMPS = {
    c.name: c
    for c in (
        Component(
            "jump",
            "adaptive",
            "adaptive switching between exploration and local search",
            '''
def explore_now(self, stall):
    """Switching: explore when local search has stalled, else with the share of recent successes exploring earned."""
    if stall >= self.patience:
        return True
    explore = (self.wins["explore"] + 1.0) / (self.tries["explore"] + 2.0)
    local = (self.wins["local"] + 1.0) / (self.tries["local"] + 2.0)
    return self.rng.random() < min(0.9, max(0.05, explore / (explore + local)))

def credit(self, mode, improved):
    """Switching: count a try of `mode` and whether it improved; old counts fade so the share follows the run."""
    for key in self.tries:
        self.tries[key] *= 0.97
        self.wins[key] *= 0.97
    self.tries[mode] += 1.0
    self.wins[mode] += 1.0 if improved else 0.0
''',
            ("patience", "global_pool"),
            state='self.tries, self.wins = {"explore": 0.0, "local": 0.0}, {"explore": 0.0, "local": 0.0}\n',
            tag="switch",
            needs=("global_probes",),
        ),
    )
}


RESTARTS = {
    c.name: c
    for c in (
        Component(
            "restart",
            "screened",
            "model-screened global restarts on stagnation",
            '''
def restart(self, current):
    """Restart: restart_sample model-screened global probes; the search goes on from the best of them."""
    return min(self.global_probes(self.restart_sample), key=self.cache.get)
''',
            ("patience", "restart_sample", "global_pool"),
            tag="restart",
            needs=("global_probes",),
        ),
    )
}

# The population version of restart "screened" (compose.py adds it to populations that restart so; the
# restart component above brings the helper).
POPULATION_RESTARTS = {
    "screened": '''
def restart_population(self, population):
    """Restart: keep the best member, refill the population with model-screened global probes."""
    return sorted(population[:1] + self.global_probes(len(population) - 1), key=self.cache.get)
''',
}
