"""The loop alone, with a scripted `produce`: budget, elitism, operators, parents, determinism."""

import numpy as np
import pytest

from generator.archive import Candidate
from generator.campaign.evolution import Evolution, choose_operator, select_parent, survivors
from generator.config import EvolutionConfig


def _cand(cid, score=None, error=None, op="new", parents=(), gen=0, code=True):
    fit = {"score": score, "per_task": {}} if score is not None else None
    return Candidate(
        cid,
        gen,
        op,
        list(parents),
        code_path=f"code/{cid}.py" if code else None,
        fitness=fit,
        error={"kind": error} if error else None,
    )


class Scripted:
    """produce(): scores from a function of the candidate number; records the plans it was given."""

    def __init__(self, outcome):
        self.outcome = outcome
        self.plans = []

    def __call__(self, plan):
        self.plans.append(plan)
        score, error = self.outcome(len(self.plans), plan)
        return _cand(plan.id, score, error, plan.operator, [p.id for p in plan.parents], plan.generation)


def test_budget_generations_and_elitism():
    produce = Scripted(lambda n, plan: (n / 100, None))
    gens = []
    evo = Evolution(
        EvolutionConfig(n_parents=2, n_offspring=3, budget=10, seed=0),
        produce,
        on_generation=lambda g, pop: gens.append((g, [c.id for c in pop])),
    )
    final = evo.run()
    assert len(produce.plans) == 10 and [p.id for p in produce.plans][-1] == "c0010"
    assert [p.generation for p in produce.plans] == [0, 0, 1, 1, 1, 2, 2, 2, 3, 3]
    assert all(p.operator == "new" for p in produce.plans[:2])
    assert [g for g, _ in gens] == [0, 1, 2, 3]
    assert [c.id for c in final] == ["c0010", "c0009"]  # the best two, scores rise with n


def test_parents_are_working_candidates_and_elites_survive():
    # odd candidates fail; even ones score; c0002 is the best of all
    def outcome(n, plan):
        if n % 2:
            return None, "exception"
        return (0.9 if n == 2 else 0.1), None

    produce = Scripted(outcome)
    evo = Evolution(
        EvolutionConfig(
            n_parents=2, n_offspring=4, budget=14, seed=1, operators={"new": 0.1, "refine": 1, "simplify": 1, "fix": 1}
        ),
        produce,
    )
    final = evo.run()
    by_id = {p.id: p for p in produce.plans}
    for plan in produce.plans:
        if plan.operator in ("refine", "simplify"):
            assert plan.parents[0].ok
        if plan.operator == "fix":
            assert plan.parents[0].error and not plan.parents[0].ok
    assert final[0].id == "c0002"  # (mu+lambda) never loses the elite
    assert any(p.operator == "fix" for p in by_id.values())


def test_comma_strategy_replaces_parents_but_not_with_nothing():
    parents = [_cand("a", 0.9), _cand("b", 0.8)]
    kids = [_cand("c", 0.1), _cand("d", 0.2), _cand("e", error="exception")]
    assert [c.id for c in survivors(parents, kids, 2, "mu,lambda")] == ["d", "c"]
    assert [c.id for c in survivors(parents, kids, 2, "mu+lambda")] == ["a", "b"]
    only_failures = [_cand("f", error="timeout"), _cand("g", 0.3)]
    assert [c.id for c in survivors(parents, only_failures, 2, "mu,lambda")] == ["g", "a"]
    dup = Candidate("h", 1, "refine", fitness={"score": 0.99})
    dup.duplicate_of = "a"
    assert "h" not in [c.id for c in survivors(parents, [dup], 2, "mu+lambda")]


def test_fix_only_for_failures_with_code_and_chains_are_bounded():
    # everything fails with code: fix applies; a fix of a fix of a fix is never asked
    produce = Scripted(lambda n, plan: (None, "exception"))
    Evolution(
        EvolutionConfig(
            n_parents=1,
            n_offspring=6,
            budget=25,
            seed=2,
            operators={"new": 0.01, "refine": 1, "simplify": 1, "fix": 100},
        ),
        produce,
    ).run()
    by_id = {p.id: p for p in produce.plans}

    def depth(pid):
        plan = by_id[pid]
        return 1 + depth(plan.parents[0].id) if plan.operator == "fix" else 0

    fixes = [p for p in produce.plans if p.operator == "fix"]
    assert fixes and max(depth(p.id) for p in fixes) <= 2
    # no code at all (LLM failures): nothing to fix, so only 'new'
    produce = Scripted(lambda n, plan: (None, "llm"))
    Evolution(EvolutionConfig(n_parents=1, n_offspring=3, budget=7, seed=2), produce).run()
    assert {p.operator for p in produce.plans} == {"new"}


def test_same_seed_same_plans():
    def plans(seed):
        produce = Scripted(lambda n, plan: ((n * 37 % 11) / 11, None))
        Evolution(EvolutionConfig(n_parents=3, n_offspring=4, budget=15, seed=seed), produce).run()
        return [(p.id, p.operator, tuple(x.id for x in p.parents)) for p in produce.plans]

    assert plans(5) == plans(5)
    assert plans(5) != plans(6)


def test_selection_and_operator_choice():
    rng = np.random.default_rng(0)
    pop = [_cand("a", -0.5), _cand("b", 0.1), _cand("c", 0.7)]
    assert select_parent(pop, "best", rng).id == "c"
    picks = [select_parent(pop, "tournament", rng, 3).id for _ in range(5)]
    assert picks == ["c"] * 5  # a full-size tournament is won by the best
    counts = {k: 0 for k in "abc"}
    for _ in range(2000):
        counts[select_parent(pop, "roulette", rng).id] += 1
    assert counts["c"] > counts["b"] > counts["a"] > 0
    assert choose_operator({"new": 0, "refine": 1, "fix": 5}, {"new", "refine"}, rng) == "refine"
    assert choose_operator({"new": 0, "refine": 1}, {"new"}, rng) == "new"
    with pytest.raises(ValueError):
        select_parent(pop, "random", rng)


def test_crossover_takes_two_different_working_parents_and_weight_0_changes_nothing():
    def outcome(n, plan):  # every third candidate fails: a failed program must never be a parent
        return (None, "exception") if n % 3 == 0 else (n / 100, None)

    weights = {"new": 0.2, "refine": 0.5, "simplify": 0.15, "fix": 0.15}
    crossed = Scripted(outcome)
    Evolution(
        EvolutionConfig(n_parents=3, n_offspring=4, budget=30, seed=5, operators={**weights, "crossover": 2.0}), crossed
    ).run()
    pairs = [p.parents for p in crossed.plans if p.operator == "crossover"]
    assert len(pairs) >= 5
    for a, b in pairs:
        assert a.ok and b.ok and a.id != b.id
    for plan in crossed.plans:
        if plan.operator != "fix":
            assert all(p.ok for p in plan.parents)
    # with weight 0 (the default) the operators and parents drawn are those of a run without crossover
    base, zero = Scripted(outcome), Scripted(outcome)
    Evolution(EvolutionConfig(n_parents=3, n_offspring=4, budget=30, seed=5, operators=weights), base).run()
    Evolution(
        EvolutionConfig(n_parents=3, n_offspring=4, budget=30, seed=5, operators={**weights, "crossover": 0.0}), zero
    ).run()
    assert [(p.operator, [q.id for q in p.parents]) for p in base.plans] == [
        (p.operator, [q.id for q in p.parents]) for p in zero.plans
    ]
