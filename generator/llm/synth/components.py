"""The building blocks of synthesized optimizers, as readable code.

Each Component fills one slot of an optimizer (initialisation, neighbourhood, acceptance, ...) with
one or more methods written at class level. This module holds the skeleton (the core methods, the
helpers, the search schemes and the initialisations); `moves.py` the local-search moves (neighbourhoods,
acceptance, memory, restarts, jumps). `compose.py` stitches the chosen components into one
self-contained class. Scheme code (the main loop) holds optional lines marked `#@<tag>: ` that are
kept only when the composition uses the component of that tag (tabu, restart, adapt, jump,
switch, memetic, screen, leaders).

Every generated optimizer keeps these guarantees, whatever the composition:
- each loop iteration evaluates one configuration it has not evaluated before, or stops; so it
  cannot spin when every neighbour is visited, and it ends when the space is exhausted;
- the budget ends the search through Kernel Tuner's StopCriterionReached (matched by name) or
  through its own `budget` of unique evaluations (StopIteration), both caught in `__call__`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Hyperparameter search ranges (Optuna-style); the composition supplies the defaults.
HP_SPECS: dict[str, dict] = {
    "init_size": {"type": "int", "low": 1, "high": 64},
    "pop_size": {"type": "int", "low": 4, "high": 64},
    "tournament_size": {"type": "int", "low": 2, "high": 8},
    "mutation_rate": {"type": "float", "low": 0.02, "high": 0.6},
    "crossover_rate": {"type": "float", "low": 0.2, "high": 1.0},
    "elite_count": {"type": "int", "low": 1, "high": 8},
    "max_step": {"type": "int", "low": 1, "high": 8},
    "step_size": {"type": "float", "low": 0.5, "high": 8.0},
    "pool_size": {"type": "int", "low": 2, "high": 32},
    "knn_k": {"type": "int", "low": 1, "high": 10},
    "explore_rate": {"type": "float", "low": 0.0, "high": 0.5},
    "start_temperature": {"type": "log", "low": 0.001, "high": 1.0},
    "threshold": {"type": "log", "low": 0.001, "high": 0.5},
    "history_length": {"type": "int", "low": 2, "high": 50},
    "tabu_tenure": {"type": "int", "low": 1, "high": 30},
    "patience": {"type": "int", "low": 3, "high": 200},
    "restart_sample": {"type": "int", "low": 1, "high": 16},
    "kick_size": {"type": "int", "low": 1, "high": 5},
    "jump_rate": {"type": "float", "low": 0.01, "high": 0.5},
    "ls_steps": {"type": "int", "low": 1, "high": 50},
    "brood_size": {"type": "int", "low": 2, "high": 16},
    "ridge": {"type": "log", "low": 0.01, "high": 10.0},
    "init_share": {"type": "float", "low": 0.02, "high": 0.5},
    "explore_weight": {"type": "float", "low": 0.0, "high": 2.0},
    "global_share": {"type": "float", "low": 0.02, "high": 0.5},
    "global_pool": {"type": "int", "low": 1, "high": 64},
}


@dataclass(frozen=True)
class Component:
    """One option for one slot: the methods it adds, its hyperparameters, imports and set-up lines."""

    slot: str
    name: str
    summary: str  # a phrase for descriptions: "greedy acceptance"
    code: str = ""  # methods at class level (no indentation)
    hyperparameters: tuple[str, ...] = ()
    imports: tuple[str, ...] = ()
    state: str = ""  # lines run in __call__ before the search starts
    tag: str = ""  # enables `#@tag:` lines of the scheme code
    needs: tuple[str, ...] = field(default_factory=tuple)  # helper methods from HELPERS


# ---------------------------------------------------------------------------------------------
# The core every optimizer has: the budget-aware evaluation and the index view of the space.
CORE = '''
def __call__(self, func, searchspace):
    """Minimise func over searchspace until the budget is spent; return (best config, best value)."""
    self.func = func
    self.space = searchspace
    # Seeded from numpy's global generator, which tuners seed per run: runs are reproducible there.
    self.rng = np.random.default_rng(np.random.randint(0, 2**31 - 1))
    self.values = [list(v) for v in searchspace.tune_params.values()]
    self.positions = [{v: i for i, v in enumerate(vals)} for vals in self.values]
    self.cache = {}  # config -> value; revisits are free in the budget but cost wall time
    self.history = []  # configs in the order they were evaluated
    self.best_config, self.best_value = None, math.inf
{state}    try:
        self.search()
    except StopIteration:
        pass  # our own budget is spent, or every configuration has been visited
    except Exception as e:  # Kernel Tuner's StopCriterionReached, matched by name: kernel_tuner is optional
        if type(e).__name__ != "StopCriterionReached":
            raise
    return self.best_config, self.best_value

def spent(self):
    """Fraction of the budget spent: the tuner's own measure when it reports one."""
    own = len(self.cache) / max(1, self.budget)
    reported = getattr(self.func, "budget_spent_fraction", None)
    return own if reported is None else max(own, float(reported))

def evaluate(self, config):
    """The objective of a configuration, measured once; invalid or failed ones come back huge."""
    config = tuple(config)
    if config in self.cache:
        return self.cache[config]
    if len(self.cache) >= self.budget:
        raise StopIteration
    value = float(self.func(config))
    if value != value:  # NaN: treat as failed
        value = math.inf
    self.cache[config] = value
    self.history.append(config)
    if value < self.best_value:
        self.best_config, self.best_value = config, value
    return value

def indices(self, config):
    """Positions of a configuration's values in each parameter's value list."""
    return [self.positions[p][v] for p, v in enumerate(config)]

def config_at(self, idx):
    """The configuration at the given value positions."""
    return tuple(self.values[p][int(i)] for p, i in enumerate(idx))

def random_unvisited(self, n=1):
    """n valid configurations not evaluated yet (fewer only when nearly every one is); StopIteration when none
    are left. Draws again until it has n, so a pool of global_pool probes has global_pool options."""
    n = max(1, n)
    fresh, seen = [], set()
    # never ask for more than the space holds: Kernel Tuner would warn "Too many samples requested" and draw
    # the whole space anyway, so the cap changes no draw (a space without `size` is asked as before)
    size = getattr(self.space, "size", None)
    for attempt in range(7):
        wanted = n * 2**attempt
        for config in self.space.get_random_sample(min(wanted, size) if isinstance(size, int) and size > 0 else wanted):
            config = tuple(config)
            if config not in self.cache and config not in seen:
                seen.add(config)
                fresh.append(config)
        if len(fresh) >= n:
            break
    if not fresh:
        raise StopIteration  # every configuration drawn was visited: the space is (nearly) exhausted
    return fresh[:n]

def repair(self, config):
    """A valid, unvisited configuration as close as possible to config (config itself if it is one): of its
    valid neighbours, one the fewest value-index steps away, as Kernel Tuner's Latin hypercube sample repairs.
    A random neighbour lands as often in a small region the restrictions carve out as in the large one next to
    it: on histogram/H100 a spread initial sample put 17% of its points in the slowest tenth of the space (no
    shared memory), where a random sample puts 10%."""
    config = tuple(config)
    if config not in self.cache and self.space.is_param_config_valid(config):
        return config
    target = np.asarray(self.indices(config))
    for method in ("Hamming", "adjacent"):
        near = [tuple(c) for c in self.space.get_neighbors(config, neighbor_method=method)]
        near = [c for c in near if c not in self.cache]
        if near:
            steps = np.abs(np.asarray([self.indices(c) for c in near]) - target).sum(axis=1)
            closest = np.flatnonzero(steps == steps.min())
            return near[int(closest[self.rng.integers(len(closest))])]
    return self.random_unvisited(1)[0]
'''

# Helpers that several components share; a component lists the ones it calls in `needs`.
HELPERS = {
    "local_search": '''
def local_search(self, start, steps):
    """Up to `steps` moves from start through the neighbourhood, by the acceptance rule."""
    current = start
    for _ in range(steps):
        options = [c for c in self.neighbours(current) if c not in self.cache]
        if not options:
            break  # a local optimum whose neighbourhood is fully explored
        candidate = self.choose(options)
        if self.accept(self.evaluate(candidate), self.cache[current]):
            current = candidate
    return current
''',
    "global_probes": '''
def global_probes(self, n):
    """n model-screened global probes, measured: each the most promising of global_pool random unvisited
    configurations by the move-screening model."""
    probes = []
    for _ in range(n):
        config = self.choose(self.random_unvisited(self.global_pool))
        self.evaluate(config)
        probes.append(config)
    return probes
''',
}

# ---------------------------------------------------------------------------------------------
# Schemes: the main loop.
TRAJECTORY = Component(
    "scheme",
    "trajectory",
    "single-point local search",
    '''
def search(self):
    """Single-point search: start from the best initial sample, move through the neighbourhood."""
    start = self.initial_configs(self.init_size)
    for config in start:
        self.evaluate(config)
    current = min(start, key=self.cache.get)
    stall = 0  # evaluations since the current point last improved
    while True:
        #@jump: if self.rng.random() < self.jump_rate:  # a probe far away (screened like a move); move there if better
        #@jump:     probe = self.global_probes(1)[0]
        #@jump:     if self.cache[probe] < self.cache[current]:
        #@jump:         current, stall = probe, 0
        #@jump:     continue
        #@switch: if self.explore_now(stall):  # adaptive switching: a model-screened probe away from here
        #@switch:     probe = self.global_probes(1)[0]
        #@switch:     value = self.cache[probe]
        #@switch:     self.credit("explore", value < self.cache[current])
        #@switch:     if value < self.cache[current] or (stall >= self.patience and value < 1e300):  # better, or stuck here
        #@switch:         current, stall = probe, 0
        #@switch:     continue
        options = [c for c in self.neighbours(current) if c not in self.cache]
        #@tabu: options = [c for c in options if self.allowed(c)] or options
        if not options:  # a local optimum whose neighbourhood is fully explored
            current, stall = self.restart(current), 0
            continue
        candidate = self.choose(options)
        value = self.evaluate(candidate)
        #@adapt: self.adapt_step(value < self.cache[current])
        #@switch: self.credit("local", value < self.cache[current])
        if self.accept(value, self.cache[current]):
            stall = 0 if value < self.cache[current] else stall + 1
            #@tabu: self.remember_move(current, candidate)
            current = candidate
        else:
            stall += 1
        #@restart: if stall >= self.patience:
        #@restart:     current, stall = self.restart(current), 0
''',
    ("init_size",),
)

POPULATION = Component(
    "scheme",
    "population",
    "population search",
    '''
def search(self):
    """Population search: tournament selection, variation, repair to valid unvisited configurations."""
    population = list(self.initial_configs(self.pop_size))
    for config in population:
        self.evaluate(config)
    stall = 0  # evaluations since the last new best
    while True:
        best_before = self.best_value
        children = []
        #@leaders: self.population = population  # where crossover finds the leaders
        for _ in range(self.pop_size):
            child, mother = self.breed(population)
            #@screen: # breed a brood and let the model pick the most promising child
            #@screen: brood = dict([(child, mother)] + [self.breed(population) for _ in range(self.brood_size - 1)])
            #@screen: child = self.choose(list(brood))
            #@screen: mother = brood[child]
            value = self.evaluate(child)
            #@adapt: self.adapt_step(value < self.cache[mother])
            children.append(child)
        population = self.replace(population, children)
        #@memetic: # refine the best member by local search, replacing the worst member
        #@memetic: improved = self.local_search(population[0], self.ls_steps)
        #@memetic: if improved not in population:
        #@memetic:     population = sorted(population[:-1] + [improved], key=self.cache.get)
        stall = 0 if self.best_value < best_before else stall + len(children)
        #@restart: if stall >= self.patience:
        #@restart:     population, stall = self.restart_population(population), 0
''',
    ("pop_size", "tournament_size"),
)
SCHEMES = {c.name: c for c in (TRAJECTORY, POPULATION)}

# ---------------------------------------------------------------------------------------------
# Initialisation.
INITS = {
    c.name: c
    for c in (
        Component(
            "init",
            "random",
            "random initial sample",
            '''
def initial_configs(self, n):
    """Initialisation: n distinct random valid configurations."""
    return self.random_unvisited(n)
''',
        ),
        Component(
            "init",
            "spread",
            "Latin-hypercube-like spread initial sample",
            '''
def initial_configs(self, n):
    """Initialisation: a Latin-hypercube-like spread over each parameter's value indices, repaired."""
    n = max(1, int(n))
    columns = []
    for vals in self.values:
        # one stratum per point, so every part of each parameter's range gets a sample
        strata = ((np.arange(n) + self.rng.random(n)) / n * len(vals)).astype(int)
        columns.append(self.rng.permutation(np.minimum(strata, len(vals) - 1)))
    configs = []
    for row in zip(*columns):
        config = self.repair(self.config_at(row))
        if config not in configs:
            configs.append(config)
    return configs
''',
        ),
    )
}
