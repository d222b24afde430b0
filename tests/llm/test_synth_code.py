"""The offline synthesizer's code: every component covered, sources well formed, optimizers that run and stop, diffs that apply, crossover and the repair of invalid configurations."""

import ast
import json

import numpy as np
from support.synth_prompts import BASE, composition_of, parent_code, prompt, slot_changes

from generator.llm.synth.compose import PLAIN, SLOT_OPTIONS, Composition, class_name, read_composition, render
from generator.llm.synth.provider import synthesize


# ----------------------------------------------------------------------------- generated code
def covering_compositions(n: int) -> list[Composition]:
    """n compositions in which every option of every slot appears (rotating choices)."""
    comps = []
    for i in range(n):
        scheme = "trajectory" if i % 2 == 0 else "population"
        slots = {}
        for j, (slot, options) in enumerate(SLOT_OPTIONS.items()):
            names = sorted(options)
            slots[slot] = names[(i // 2 + j) % len(names)]
        if scheme == "population" and i % 4 == 1:
            slots["local_search"] = "memetic"
        comps.append(Composition(scheme, slots).normalised())
    return comps


def optimizer_class(comp: Composition) -> type:
    """The optimizer class the synthesizer renders for a composition."""
    name, _, source = render(comp)
    namespace = {}
    exec(compile(source, name, "exec"), namespace)
    return namespace[name]


def bare_optimizer(space, cache: dict):
    """BASE's optimizer with a space and measurements set as __call__ sets them, no search run: its helpers alone."""
    opt = optimizer_class(BASE)()
    opt.space, opt.cache = space, dict(cache)
    opt.values = [list(v) for v in space.tune_params.values()]
    opt.positions = [{v: i for i, v in enumerate(vals)} for vals in opt.values]
    return opt


def test_compositions_cover_every_component():
    comps = covering_compositions(30)
    used = {(s, v) for c in comps for s, v in c.slots.items()}
    assert used == {(s, v) for s, opts in SLOT_OPTIONS.items() for v in opts}
    assert set(PLAIN) == set(SLOT_OPTIONS)


def test_sources_are_well_formed_and_honest():
    from generator.candidate.checks import check_source

    for comp in covering_compositions(30):
        name, _, source = render(comp, ["a reason"], ['a note with """ quotes'])
        ast.parse(source)
        assert check_source(source) is None, name
        assert "offline synthesizer" in source and "not an LLM" in source
        assert read_composition(source).to_json() == comp.to_json()
        assert class_name(comp) == name


def test_thirty_compositions_run_on_a_hub_task(hub_tasks):
    from generator.scoring.oracle import Oracle
    from generator.scoring.score import Budget
    from generator.tasks.space import SearchSpace

    task = next(t for t in hub_tasks if t.name == "convolution_milo/MI250X")
    space = SearchSpace(task.space)
    for i, comp in enumerate(covering_compositions(30)):
        cls = optimizer_class(comp)
        name = cls.__name__
        np.random.seed(i)
        space.seed(i)
        oracle = Oracle(task, Budget(seconds=1e9, max_fevals=60), space)
        best, value = cls(budget=5000)(oracle, space)
        assert oracle.fevals == 60, name  # it used the whole budget, then stopped cleanly
        # the evaluation that spent the budget is recorded but never answered, so the oracle may know better
        assert best is not None and oracle.best()[1] <= value < 1e300, name


def test_optimizers_stop_when_the_space_is_exhausted():
    from generator.tasks.cache import SpaceSpec
    from generator.tasks.space import SearchSpace

    valid = np.array([(a, b) for a in range(3) for b in range(4) if (a + b) % 3], dtype=np.int32)
    spec = SpaceSpec({"x": [1, 2, 3], "y": [10, 20, 30, 40]}, (), valid)
    rng = np.random.default_rng(0)
    for comp in covering_compositions(12):
        cls = optimizer_class(comp)
        seen = set()

        def func(cfg, seen=seen):  # bound now: the loop rebinds `seen` for the next composition
            seen.add(tuple(cfg))
            return float(rng.random())

        cls()(func, SearchSpace(spec, np.random.default_rng(1)))
        assert len(seen) == len(valid), cls.__name__


def test_quickstart_prompt_reply_is_extracted_and_passes_checks(hub_dir):
    from generator.campaign.run import render_prompt
    from generator.candidate.checks import check_source
    from generator.llm.prompts import extract_reply

    messages = render_prompt("campaigns/quickstart.toml", "new")
    reply = extract_reply(synthesize("\n\n".join(m["content"] for m in messages), seed=1))
    assert reply.code and check_source(reply.code) is None
    assert json.loads(reply.code.splitlines()[0].split(":", 1)[1])["v"] == 1
    assert reply.description and not reply.description.startswith("tunesmith-synth")


def diff_prompt(operator, parents, error=None):
    return prompt(operator, parents, error).replace(f"(operator: {operator})", f"(operator: {operator}, answer: diff)")


def test_asked_for_a_diff_the_synthesizer_answers_blocks_that_apply():
    from generator.llm.edits import apply_reply

    code, diffs = parent_code(BASE), 0
    for seed in range(6):
        for op in ("refine", "simplify"):
            reply = synthesize(diff_prompt(op, [("c0003", "0.5", code)]), seed=seed)
            out = apply_reply(reply, code)
            if out.blocks == 0:  # a rewrite (e.g. a new scheme) is answered with the whole class
                child = composition_of(reply)
            else:
                assert out.error is None and "```python" not in reply
                child = read_composition(out.code)  # the edited parent is a whole optimizer again
                assert len(reply) < len(out.code)
                diffs += 1
            assert 1 <= slot_changes(BASE.normalised(), child) <= 2
    assert diffs >= 8


def test_crossover_combines_the_components_of_both_parents():
    other = Composition(
        "trajectory",
        {
            "init": "random",
            "neighbourhood": "adjacent",
            "screening": "none",
            "acceptance": "annealing",
            "memory": "visited",
            "jump": "random",
            "restart": "random",
        },
    ).normalised()
    base = BASE.normalised()
    mixed = 0
    for seed in range(8):
        reply = synthesize(
            prompt("crossover", [("c0003", "0.5", parent_code(base)), ("c0004", "0.4", parent_code(other))]), seed=seed
        )
        child = composition_of(reply).normalised()
        assert "crossed" in reply
        assert child.key() not in (base.key(), other.key())
        from_a = sum(child.slots.get(s) == base.slots.get(s) != other.slots.get(s) for s in child.active_slots())
        from_b = sum(child.slots.get(s) == other.slots.get(s) != base.slots.get(s) for s in child.active_slots())
        mixed += from_a > 0 and from_b > 0
    assert mixed >= 6  # parts of both parents, nearly always


def test_crossover_without_two_synthesizer_parents_falls_back_to_new():
    reply = synthesize(prompt("crossover", [("c0003", "0.5", parent_code(BASE))]), seed=1)
    assert "crossover fell back to a new design" in reply


def test_crossover_never_takes_every_differing_slot():
    """Taking all the slots the parents differ in would return the donor's design (a false duplicate)."""
    import random

    from generator.llm.synth.operators import crossover
    from generator.llm.synth.parse import Parent, Request
    from generator.llm.synth.profile import Profile

    a = Composition("trajectory", dict(BASE.slots, jump="none", restart="perturb")).normalised()
    b = Composition("trajectory", dict(BASE.slots, jump="random", restart="random")).normalised()
    req = Request("crossover", parents=[Parent("c0001", 0.5, "", a), Parent("c0002", 0.4, "", b)])
    for seed in range(64):  # both slots taken by chance one time in four, before
        child = crossover(req, Profile(), random.Random(seed)).composition
        assert (child.slots["jump"], child.slots["restart"]) not in (("none", "perturb"), ("random", "random"))


def test_repair_moves_an_invalid_configuration_to_its_closest_valid_neighbour():
    """Histogram's restriction `use_shared == 1 or replicas == 1`: (use_shared 0, replicas 8) is one step from
    (1, 8) and three from (0, 1). A random neighbour (before) put half of such repairs in the small, slow
    use_shared=0 region."""
    from generator.tasks.cache import SpaceSpec
    from generator.tasks.space import SearchSpace

    shared, replicas = [0, 1], [1, 2, 4, 8, 16]
    valid = np.array([(s, r) for s in range(2) for r in range(5) if s == 1 or r == 0], dtype=np.int32)
    opt = bare_optimizer(SearchSpace(SpaceSpec({"use_shared": shared, "replicas": replicas}, (), valid)), {})
    repaired = set()
    for seed in range(32):
        opt.rng = np.random.default_rng(seed)
        repaired.add(opt.repair((0, 8)))
    assert repaired == {(1, 8)}
    opt.cache = {(1, 8): 1.0}  # the closest is visited: the other Hamming neighbour, however far
    assert {opt.repair((0, 8)) for _ in range(8)} == {(0, 1)}


def test_random_unvisited_draws_until_it_has_as_many_as_asked():
    """A model screens global_pool random unvisited probes; before, one visited configuration among the first
    draws left it fewer to choose from."""
    from generator.tasks.cache import SpaceSpec
    from generator.tasks.space import SearchSpace

    valid = np.arange(20, dtype=np.int32).reshape(-1, 1)
    space = SearchSpace(SpaceSpec({"x": list(range(20))}, (), valid))
    opt = bare_optimizer(space, {(x,): 1.0 for x in range(10)})
    for seed in range(32):
        space.seed(seed)
        pool = opt.random_unvisited(8)
        assert len(set(pool)) == 8 and not set(pool) & set(opt.cache)
    assert len(opt.random_unvisited(12)) == 10  # fewer only when fewer are left
