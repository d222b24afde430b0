"""The local-search moves of synthesized optimizers: neighbourhoods, acceptance rules, memories (tabu),
restarts and random jumps, one `Component` per option (conventions in `components.py`). A trajectory
scheme uses one of each; memetic populations use the neighbourhood for their local search.
"""

from __future__ import annotations

from generator.llm.synth.components import Component


# ---------------------------------------------------------------------------------------------
# Neighbourhoods (trajectory search and the local search of memetic populations).
def _kt_neighbourhood(method: str, meaning: str) -> Component:
    return Component(
        "neighbourhood",
        method,
        f"{method} neighbours",
        f'''
def neighbours(self, config):
    """Neighbourhood: {meaning} (Kernel Tuner's "{method}" neighbours)."""
    return [tuple(c) for c in self.space.get_neighbors(tuple(config), neighbor_method="{method}")]
''',
    )


NEIGHBOURHOODS = {
    c.name: c
    for c in (
        _kt_neighbourhood("Hamming", "configurations that differ in exactly one parameter"),
        _kt_neighbourhood("adjacent", "configurations one value step away in any parameters"),
        _kt_neighbourhood("strictly-adjacent", "configurations at most one value step away in every parameter"),
        Component(
            "neighbourhood",
            "mixed",
            "adjacent-then-Hamming neighbours",
            '''
def neighbours(self, config):
    """Neighbourhood: small adjacent steps first; Hamming neighbours once those are all visited."""
    near = [tuple(c) for c in self.space.get_neighbors(tuple(config), neighbor_method="strictly-adjacent")]
    if any(c not in self.cache for c in near):
        return near
    return [tuple(c) for c in self.space.get_neighbors(tuple(config), neighbor_method="Hamming")]
''',
        ),
        Component(
            "neighbourhood",
            "index-step",
            "index-step mutants",
            '''
def neighbours(self, config):
    """Neighbourhood: pool_size mutants of config (steps over value indices), repaired to validity."""
    base = self.indices(config)
    # a list, not a generator: StopIteration (space exhausted) must reach __call__ unchanged
    pool = [self.repair(self.config_at(self.mutate(base))) for _ in range(self.pool_size)]
    return list(dict.fromkeys(pool))
''',
            ("pool_size",),
        ),
    )
}

# ---------------------------------------------------------------------------------------------
# Acceptance of a measured move.
_FAILED = "if value >= 1e300:  # failed or invalid: never move there\n        return False\n    "
ACCEPTANCES = {
    c.name: c
    for c in (
        Component(
            "acceptance",
            "greedy",
            "greedy acceptance",
            '''
def accept(self, value, current_value):
    """Acceptance: move only to better configurations."""
    return value < current_value
''',
        ),
        Component(
            "acceptance",
            "annealing",
            "simulated-annealing acceptance",
            f'''
def accept(self, value, current_value):
    """Acceptance: worse moves pass with probability exp(-relative loss / T); T cools with the budget."""
    {_FAILED}if value < current_value:
        return True
    temperature = self.start_temperature * max(1e-3, 1.0 - self.spent())
    loss = (value - current_value) / max(abs(current_value), 1e-12)
    return self.rng.random() < math.exp(-min(loss / temperature, 700.0))
''',
            ("start_temperature",),
        ),
        Component(
            "acceptance",
            "threshold",
            "threshold acceptance",
            f'''
def accept(self, value, current_value):
    """Acceptance: anything within a relative threshold of the current value; it shrinks with the budget."""
    {_FAILED}return value - current_value <= self.threshold * (1.0 - self.spent()) * abs(current_value)
''',
            ("threshold",),
        ),
        Component(
            "acceptance",
            "late",
            "late acceptance",
            f'''
def accept(self, value, current_value):
    """Acceptance: better than now, or better than the current value history_length moves ago."""
    {_FAILED}if len(self.late) < self.history_length:
        self.late.append(current_value)
    slot = self.late_step % len(self.late)
    ok = value < current_value or value <= self.late[slot]
    self.late[slot] = value if ok else current_value
    self.late_step += 1
    return ok
''',
            ("history_length",),
            state="self.late, self.late_step = [], 0  # late-acceptance memory\n",
        ),
    )
}

# ---------------------------------------------------------------------------------------------
# Memory beyond the visited set (which every optimizer keeps in self.cache).
MEMORIES = {
    c.name: c
    for c in (
        Component("memory", "visited", "a visited set"),
        Component(
            "memory",
            "tabu",
            "a tabu list of recent moves",
            '''
def allowed(self, config):
    """Memory: a move may not restore a parameter value changed within the last tabu_tenure moves."""
    return not any(config[p] == v for p, v in self.tabu)

def remember_move(self, current, config):
    """Memory: make the values left behind by this move tabu for a while."""
    for p, (old, new) in enumerate(zip(current, config)):
        if old != new:
            self.tabu.append((p, old))
''',
            ("tabu_tenure",),
            ("collections",),
            "self.tabu = collections.deque(maxlen=self.tabu_tenure)\n",
            "tabu",
        ),
    )
}

# ---------------------------------------------------------------------------------------------
# Restarts. The trajectory scheme always needs `restart` (to escape an explored local optimum);
# the component decides how, and whether stagnation also triggers it (tag "restart").
RESTARTS = {
    c.name: c
    for c in (
        Component(
            "restart",
            "none",
            "no restarts",
            '''
def restart(self, current):
    """Escape: continue from a random unvisited configuration."""
    config = self.random_unvisited(1)[0]
    self.evaluate(config)
    return config
''',
        ),
        Component(
            "restart",
            "random",
            "random restarts on stagnation",
            '''
def restart(self, current):
    """Restart: continue from the best of restart_sample fresh random configurations."""
    fresh = self.random_unvisited(self.restart_sample)
    for config in fresh:
        self.evaluate(config)
    return min(fresh, key=self.cache.get)
''',
            ("patience", "restart_sample"),
            tag="restart",
        ),
        Component(
            "restart",
            "perturb",
            "perturbation restarts from the best (iterated local search)",
            '''
def restart(self, current):
    """Restart: kick the best configuration by changing kick_size random parameters, repaired."""
    idx = self.indices(self.best_config if self.best_config is not None else current)
    for p in self.rng.choice(len(idx), size=min(self.kick_size, len(idx)), replace=False):
        idx[int(p)] = int(self.rng.integers(len(self.values[int(p)])))
    config = self.repair(self.config_at(idx))
    self.evaluate(config)
    return config
''',
            ("patience", "kick_size"),
            tag="restart",
        ),
    )
}

JUMPS = {
    c.name: c
    for c in (
        Component("jump", "none", "no random jumps"),
        Component(
            "jump", "random", "random jumps", "", ("jump_rate", "global_pool"), tag="jump", needs=("global_probes",)
        ),
    )
}
