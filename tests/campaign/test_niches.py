"""Niches: behaviour measured from traces, islands that breed apart and migrate, islands that never
exchange (detected and said), a MAP-Elites grid that draws parents across cells, and no failed or
duplicate candidate ever a parent."""

import numpy as np
import pytest

from generator.archive import Candidate
from generator.campaign.evolution import Evolution
from generator.campaign.niches import cell_of, never_exchange, niche_lines, spans
from generator.config import ConfigError, EvolutionConfig, parse_config
from generator.scoring.behaviour import mean_behaviour, run_behaviour

GRID = np.array([(a, b, c) for a in range(4) for b in range(4) for c in range(4)])  # 3 params, 4 values each
VALUES = GRID.sum(axis=1).astype(float)  # minimum at (0, 0, 0)


def test_a_hill_climber_and_a_random_search_fall_in_different_cells():
    # local search: first-improvement over the incumbent's neighbours, down to the minimum
    path = [
        (1, 1, 1),
        (2, 1, 1),
        (1, 2, 1),
        (0, 1, 1),
        (0, 2, 1),
        (0, 0, 1),
        (0, 0, 2),
        (0, 0, 0),
        (1, 0, 0),
        (0, 1, 0),
        (0, 0, 1),
    ]
    climb = [int(np.flatnonzero((GRID == p).all(axis=1))[0]) for p in path]
    hill = run_behaviour(GRID, VALUES, np.array(climb))
    rng = np.random.default_rng(0)
    rand = run_behaviour(GRID, VALUES, rng.choice(len(GRID), 40, replace=False))
    assert hill["local"] == 1.0 and hill["jumps"] == 0.0
    assert rand["local"] < 0.4 and rand["jumps"] > 0.5 and rand["spread"] > 0.6 > hill["spread"]
    assert run_behaviour(GRID, VALUES, np.array([3])) is None  # one evaluation: no behaviour
    mean = mean_behaviour([hill, None, rand])
    assert mean["local"] == pytest.approx((hill["local"] + rand["local"]) / 2, abs=1e-4)
    as_cand = lambda b: Candidate("c1", 0, "new", fitness={"score": 0.1, "metadata": {"behaviour": b}})  # noqa: E731 - one line
    assert cell_of(as_cand(hill), 3) != cell_of(as_cand(rand), 3)
    # bins span the given ranges: two candidates close together in [0, 1] fall apart in a narrow range
    near = [
        as_cand({"local": 0.05, "jumps": 0.40, "spread": 0.5}),
        as_cand({"local": 0.15, "jumps": 0.45, "spread": 0.5}),
    ]
    assert cell_of(near[0], 3) == cell_of(near[1], 3)
    assert cell_of(near[0], 3, spans(near)) == "0-0-0" and cell_of(near[1], 3, spans(near)) == "2-2-0"
    assert cell_of(Candidate("c2", 0, "new", fitness={"score": 0.1}), 3) == "-"


def _cand(plan, score, error=None, cell=(0.1, 0.1, 0.1), duplicate_of=None):
    fit = None
    if score is not None:
        fit = {"score": score, "per_task": {}, "metadata": {"behaviour": dict(zip(("local", "jumps", "spread"), cell))}}
    return Candidate(
        plan.id,
        plan.generation,
        plan.operator,
        [p.id for p in plan.parents],
        code_path=f"code/{plan.id}.py",
        fitness=fit,
        error={"kind": error} if error else None,
        duplicate_of=duplicate_of,
    )


class Scripted:
    def __init__(self, outcome):
        self.outcome, self.plans = outcome, []

    def __call__(self, plan):
        self.plans.append(plan)
        return self.outcome(len(self.plans), plan)


def _evo(outcome, budget=40, **niches):
    cfg = EvolutionConfig(
        n_parents=4,
        n_offspring=6,
        budget=budget,
        seed=5,
        niches=niches,
        operators={"new": 0.1, "refine": 1, "simplify": 0.5, "fix": 0.5, "crossover": 1},
    )
    produce = Scripted(outcome)
    return Evolution(cfg, produce), produce


@pytest.mark.parametrize(
    "niches", [{}, {"islands": 2, "migration_interval": 1}, {"map_elites": True}, {"islands": 2, "map_elites": True}]
)
def test_a_failed_or_duplicate_candidate_is_never_a_parent(niches):
    def outcome(n, plan):  # every third fails, every fifth copies c0001 (and holds the best score)
        if n % 3 == 0:
            return _cand(plan, None, "exception")
        if n % 5 == 0:
            return _cand(plan, 0.99, duplicate_of="c0001")
        return _cand(plan, (n * 37 % 11) / 11, cell=((n % 3) / 3, (n % 2) / 2, 0.5))

    evo, produce = _evo(outcome, **niches)
    evo.run()
    made = {c.id: c for c in evo.made}
    bred = [p for p in produce.plans if p.operator in ("refine", "simplify", "crossover")]
    assert bred and any(p.operator == "fix" for p in produce.plans)
    for plan in bred:
        assert all(made[q.id].ok and not made[q.id].duplicate_of for q in plan.parents), plan
        assert plan.operator != "crossover" or plan.parents[0].id != plan.parents[1].id


def test_islands_breed_apart_until_a_migrant_enters():
    # island 1's candidates score higher: its best migrates into island 0 (and enters), never the reverse
    def outcome(n, plan):
        return _cand(plan, 0.5 + n / 1000 if island_of[plan.id] == 1 else n / 1000)

    evo, produce = _evo(outcome, budget=22, islands=2, migration_interval=2)
    island_of = evo._island_of  # assigned when a generation is planned, before its candidates are made
    evo.run()
    for plan in produce.plans:
        if plan.generation <= 2:  # before the first migration settles: parents from the own island only
            assert all(island_of[q.id] == island_of[plan.id] for q in plan.parents), plan
    moved = evo.niches.migrations
    assert [m["generation"] for m in moved] == [2, 2]
    assert [(m["from"], m["to"], m["entered"]) for m in moved] == [(0, 1, False), (1, 0, True)]
    assert evo.niches.islands[0].received == 1 and evo.niches.silent() == [1]
    record = {"generation": 3, "niches": evo.niches.snapshot(3)}
    text = "\n".join(niche_lines(record))
    assert "island 0:" in text and "took 1 migrant" in text and "never exchanged: 1" in text


def test_islands_that_can_never_exchange_are_said_before_the_run_and_bad_island_counts_refused():
    cfg = EvolutionConfig(n_parents=4, n_offspring=4, budget=12, niches={"islands": 2, "migration_interval": 3})
    assert "never exchange" in never_exchange(cfg) and "migration_interval" in never_exchange(cfg)
    assert (
        never_exchange(
            EvolutionConfig(n_parents=4, n_offspring=4, budget=20, niches={"islands": 2, "migration_interval": 3})
        )
        is None
    )
    assert never_exchange(EvolutionConfig()) is None  # one population: nothing to exchange
    with pytest.raises(ConfigError, match="islands = 5 > n_parents = 4"):
        parse_config({"tasks": {"train": ["x"]}, "evolution": {"n_parents": 4, "niches": {"islands": 5}}}, "c.toml")


def test_map_elites_breeds_from_every_cell_not_only_the_best():
    # four behaviour cells; one cell holds far better candidates than the rest
    def outcome(n, plan):
        cell = [(0.1, 0.1, 0.1), (0.9, 0.1, 0.1), (0.1, 0.9, 0.1), (0.1, 0.1, 0.9)][n % 4]
        return _cand(plan, (0.9 if n % 4 == 0 else 0.1) + n / 10000, cell=cell)

    for map_elites in (False, True):
        evo, produce = _evo(outcome, budget=60, map_elites=map_elites)
        if not map_elites:
            evo.cfg.selection = "best"  # without niches the best candidate is always the parent
        evo.run()
        made = {c.id: c for c in evo.made}
        cells = {cell_of(made[p.parents[0].id], 3) for p in produce.plans if p.operator == "refine"}
        assert len(cells) == (4 if map_elites else 1)


def test_the_evaluator_measures_behaviour_from_the_oracles_rows_not_from_the_candidate(conv_task):
    from generator.evaluation.evaluate import evaluate_source

    random_search = (
        "class R:\n    hyperparameters = {}\n    def __init__(self, budget=5000):\n        pass\n"
        "    def __call__(self, func, searchspace):\n"
        "        for c in searchspace.get_random_sample(60):\n            func(c)\n"
    )
    climber = (
        "class H:\n    hyperparameters = {}\n    def __init__(self, budget=5000):\n        pass\n"
        "    def __call__(self, func, searchspace):\n        best = searchspace.get_random_sample(1)[0]\n"
        "        f = func(best)\n        for _ in range(60):\n"
        "            for n in searchspace.get_neighbors(best, neighbor_method='Hamming'):\n"
        "                g = func(n)\n                if g < f:\n                    best, f = n, g\n"
        "                    break\n"
    )
    rand = evaluate_source(random_search, [conv_task], repeats=2, seed=1)
    hill = evaluate_source(climber, [conv_task], repeats=2, seed=1)
    rb, hb = rand.metadata["behaviour"], hill.metadata["behaviour"]
    assert hb["local"] > 0.8 > rb["local"] and rb["jumps"] > hb["jumps"]
    assert set(rb) == {"local", "jumps", "spread"}
