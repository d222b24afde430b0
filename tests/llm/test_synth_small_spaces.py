"""The synthesizer's parts for small budgets and rugged spaces: budget-sized designs, confidence-bound
screening, adaptive switching between exploration and local search (generator.llm.synth.small_spaces)."""

import random

import numpy as np
import pytest

from generator.llm.synth.compose import Composition, render
from generator.llm.synth.profile import Profile
from generator.scoring.oracle import Oracle
from generator.scoring.score import Budget
from generator.tasks.space import SearchSpace

SLOTS = {
    "init": "design",
    "neighbourhood": "Hamming",
    "screening": "lcb",
    "acceptance": "greedy",
    "memory": "visited",
    "jump": "adaptive",
    "restart": "perturb",
}


def build(comp: Composition):
    """An instance of the optimizer the synthesizer renders for a composition."""
    name, _, source = render(comp)
    namespace = {}
    exec(compile(source, name, "exec"), namespace)
    return namespace[name](budget=5000, **comp.hp)


def optimizer(slots=None, **hp):
    """An instance of the optimizer the synthesizer renders for `slots` (defaults overridden by hp)."""
    comp = Composition("trajectory", dict(SLOTS, **(slots or {})), {}).normalised()
    comp.hp.update(hp)
    return build(comp)


def run_search(opt, task, max_fevals, seed, search):
    """Run `opt` on `task` (a budget of max_fevals evaluations, seeded) with `search` as its main loop."""
    opt.search = search
    space = SearchSpace(task.space)
    np.random.seed(seed)
    space.seed(seed)
    opt(Oracle(task, Budget(seconds=1e9, max_fevals=max_fevals), space), space)
    return opt


def stop_after_init(opt):
    """A main loop that only draws the initial configurations (kept as opt.design)."""
    return lambda: setattr(opt, "design", opt.initial_configs(opt.init_size))


def run_init(task, max_fevals, seed, slots=None, **hp):
    """The initial configurations the optimizer draws on `task` with a budget of max_fevals evaluations."""
    opt = optimizer(slots, **hp)
    return run_search(opt, task, max_fevals, seed, stop_after_init(opt))


def spy_on_choose(opt):
    """Record every (choice, options) the model screens on `opt` from now on."""
    picked, choose = [], opt.choose

    def wrapped(options):
        choice = choose(options)
        picked.append((choice, list(options)))
        return choice

    opt.choose = wrapped
    return picked


def run_design(task, max_fevals, seed, init_share=0.25):
    """The initial sample the optimizer draws on `task` with a budget of max_fevals evaluations."""
    return run_init(task, max_fevals, seed, init_share=init_share, init_size=4)


def spread(opt) -> float:
    """Mean distance of each design point to its nearest other one (scaled value positions)."""
    x = np.asarray([opt.indices(c) for c in opt.design], dtype=float)
    x /= np.asarray([max(1, len(v) - 1) for v in opt.values])
    d = np.abs(x[:, None, :] - x[None, :, :]).sum(axis=2)
    np.fill_diagonal(d, np.inf)
    return float(d.min(axis=1).mean())


def test_design_is_sized_by_the_budget_the_run_has(conv_task):
    assert len(run_design(conv_task, 40, 0).design) == 10  # a quarter of 40 evaluations
    assert len(run_design(conv_task, 200, 0).design) == 50
    assert len(run_design(conv_task, 200, 0, init_share=0.05).design) == 10
    assert len(run_design(conv_task, 6, 0).design) == 4  # never fewer than init_size


def test_design_fills_the_space_better_than_random_samples(conv_task):
    designed = [spread(run_design(conv_task, 80, s)) for s in range(5)]
    # against as many uniformly drawn valid configurations as the design has (a quarter of 80)
    space = SearchSpace(conv_task.space)
    ref = optimizer()
    ref.values = [list(v) for v in conv_task.space.tune_params.values()]
    ref.positions = [{v: i for i, v in enumerate(vals)} for vals in ref.values]
    randoms = []
    for s in range(5):
        space.seed(s)
        ref.design = [tuple(c) for c in space.get_random_sample(20)]
        randoms.append(spread(ref))
    assert np.mean(designed) > 1.1 * np.mean(randoms), (designed, randoms)


def _with_model(opt, configs, values, spent=0.0):
    """Give an optimizer measurements without running it (the state __call__ would set up)."""
    opt.values = [[0, 1, 2, 3, 4, 5, 6, 7, 8, 9], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]]
    opt.positions = [{v: i for i, v in enumerate(vals)} for vals in opt.values]
    opt.rng = np.random.default_rng(0)
    opt.cache = dict(zip(configs, values))
    opt.history = list(configs)
    opt.lcb_x, opt.lcb_y = [], []
    opt.lcb_scale = np.asarray([9.0, 9.0], dtype=np.float32)
    opt.func = type("F", (), {"budget_spent_fraction": spent})()
    opt.budget = 5000
    return opt


def test_confidence_bound_prefers_unexplored_options_early_and_the_model_late():
    measured = [(0, 0), (0, 2), (0, 9)]
    values = [1.0, 2.0, 3.0]
    # the model predicts near_best best (next to the best measurement); far_away is middling and unexplored
    near_best, far_away = (1, 0), (9, 2)
    greedy = _with_model(optimizer(explore_weight=0.0, knn_k=1), measured, values)
    assert greedy.choose([far_away, near_best]) == near_best
    early = _with_model(optimizer(explore_weight=2.0, knn_k=1), measured, values, spent=0.0)
    assert early.choose([far_away, near_best]) == far_away
    late = _with_model(optimizer(explore_weight=2.0, knn_k=1), measured, values, spent=1.0)
    assert late.choose([far_away, near_best]) == near_best  # the bonus is gone when the budget is spent


def test_switching_follows_what_improved_and_explores_when_stalled():
    opt = optimizer(patience=5)
    opt.rng = np.random.default_rng(0)
    opt.tries, opt.wins = {"explore": 0.0, "local": 0.0}, {"explore": 0.0, "local": 0.0}
    for _ in range(40):
        opt.credit("local", True)
        opt.credit("explore", False)
    share = np.mean([opt.explore_now(0) for _ in range(2000)])
    assert share < 0.1  # local search pays: explore rarely
    assert all(opt.explore_now(5) for _ in range(50))  # stalled: always explore
    for _ in range(60):
        opt.credit("local", False)
        opt.credit("explore", True)
    assert np.mean([opt.explore_now(0) for _ in range(2000)]) > 0.8  # old successes fade


@pytest.mark.parametrize(
    "stats, favoured, strongest",
    [
        (Profile(budget=40, fdc=0.3), [("screening", "lcb"), ("jump", "adaptive")], False),
        (Profile(budget=2000, fdc=-0.3, optima=0.01), [("init", "design"), ("jump", "adaptive")], True),
    ],
)
def test_small_budgets_and_rugged_spaces_favour_the_new_parts(stats, favoured, strongest):
    from generator.llm.synth.profile import BASE

    for slot, option in favoured:
        w = stats.weights(slot)
        assert w[option] > BASE[slot][option], (slot, w)  # a rule fired for it
        if strongest:  # rugged spaces: the design and switching are the likeliest choice of their slot
            assert w[option] == max(w.values()), (slot, w)
    comp, why = stats.draw(random.Random(0))
    assert comp.slots and why  # a design comes with its reasons


def test_init_share_default_follows_the_budget():
    assert (
        Profile(budget=40).default("init_share")
        > Profile(budget=200).default("init_share")
        > Profile(budget=2000).default("init_share")
    )


def run_screened(task, max_fevals, seed, global_share=0.2):
    """The configurations the screened initialisation measures on `task` with a budget of max_fevals."""
    return run_init(task, max_fevals, seed, {"init": "screened"}, global_share=global_share, init_size=4)


def test_screened_init_samples_its_share_of_the_budget_the_run_has(conv_task):
    assert len(run_screened(conv_task, 100, 0).design) == 20  # a fifth of 100 evaluations
    assert len(run_screened(conv_task, 200, 0, global_share=0.1).design) == 20
    assert len(run_screened(conv_task, 10, 0).design) == 4  # never fewer than init_size
    opt = run_screened(conv_task, 100, 1)
    assert len(set(opt.design)) == len(opt.design) == len(opt.cache)  # each sample is a new measurement


def test_screened_init_picks_the_models_choice_among_global_samples(conv_task):
    opt = optimizer({"init": "screened"}, global_share=0.3, init_size=4, global_pool=8)
    picked = spy_on_choose(opt)
    run_search(opt, conv_task, 60, 0, stop_after_init(opt))
    assert len(picked) == len(opt.design) - 4  # every sample after the first four went through the model
    assert all(len(options) == 8 and choice in options for choice, options in picked)


def test_screened_init_without_a_model_becomes_a_design():
    comp = Composition("population", {"init": "screened", "brood": "single"}, {}).normalised()
    assert comp.slots["init"] == "design"  # a population without a screening model cannot screen samples
    comp = Composition("population", {"init": "screened", "brood": "screened"}, {}).normalised()
    assert comp.slots["init"] == "screened" and "global_share" in comp.hp


def test_screened_restart_continues_from_the_best_of_model_screened_global_probes(conv_task):
    opt = optimizer({"restart": "screened"}, restart_sample=5, global_pool=8, init_size=6)
    start = {}

    def search():  # the initial sample, then one restart
        for config in opt.initial_configs(opt.init_size):
            opt.evaluate(config)
        start["measured"] = len(opt.cache)
        picked = spy_on_choose(opt)
        start["restart"], start["picked"] = opt.restart(opt.best_config), picked

    run_search(opt, conv_task, 100, 0, search)
    probes = opt.history[start["measured"] :]
    assert len(probes) == 5 and len(start["picked"]) == 5  # restart_sample probes, each screened by the model
    assert all(len(options) == 8 and choice in options for choice, options in start["picked"])
    assert [choice for choice, _ in start["picked"]] == probes  # the model's picks are what got measured
    assert start["restart"] == min(probes, key=opt.cache.get)  # the search goes on from the best probe


def test_screened_population_restart_keeps_the_best_and_refills_by_the_model(conv_task):
    comp = Composition(
        "population", {"init": "random", "brood": "screened", "screening": "knn", "restart": "screened"}, {}
    ).normalised()
    comp.hp.update(pop_size=6, global_pool=8)
    opt = build(comp)
    out = {}

    def search():
        population = sorted(opt.initial_configs(opt.pop_size), key=opt.evaluate)
        picked = spy_on_choose(opt)
        out["before"], out["after"], out["picked"] = population, opt.restart_population(population), picked

    run_search(opt, conv_task, 100, 1, search)
    assert out["before"][0] in out["after"] and len(out["after"]) == 6  # the best member survives
    assert len(out["picked"]) == 5 and all(len(o) == 8 for _, o in out["picked"])  # the rest: screened samples
    assert sorted(out["after"], key=opt.cache.get) == out["after"]


def test_screened_restart_without_a_model_becomes_random_restarts():
    comp = Composition("population", {"restart": "screened", "brood": "single"}, {}).normalised()
    assert comp.slots["restart"] == "random"  # nothing to screen the restarts with
    comp = Composition("trajectory", dict(SLOTS, restart="screened"), {}).normalised()
    assert comp.slots["restart"] == "screened" and {"patience", "global_pool", "restart_sample"} <= set(comp.hp)


@pytest.mark.parametrize("jump, hp", [("adaptive", {"patience": 2}), ("random", {"jump_rate": 0.5})])
def test_explore_probes_are_the_models_pick_of_global_pool_samples(conv_task, jump, hp):
    """The probes away from the current point are screened from global_pool random configurations (a fixed
    32 before: a pool that large sent nearly every probe into the model's favourite basin)."""
    opt = optimizer({"jump": jump}, global_pool=5, **hp)
    asked, draw = [], opt.random_unvisited
    opt.random_unvisited = lambda n: asked.append(n) or draw(n)
    picked = spy_on_choose(opt)
    run_search(opt, conv_task, 80, 3, opt.search)
    probes = [(choice, options) for choice, options in picked if len(options) == 5]
    assert asked.count(5) >= 3 and len(probes) >= 3  # probes were drawn, each from a pool of global_pool
    assert all(choice in options for choice, options in probes)
    assert 32 not in asked
